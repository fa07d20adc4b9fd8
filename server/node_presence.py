"""Several nodes: which nodes are alive, and what becomes of the racers of one that is gone.

Each node announces itself on the broker every fifth of `node_ttl_s` and reads back the
nodes alive. A racer connected through a node found gone is marked away (its grace runs, and
it forfeits unless it comes back); a racer of this node whom another node marked away while
this node's announces failed is marked connected again, and one a race has as connected
through a connection of this node that closed is marked away. Moves a gone node stored without
folding their progress into the race are folded in from the stored moves, also for its racers
who came back elsewhere before it was found gone. Nobody is judged gone before this node's
announces have gone through for a whole ttl, none finding its presence lost before its time
was up: after its own outage, or a Redis that restarted without its data, every live node
announces again first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from solrace.server.broker import Announced, Broker, BrokerError
from solrace.server.outage import Outage
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.race import Racer
from solrace.server.protocol.records import LIVE_STATUSES, RacerRecord
from solrace.server.protocol.tokens import secret_fingerprint
from solrace.server.race_changes import connected_through, connection_change
from solrace.server.race_sync import RaceKeeper
from solrace.server.session import Session, node_of_holder
from solrace.server.settings import Settings
from solrace.server.store import Store, StoreError
from solrace.server.timers import run_every
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.node_presence")

#: Turns of the event loop an announce still gets once its fifth of the ttl is up, so that
#: an answer Redis gave in time is taken though a loaded loop (each turn a good part of that
#: fifth) had no turn to read it yet: counted as no answer, it made this node judge nobody
#: for a whole ttl, and under steady load for good (a node gone unnoticed). On a loop that is
#: not loaded they take no time: a broker that stalls is given up on in time all the same.
TURNS_AFTER_TIME = 4


def _gone_holder(racer: Racer | RacerRecord, alive: set[str]) -> str | None:
    """The holder (`<node>:<session>`, `holder_name`) of a racer still connected through a
    node that is not alive, else None."""
    holder = racer.holder
    if racer.connected and holder is not None and node_of_holder(holder) not in alive:
        return holder
    return None


def _nodes(ids: list[str]) -> str:
    """`node a signs with` or `nodes a, b sign with`, for the secrets' error."""
    if len(ids) == 1:
        return f"node {ids[0]} signs with"
    return f"nodes {', '.join(ids)} sign with"


