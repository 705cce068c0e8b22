"""Imports run one way: a module imports only from its own layer or the layers below it (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pagegraph

SOURCE = Path(pagegraph.__file__).parent
# Bottom to top; a package (or top-level module) imports only from layers at its level or below.
LAYERS = {
    "prompts": 0,
    "errors": 0,
    "config": 0,
    "state": 0,
    "llm": 1,
    "indexing": 2,
    "retrievers": 3,
    "access": 3,
    "services": 4,
    "nodes": 5,
    "graphs": 6,
    "eval": 7,
    "cli": 8,
    "server": 8,
}


def upward_imports() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE).parts
        layer = parts[0].removesuffix(".py")
        if layer == "__init__":
            continue  # the package's front door (build_graph, GRAPHS) sits above everything
        assert layer in LAYERS, f"{path}: add its layer to LAYERS"
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                target = name.split(".")
                if target[0] != "pagegraph" or len(target) < 2:
                    continue
                if LAYERS.get(target[1], -1) > LAYERS[layer]:
                    found.append(f"{path.relative_to(SOURCE)} imports {name}")
    return found


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert upward_imports() == []


def test_the_check_sees_an_upward_import(tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "pagegraph"
    (fake / "state").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "state" / "bad.py").write_text("from pagegraph.nodes.common import context_of\n")
    monkeypatch.setattr(sys.modules[__name__], "SOURCE", fake)
    assert upward_imports() == ["state/bad.py imports pagegraph.nodes.common"]
