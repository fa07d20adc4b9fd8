"""Competition ranking (server/protocol/ranking.py): "1, 2, 2, 4" from keys listed best first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from solrace.server.protocol.ranking import competition_ranks


def test_tied_entries_share_a_rank_and_the_next_one_skips_past_them() -> None:
    assert competition_ranks([5, 7, 7, 9]) == [1, 2, 2, 4]
    assert competition_ranks([(0, 1), (0, 1), (0, 1), (1, 0)]) == [1, 1, 1, 4]
    assert competition_ranks(["a", "b", "c"]) == [1, 2, 3]
    assert competition_ranks([]) == []


@given(st.lists(st.integers(min_value=-3, max_value=3)).map(sorted))
def test_a_rank_is_one_more_than_the_entries_strictly_ahead(keys: list[int]) -> None:
    ranks = competition_ranks(keys)
    assert ranks == [1 + sum(other < key for other in keys) for key in keys]


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2))).map(sorted))
def test_equal_keys_tie_and_ranks_climb_by_the_entries_passed(keys: list[tuple[int, int]]) -> None:
    ranks = competition_ranks(keys)
    assert len(ranks) == len(keys)
    for i in range(1, len(keys)):
        if keys[i] == keys[i - 1]:
            assert ranks[i] == ranks[i - 1]
        else:
            assert ranks[i] == i + 1
    assert ranks[:1] in ([], [1])
