"""SMT-LIB 2 export of each case's query, and the logic it needs (QF_LIA or QF_NIA).

The exported query is exactly what the prover asks Z3 in step 3 (see :mod:`capproof.prover`):
the case's labelled constraints (domain bounds, vector bounds, assumptions; one comment line
each), the valid division lemmas, and the negated claim. ``sat`` means a counterexample exists
in the case; ``unsat`` means the claim holds on it (or the assumptions exclude the case). The
divisor-is-zero checks are not part of the file.

File names are deterministic: ``<spec module>.<obligation>__<case>.smt2`` with the case written
``name-value_name-value`` (``all`` when there is no finite parameter), e.g.
``vllm_dsa_indexer.ebt_width_matches_runner_before_50302__block_size-64_dcp-1.smt2``.

The logic is ``QF_LIA`` when every product has at most one non-constant factor and every
``div``/``mod`` has a numeral divisor, ``QF_NIA`` otherwise (detected on the terms, not assumed).
"""

from __future__ import annotations

import os
from typing import Any

import z3

from .symbolic import uninterpreted_constants

__all__ = ["logic_of", "case_smt2", "case_file_name", "write_case"]

_NONLINEAR_OPS = (z3.Z3_OP_IDIV, z3.Z3_OP_MOD, z3.Z3_OP_REM)


def logic_of(exprs: list[z3.ExprRef]) -> str:
    """``"QF_LIA"`` if every term is linear integer arithmetic, else ``"QF_NIA"``."""
    seen: set[int] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        key = e.get_id()
        if key in seen:
            continue
        seen.add(key)
        if not z3.is_app(e):  # pragma: no cover - quantifiers are never built
            return "QF_NIA"
        kind = e.decl().kind()
        kids = e.children()
        if kind == z3.Z3_OP_MUL and sum(not z3.is_int_value(k) for k in kids) > 1:
            return "QF_NIA"
        if kind in _NONLINEAR_OPS and not z3.is_int_value(kids[1]):
            return "QF_NIA"
        if kind == z3.Z3_OP_POWER:
            return "QF_NIA"
        stack.extend(kids)
    return "QF_LIA"


def _constants(exprs: list[z3.ExprRef]) -> list[z3.FuncDeclRef]:
    out = uninterpreted_constants(exprs)
    return [out[k] for k in sorted(out)]


def case_file_name(ob: Any, fixed: dict[str, int]) -> str:
    """``<spec module>.<obligation>__<case>.smt2`` (see the module docstring)."""
    module = os.path.splitext(os.path.basename(ob.file))[0]
    case = "_".join(f"{k}-{v}" for k, v in fixed.items()) or "all"
    return f"{module}.{ob.name}__{case}.smt2"


def _comment(text: str) -> str:
    return "; " + " ".join(str(text).split())


#: SMT-LIB 2.6 reserved words and the Boolean constants: never a parameter's name in an export.
SMTLIB_RESERVED = frozenset(
    {
        "let",
        "forall",
        "exists",
        "match",
        "par",
        "as",
        "true",
        "false",
        "_",
        "!",
        "NUMERAL",
        "DECIMAL",
        "STRING",
        "BINARY",
        "HEXADECIMAL",
        "assert",
        "check-sat",
        "declare-fun",
        "define-fun",
        "exit",
        "push",
        "pop",
        "set-logic",
        "set-option",
        "set-info",
        "declare-const",
        "declare-sort",
        "define-sort",
    }
)


def case_smt2(case: Any, status: str | None = None) -> tuple[str, str]:
    """(SMT-LIB 2 text, logic) of ``case`` (a :class:`capproof.prover.CaseProblem`) with ¬claim.

    ``status`` (``"sat"``/``"unsat"``), when Z3's answer is known, goes into ``(set-info :status)``.
    """
    claim = case.claim
    body: list[tuple[str, z3.BoolRef]] = [(label, cond) for label, cond in case.constraints]
    body += [(f"assumption {name!r} is false in this case", z3.BoolVal(False)) for name in case.false_assumptions]
    body += [("valid division lemma", lemma) for lemma in case.lemmas]
    body.append(("negated claim: sat = counterexample, unsat = the claim holds", z3.Not(claim)))
    exprs = [cond for _, cond in body]
    renames = [
        (c, z3.Const(f"{c.decl().name()}__param", c.sort()))
        for c in (d() for d in _constants(exprs))
        if c.decl().name() in SMTLIB_RESERVED
    ]
    if renames:  # a parameter named like an SMT-LIB reserved word would be written bare and misparsed
        body = [(label, z3.substitute(cond, *renames)) for label, cond in body]
        exprs = [cond for _, cond in body]
    logic = logic_of(exprs)
    fixed = ", ".join(f"{k}={v}" for k, v in case.fixed.items()) or "(no finite parameters)"
    lines = [
        _comment(f"capproof query for {case.ob.id}"),
        _comment(f"case: {fixed}"),
        *([_comment(f"path: {case.path_text}")] if getattr(case, "path_text", "") else []),
        f"(set-logic {logic})",
    ]
    if status in ("sat", "unsat"):
        lines.append(f"(set-info :status {status})")
    lines += [
        d.sexpr() if d.sexpr().startswith("(declare-fun") else f"(declare-fun {d.name()} () {d.range()})"
        for d in _constants(exprs)
    ]
    for label, cond in body:
        lines.append(_comment(label))
        lines.append(f"(assert {cond.sexpr()})")
    lines += ["(check-sat)", "(exit)"]
    return "\n".join(lines) + "\n", logic


def write_case(directory: str, case: Any, status: str | None = None) -> tuple[str, str, str]:
    """Write the case's query into ``directory``; returns (path, text, logic)."""
    os.makedirs(directory, exist_ok=True)
    text, logic = case_smt2(case, status)
    name = case_file_name(case.ob, case.fixed)
    if getattr(case, "path_text", ""):  # one file per execution path of a branching model
        import hashlib

        name = name[: -len(".smt2")] + "__path-" + hashlib.sha256(case.path_text.encode()).hexdigest()[:8] + ".smt2"
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path, text, logic
