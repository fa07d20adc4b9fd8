"""The server's loggers (docs/operations.md, "Loggers"): each module logs under its own name,
`solrace.server.<module>`, and the operations guide lists every name the server logs under."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from pathlib import Path

import solrace.server
import solrace.tasks

#: Loggers named otherwise on purpose: the node itself (its start and stop, its token secret, the
#: process and command line of `solrace serve`), the WebSocket library's lines (the logger made in
#: websocket_protocol and handed to the protocol by websocket_session), and the store's modules
#: under the store's name.
OWN_NAMES = {
    ("solrace.server.app", "log"): "solrace.server",
    ("solrace.server.node_secret", "log"): "solrace.server",
    ("solrace.server.serve_process", "log"): "solrace.server",
    ("solrace.server.serve_cli", "log"): "solrace.server",
    ("solrace.server.websocket_protocol", "ws_log"): "solrace.server.websocket",
    ("solrace.server.websocket_session", "ws_log"): "solrace.server.websocket",
}
STORE = "solrace.server.store"


def module_loggers() -> dict[tuple[str, str], str]:
    """(module, attribute) -> logger name, for every module-level logger of the server."""
    found: dict[tuple[str, str], str] = {}
    for info in pkgutil.walk_packages(solrace.server.__path__, "solrace.server."):
        module = importlib.import_module(info.name)
        for attribute, value in vars(module).items():
            if isinstance(value, logging.Logger):
                found[(info.name, attribute)] = value.name
    return found


def test_each_module_logs_under_its_own_name() -> None:
    loggers = module_loggers()
    assert ("solrace.server.hub", "log") in loggers
    wrong: dict[str, str] = {}
    for (module, attribute), name in loggers.items():
        if (module, attribute) in OWN_NAMES:
            expected = OWN_NAMES[(module, attribute)]
        elif module.startswith(STORE + "."):
            expected = STORE
        else:
            expected = module
        if name != expected:
            wrong[f"{module}.{attribute}"] = name
    assert wrong == {}


def test_operations_md_lists_every_logger() -> None:
    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    section = text.split("## Loggers", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(solrace[a-z._]*)` \|", section, re.MULTILINE))
    used = set(module_loggers().values()) | {solrace.tasks.log.name}  # shared with the client
    assert listed == used
