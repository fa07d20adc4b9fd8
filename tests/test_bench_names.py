"""pytest puts `bench/` first on the import path (`pythonpath` in pyproject.toml, for the
helpers the tests share with the benchmarks): a benchmark script named like a module found
elsewhere on the path would shadow that module in every test. None may."""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def shadowed_modules(folder: Path, path: list[str]) -> list[str]:
    """The scripts of `folder` whose names a module on `path` (`folder` itself left out)
    or a built-in module also has."""
    elsewhere = [p for p in path if Path(p or ".").resolve() != folder.resolve()]
    clashes = []
    for script in sorted(folder.glob("*.py")):
        name = script.stem
        known = name in sys.builtin_module_names or name in sys.stdlib_module_names
        if known or PathFinder.find_spec(name, elsewhere) is not None:
            clashes.append(name)
    return clashes


def test_no_benchmark_script_shadows_a_module() -> None:
    assert str(BENCH) in [str(Path(p).resolve()) for p in sys.path if p]
    assert shadowed_modules(BENCH, sys.path) == []


def test_a_script_named_like_a_module_is_found(tmp_path: Path) -> None:
    for name in ("json", "pytest", "mine"):
        (tmp_path / f"{name}.py").write_text("")
    assert shadowed_modules(tmp_path, [*sys.path, str(tmp_path)]) == ["json", "pytest"]
