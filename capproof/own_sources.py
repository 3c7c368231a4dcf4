"""Which of capproof's own source files a verdict or a bound can depend on.

A cached verdict (``.capproof/verdicts/``, ``.capproof/crosshair/``) or a recorded bound
(``proofs/bounds.json``) is keyed on capproof's sources as well as the project's. Not every file of
capproof can change one: the command line, the report and coverage renderers, the CI formats, the
engine adapters and the inventory scanners never run while an obligation is decided. The files that
can are the static import closure (:func:`closure`) of the modules that decide (``roots``: the
runner, the prover, the bounder, the contract checker) and of the capproof modules the project's own
files import (a spec that builds its obligations with ``capproof.inventory`` depends on it).

The closure reads every ``import``/``from ... import`` of each capproof file, at module level and
inside functions, and every string constant that names a capproof module (``capproof/__init__.py``
imports its public names on first use from a table of module names, ``capproof.guard`` loads the
modules a spec author writes with by name). capproof imports no module of its own by a name computed
otherwise; ``capproof.guard`` also walks the capproof modules already loaded, to tell a model that
names a private capproof function, which a model can only do by importing that module (then in the
closure through the project's imports).
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterable

__all__ = ["DECIDING", "BOUNDING", "CHECKING", "KEYING", "closure", "capproof_sources", "imported_capproof"]

#: the modules that decide an obligation (the runner forks the workers, the prover decides)
DECIDING = ("capproof.runner", "capproof.prover")
#: the modules that bound one (``capproof bound``)
BOUNDING = ("capproof.bound",)
#: the module that checks a contract with CrossHair
CHECKING = ("capproof.contracts",)
#: the modules that compute keys and read and write the caches; what they compute is no verdict
#: and no bound, so a record that does not depend on how a cache entry is read back (the keys of
#: ``proofs/bounds.json``) leaves them out (``capproof_sources(..., keying=False)``)
KEYING = frozenset({"capproof.verdict_cache", "capproof.own_sources"})

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

_PARSED: dict[tuple[str, int, int], frozenset[str]] = {}
_HASHED: dict[tuple[str, int, int], str] = {}
_MODULES: dict[str, str] = {}
_SOURCES: dict[tuple[frozenset[str], frozenset[str], bool], str] = {}


def _modules() -> dict[str, str]:
    """capproof's modules by dotted name -> file path (packages by their ``__init__.py``); listed
    once per process (as capproof's modules are imported once)."""
    if _MODULES:
        return _MODULES
    out = _MODULES
    for dirpath, dirnames, filenames in os.walk(_PACKAGE_DIR):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        rel = os.path.relpath(dirpath, os.path.dirname(_PACKAGE_DIR)).split(os.sep)
        for name in filenames:
            if name.endswith(".py"):
                dotted = ".".join(rel if name == "__init__.py" else [*rel, name[:-3]])
                out[dotted] = os.path.join(dirpath, name)
    return out


def _stat(path: str) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size)


def _imports(path: str, package: list[str], known: dict[str, str]) -> frozenset[str]:
    """The capproof modules (names in ``known``) the file at ``path`` imports anywhere in it or
    names in a string constant; ``package``: the dotted package the file is in (for relative
    imports). Memoised on the file's path, mtime and size. A file that cannot be parsed: every
    capproof module."""
    memo = _stat(path)
    if memo is not None and memo in _PARSED:
        return _PARSED[memo]
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return frozenset(known)
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                stem = ".".join([*base, *([node.module] if node.module else [])])
            else:
                stem = node.module or ""
            names = [stem] + [f"{stem}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
            text = node.value
            names = [".".join([*package[:1], text[1:]])] if text.startswith(".") else [text]
        for name in names:
            parts = name.split(".")
            for k in range(1, len(parts) + 1):  # a module's packages are imported before it
                if ".".join(parts[:k]) in known:
                    found.add(".".join(parts[:k]))
    out = frozenset(found)
    if memo is not None:
        _PARSED[memo] = out
    return out


def imported_capproof(files: Iterable[str]) -> frozenset[str]:
    """The capproof modules the (project) ``files`` import, anywhere in them."""
    known = _modules()
    out: set[str] = set()
    for path in files:
        out |= _imports(path, [], known)
    return frozenset(out)


def closure(roots: Iterable[str]) -> frozenset[str]:
    """The capproof modules importing ``roots`` (dotted names) can run, read statically and
    transitively (a package's ``__init__`` with each of its modules)."""
    known = _modules()
    seen: set[str] = set()
    todo = [r for r in roots if r in known]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = known[name]
        package = name.split(".") if path.endswith("__init__.py") else name.split(".")[:-1]
        todo += _imports(path, package, known) - seen
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]
    return frozenset(seen)


def _file_hash(path: str) -> str:
    memo = _stat(path)
    if memo is None:
        return "missing"
    if memo not in _HASHED:
        with open(path, "rb") as fh:
            _HASHED[memo] = hashlib.sha256(fh.read()).hexdigest()
    return _HASHED[memo]


def capproof_sources(roots: Iterable[str], files: Iterable[str] = (), keying: bool = True) -> str:
    """SHA-256 over the relative paths and bytes of capproof's source files that ``roots`` (dotted
    module names, e.g. :data:`DECIDING`) and the project ``files`` (paths) can import
    (:func:`closure`). The same in every checkout of the same sources. capproof's own files are read
    once per process for each set of roots (as its modules are imported once); the project files'
    imports are read again when a file changes. ``keying`` False: without :data:`KEYING`."""
    memo = (frozenset(roots), imported_capproof(files), keying)
    if memo not in _SOURCES:
        _SOURCES[memo] = _sources(memo[0] | memo[1], keying)
    return _SOURCES[memo]


def _sources(roots: frozenset[str], keying: bool) -> str:
    known = _modules()
    names = closure(roots) - (frozenset() if keying else KEYING)
    top = os.path.dirname(_PACKAGE_DIR)
    h = hashlib.sha256()
    for name in sorted(names):
        path = known[name]
        h.update(f"{os.path.relpath(path, top)}={_file_hash(path)}\n".encode())
    return h.hexdigest()
