"""The ``solrace`` command: one entry point, a subcommand per job.

Subcommands import their module lazily, so ``solrace engine`` never loads the server.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

#: name -> (module, function, one-line help). Each function takes argv and returns an exit code.
COMMANDS: Final = {
    "serve": ("solrace.server.app", "main", "run the race server (SQLite by default, or Redis)"),
    "play": ("solrace.client.app", "play_main", "play a race in the terminal"),
    "watch": ("solrace.client.app", "watch_main", "watch live races"),
    "replay": ("solrace.client.app", "replay_main", "step through a finished race"),
    "bot": ("solrace.client.bots", "main", "run bot players against a server"),
    "tournament": ("solrace.client.tournament_cli", "main", "create, join or show tournaments"),
    "verify": ("solrace.server.verify", "main", "check a race replay file offline"),
    "engine": ("solrace.engine.cli", "engine_main", "the rules engine over JSON lines (stdin)"),
    "deal": ("solrace.engine.cli", "deal_main", "print the layout of a deal"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: solrace COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {spec[2]}" for name, spec in COMMANDS.items()]
    lines += ["", "'solrace COMMAND --help' explains each command."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
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
