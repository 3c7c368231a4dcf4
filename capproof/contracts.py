"""Check PEP 316 contracts of models/ with CrossHair's Python API.

Mapping of CrossHair message states to verdicts (worst first):

=====================================  ==============
``POST_FAIL``, ``EXEC_ERR``, ``POST_ERR``  counterexample (CrossHair's message names the input)
``SYNTAX_ERR``, ``IMPORT_ERR``           error
``CANNOT_CONFIRM``                       unknown (paths left unexplored: never proved)
``PRE_UNSAT``                            vacuous (no input satisfies the preconditions)
``CONFIRMED`` on every postcondition     proved (all paths explored within the timeout)
=====================================  ==============

Each postcondition gets an explicit ``per_condition_timeout``; CrossHair only says ``CONFIRMED``
once the whole path tree is exhausted, so a pass means "holds on all paths".

Verdict cache (``Options.crosshair_cache``, on by default; ``--no-cache`` turns it off): a proved,
counterexample or vacuous verdict is stored in ``.capproof/crosshair/<key>.json`` under the
working directory, keyed by the SHA-256 of everything that can change it: the target, the
timeout, the working directory (messages name files relative to it), the Python, CrossHair and
Z3 versions, the bytes of capproof's own sources that the check and the model can import
(:mod:`capproof.own_sources`; all of them when the model's imports cannot be listed), and the bytes (and paths) of the project's
``.py`` files the target's module can import (:func:`reached_files`: its module, the modules it
imports at module level or inside a function, transitively, and their packages' ``__init__.py``),
so an edit to one model re-checks only the contracts whose modules can import it. A module that
imports by a computed name (``importlib``, ``__import__``) makes the key cover every ``.py`` file
of the target's top-level package (``models/``). Unknown and error verdicts (timeouts, load-dependent) are never cached.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
import time

from .loader import ensure_project_on_path
from .obligation import Contract
from .verdict import ContractResult, Options, Verdict

__all__ = ["check_contract", "resolve_target", "reached_files"]


def resolve_target(target: str):
    """``models/x.py::Class.method`` -> CrossHair FunctionInfo. Raises LookupError/ImportError."""
    from crosshair.fnutil import FunctionInfo

    if "::" not in target:
        raise LookupError(f"contract target {target!r} must look like 'models/file.py::name'")
    path, qualname = target.split("::", 1)
    if not path.endswith(".py"):
        raise LookupError(f"contract target {target!r}: {path} is not a .py file")
    ensure_project_on_path()
    module_name = path[:-3].replace("/", ".").replace(os.sep, ".")
    module = importlib.import_module(module_name)
    parts = qualname.split(".")
    if len(parts) == 1:
        fn = getattr(module, parts[0], None)
        if fn is None:
            raise LookupError(f"{path} has no function {parts[0]!r}")
        return FunctionInfo.from_fn(fn)
    if len(parts) == 2:
        cls = getattr(module, parts[0], None)
        if not inspect.isclass(cls):
            raise LookupError(f"{path} has no class {parts[0]!r}")
        if parts[1] not in vars(cls) and not hasattr(cls, parts[1]):
            raise LookupError(f"{parts[0]} has no method {parts[1]!r}")
        return FunctionInfo(cls, parts[1], inspect.getattr_static(cls, parts[1]))
    raise LookupError(f"contract target {target!r}: nested names are not supported")


#: Verdicts safe to reuse: they do not depend on how fast the machine was.
_CACHEABLE = ("proved", "counterexample", "vacuous")


def tree_hash(root: str) -> str:
    """SHA-256 over the relative paths and bytes of every ``.py`` file under ``root`` (read each
    time: a few hundred kB, milliseconds; a memo would miss an edit made in the same process)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as fh:
                    h.update(fh.read() + b"\0")
    return h.hexdigest()


#: Words in a model's source that import by a computed name: its imports cannot be listed statically.
_DYNAMIC_IMPORT = ("importlib", "__import__", "import_module", "sys.modules", "exec(", "eval(")


