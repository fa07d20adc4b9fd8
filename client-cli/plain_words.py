"""The line modes' words (`solrace play --plain`, a tournament's `--plain`): the help, the
command words and which of them act on the current race (at once, or once it has started),
and how a typed line reads as a move."""

from __future__ import annotations

import difflib
from typing import Final

from solrace.engine import EngineError, Move

HELP = """\
commands:
  MOVE                a move: deal (or d), w-t3, t6-f0, t2-t5:3 (piles s w f0.. t0.. r0..)
  board               print the board (waits for the start; an open race: says so)
  moves               list the legal moves (waits for the start)
  list                list open and running races
  create GAME [SEATS [SECONDS]]   create a race (games: {games})
  join RACE [INVITE]  sit in a race (a race you already sit in: back into it)
  start               start the race you created
  resign              give up the current race (before the start: at the start)
  wait                wait until the current race ends, then print the result
  leave               leave a race that has not started
  help                this text
  quit                leave the program (also q, exit, end of input, Ctrl-C): open races you
                      created are left; a live race is forfeited unless you come back
Commands run in the order typed; while one waits for an open race's start, start runs at
once, and at a terminal leave, board, list, help and quit too."""

CREATE_USAGE: Final = "create GAME [SEATS [SECONDS]]"
QUIT_WORDS: Final = frozenset({"quit", "exit", "q"})
#: Commands typed while another waits for an open race's start that run at once: what can
#: start the race or end the wait, and what answers without it.
TYPED_MEANWHILE: Final = frozenset({"start", "leave", "board", "list", "help"})
NO_RACE: Final = "no current race: create or join one first ('list' shows the races)"
#: Commands that act on the current race.
RACE_COMMANDS: Final = frozenset({"board", "moves", "start", "resign", "leave", "wait"})
#: Commands that act on the current race once it has started (before, they wait for it), as
#: a move does.
AFTER_START: Final = frozenset({"board", "moves", "resign", "wait"})
#: The command words that are no move (any other line is read as one).
COMMAND_WORDS: Final = RACE_COMMANDS | {"help", "list", "create", "join"}


def move_text(line: str) -> str:
    """The move a line types: `d` (the full-screen board's key for a deal) is `deal`, in
    either case as every move and command is (`D`, `Deal`, `W-T3`)."""
    return "deal" if line.lower() == "d" else line


def unreadable_move_text(line: str, problem: str) -> str:
    """What is said of a line that is no command and no move (`problem`: the engine's words),
    with the command or `deal` its first word looks like a typo of (`resing`: `did you mean
    'resign'?`)."""
    word = line.split(maxsplit=1)[0].lower()
    known = sorted(COMMAND_WORDS | QUIT_WORDS | {"deal"})
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.7) if "-" not in word else []
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"{problem} ({hint}type 'help')"


def acts_after_start(line: str) -> bool:
    """Does `line` act on the current race once it has started (a move, `board`, `moves`,
    `resign`, `wait`), so that typed before the start it waits for it? A line that cannot be
    read as a move does not: it is said at once."""
    word = line.split(maxsplit=1)[0].lower()
    if word in AFTER_START:
        return True
    if word in COMMAND_WORDS:
        return False
    try:
        Move.parse(move_text(line))
    except EngineError:
        return False
    return True


__all__ = [
    "AFTER_START",
    "COMMAND_WORDS",
    "CREATE_USAGE",
    "HELP",
    "NO_RACE",
    "QUIT_WORDS",
    "RACE_COMMANDS",
    "TYPED_MEANWHILE",
    "acts_after_start",
    "move_text",
    "unreadable_move_text",
]
