"""The import graph of capproof/ keeps the layering docs/architecture.md describes.

Built statically with ``ast`` from every ``import`` in capproof/, at module level and inside
functions alike (a function-level import is still a dependency: it only defers the cycle to the
first call). Checks:

- no import circle between modules;
- no ``_private`` name of one module imported (or read as ``module._name``) by another;
- no core module (outside ``capproof/engines/``) imports an engine-specific module
  (``capproof/engines/<engine>/``; ``engines/tracing/`` knows no engine) except the allow-listed
  ones below;
- spec/ and models/ import only the public facade (``from capproof import ...``).

An allow-list entry needs a reason; an entry that no longer matches anything fails too, so the
lists only shrink.
"""

from __future__ import annotations

import ast
import functools
import os
from collections import defaultdict
from dataclasses import dataclass

from conftest import ROOT

PACKAGE = "capproof"

#: (importing module, imported module) pairs of a core module importing an engine-specific one
#: (the command line reaches engines through capproof.engines.registry)
ENGINE_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {}

#: The layers of docs/architecture.md, lowest first: a module imports its own layer and those below.
LAYERS = [
    (
        "language",
        {
            "capproof",
            "_audit",
            "provenance",
            "errors",
            "symbolic",
            "arith",
            "domain",
            "obligation",
            "guard",
            "_iteration",
            "verdict",
            "_engine",
            "purity",
        },
    ),
    (
        "one obligation",
        {
            "encode",
            "normalise",
            "probe",
            "shrink",
            "minimize",
            "aggregate",
            "induction",
            "prover",
            "contracts",
            "smtlib",
            "crosscheck",
            "second_opinion",
            "own_sources",
        },
    ),
    ("analyses", {"density", "inventory", "facts", "coverage"}),
    ("many obligations", {"loader", "runner", "verdict_cache", "project", "pytest_plugin", "bound"}),
    ("outputs", {"report", "ci_formats", "regressions", "locate"}),
    ("engines", {"engines"}),  # capproof/engines/** beside the pipeline, above what it uses
    ("command line", {"cli", "__main__"}),
]

#: imports that run up a layer, and why (docs/architecture.md, "Where the layering bends")
UPWARD_ALLOWED = {
    ("capproof.prover", "capproof.density"): "a reported counterexample carries its failure density",
    (
        "capproof.contracts",
        "capproof.loader",
    ): "puts the project on sys.path before it imports the contract's model module",
    ("capproof.pytest_plugin", "capproof.report"): "a failing item shows the result lines `capproof prove` prints",
}


#: spec/ and models/ files that import below the facade, and why
FACADE_EXCEPTIONS = {
    "spec/_inventory.py": "reads the engine inventory (capproof.inventory: Entry, capacity, load) and states "
    "obligations from it, which needs Domain and obligation.function_source",
    "spec/vllm_0_33_derived.py": "reads the inventory's derived demands and capacities (capproof.inventory: "
    "load, derived, demand, bound_name, capacity)",
    "spec/vllm_0_33_derived_columns.py": "reads the inventory's derived block-table column demands and widths "
    "(capproof.inventory: load, derived, demand, bound_name, capacity)",
    "spec/vllm_0_33_facts.py": "reads the inventory's derived token rows and capacities (capproof.inventory: "
    "load, derived, demand, capacity, expression_names)",
    "spec/sglang_0_5_23_derived.py": "reads the SGLang inventory's derived demands and capacities "
    "(capproof.inventory: load, derived, demand, capacity, expression_names)",
    "spec/vllm_0_33_kernel_extents.py": "reads the inventory's derived kernel extents and guarded slices "
    "(capproof.inventory: load, derived, demand, bound_name, capacity)",
    "spec/vllm_0_33_local_attention.py": "reads the inventory's derived chunked-local-attention rows and "
    "capacities (capproof.inventory: load, derived, evaluate, capacity)",
    "spec/vllm_0_33_dflash_dummy_runs.py": "reads the inventory's traced capacity of the speculator's input "
    "buffers (capproof.inventory: load, capacity)",
}

#: (importing module, owning module, name) of private names still imported across modules
PRIVATE_ALLOWED: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    name: str  # the name taken from it ("" for the module itself)
    line: int
    in_function: bool


def _modules(root: str) -> dict[str, tuple[str, bool]]:
    """``{dotted module name: (path, is_package)}`` for every .py file under ``root/capproof``."""
    out = {}
    base = os.path.join(root, PACKAGE)
    for folder, _, files in os.walk(base):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            out[".".join(parts)] = (path, is_pkg)
    return out