class NodePresence:
    """This node's presence on the broker and its watch over the other nodes' (`watch`,
    run every fifth of the ttl once `start`ed), acting on the races of `keeper` and the
    sessions of this node's players (`players`, kept by the hub's `PlayerSessions`);
    `holder_of` names a session's connection in its races (`PlayerSessions.holder_of`)."""

    def __init__(
        self,
        node_id: str,
        broker: Broker,
        store: Store,
        settings: Settings,
        keeper: RaceKeeper,
        players: Mapping[PlayerId, Session],
        *,
        holder_of: Callable[[Session], str],
        claimant_of: Callable[[PlayerId], Session | None],
        clock: Callable[[], int],
        secret: bytes | None = None,
    ) -> None:
        self.node_id = node_id
        self.broker = broker
        self.store = store
        self.announcing = Outage(log, "announcing this node's presence")
        self.settings = settings
        self.keeper = keeper
        self.players = players
        self.holder_of = holder_of
        self.claimant_of = claimant_of
        self.clock = clock
        #: The fingerprint of this node's token secret, noted in the store again at every
        #: watch (`_claim_secret`); None: not checked.
        self._fingerprint = None if secret is None else secret_fingerprint(secret)
        self.claiming_secret = Outage(log, "noting this node's token secret in the store")
        #: What was said last of other secrets (`_say_other_secrets`): the fingerprint noted in
        #: the store and the nodes alive with another than ours; None: nothing to say.
        self._other_secrets: tuple[str, tuple[str, ...]] | None = None
        #: Every node seen alive and not yet found gone (`watch`), and since when this
        #: node's announces have all gone through, none finding its presence lost (None: the
        #: last one failed).
        self._nodes_known: set[str] = set()
        self._clean_since_ms: int | None = None
        self._watcher: asyncio.Task[None] | None = None
        #: The work of a watch on the store and the races (`_act`), which a watch waits for
        #: a fifth of the ttl at most: a store that hangs does not hold up the announces.
        self._acting: asyncio.Task[None] | None = None
        self.acting = Outage(log, "marking racers after a watch of the nodes")
        #: This node has announced itself and not withdrawn since (`stop`).
        self._announced = False
        #: Called, in order, each time nodes are found gone (`watch`).
        self.gone_hooks: list[Callable[[], None]] = []

    def start(self) -> None:
        """Watch the nodes every fifth of the ttl from now on."""
        self._watcher = asyncio.create_task(self._watch_forever(), name="solrace-nodes")

    async def stop(self) -> None:
        """Stop watching, and withdraw this node's presence: the other nodes see it gone at
        their next watch, not once its announce runs out (its racers were marked away as
        their connections closed)."""
        await self.give_up()
        if not self._announced:
            return  # never said it was alive, or withdrawn already (a second stop)
        self._announced = False
        try:
            async with asyncio.timeout(self.settings.node_ttl_s / 5):
                await self.broker.withdraw(self.node_id)
        except (BrokerError, TimeoutError) as exc:
            log.warning(
                "node %s: presence not withdrawn (it runs out): %s",
                self.node_id,
                str(exc) or "no answer in time",  # a timeout says nothing itself
            )

    async def give_up(self) -> None:
        """Stop watching: the watch and its work on the races are cancelled and waited for
        (also when this node's stop was cut short, `stop` not run or not to its end). The
        presence is left to run out. A watch whose cancellation a client swallowed (a Redis
        client may, `periodic.run_every`) goes on, and may start its work before it ends:
        that work is cancelled and waited for too."""
        tasks = [task for task in (self._watcher, self._acting) if task is not None]
        self._watcher = self._acting = None
        if tasks:
            await cancel_and_wait(tasks)
        acting, self._acting = self._acting, None
        if acting is not None:
            await cancel_and_wait([acting])

    async def _watch_forever(self) -> None:
        async def step() -> None:
            await self.watch(self.clock())

        await run_every(self.settings.node_ttl_s / 5, step, log, "watching the nodes")

    async def _announce(self) -> Announced | None:
        """Say this node is alive; the nodes alive now, and whether this node's presence was
        still there (None if that could not be said in time: the broker is away or stalls)."""
        ttl_s = self.settings.node_ttl_s
        announcing = asyncio.create_task(
            self.broker.announce(self.node_id, int(ttl_s * 1000)), name="solrace-announce"
        )
        try:
            await asyncio.wait({announcing}, timeout=ttl_s / 5)
            for _ in range(TURNS_AFTER_TIME):  # an answer come that the loop has not read yet
                if announcing.done():
                    break
                await asyncio.sleep(0)
        finally:
            if not announcing.done():
                await cancel_and_wait([announcing])
        try:
            announced = announcing.result()
        except (BrokerError, asyncio.CancelledError) as exc:
            self.announcing.failed(str(exc) or "no answer in time")  # a cancel says nothing
            return None
        self.announcing.worked()
        self._announced = True
        return announced

    async def watch(self, now: int) -> None:
        """Announce this node; then, on the store and the races (`_act`), waited for a fifth
        of the ttl at most: a store that hangs (its own timeouts, three tries of 5 s, outlast
        the ttl) would hold up the next announces, and the other nodes would take this node
        for gone. Work still under way when the next watch comes is waited for again then,
        not started twice. Its failure, when it ends after its watch gave up on it, is
        raised by the next watch.

        Nobody is judged until this node's announces have gone through for a whole ttl
        since the last one that failed, or that found this node's presence lost before its
        time was up: a Redis restarted without its data (its client reconnecting, or
        retrying the announce, with no error to tell) holds no presence but those announced
        since, and the live nodes that have not announced again yet must not be taken for
        gone."""
        announced = await self._announce()
        if announced is None:
            self._clean_since_ms = None  # nobody is judged on what this node cannot see
            return
        alive = announced.alive
        if announced.lost:
            log.warning(
                "node %s (this node): the broker lost the nodes' presences (a Redis restarted "
                "without its data?): no node is taken for gone before every live one has "
                "announced again (node_ttl_s, %g s)",
                self.node_id,
                self.settings.node_ttl_s,
            )
        if self._clean_since_ms is None or announced.lost:
            self._clean_since_ms = now
        judging = now - self._clean_since_ms >= self.settings.node_ttl_s * 1000
        acting = self._acting
        if acting is not None and acting.done():
            self._acting = None
            acting.result()
        if self._acting is None:
            self._acting = asyncio.create_task(
                self._act(now, alive, judging=judging), name="solrace-nodes-acting"
            )
        acting = self._acting
        done, _ = await asyncio.wait({acting}, timeout=self.settings.node_ttl_s / 5)
        if not done:
            self.acting.failed("no answer in time")
            return
        self._acting = None
        acting.result()
        self.acting.worked()

    async def _act(self, now: int, alive: set[str], *, judging: bool) -> None:
        """A watch's work on the store and the races, `alive` being the nodes alive: note
        the token secret in the store; mark this node's own racers connected again if
        anyone marked them away, and away if a race has them connected through a
        connection of this node that closed; then, if `judging` (this node's announces have
        gone through for a whole ttl, none finding its presence lost, so every live node has
        announced since, even after a Redis restart that forgot them all), mark away the
        racers held by nodes that are not alive, so their grace runs and they forfeit unless
        they come back. Races in the store held by a node found gone are loaded here first
        (no other node may hold them: all their racers were on it). When a node is found
        gone, every live race held here has the progress of its boards stored if the race is
        behind them (a racer of the gone node who came back here before it was found gone:
        the gone node may have stored moves without their progress)."""
        await self._claim_secret()
        await self._mark_own_racers_back(now)
        await self._mark_own_closed_racers_away(now)
        self._nodes_known |= alive
        if not judging:
            return
        gone, self._nodes_known = self._nodes_known - alive, set(alive)
        if gone:
            log.warning(
                "node(s) %s gone (each node's id is in its 'listening on' line): their racers' "
                "grace starts",
                ", ".join(sorted(gone)),
            )
            try:
                for record in await self.store.list_races(LIVE_STATUSES):
                    gone_holders = any(_gone_holder(r, alive) for r in record.racers)
                    if record.race_id not in self.keeper.races and gone_holders:
                        await self.keeper.load_race(record.race_id)
            except StoreError as exc:
                log.warning("races of gone nodes not loaded: %s", exc)
            for hook in self.gone_hooks:
                hook()
        for runtime in list(self.keeper.races.values()):
            if not runtime.race.is_live:
                continue
            stale = [
                (racer.player_id, holder)
                for racer in runtime.race.racers.values()
                if (holder := _gone_holder(racer, alive)) is not None
            ]
            if not stale:
                if gone:
                    # A racer of a gone node may be back here already (its hello rebuilt
                    # its board from the stored moves, and made this node its holder): the
                    # moves the gone node stored without folding their progress in are
                    # folded in from that board.
                    await self.keeper.catch_up_progress(runtime)
                continue
            # The gone node may have stored moves whose progress it never folded in.
            await self.keeper.refresh(runtime, reload_boards=True)
            await self.keeper.catch_up_progress(runtime)
            for player_id, holder in stale:
                change = connection_change(player_id, False, now, holder)
                await self.keeper.apply_or_log(
                    runtime, change, player_id, "marked away", away=True, through=holder
                )

    async def _claim_secret(self) -> None:
        """Note this node's secret in the store again, as at its start (`App`): a Redis
        restarted without its data has none, and a node with another secret starting on it
        would be let in (every token of one refused by the other). Note it with this node's
        presence too, where every node alive notes its own (`Broker.note_secret`), so that a
        node starting can see whether the nodes alive sign with its secret, and each node
        which nodes do not (`_say_other_secrets`). It waits a fifth of the ttl at most, as an
        announce waits for the broker, so that a store that hangs (its own timeouts, three
        tries of 5 s, outlast the ttl) does not hold up the marking of racers after it. The
        next watch tries again."""
        if self._fingerprint is None:
            return
        try:
            async with asyncio.timeout(self.settings.node_ttl_s / 5):
                noted = await self.store.claim_secret(self._fingerprint)
                secrets = await self.broker.note_secret(self.node_id, self._fingerprint)
        except (StoreError, BrokerError, TimeoutError) as exc:
            self.claiming_secret.failed(str(exc) or "no answer in time")  # a timeout says nothing
            return
        self.claiming_secret.worked()
        self._say_other_secrets(self._fingerprint, noted, secrets)

    def _say_other_secrets(self, ours: str, noted: str, secrets: dict[str, str]) -> None:
        """An error, said once until it changes, if the store notes another secret than
        `ours` (`noted`) or nodes alive sign with another (`secrets`: their fingerprints, by
        node): it names the nodes on each side and whose secret the store notes, so that the
        operator stops the nodes with the wrong one, whichever this node is."""
        differ = sorted(node for node, theirs in secrets.items() if theirs != ours)
        if noted == ours and not differ:
            self._other_secrets = None
            return
        if (noted, tuple(differ)) == self._other_secrets:
            return  # said already
        self._other_secrets = (noted, tuple(differ))
        said = []
        if noted == ours:
            said.append(f"the store notes this node's token secret, but {_nodes(differ)} another")
        else:
            noted_by = sorted(node for node, theirs in secrets.items() if theirs == noted)
            whose = f"the one {_nodes(noted_by)}" if noted_by else "one no node alive notes"
            said.append(f"the store notes another token secret than this node's: {whose}")
            if others := [node for node in differ if node not in noted_by]:
                said.append(f"{_nodes(others)} yet another")
        if same := sorted(
            n for n, theirs in secrets.items() if theirs == ours and n != self.node_id
        ):
            said.append(f"{_nodes(same)} this node's")
        log.error(
            "node %s (this node): %s. Nodes with different secrets refuse each other's tokens "
            "(4001): give every node the same --secret and restart those with another (each "
            "node's id is in its 'listening on' line)",
            self.node_id,
            "; ".join(said),
        )

    async def _mark_own_racers_back(self, now: int) -> None:
        """Racers connected here whom the race has as away (another node took this one for
        gone while its announces failed) are connected again, held here, if their connection
        is still open when the change is applied (`connected_through`)."""
        for runtime in list(self.keeper.races.values()):
            race = runtime.race
            if not race.is_live:
                continue
            for player_id, racer in list(race.racers.items()):
                session = self.players.get(player_id)
                if session is None or session.closed or racer.connected or racer.is_done:
                    continue
                holder = self.holder_of(session)
                change = connected_through(player_id, session, holder, now, self.players)
                await self.keeper.apply_or_log(
                    runtime, change, player_id, "marked back", away=False
                )

    async def _mark_own_closed_racers_away(self, now: int) -> None:
        """Racers a race has as connected through a connection of this node, who have no
        connection open here and no connection change waiting here for the store, are marked
        away through it (if the race still names it when the change is applied). Their
        leaving can miss: it finds the race naming another node's connection and changes
        nothing, and that node's handing over to the connection
        (`PlayerSessions._replaced_elsewhere`), refused by the store then, is stored after it."""
        for runtime in list(self.keeper.races.values()):
            race = runtime.race
            if not race.is_live:
                continue
            waiting = {each.player_id for each in runtime.unstored_connections}
            for player_id, racer in list(race.racers.items()):
                holder = racer.holder
                if (
                    not racer.connected
                    or racer.is_done
                    or holder is None
                    or node_of_holder(holder) != self.node_id
                    or player_id in waiting
                    or self.claimant_of(player_id) is not None
                ):
                    continue
                change = connection_change(player_id, False, now, holder)
                await self.keeper.apply_or_log(
                    runtime, change, player_id, "marked away", away=True, through=holder
                )


__all__ = ["NodePresence"]
