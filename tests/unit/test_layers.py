"""Imports run one way: a module imports only from its own layer or the layers below it (ARCHITECTURE.md), never
from the package's front door (`pagegraph`: build_graph, GRAPHS) unless it sits above the graphs, and no modules
import each other in a cycle (counting the imports a module makes when it is loaded)."""

from __future__ import annotations

import ast
import subprocess
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
    "version": 0,
    "text": 0,  # months, and tables as a reader takes them in
    "llm": 1,  # chat models and the embedders
    "store": 2,  # records (SQLite, PostgreSQL), vectors, keyword search, the catalog, the index front
    "ingest": 3,  # loaders, OCR, trees, chunking, summaries, the pipeline: writes through the index front
    "retrievers": 3,
    "checks": 3,  # an answer checked against its evidence, beside the retrievers
    "access": 0,  # the package itself; its modules sit at their own layers, below
    "access.records": 0,
    "access.keys": 1,
    "access.runs": 3,
    "access.auth": 8,
    "services": 4,
    "nodes": 5,
    "graphs": 6,
    "__init__": 7,  # the front door builds graphs
    "eval": 7,
    "tools": 7,  # other agents' faces on the graphs: MCP tools, a LangChain retriever
    "cli": 8,
    "server": 8,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["pagegraph", *parts])


def _imports(tree: ast.AST, *, loaded_only: bool) -> list[str]:
    """The pagegraph modules a file imports; with `loaded_only`, only those imported when it is loaded (not inside
    functions, not under `if TYPE_CHECKING`)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if loaded_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        if loaded_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [name for name in found if name == "pagegraph" or name.startswith("pagegraph.")]


def layer_of(module: str) -> int | None:
    """The layer of a pagegraph module: its own entry in LAYERS (`access.runs`), else its package's (`nodes`)."""
    parts = module.split(".")[1:]
    if not parts:
        return LAYERS["__init__"]
    for length in range(len(parts), 0, -1):
        if (key := ".".join(parts[:length])) in LAYERS:
            return LAYERS[key]
    return None


def upward_imports() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        own = layer_of(_module_name(path))
        assert own is not None, f"{path}: add its layer to LAYERS"
        for name in _imports(ast.parse(path.read_text()), loaded_only=False):
            if (layer_of(name) or -1) > own:
                found.append(f"{path.relative_to(SOURCE)} imports {name}")
    return found


