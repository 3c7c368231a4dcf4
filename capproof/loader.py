"""Find spec files, import them, and collect their obligations and contracts.

A spec file that fails to import (syntax error, import error, an exception at module level)
becomes one :class:`LoadError`; the other files still load.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import Iterable, Union

from .obligation import CREATED, Contract, Obligation

__all__ = ["LoadError", "Item", "discover", "load_file", "load", "ensure_project_on_path", "keyword_matcher"]


@dataclass
class LoadError:
    file: str
    message: str

    @property
    def id(self) -> str:
        return self.file


Item = Union[Obligation, Contract]


def ensure_project_on_path(root: str | None = None) -> str:
    """Put the project root (default: the working directory) first on ``sys.path``."""
    root = os.path.abspath(root or os.getcwd())
    if root not in sys.path:
        sys.path.insert(0, root)
    return root


def discover(paths: Iterable[str]) -> tuple[list[str], list[LoadError]]:
    """Spec files under ``paths`` (files or directories), sorted; missing paths are errors."""
    files: list[str] = []
    errors: list[LoadError] = []
    for path in paths:
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
                for fn in sorted(filenames):
                    if fn.endswith(".py") and not fn.startswith("_"):
                        files.append(os.path.relpath(os.path.join(dirpath, fn)))
        elif os.path.isfile(path):
            files.append(os.path.relpath(path))
        else:
            errors.append(LoadError(path, f"{path}: no such spec file or directory"))
    seen: list[str] = []
    for f in files:
        if f not in seen:
            seen.append(f)
    return seen, errors


_loaded: dict[str, list[Item]] = {}


def _module_name(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    stem = rel[:-3] if rel.endswith(".py") else rel
    if not stem.startswith(".."):
        return "capproof_spec." + stem.replace(os.sep, ".").replace("-", "_")
    return "capproof_spec._ext_" + str(abs(hash(os.path.abspath(path))))


def load_file(path: str) -> list[Item] | LoadError:
    """Import one spec file and return its obligations and contracts in source order."""
    key = os.path.abspath(path)
    if key in _loaded:
        return _loaded[key]
    ensure_project_on_path()
    name = _module_name(path)
    mark = len(CREATED)
    from .symbolic import machinery_bindings, note_tampering

    bindings = machinery_bindings()
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return LoadError(path, f"{path}: not an importable Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        return LoadError(path, f"{path}:{exc.lineno}: SyntaxError: {exc.msg}")
    except BaseException as exc:  # noqa: BLE001 - any failure of user code is reported, not raised
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == key]
        where = f":{frames[-1].lineno}" if frames else ""
        return LoadError(path, f"{path}{where}: {type(exc).__name__}: {exc}")
    # Everything this file declared (not what it imported from other spec files).
    items: list[Item] = [it for it in CREATED[mark:] if os.path.abspath(it.file) == key]
    tampered = note_tampering(bindings, path)
    for it in items if tampered else ():
        it.problems.append(f"{path} changes capproof's own machinery at import ({', '.join(tampered[:3])})")
    items.sort(key=lambda it: it.line)
    seen: set[str] = set()
    for it in items:
        if it.id in seen and isinstance(it, Obligation):
            it.problems.append(f"duplicate obligation id {it.id} (another obligation has the same name)")
        seen.add(it.id)
    _loaded[key] = items
    return items


_WORD = re.compile(r"\s*(\(|\)|[^\s()]+)")


def keyword_matcher(expression: str | None):
    """pytest-style ``-k``: ``a and not (b or c)`` over words, each matching an item whose id
    contains it or whose corpus case equals it. Raises ValueError on a malformed expression."""
    if expression is None:
        return lambda item_id, case: True
    tokens = _WORD.findall(expression)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def parse_or():
        terms = [parse_and()]
        while peek() == "or":
            take()
            terms.append(parse_and())
        return lambda i, c: any(t(i, c) for t in terms)

    def parse_and():
        terms = [parse_not()]
        while peek() == "and":
            take()
            terms.append(parse_not())
        return lambda i, c: all(t(i, c) for t in terms)

    def parse_not():
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda i, c: not inner(i, c)
        token = peek()
        if token is None or token in ("and", "or", ")"):
            raise ValueError(f"-k {expression!r}: expected a word at {'the end' if token is None else repr(token)}")
        take()
        if token == "(":
            inner = parse_or()
            if peek() != ")":
                raise ValueError(f"-k {expression!r}: missing ')'")
            take()
            return inner
        return lambda i, c, w=token: w in i or w == c

    if not tokens:
        raise ValueError("-k: empty expression")
    matcher = parse_or()
    if pos != len(tokens):
        raise ValueError(f"-k {expression!r}: unexpected {tokens[pos]!r}")
    if len(tokens) == 1:  # a single word: substring of the id, or the exact case (as before)
        return lambda i, c, w=tokens[0]: w in i or w == c
    return matcher


def load(paths: Iterable[str], keyword: str | None = None) -> tuple[list[Item], list[LoadError]]:
    """All obligations and contracts under ``paths`` matching ``keyword`` (see :func:`keyword_matcher`)."""
    try:
        match = keyword_matcher(keyword)
    except ValueError as exc:
        return [], [LoadError("-k", str(exc))]
    files, errors = discover(paths)
    items: list[Item] = []
    for f in files:
        loaded = load_file(f)
        if isinstance(loaded, LoadError):
            if keyword is None or match(loaded.file, None):
                errors.append(loaded)
            continue
        items.extend(it for it in loaded if match(it.id, it.case))
    return items, errors
