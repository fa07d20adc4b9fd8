"""The dependency rule (docs/server.md, first section), checked in fresh interpreters.

``engine`` <- ``server.protocol`` <- the rest of ``server``; the client uses the engine and the
protocol only. The engine imports the standard library only; the protocol layer is sans-I/O: no
asyncio, no websockets, no redis, no sqlite3 and none of the server's runtime modules; the client
never loads the server's runtime (only ``embedded`` imports it, lazily, when it starts a server).
Each check imports a layer in a new interpreter and looks at what got loaded (``sys.modules``)
and at which code asked for it (every ``import`` statement is watched).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

# Runs in a fresh interpreter: imports the named modules (argv[1]: a JSON list, or "walk:PKG" to
# import a package and every module in it) and prints what got loaded and who imported what.
PROBE = r"""
import builtins, importlib, json, os, pkgutil, sys

baseline = set(sys.modules)
statements = []  # (importing module, imported name) for every import statement in solrace code
first_importer = {}  # top-level name -> file of the code that first loaded it

real_import = builtins.__import__


def watching_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__", "")
    if level == 0 and isinstance(importer, str) and importer.startswith("solrace"):
        statements.append((importer, name))
    return real_import(name, globals, locals, fromlist, level)


class FirstImporter:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in first_importer and top not in sys.modules:
            frame = sys._getframe(1)
            # Skip the import machinery and this probe's own import hook.
            while frame is not None and frame.f_code.co_filename.startswith(("<frozen", "<string")):
                frame = frame.f_back
            first_importer[top] = frame.f_code.co_filename if frame is not None else "?"
        return None


builtins.__import__ = watching_import
sys.meta_path.insert(0, FirstImporter())

target = sys.argv[1]
if target.startswith("walk:"):
    package = importlib.import_module(target[5:])
    names = [package.__name__] + [
        info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    ]
else:
    names = json.loads(target)
for name in names:
    importlib.import_module(name)

print(json.dumps({
    "imported": names,
    "loaded": sorted(set(sys.modules) - baseline),
    "statements": statements,
    "first_importer": first_importer,
    "solrace_dirs": sorted({
        os.path.dirname(m.__file__) + os.sep
        for n, m in list(sys.modules.items())
        if n.startswith("solrace") and getattr(m, "__file__", None)
    }),
    "stdlib": sorted(sys.stdlib_module_names),
}))
"""


def probe(target: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, target],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"importing {target} failed:\n{result.stderr}"
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _matches(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


ENGINE_FORBIDDEN = (
    "asyncio",
    "websockets",
    "msgpack",
    "pydantic",
    "solrace.server",
    "solrace.client",
)


def test_engine_loads_the_standard_library_only() -> None:
    report = probe("walk:solrace.engine")
    assert "solrace.engine.cli" in report["imported"]
    assert "solrace.engine.games.klondike" in report["imported"]
    loaded: list[str] = report["loaded"]
    assert [m for m in loaded if _matches(m, ENGINE_FORBIDDEN)] == []
    stdlib = set(report["stdlib"])
    outside = {m.partition(".")[0] for m in loaded} - stdlib - {"solrace"}
    assert outside == set(), f"the engine loads non-standard modules: {sorted(outside)}"
    assert [
        m for m in loaded if m.startswith("solrace.") and not m.startswith("solrace.engine")
    ] == []


def test_importing_the_engine_package_alone_loads_nothing_forbidden() -> None:
    report = probe('["solrace.engine"]')
    assert [m for m in report["loaded"] if _matches(m, ENGINE_FORBIDDEN)] == []


PROTOCOL = "solrace.server.protocol"
#: Asked for by no protocol module: I/O (sockets, stores, files) and the client.
PROTOCOL_FORBIDDEN = ("asyncio", "websockets", "redis", "sqlite3", "pathlib", "solrace.client")


def test_protocol_is_sans_io() -> None:
    # Every module that exists in server/protocol now is imported; an import error fails here.
    report = probe(f"walk:{PROTOCOL}")
    imported: list[str] = report["imported"]
    assert imported[0] == PROTOCOL
    loaded: list[str] = report["loaded"]

    runtime = [
        m
        for m in loaded
        if _matches(m, ("solrace.server",))
        and m != "solrace.server"
        and not _matches(m, (PROTOCOL,))
    ]
    assert runtime == [], f"{PROTOCOL} loads server runtime modules: {runtime}"

    # No solrace code under the protocol asks for asyncio, websockets, redis or files...
    asked = [
        (who, name) for who, name in report["statements"] if _matches(name, PROTOCOL_FORBIDDEN)
    ]
    assert asked == [], f"{PROTOCOL} imports I/O modules: {asked}"
    # ...and nothing it pulls in loads websockets, redis, sqlite3 or the client.
    io = ("websockets", "redis", "sqlite3", "solrace.client")
    assert [m for m in loaded if _matches(m, io)] == []
    # asyncio may only be loaded as a side effect of a third-party library (typing_extensions
    # imports asyncio.coroutines when pydantic_core declares its deprecations), never by solrace.
    if "asyncio" in loaded:
        who: str = report["first_importer"].get("asyncio", "?")
        assert who.endswith(".py"), who
        assert not any(who.startswith(d) for d in report["solrace_dirs"]), f"{who} loads asyncio"


CLIENT = "solrace.client"
EMBEDDED = "solrace.client.embedded"


def _server_runtime(name: str) -> bool:
    """A module of the server outside the protocol (its bare package holds nothing)."""
    return name.startswith("solrace.server.") and not _matches(name, (PROTOCOL,))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(module: str, source: str) -> list[tuple[int, bool]]:
    """(line, runs when the module is imported?) of each import of the server runtime."""
    found: list[tuple[int, bool]] = []
    package = module.rpartition(".")[0]

    def visit(node: ast.AST, eager: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            eager = False
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.orelse:
                visit(statement, eager)
            return  # the body only runs under a type checker
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = importlib.util.resolve_name("." * node.level + base, package)
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            if any(_server_runtime(n) for n in names):
                found.append((node.lineno, eager))
        for child in ast.iter_child_nodes(node):
            visit(child, eager)

    visit(ast.parse(source), True)
    return found


def test_client_loads_no_server_runtime() -> None:
    # Every module that exists in the client now is imported; an import error fails here.
    report = probe(f"walk:{CLIENT}")
    imported: list[str] = report["imported"]
    assert imported[0] == CLIENT and EMBEDDED in imported
    loaded: list[str] = report["loaded"]
    runtime = [m for m in loaded if _server_runtime(m)]
    assert runtime == [], f"{CLIENT} loads server runtime modules: {runtime}"
    asked = [(who, name) for who, name in report["statements"] if _server_runtime(name)]
    assert asked == [], f"{CLIENT} imports the server runtime: {asked}"

    # Read the source too: only `embedded` may name the runtime, and only in code that runs
    # later (inside a function, or for the type checker), so that the imports above stay clean.
    lazy: list[str] = []
    for module in imported:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, module
        for line, eager in _runtime_imports(module, Path(spec.origin).read_text("utf-8")):
            where = f"{module}:{line}"
            assert module == EMBEDDED, f"{where} imports the server runtime"
            assert not eager, f"{where} imports the server runtime when the client loads"
            lazy.append(where)
    assert lazy, f"{EMBEDDED} no longer starts the real server (update this test)"
