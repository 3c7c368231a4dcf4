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
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import time

from .loader import ensure_project_on_path
from .obligation import Contract
from .verdict import ContractResult, Options, Verdict

__all__ = ["check_contract", "resolve_target"]


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


def check_contract(contract: Contract, options: Options | None = None) -> ContractResult:
    """Run CrossHair on ``contract.target`` and map its messages to one verdict (never raises)."""
    options = options or Options()
    started = time.perf_counter()
    result = ContractResult(
        id=contract.id, expect=contract.expect, verdict=Verdict.ERROR, message="",
        case=contract.case, sources=contract.sources, file=contract.file, line=contract.line,
    )
    try:
        import crosshair.core_and_libs  # noqa: F401 - installs CrossHair's opcode patches
        from crosshair.core import analyze_function, run_checkables
        from crosshair.options import AnalysisOptionSet

        info = resolve_target(contract.target)
        opts = AnalysisOptionSet(
            per_condition_timeout=max(options.crosshair_timeout, contract.crosshair_timeout or 0),
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
        result.message = f"{picked['state']}: {picked['message']}" + (f" ({picked['where']})" if picked["where"] else "")
    result.seconds = time.perf_counter() - started
    return result