def _absolute(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


class _Collector(ast.NodeVisitor):
    """The capproof imports of one module (noting those inside a function body, which run at the
    first call) and its ``alias._name`` reads through an imported capproof module."""

    def __init__(self, module: str, is_pkg: bool, modules: dict):
        self.module, self.is_pkg, self.modules = module, is_pkg, modules
        self.depth = 0
        self.found: list[Import] = []
        self.aliases: dict[str, str] = {}
        self.attributes: list[tuple[str, int]] = []

    def _function(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        """``if TYPE_CHECKING:`` blocks never run: their imports are for type checkers only."""
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == PACKAGE or a.name.startswith(PACKAGE + "."):
                self.found.append(Import(self.module, a.name, "", node.lineno, self.depth > 0))
                if a.asname:
                    self.aliases[a.asname] = a.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            target = _absolute(self.module, self.is_pkg, node.level, node.module)
        elif node.module and node.module.split(".")[0] == PACKAGE:
            target = node.module
        else:
            return
        for a in node.names:
            sub = f"{target}.{a.name}"
            if sub in self.modules:  # `from . import symbolic`: the submodule itself
                self.found.append(Import(self.module, sub, "", node.lineno, self.depth > 0))
                self.aliases[a.asname or a.name] = sub
            else:
                self.found.append(Import(self.module, target, a.name, node.lineno, self.depth > 0))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and _private(node.attr):
            self.attributes.append((node.value.id, node.attr, node.lineno))
        self.generic_visit(node)


@functools.lru_cache(maxsize=None)
def imports(root: str = ROOT) -> tuple[dict[str, tuple[str, bool]], list[Import], list[tuple[str, str, str, int]]]:
    """The modules, their imports of capproof modules, and the ``alias._name`` reads of private
    names through an imported capproof module: ``(source, target, name, line)``."""
    modules = _modules(root)
    found: list[Import] = []
    attribute_reads: list[tuple[str, str, str, int]] = []
    for module, (path, is_pkg) in modules.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        collector = _Collector(module, is_pkg, modules)
        collector.visit(tree)
        found += collector.found
        attribute_reads += [
            (module, collector.aliases[alias], attr, line)
            for alias, attr, line in collector.attributes
            if alias in collector.aliases
        ]
    return modules, found, attribute_reads


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _graph(modules, found: list[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for m in modules:
        graph[m]
    for imp in found:
        if imp.target in modules and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    return graph


#: packages under capproof/engines/ that know no engine
ENGINE_NEUTRAL = {"tracing"}


def _engine_specific(module: str) -> bool:
    parts = module.split(".")
    return len(parts) >= 4 and parts[:2] == [PACKAGE, "engines"] and parts[2] not in ENGINE_NEUTRAL


def _core(module: str) -> bool:
    return not module.startswith(f"{PACKAGE}.engines")


def test_the_graph_sees_module_and_function_level_imports():
    """The checks below read every import: the prover's deferred imports are in the graph."""
    modules, found, _ = imports()
    assert {"capproof.prover", "capproof.encode", "capproof.symbolic", "capproof.cli"} <= set(modules)
    prover = {(i.target, i.in_function) for i in found if i.source == "capproof.prover"}
    assert ("capproof.encode", False) in prover and ("capproof.aggregate", True) in prover
    assert any(i.in_function for i in found if i.source == "capproof.cli")


def test_no_import_circles():
    modules, found, _ = imports()
    assert _cycles(_graph(modules, found)) == []


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_is_imported_across_modules():
    modules, found, reads = imports()
    used = [
        (i.source, i.target, i.name)
        for i in found
        if i.name and _private(i.name) and i.target != i.source and i.target in modules
    ]
    used += [(source, target, name) for source, target, name, _ in reads if target != source]
    unexplained = sorted(set(used) - set(PRIVATE_ALLOWED))
    assert unexplained == [], "give these helpers a public name in their module: " + repr(unexplained)
    assert set(PRIVATE_ALLOWED) <= set(used), "stale PRIVATE_ALLOWED entries"


def test_core_modules_reach_engine_specific_code_only_where_allowed():
    modules, found, _ = imports()
    pairs = {
        (i.source, i.target) for i in found if _core(i.source) and _engine_specific(i.target) and i.target in modules
    }
    assert pairs - set(ENGINE_IMPORTS_ALLOWED) == set()
    assert set(ENGINE_IMPORTS_ALLOWED) <= pairs, "stale ENGINE_IMPORTS_ALLOWED entries"
    assert all(reason for reason in ENGINE_IMPORTS_ALLOWED.values())


#: Modules that reach an engine only through its adapter (capproof.engines.registry)
ENGINE_BLIND = ("capproof/cli.py", "capproof/engines/checkconfig.py")


def _engine_mentions(path: str, names: tuple[str, ...]) -> list[str]:
    """Where the module at ``path`` names an engine: an import of an engine's package, an
    identifier holding an engine's name (``VLLM_VERSION``, ``run_check_sglang``), or a string
    holding it as the registry spells it (``"vllm"``, ``"sglang==0.5.23"``, ``"vllm serve MODEL"``).
    Prose that cites an engine's behaviour by its written name (``vLLM``) is not a switch on it."""
    import re

    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    word = re.compile(r"(?<![A-Za-z])(" + "|".join(map(re.escape, names)) + r")(?![a-z])")
    ident = re.compile("|".join(map(re.escape, names)), re.I)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".")
            if any(part in names for part in module) or any(a.name in names for a in node.names):
                found.append(f"line {node.lineno}: import from {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if set(a.name.split(".")) & set(names)]
        elif isinstance(node, ast.Name) and ident.search(node.id):
            found.append(f"line {node.lineno}: name {node.id}")
        elif isinstance(node, ast.Attribute) and ident.search(node.attr):
            found.append(f"line {node.lineno}: attribute {node.attr}")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ident.search(node.name):
            found.append(f"line {node.lineno}: definition {node.name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and word.search(node.value):
            found.append(f"line {node.lineno}: string {node.value[:60]!r}")
    return found


def test_the_command_line_and_check_config_name_no_engine():
    """cli.py and checkconfig.py use engines through their adapters only: adding an engine is an
    adapter and a registry entry, not a branch in either."""
    from capproof.engines.registry import engine_names

    names = engine_names()
    assert {"vllm", "sglang"} <= set(names)
    assert {path: _engine_mentions(path, names) for path in ENGINE_BLIND} == {path: [] for path in ENGINE_BLIND}


def test_the_engine_mention_finder_sees_a_switch_on_an_engine(tmp_path):
    source = 'from .vllm.serve import parse_serve_args\nVLLM_VERSION = 1\nif engine == "sglang":\n    pass\n'
    (tmp_path / "m.py").write_text(source + '"""vLLM reads config.json"""\n')
    found = _engine_mentions(str(tmp_path / "m.py"), ("vllm", "sglang"))
    assert [f.split(":")[0] for f in found] == ["line 1", "line 2", "line 3"]


def _facade_violations(folder: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for base, _, files in os.walk(os.path.join(ROOT, folder)):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(base, f)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            bad = []
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    if node.module.startswith(PACKAGE + "."):
                        bad.append(f"line {node.lineno}: from {node.module} import ...")
                elif isinstance(node, ast.Import):
                    bad += [
                        f"line {node.lineno}: import {a.name}" for a in node.names if a.name.startswith(PACKAGE + ".")
                    ]
            if bad:
                out[os.path.relpath(path, ROOT)] = bad
    return out


def test_spec_and_models_import_only_the_public_facade():
    violations = {**_facade_violations("spec"), **_facade_violations("models")}
    unexplained = {k: v for k, v in violations.items() if k not in FACADE_EXCEPTIONS}
    assert unexplained == {}, "import these names from `capproof` (export them there if needed)"
    assert set(FACADE_EXCEPTIONS) <= set(violations), "stale FACADE_EXCEPTIONS entries"


def test_every_public_name_of_the_facade_resolves():
    """What spec authors write (``from capproof import ...``) works for every name in ``__all__``."""
    import capproof

    missing = [name for name in capproof.__all__ if getattr(capproof, name, None) is None]
    assert missing == []


def _layer(module: str) -> int | None:
    short = module[len(PACKAGE) + 1 :] if module != PACKAGE else PACKAGE
    top = short.split(".")[0]
    for i, (_, members) in enumerate(LAYERS):
        if short in members or top in members:
            return i
    return None


def test_every_module_has_a_layer_and_imports_only_its_own_or_lower_layers():
    modules, found, _ = imports()
    assert [m for m in modules if _layer(m) is None] == [], "place new modules in LAYERS (and docs/architecture.md)"
    upward = {
        (i.source, i.target)
        for i in found
        if i.target in modules and i.target != i.source and _layer(i.target) > _layer(i.source)
    }
    assert upward - set(UPWARD_ALLOWED) == set()
    assert set(UPWARD_ALLOWED) <= upward, "stale UPWARD_ALLOWED entries"


def test_comments_cite_no_session_or_issue_number():
    """Comments say what and why; which session or tracker issue a change came from is git history.
    (Upstream engine issues are cited as ``vllm-project/vllm#N``.)"""
    import re

    cited = []
    for path, _ in imports()[0].values():
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if re.search(r"\b(?:session|issue) \d+\b", line, re.I):
                    cited.append(f"{os.path.relpath(path, ROOT)}:{number}")
    assert cited == []


def test_the_facade_gives_type_checkers_every_public_name():
    """capproof/__init__.py's type-checking block (what mypy reads instead of ``__getattr__``)
    imports every name of ``__all__`` from the module ``__getattr__`` loads it from."""
    import capproof

    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {
        a.asname: ("." + node.module, a.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert typed == {name: capproof._WHERE[name] for name in capproof.__all__}