def _module_file(root: str, dotted: str) -> list[str]:
    """The project files importing ``dotted`` (a module name) runs, under ``root``: each package's
    ``__init__.py`` on the way, and the module's own file; [] when it is not a project module."""
    parts = dotted.split(".")
    files = []
    for k in range(1, len(parts) + 1):
        base = os.path.join(root, *parts[:k])
        if os.path.isfile(os.path.join(base, "__init__.py")):
            files.append(os.path.join(base, "__init__.py"))
        elif k == len(parts) and os.path.isfile(base + ".py"):
            files.append(base + ".py")
        else:
            return files if k > 1 else []
    return files


def reached_files(module_file: str, root: str) -> list[str] | None:
    """The project ``.py`` files (under ``root``, the directory the project's packages are in)
    that importing ``module_file`` can run, read statically: its packages' ``__init__.py``, and every ``import``/``from ... import``
    of every file reached, at module level and inside functions, resolved to files under
    ``root`` (a package's ``__init__.py`` too), transitively; sorted. None: some reached file
    imports by a computed name (:data:`_DYNAMIC_IMPORT`) or cannot be parsed: not bounded."""
    import ast

    root = os.path.abspath(root)
    dotted = os.path.relpath(os.path.abspath(module_file), root)[:-3].replace(os.sep, ".").removesuffix(".__init__")
    todo = [os.path.abspath(module_file), *_module_file(root, dotted)]  # (and its packages' __init__.py)
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            tree = ast.parse(text, path)
        except (OSError, SyntaxError, ValueError):
            return None
        if any(word in text for word in _DYNAMIC_IMPORT):
            return None
        rel = os.path.relpath(path, root)[:-3].split(os.sep)
        package = rel[:-1]  # the package this file is in (for a package's __init__, the package itself)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                    stem = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    stem = node.module or ""
                names = [stem] + [f"{stem}.{a.name}" for a in node.names if a.name != "*"]
            for name in names:
                if name and not name.startswith("capproof"):
                    todo += _module_file(root, name)
    return sorted(seen)


def cache_key(target: str, timeout: float) -> str:
    """The cache key of ``target`` checked with ``timeout`` (see the module docstring).
    Raises ImportError/LookupError as :func:`resolve_target` does."""
    import crosshair
    import z3

    resolve_target(target)  # validates the target and imports its module
    module = importlib.import_module(_module_name(target))
    top = sys.modules[module.__name__.split(".")[0]]
    top_dir = os.path.dirname(os.path.abspath(top.__file__ or ""))
    package = top.__file__ and os.path.basename(top.__file__) == "__init__.py"
    reached = reached_files(module.__file__, os.path.dirname(top_dir)) if package and module.__file__ else None
    from .own_sources import CHECKING, capproof_sources

    if reached is None:  # imports not listed statically: the whole top-level package, all of capproof
        sources = [tree_hash(top_dir) if package else "", _file_hash(module.__file__ or "")]
        own = tree_hash(os.path.dirname(os.path.abspath(__file__)))
    else:
        root = os.path.dirname(top_dir)
        sources = [f"{os.path.relpath(f, root)}={_file_hash(f)}" for f in reached]
        own = capproof_sources(CHECKING, reached)
    parts = [
        "capproof-crosshair-cache-v2",
        target,
        repr(float(timeout)),
        os.getcwd(),
        sys.version,
        getattr(crosshair, "__version__", "?"),
        z3.get_version_string(),
        *sources,
        own,
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _file_hash(path: str) -> str:
    if not path or not os.path.exists(path):
        return ""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _module_name(target: str) -> str:
    path = target.split("::", 1)[0]
    return path[:-3].replace("/", ".").replace(os.sep, ".")


def _cache_path(key: str) -> str:
    return os.path.join(os.getcwd(), ".capproof", "crosshair", f"{key}.json")


def _cache_load(key: str) -> dict | None:
    try:
        with open(_cache_path(key), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("verdict") not in _CACHEABLE:
        return None
    return data


def _cache_store(key: str, result: ContractResult) -> None:
    if result.verdict.value not in _CACHEABLE:
        return
    path = _cache_path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "verdict": result.verdict.value,
                    "message": result.message,
                    "conditions": result.conditions,
                    "computed_seconds": result.seconds,
                },
                fh,
            )
        os.replace(tmp, path)
    except OSError:  # a read-only checkout still checks, it just does not remember
        pass


