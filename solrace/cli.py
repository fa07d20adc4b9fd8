"""The ``solrace`` command: one entry point, a subcommand per job.

Subcommands import their module lazily, so ``solrace engine`` never loads the server.
A closed stdout (``solrace deal klondike 1 --json | head -c 100``) ends the command quietly
with status 141 (128 + SIGPIPE, what a shell shows for other tools stopped that way).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final

#: name -> (module, function, one-line help). Each function takes argv and returns an exit code.
COMMANDS: Final = {
    "serve": (
        "solrace.server.serve_cli",
        "main",
        "run the race server (SQLite by default, or Redis)",
    ),
    "play": ("solrace.client.app", "play_main", "play a race in the terminal"),
    "watch": ("solrace.client.app", "watch_main", "watch live races"),
    "replay": ("solrace.client.app", "replay_main", "step through a finished race"),
    "bot": ("solrace.client.bot_cli", "main", "run bot players against a server"),
    "tournament": (
        "solrace.client.tournament_cli",
        "main",
        "tournaments (create, join, play, watch, administer, bots), leaderboards, profiles",
    ),
    "verify": ("solrace.server.verify", "main", "check a race replay file offline"),
    "engine": ("solrace.engine.cli", "engine_main", "the rules engine over JSON lines (stdin)"),
    "deal": ("solrace.engine.cli", "deal_main", "print the layout of a deal"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: solrace COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {spec[2]}" for name, spec in COMMANDS.items()]
    lines += ["", "'solrace COMMAND --help' (or 'solrace help COMMAND') explains each command."]
    return "\n".join(lines)


#: What asks for help as the first word (`solrace help serve`, `solrace --help`).
HELP_WORDS: Final = ("-h", "--help", "help")
#: Exit status when stdout's reader went away: 128 + SIGPIPE, as for a process the signal ended.
BROKEN_PIPE_STATUS: Final = 141
#: What a shell reports for a command stopped by SIGINT (128 + 2).
INTERRUPTED_STATUS: Final = 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush at exit does not fail again
    (the Python docs' recipe for SIGPIPE, `signal` module notes)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file descriptor (a test's capture): nothing will be flushed to it
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            status = _main(list(sys.argv[1:] if argv is None else argv))
        finally:
            sys.stdout.flush()  # a closed pipe shows here for output still in the buffer
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE_STATUS
    except KeyboardInterrupt:  # Ctrl-C in a command that has nothing to finish on the way out
        return INTERRUPTED_STATUS
    return status


def _main(args: list[str]) -> int:
    if not args:  # as argparse for a missing subcommand: the usage on stderr, status 2
        print(f"solrace: a command is required\n\n{_usage()}", file=sys.stderr)
        return 2
    if args[0] in HELP_WORDS:
        if len(args) > 1 and args[1] not in HELP_WORDS:  # `solrace help serve`: its own help
            return _main([args[1], "--help"])
        print(_usage())  # `solrace help`, and `solrace help help` too
        return 0
    if args[0] == "--version":
        from solrace import __version__

        print(f"solrace {__version__}")
        return 0
    name = args[0]
    if name not in COMMANDS:
        print(f"solrace: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, function, _ = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("solrace"):
            print(f"solrace: '{name}' is not available in this build", file=sys.stderr)
            return 2
        raise
    run: Callable[[list[str]], int] = getattr(module, function)
    return run(args[1:])


if __name__ == "__main__":
    sys.exit(main())
