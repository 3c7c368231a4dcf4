"""Symbolic integers with Python's integer semantics, backed by Z3 ``Int`` terms.

``SymInt`` behaves like ``int`` wherever it can: ``+ - *``, floor ``//`` and ``%`` with Python's
signs (not SMT-LIB's Euclidean ones), unary ``-``, ``abs``, comparisons. Comparisons give a
``SymBool``. Anything that would need a concrete value is an error naming the model line:

- ``if``/``bool()``/``and``/``or`` on a ``SymBool`` -> :class:`SymbolicBranchError`
- ``int()``, indexing, ``range()``, ``math.gcd`` on a ``SymInt`` -> :class:`NotConcreteError`
- ``/`` or a float operand -> :class:`RealArithmeticError`

A division whose divisor is symbolic is recorded in the active :class:`Trace` so the prover can
check that the divisor is never zero under the obligation's assumptions; a divisor that may be
zero is reported (:class:`DivisorMayBeZero`), never modelled away.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Iterator, Union

import z3

from .errors import NotConcreteError, RealArithmeticError, SymbolicBranchError, caller_location

__all__ = ["SymInt", "SymBool", "Trace", "tracing", "to_z3_int", "to_z3_bool", "is_symbolic"]


@dataclass
class Trace:
    """Side conditions collected while a model runs on symbolic values."""

    divisors: list[tuple[z3.ArithRef, str]] = field(default_factory=list)
    #: capproof errors raised on symbolic values; kept even if the model catches them.
    misuse: list[str] = field(default_factory=list)
    #: valid facts of integer arithmetic about the divisions built (e.g. ``0 <= a // b <= a`` for
    #: ``a >= 0, b >= 1``). They hold for every value, so adding them never changes a verdict; they
    #: spare Z3 the integer reasoning it finds slow over many divisions (1024 per-expert roundings).
    lemmas: list[z3.BoolRef] = field(default_factory=list)


_local = threading.local()


@contextlib.contextmanager
def tracing() -> Iterator[Trace]:
    """Collect the symbolic divisors seen while the body runs."""
    trace = Trace()
    previous = getattr(_local, "trace", None)
    _local.trace = trace
    try:
        yield trace
    finally:
        _local.trace = previous


def _record_divisor(term: z3.ArithRef) -> None:
    trace = getattr(_local, "trace", None)
    if trace is not None:
        trace.divisors.append((term, caller_location()))


def division_lemma(a: z3.ArithRef, b: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
    """Facts true of ``q = a // b`` (Python floor division) for all integers ``a`` and ``b != 0``.

    ``|q| <= |a|`` with the sign of ``a * b``; stated piecewise so it stays linear in ``a`` and
    ``q``. Checked valid by ``tests/test_semantics.py::test_division_lemma_is_valid``.
    """
    return z3.And(
        z3.Implies(z3.And(b >= 1, a >= 0), z3.And(q >= 0, q <= a)),
        z3.Implies(z3.And(b >= 1, a <= 0), z3.And(q >= a, q <= 0)),
        z3.Implies(z3.And(b <= -1, a >= 0), z3.And(q >= -a, q <= 0)),
        z3.Implies(z3.And(b <= -1, a <= 0), z3.And(q >= 0, q <= -a)),
    )


def _record_lemma(a: z3.ArithRef, b: z3.ArithRef, q: z3.ArithRef) -> None:
    record_lemma(division_lemma(a, b, q))


def record_lemma(fact: z3.BoolRef) -> None:
    """Add a *valid* fact (true for every value of its variables) to the active trace.

    Only for capproof's vocabulary: each lemma template has a validity test in
    tests/test_semantics.py, since an invalid lemma would make proofs unsound.
    """
    trace = getattr(_local, "trace", None)
    if trace is not None:
        trace.lemmas.append(fact)


def _misuse(error: Exception) -> Exception:
    """Record ``error`` in the active trace (a model's ``except`` cannot hide it), return it."""
    trace = getattr(_local, "trace", None)
    if trace is not None:
        trace.misuse.append(str(error))
    return error


IntLike = Union[int, "SymInt"]


def _reject_float(value: object) -> None:
    if isinstance(value, float):
        raise _misuse(RealArithmeticError(
            f"real arithmetic: float {value!r} in an integer model at {caller_location()} "
            "(use // or cdiv)"
        ))


def to_z3_int(value: object) -> z3.ArithRef:
    """The Z3 Int term for an int or SymInt. Raises RealArithmeticError for floats."""
    if isinstance(value, SymInt):
        return value.term
    if isinstance(value, bool):
        return z3.IntVal(int(value))
    if isinstance(value, int):
        return z3.IntVal(value)
    _reject_float(value)
    raise TypeError(f"not an integer: {value!r} ({type(value).__name__}) at {caller_location()}")


def to_z3_bool(value: object) -> z3.BoolRef:
    """The Z3 Bool term for a bool or SymBool."""
    if isinstance(value, SymBool):
        return value.term
    if isinstance(value, bool):
        return z3.BoolVal(value)
    raise TypeError(f"not a boolean: {value!r} ({type(value).__name__}) at {caller_location()}")


def is_symbolic(value: object) -> bool:
    return isinstance(value, (SymInt, SymBool))


def _wrap_int(term: z3.ArithRef) -> "SymInt":
    return SymInt(z3.simplify(term))


def py_floordiv(a: z3.ArithRef, b: IntLike) -> z3.ArithRef:
    """Python's ``a // b`` on a Z3 term (floor division, sign of the divisor)."""
    if isinstance(b, int) and not isinstance(b, SymInt):
        if b == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        # SMT-LIB div is floor division for a positive divisor.
        q = a / b if b > 0 else (-a) / (-b)
        _record_lemma(a, z3.IntVal(b), q)
        return q
    bt = to_z3_int(b)
    _record_divisor(bt)
    q = z3.If(bt > 0, a / bt, (-a) / (-bt))
    _record_lemma(a, bt, q)
    return q


def py_mod(a: z3.ArithRef, b: IntLike) -> z3.ArithRef:
    """Python's ``a % b`` on a Z3 term (result has the sign of the divisor)."""
    if isinstance(b, int) and not isinstance(b, SymInt):
        if b == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        if b > 0:
            return a % b  # SMT-LIB mod is in [0, b) for b > 0, as in Python
        return a - b * py_floordiv(a, b)
    bt = to_z3_int(b)
    return a - bt * py_floordiv(a, b)


class SymInt:
    """A symbolic integer (a Z3 ``Int`` term) with Python ``int`` semantics."""

    __slots__ = ("term",)

    def __init__(self, term: z3.ArithRef):
        if not z3.is_int(term):
            raise TypeError(f"SymInt needs a Z3 Int term, got {term.sort()}")
        self.term = term

    @classmethod
    def var(cls, name: str) -> "SymInt":
        return cls(z3.Int(name))

    def __repr__(self) -> str:
        return f"SymInt({self.term})"

    def __str__(self) -> str:
        raise _misuse(NotConcreteError(f"str() of symbolic {self.term} at {caller_location()}"))

    def __hash__(self) -> int:
        raise _misuse(NotConcreteError(
            f"a symbolic integer in a set or dict key at {caller_location()} (hashing cannot compare symbolic values)"
        ))

    def __format__(self, spec: str) -> str:
        raise _misuse(NotConcreteError(f"str()/format() of symbolic {self.term} at {caller_location()}"))

    # arithmetic -----------------------------------------------------------------------------
    def __add__(self, other: IntLike) -> "SymInt":
        return _wrap_int(self.term + to_z3_int(other))

    def __radd__(self, other: IntLike) -> "SymInt":
        return _wrap_int(to_z3_int(other) + self.term)

    def __sub__(self, other: IntLike) -> "SymInt":
        return _wrap_int(self.term - to_z3_int(other))

    def __rsub__(self, other: IntLike) -> "SymInt":
        return _wrap_int(to_z3_int(other) - self.term)

    def __mul__(self, other: IntLike) -> "SymInt":
        return _wrap_int(self.term * to_z3_int(other))

    def __rmul__(self, other: IntLike) -> "SymInt":
        return _wrap_int(to_z3_int(other) * self.term)

    def __floordiv__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_floordiv(self.term, other))

    def __rfloordiv__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_floordiv(to_z3_int(other), self))

    def __mod__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_mod(self.term, other))

    def __rmod__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_mod(to_z3_int(other), self))

    def __truediv__(self, other: object) -> "SymInt":
        raise _misuse(RealArithmeticError(
            f"real arithmetic: `/` on a symbolic integer at {caller_location()} (use // or cdiv)"
        ))

    __rtruediv__ = __truediv__

    def __neg__(self) -> "SymInt":
        return _wrap_int(-self.term)

    def __pos__(self) -> "SymInt":
        return self

    def __abs__(self) -> "SymInt":
        return _wrap_int(z3.If(self.term >= 0, self.term, -self.term))

    def __pow__(self, other: object) -> "SymInt":
        if isinstance(other, int) and not isinstance(other, SymInt) and other >= 0:
            result: z3.ArithRef = z3.IntVal(1)
            for _ in range(other):
                result = result * self.term
            return _wrap_int(result)
        raise _misuse(NotConcreteError(
            f"`**` needs a concrete non-negative int exponent at {caller_location()}"
        ))

    # comparisons ----------------------------------------------------------------------------
    def __eq__(self, other: object) -> "SymBool":  # type: ignore[override]
        return SymBool(z3.simplify(self.term == to_z3_int(other)))

    def __ne__(self, other: object) -> "SymBool":  # type: ignore[override]
        return SymBool(z3.simplify(self.term != to_z3_int(other)))

    def __lt__(self, other: IntLike) -> "SymBool":
        return SymBool(z3.simplify(self.term < to_z3_int(other)))

    def __le__(self, other: IntLike) -> "SymBool":
        return SymBool(z3.simplify(self.term <= to_z3_int(other)))

    def __gt__(self, other: IntLike) -> "SymBool":
        return SymBool(z3.simplify(self.term > to_z3_int(other)))

    def __ge__(self, other: IntLike) -> "SymBool":
        return SymBool(z3.simplify(self.term >= to_z3_int(other)))

    # things that need a concrete value --------------------------------------------------------
    def _concrete(self, what: str):
        raise _misuse(NotConcreteError(
            f"{what} needs a concrete int, got symbolic {self.term} at {caller_location()}"
        ))

    def __index__(self) -> int:
        self._concrete("an index, range() or math.gcd")

    def __int__(self) -> int:
        self._concrete("int()")

    def __float__(self) -> float:
        raise _misuse(RealArithmeticError(f"real arithmetic: float() of a symbolic integer at {caller_location()}"))

    def __bool__(self) -> bool:
        raise _misuse(SymbolicBranchError(
            f"branch on symbolic value {self.term} at {caller_location()} "
            "(use capproof.select for branches on symbolic values)"
        ))