_STATE_VERDICT = {
    "post_fail": Verdict.COUNTEREXAMPLE,
    "exec_err": Verdict.COUNTEREXAMPLE,
    "post_err": Verdict.COUNTEREXAMPLE,
    "syntax_err": Verdict.ERROR,
    "import_err": Verdict.ERROR,
    "cannot_confirm": Verdict.UNKNOWN,
    "pre_unsat": Verdict.VACUOUS,
    "confirmed": Verdict.PROVED,
}
_RANK = [Verdict.ERROR, Verdict.COUNTEREXAMPLE, Verdict.UNKNOWN, Verdict.VACUOUS, Verdict.PROVED]


def check_contract(
    contract: Contract, options: Options | None = None, cache_only: bool = False
) -> ContractResult | None:
    """Run CrossHair on ``contract.target`` and map its messages to one verdict (never raises).

    With ``options.crosshair_cache`` a verdict cached under the same key is returned instead
    (``cached`` set). ``cache_only``: return None instead of running CrossHair on a miss."""
    options = options or Options()
    started = time.perf_counter()
    result = ContractResult(
        id=contract.id,
        expect=contract.expect,
        verdict=Verdict.ERROR,
        message="",
        case=contract.case,
        sources=contract.sources,
        file=contract.file,
        line=contract.line,
    )
    timeout = max(options.crosshair_timeout, contract.crosshair_timeout or 0)
    key = None
    if options.crosshair_cache:
        try:
            ensure_project_on_path()
            key = cache_key(contract.target, timeout)
        except BaseException as exc:  # noqa: BLE001 - the uncached path reports the problem
            if isinstance(exc, KeyboardInterrupt):
                raise
            key = None
        hit = _cache_load(key) if key else None
        if hit is not None:
            result.verdict = Verdict(hit["verdict"])
            result.message = hit.get("message", "")
            result.conditions = list(hit.get("conditions", []))
            result.seconds = time.perf_counter() - started
            result.cached = True
            return result
    if cache_only:
        return None
    result = _check_uncached(contract, result, timeout, started)
    if key:
        _cache_store(key, result)
    return result


def _check_uncached(contract: Contract, result: ContractResult, timeout: float, started: float) -> ContractResult:
    try:
        import crosshair.core_and_libs  # noqa: F401 - installs CrossHair's opcode patches
        from crosshair.core import analyze_function, run_checkables
        from crosshair.options import AnalysisOptionSet

        info = resolve_target(contract.target)
        opts = AnalysisOptionSet(
            per_condition_timeout=timeout,
            max_uninteresting_iterations=sys.maxsize,
            report_all=True,
        )
        messages = run_checkables(analyze_function(info, opts))
    except BaseException as exc:  # noqa: BLE001 - CrossHairInternal is a BaseException
        if isinstance(exc, KeyboardInterrupt):
            raise
        result.message = f"{contract.target}: {type(exc).__name__}: {exc}"
        result.seconds = time.perf_counter() - started
        return result

    if not messages:
        result.message = f"{contract.target}: no PEP 316 postcondition found (add 'post:' lines to its docstring)"
        result.seconds = time.perf_counter() - started
        return result
    conditions = []
    verdicts = []
    for m in messages:
        state = m.state.value if hasattr(m.state, "value") else str(m.state)
        verdict = _STATE_VERDICT.get(state, Verdict.ERROR)
        verdicts.append(verdict)
        where = f"{os.path.relpath(m.filename)}:{m.line}" if m.filename else ""
        conditions.append({"state": state, "verdict": verdict.value, "where": where, "message": m.message})
    worst = min(verdicts, key=_RANK.index)
    result.verdict = worst
    result.conditions = conditions
    picked = next(c for c, v in zip(conditions, verdicts) if v is worst)
    if worst is Verdict.PROVED:
        result.message = f"CrossHair confirmed {len(conditions)} condition(s) on all paths"
    else:
        result.message = f"{picked['state']}: {picked['message']}" + (
            f" ({picked['where']})" if picked["where"] else ""
        )
    result.seconds = time.perf_counter() - started
    return result