def import_cycles() -> list[list[str]]:
    modules = {_module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}
    edges = {
        name: sorted({m for m in _imports(ast.parse(path.read_text()), loaded_only=True) if m in modules} - {name})
        for name, path in modules.items()
    }
    cycles, state = [], {}

    def walk(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in edges[name]:
            if state.get(target) == "open":
                cycles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                walk(target, [*trail, target])
        state[name] = "done"

    for name in modules:
        if name not in state:
            walk(name, [name])
    return cycles


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert upward_imports() == []


def test_no_modules_import_each_other_in_a_cycle() -> None:
    assert import_cycles() == []


def package_cycles() -> list[tuple[str, str]]:
    """Pairs of packages each of which imports the other (anywhere in their modules). The front door (`pagegraph`)
    is left out: it hands out what sits above it (`as_retriever`) by importing it when called."""
    imports: dict[str, set[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if (module := _module_name(path)) == "pagegraph":
            continue
        package = module.split(".")[1]
        for name in _imports(ast.parse(path.read_text()), loaded_only=False):
            target = name.split(".")[1] if name != "pagegraph" else "__init__"
            if target != package:
                imports.setdefault(package, set()).add(target)
    return sorted((a, b) for a, targets in imports.items() for b in targets if a < b and a in imports.get(b, set()))


def test_no_two_packages_import_each_other() -> None:
    """state and access, say: a package's records sit below the packages that use them, never beside them."""
    assert package_cycles() == []


def test_answer_checks_and_retrievers_import_nothing_of_ingest() -> None:
    """What reads a question's evidence (a table row, a date) shares the bottom `text` package with ingest, rather
    than importing a PDF loader."""
    found = [
        f"{path.relative_to(SOURCE)} imports {name}"
        for package in ("checks", "retrievers")
        for path in sorted((SOURCE / package).rglob("*.py"))
        for name in _imports(ast.parse(path.read_text()), loaded_only=False)
        if name.startswith("pagegraph.ingest")
    ]
    assert found == []


STORES = {"SqliteStore", "PostgresStore", "VectorStore", "BM25Index"}


def test_nothing_outside_store_makes_a_store_and_only_ingest_reaches_one() -> None:
    """An index is opened through `store.index.open_index` (the one factory), so the backend behind it (SQLite or
    PostgreSQL) is the store package's business: no other package names a store class; readers read records through
    `Index` methods, and only ingest (the writer) reaches the records behind an index."""
    reaching = []
    for path in sorted(SOURCE.rglob("*.py")):
        package = path.relative_to(SOURCE).parts[0]
        if package == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            named = (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("pagegraph.")
                and {a.name for a in node.names} & STORES
            )
            # `auth.on.store` is langgraph-sdk's hook for its key-value store, not ours
            reached = isinstance(node, ast.Attribute) and node.attr == "store" and ast.unparse(node.value) != "auth.on"
            if named or (reached and package != "ingest"):
                reaching.append(f"{path.relative_to(SOURCE)}:{node.lineno}: {ast.unparse(node)}")
    assert reaching == []


def fake_package(tmp_path: Path, files: dict[str, str], monkeypatch) -> None:
    fake = tmp_path / "pagegraph"
    for name, text in {"__init__.py": "", **files}.items():
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "SOURCE", fake)


def test_the_check_sees_an_upward_import(tmp_path: Path, monkeypatch) -> None:
    fake_package(
        tmp_path,
        {
            "state/bad.py": "from pagegraph.nodes.common import context_of\n",
            "nodes/door.py": "from pagegraph import GRAPHS\n",
            "access/records.py": "from pagegraph.access.runs import caller_access\n",  # a package's modules too
        },
        monkeypatch,
    )
    assert upward_imports() == [
        "access/records.py imports pagegraph.access.runs",
        "nodes/door.py imports pagegraph",
        "state/bad.py imports pagegraph.nodes.common",
    ]


def test_the_check_sees_a_cycle_inside_a_package(tmp_path: Path, monkeypatch) -> None:
    fake_package(
        tmp_path,
        {
            "llm/a.py": "from pagegraph.llm.b import x\n",
            "llm/b.py": "def f():\n    from pagegraph.llm.c import y\n",  # loaded lazily: no cycle through c
            "llm/c.py": "from pagegraph.llm.a import z\n",
            "llm/d.py": "from pagegraph.llm.e import x\n",
            "llm/e.py": "from pagegraph.llm.d import y\n",
        },
        monkeypatch,
    )
    assert import_cycles() == [["pagegraph.llm.d", "pagegraph.llm.e", "pagegraph.llm.d"]]


LOADED_BY_COMMAND = """
import sys
from pagegraph.cli import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted(m for m in sys.modules if m.startswith("pagegraph"))))
"""


def loaded_by(*arguments: str) -> set[str]:
    """The pagegraph modules `pagegraph ARGUMENTS` imports."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_BY_COMMAND, *arguments], capture_output=True, text=True, timeout=120, check=True
    )
    return set(done.stdout.splitlines()[-1].split())


def test_a_command_imports_what_it_runs_and_no_other_command() -> None:
    searching = loaded_by("search", "--help")
    assert "pagegraph.cli.search" in searching and "pagegraph.cli.ask" not in searching
    assert not {
        m
        for m in searching
        if m.startswith(("pagegraph.ingest", "pagegraph.store", "pagegraph.eval", "pagegraph.graphs"))
    }
    asking = loaded_by("ask", "--help")
    assert "pagegraph.cli.ask" in asking and "pagegraph.ingest.pipeline" not in asking
    assert not {m for m in asking if m.startswith(("pagegraph.eval", "pagegraph.cli.ingest", "pagegraph.server"))}