class SymBool:
    """A symbolic condition (a Z3 ``Bool`` term). Combine with ``& | ~``, never with ``if``."""

    __slots__ = ("term",)

    def __init__(self, term: z3.BoolRef):
        self.term = term

    def __repr__(self) -> str:
        return f"SymBool({self.term})"

    __str__ = __repr__

    def __hash__(self) -> int:
        raise _misuse(NotConcreteError(f"a symbolic condition in a set or dict key at {caller_location()}"))

    def __bool__(self) -> bool:
        raise _misuse(SymbolicBranchError(
            f"branch on symbolic condition ({self.term}) at {caller_location()} "
            "(use capproof.select for branches on symbolic values)"
        ))

    def __and__(self, other: object) -> "SymBool":
        return SymBool(z3.simplify(z3.And(self.term, to_z3_bool(other))))

    __rand__ = __and__

    def __or__(self, other: object) -> "SymBool":
        return SymBool(z3.simplify(z3.Or(self.term, to_z3_bool(other))))

    __ror__ = __or__

    def __xor__(self, other: object) -> "SymBool":
        return SymBool(z3.simplify(z3.Xor(self.term, to_z3_bool(other))))

    __rxor__ = __xor__

    def __invert__(self) -> "SymBool":
        return SymBool(z3.simplify(z3.Not(self.term)))

    def __eq__(self, other: object) -> "SymBool":  # type: ignore[override]
        return SymBool(z3.simplify(self.term == to_z3_bool(other)))

    def __ne__(self, other: object) -> "SymBool":  # type: ignore[override]
        return SymBool(z3.simplify(self.term != to_z3_bool(other)))
