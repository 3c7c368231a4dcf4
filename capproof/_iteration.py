"""Where a model iterates a batch: the bytecode sites shared by the aggregate abstraction
(:mod:`capproof.aggregate`) and induction over the batch (:mod:`capproof.induction`).

Both replace a batch by one representative entry, which is sound only where the iteration is
consumed by a quantifier-like call: ``all_of(*(P(d) for d in batch))`` (every entry) or
``total(f(d) for d in batch)`` (a sum over entries). These helpers find such a site at the
batch's ``GET_ITER`` and check, when ``all_of`` runs, that it is the call that site names.
"""

from __future__ import annotations

import dis
import os
import sys

import z3

from .symbolic import SymInt, uninterpreted_constants

_GET_ITER = dis.opmap.get("GET_ITER")


def concrete(value: object) -> bool:
    """A plain int (a SymInt passes ``isinstance(x, int)``: its ``__class__`` says int)."""
    return isinstance(value, int) and not isinstance(value, SymInt)


def shown(path: str) -> str:
    """``path`` relative to the working directory, for messages."""
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return path


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_location(frame) -> str:
    """``path:line`` of ``frame`` or, when it is capproof's own code (``arith.fold`` iterating a
    batch for the model), of the innermost caller outside capproof: messages name the model's or
    the spec's line, which does not move when capproof changes."""
    inner = frame
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    frame = frame if frame is not None else inner
    return f"{shown(frame.f_code.co_filename)}:{frame.f_lineno}"


def at_get_iter(frame) -> bool:
    """True when ``frame`` is executing a ``GET_ITER`` (the iteration starts a ``for`` or a comprehension)."""
    code = frame.f_code.co_code
    return _GET_ITER is not None and frame.f_lasti < len(code) and code[frame.f_lasti] == _GET_ITER


def _made_here(frame, names: tuple[str, ...]):
    """(instructions, index of the current ``GET_ITER``) when the iterated object feeds a
    comprehension created just before it whose code is named one of ``names``; else None."""
    instrs = [i for i in dis.get_instructions(frame.f_code) if i.opname != "CACHE"]
    at = next((k for k, i in enumerate(instrs) if i.offset == frame.f_lasti), None)
    if at is None or at < 3:
        return None
    if not (instrs[at - 2].opname == "MAKE_FUNCTION" and getattr(instrs[at - 3].argval, "co_name", "") in names):
        return None
    return instrs, at


def all_of_site(frame) -> int | None:
    """The offset of the ``CALL_FUNCTION_EX`` that passes the generator expression created at
    ``frame``'s current ``GET_ITER`` as star-arguments (``f(*(... for d in b))`` or
    ``f(x, *(... for d in b))``), or None for any other use of the iteration."""
    made = _made_here(frame, ("<genexpr>",))
    if made is None:
        return None
    instrs, at = made
    calls = [i for i in instrs[at + 1 : at + 6] if i.opname != "PRECALL"]
    ops = [c.opname for c in calls]
    if ops[:2] == ["CALL", "CALL_FUNCTION_EX"]:
        tail = 1
    elif ops[:4] == ["CALL", "LIST_EXTEND", "LIST_TO_TUPLE", "CALL_FUNCTION_EX"]:
        tail = 3
    else:
        return None
    if calls[0].arg != 0:
        return None
    return calls[tail].offset


def total_site(frame) -> tuple[int, int] | None:
    """The offsets (start, end) of the one-argument call that receives the generator expression
    (or list comprehension) created at ``frame``'s current ``GET_ITER`` (``total(f(d) for d in
    b)``), or None for any other use. Whether the callee is :func:`capproof.arith.total` is
    checked when it runs (``capproof.aggregate.mapped_total``)."""
    made = _made_here(frame, ("<genexpr>", "<listcomp>"))
    if made is None:
        return None
    instrs, at = made
    calls = [i for i in instrs[at + 1 : at + 7] if i.opname != "PRECALL"]
    if len(calls) < 3 or [c.opname for c in calls[:2]] != ["CALL", "CALL"] or calls[0].arg != 0 or calls[1].arg != 1:
        return None
    return calls[1].offset, calls[2].offset  # a running CALL's f_lasti lies in its inline caches


def called_from_all_of_site(frame, site: int | None) -> bool:
    """True when the innermost running :func:`capproof.arith.all_of` was called by ``frame`` at
    ``site`` (the call an :func:`all_of_site` named): an entry that reaches ``all_of`` through
    ``any_of``, a sum, a loop or a variable is not "for every entry"."""
    from . import arith

    caller = sys._getframe(1)
    while caller is not None and caller.f_code is not arith.all_of.__code__:
        caller = caller.f_back
    caller = caller.f_back if caller is not None else None
    return caller is not None and site is not None and caller is frame and caller.f_lasti == site


def free_consts(term: z3.ExprRef) -> set[str]:
    """Names of the uninterpreted constants in ``term``."""
    return set(uninterpreted_constants([term]))
