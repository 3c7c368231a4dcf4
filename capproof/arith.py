"""The shared arithmetic vocabulary of models: exact on Python ints and on symbolic ints.

Every function here runs unchanged on plain ``int`` (tests, replay, comparison with the real
engine), on :class:`~capproof.symbolic.SymInt` (Z3 proofs) and under CrossHair (whose symbolic
ints are ``int`` subclasses). ``cdiv`` and ``round_up`` are written exactly as in vLLM 0.33.0
``vllm/utils/math_utils.py``.
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import sys
from functools import reduce
from typing import Union

import z3
import z3.z3core as _core

from . import symbolic as _symbolic
from .errors import NotConcreteError, RealArithmeticError, caller_location
from .provenance import trusted_filename
from .symbolic import (
    RawTerms,
    SymBool,
    SymInt,
    ast_array,
    record_lemma,
    record_misuse,
    simplified,
    sum_of_terms,
    to_z3_bool,
    to_z3_int,
)

__all__ = [
    "cdiv",
    "round_up",
    "select",
    "minimum",
    "maximum",
    "gcd",
    "implies",
    "all_of",
    "any_of",
    "not_",
    "divides",
    "total",
    "max_of",
    "min_of",
    "prefix_sums",
    "count",
    "fold",
    "InvariantError",
    "checking_invariants",
    "next_power_of_2",
    "prev_power_of_2",
    "Padded",
    "wrap",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "DTYPES",
    "dtype_range",
]

Int = Union[int, SymInt]
Bool = Union[bool, SymBool]


_PLAIN_TYPES = frozenset((int, bool))


def all_plain(values) -> bool:
    """True when every value of the list or tuple ``values`` is exactly an ``int`` or ``bool`` (no
    SymInt, no float, no subclass such as a CrossHair proxy): then the builtins compute the same
    value, much faster (density enumerates up to 2**16 points, each over a whole batch)."""
    if len(values) > 8:  # the entries' types in one pass in C (a 64-entry batch: ~3 us, not ~6)
        return _PLAIN_TYPES.issuperset(map(type, values))
    for v in values:
        t = type(v)
        if t is not int and t is not bool:
            return False
    return True


def _check_int(*values: object) -> None:
    for value in values:
        if isinstance(value, float):
            raise RealArithmeticError(
                f"real arithmetic: float {value!r} in an integer model at {caller_location()} (use // or cdiv)"
            )


def cdiv(a: Int, b: Int) -> Int:
    """Ceiling division ``-(a // -b)``. Raises ZeroDivisionError for a concrete zero divisor.

    Source: vLLM 0.33.0 ``vllm/utils/math_utils.py::cdiv``.
    """
    if type(a) is not int or type(b) is not int:  # plain ints (replays of 4096-request batches): no check
        _check_int(a, b)
    return -(a // -b)


def round_up(x: Int, y: Int) -> Int:
    """``x`` rounded up to a multiple of ``y``: ``((x + y - 1) // y) * y``.

    Source: vLLM 0.33.0 ``vllm/utils/math_utils.py::round_up``.
    """
    if type(x) is int and type(y) is int:  # plain ints (replays of 1024-expert batches): the formula alone
        return _rounded(x, y)
    trace = getattr(_symbolic.trace_state, "trace", None)
    memo = trace.derived if trace is not None else None
    if memo is not None and type(x) is SymInt and type(y) is int and y >= 1:
        return _remembered_round_up(trace, memo, x, y)
    _check_int(x, y)
    result = _rounded(x, y)
    if isinstance(result, SymInt) and isinstance(y, int) and not isinstance(y, SymInt) and y >= 1:
        record_lemma(round_up_lemma(to_z3_int(x), y, result.term))
    return result


def _rounded(x: Int, y: Int) -> Int:
    """vLLM's ``round_up`` formula, ``((x + y - 1) // y) * y`` (the one place it is written)."""
    return ((x + y - 1) // y) * y


def _remembered_round_up(trace, memo: dict, x: SymInt, y: int) -> SymInt:
    """:func:`round_up` of a symbolic ``x`` and a constant ``y >= 1`` with a memo shared by the
    cases of one obligation (:class:`capproof.encode.SharedInputs`, whose inputs are the same
    terms in every case), by ``x``'s term: the result is a function of that term and ``y`` alone, and
    the trace gets the same two lemmas (the division's and the rounding's, the very terms) as a new
    call would record, so the case's problem is the same formula. A rounding adds nothing else to
    the trace (no divisor, side condition or branch: ``y`` is a positive constant). ``x`` is kept
    in the memo, so its term's Z3 id stays that term's. (wna16's 16 cases round the same 8 or 64
    counts by the same block size in 4 cases each.)"""
    key = ("round_up", x.term.get_id(), y)  # the term's id: x (kept below) keeps the term alive
    hit = memo.get(key)
    if hit is not None:
        trace.lemmas.extend(hit[1])
        return hit[0]
    before = len(trace.lemmas)
    result = _rounded(x, y)
    record_lemma(round_up_lemma(x.term, y, result.term))
    memo[key] = (result, trace.lemmas[before:], x)
    return result


def round_up_lemma(x: z3.ArithRef, y: int, r: z3.ArithRef) -> z3.BoolRef:
    """Facts true of ``r = round_up(x, y)`` for every integer ``x`` and a constant ``y >= 1``:
    ``x <= r <= x + y - 1``, and ``r <= x * y`` when ``x >= 0`` (so an empty expert pads to 0).

    Linear because ``y`` is a constant. Checked valid by tests/test_semantics.py.
    """
    if isinstance(x, z3.ArithRef) and isinstance(r, z3.ArithRef) and x.ctx == r.ctx:  # same AST, built faster
        b, X, R = (
            RawTerms(x.ctx),
            x.ast,
            r.ast,
        )  # z3_and(z3_ge(r, x), z3_le(r, x + (y-1)), z3_implies(z3_ge(x, 0), z3_le(r, x * y))): its calls, in order
        plus, times = b.nary(z3.z3core.Z3_mk_add, X, b.num(y - 1)), b.nary(z3.z3core.Z3_mk_mul, X, b.num(y))
        return b.done(
            z3.z3core.Z3_mk_and(
                b.ref, 3, (z3.Ast * 3)(b.ge(R, X), b.le(R, plus), b.implies(b.ge(X, b.num(0)), b.le(R, times)))
            )
        )
    return z3.And(r >= x, r <= x + (y - 1), z3.Implies(x >= 0, r <= x * y))


def next_power_of_2(n: Int) -> Int:
    """The least power of two ``>= n`` (1 for ``n < 1``): ``1 << (n - 1).bit_length()``.

    Source: vLLM 0.33.0 ``vllm/utils/math_utils.py::next_power_of_2`` (same formula; the ``n < 1``
    test is a ``select`` so it does not fork). Symbolic ``n``: exact for ``|n| < 2**64`` (a
    recorded side condition of ``bit_length``).
    """
    _check_int(n)
    return select(n < 1, 1, 1 << (n - 1).bit_length())


def prev_power_of_2(n: Int) -> Int:
    """The greatest power of two ``<= n`` (0 for ``n < 1``): ``1 << (n.bit_length() - 1)``.

    Source: vLLM 0.33.0 ``vllm/utils/math_utils.py::prev_power_of_2``.
    """
    _check_int(n)
    if not isinstance(n, SymInt):
        return 0 if n < 1 else 1 << (n.bit_length() - 1)
    return select(n < 1, 0, 1 << maximum(n.bit_length() - 1, 0))


# Machine integers. Kernels index with fixed-width ints (Triton's int32 program ids and strides,
# CUDA's int32/uint32 offsets): a product past the width wraps. These give the value the kernel
# computes, two's complement modulo 2**bits, on every semantics: Python ints, SymInt (Z3's integer
# ``mod`` by a constant: exact and linear) and CrossHair's symbolic ints (plain ``%``).

#: ``dtype name -> (bits, signed)`` for :func:`wrap`, :func:`dtype_range` and the ``dtype=``
#: argument of the claims (``capproof.obligation.fits``, ``at_most``, ``less_than``).
DTYPES: dict[str, tuple[int, bool]] = {
    "int8": (8, True),
    "int16": (16, True),
    "int32": (32, True),
    "int64": (64, True),
    "uint8": (8, False),
    "uint16": (16, False),
    "uint32": (32, False),
    "uint64": (64, False),
}


def dtype_info(dtype: object) -> tuple[str, int, bool]:
    """``(name, bits, signed)`` of ``dtype``: a name in :data:`DTYPES`, or a torch/numpy dtype
    (``torch.int32``, ``numpy.int32``, ``numpy.dtype('int32')``). Raises ValueError otherwise."""
    name = (
        dtype
        if isinstance(dtype, str)
        else getattr(dtype, "__name__", None) or getattr(dtype, "name", None) or str(dtype)
    )
    name = str(name).rsplit(".", 1)[-1]
    if name not in DTYPES:
        raise ValueError(f"unknown integer dtype {dtype!r} (one of {', '.join(DTYPES)})")
    return (name, *DTYPES[name])


def dtype_range(dtype: object) -> tuple[int, int]:
    """``(lo, hi)``: the least and greatest value of the integer ``dtype`` (``int32``:
    ``-2**31, 2**31 - 1``; ``uint32``: ``0, 2**32 - 1``). Raises ValueError for an unknown dtype."""
    _, bits, signed = dtype_info(dtype)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def wrap(x: Int, dtype: object) -> Int:
    """``x`` as the integer ``dtype`` holds it: the representative of ``x`` modulo ``2**bits`` in
    ``dtype_range(dtype)`` (two's complement for signed types), e.g. ``wrap(2**31, "int32") ==
    -2**31``, ``wrap(-1, "uint32") == 2**32 - 1``; ``x`` itself when it fits.

    This is what a narrowing cast does in numpy (``np.array(x, np.int64).astype(np.int32)``),
    torch (``torch.tensor(x, dtype=torch.int64).to(torch.int32)``) and C/CUDA/Triton for an
    unsigned type; for a signed type, what their arithmetic does on every GPU (C leaves signed
    overflow undefined; Triton's and nvcc's ``mul``/``add`` wrap). tests/test_semantics.py checks it
    against numpy. Raises ValueError for an unknown dtype, RealArithmeticError for a float.
    """
    _check_int(x)
    _, bits, signed = dtype_info(dtype)
    modulus = 1 << bits
    if signed:
        half = 1 << (bits - 1)
        return (x + half) % modulus - half
    return x % modulus


def int8(x: Int) -> Int:
    """``x`` wrapped to a signed 8-bit int (see :func:`wrap`)."""
    return wrap(x, "int8")


def int16(x: Int) -> Int:
    """``x`` wrapped to a signed 16-bit int (see :func:`wrap`)."""
    return wrap(x, "int16")


def int32(x: Int) -> Int:
    """``x`` wrapped to a signed 32-bit int, as an int32 offset computation gives it (see
    :func:`wrap`): ``int32(7168 * 448000) == -1083703296`` (corpus B6, vLLM's fused MoE
    ``stride_cm * offs_token`` before the int64 cast of vLLM #13693)."""
    return wrap(x, "int32")


def int64(x: Int) -> Int:
    """``x`` wrapped to a signed 64-bit int (see :func:`wrap`)."""
    return wrap(x, "int64")


def uint8(x: Int) -> Int:
    """``x`` modulo ``2**8`` (see :func:`wrap`)."""
    return wrap(x, "uint8")


def uint16(x: Int) -> Int:
    """``x`` modulo ``2**16`` (see :func:`wrap`)."""
    return wrap(x, "uint16")


def uint32(x: Int) -> Int:
    """``x`` modulo ``2**32``, as a 32-bit unsigned byte offset holds it (see :func:`wrap`)."""
    return wrap(x, "uint32")


def uint64(x: Int) -> Int:
    """``x`` modulo ``2**64`` (see :func:`wrap`)."""
    return wrap(x, "uint64")


def select(condition: Bool, if_true: Int, if_false: Int) -> Int:
    """``if_true if condition else if_false`` that also works on a symbolic ``condition``.

    Both branches are evaluated (so a symbolic divisor on either branch is checked).
    """
    if type(condition) is bool:  # concrete: as below, without the isinstance checks
        return if_true if condition else if_false
    if isinstance(condition, SymBool) or isinstance(if_true, SymInt) or isinstance(if_false, SymInt):
        if isinstance(condition, bool) or (isinstance(condition, int) and not isinstance(condition, SymInt)):
            return if_true if condition else if_false
        _check_int(if_true, if_false)
        return SymInt(z3.simplify(z3.If(to_z3_bool(condition), to_z3_int(if_true), to_z3_int(if_false))))
    return if_true if condition else if_false


def _select_bool(condition: Bool, if_true: Bool, if_false: Bool) -> Bool:
    if any(isinstance(v, SymBool) for v in (condition, if_true, if_false)):
        return SymBool(z3.simplify(z3.If(to_z3_bool(condition), to_z3_bool(if_true), to_z3_bool(if_false))))
    return if_true if condition else if_false


def minimum(first: Int, *rest: Int) -> Int:
    """``min`` of one or more values, symbolic or not."""
    if (
        len(rest) == 1 and type(first) is int and type(rest[0]) is int
    ):  # the common case, first (type: a SymInt reports int as its __class__)
        return min(first, rest[0])
    if all_plain(rest) and all_plain((first,)):
        return min(first, *rest) if rest else first
    _check_int(first, *rest)
    return reduce(lambda a, b: select(b < a, b, a), rest, first)


def maximum(first: Int, *rest: Int) -> Int:
    """``max`` of one or more values, symbolic or not."""
    if (
        len(rest) == 1 and type(first) is int and type(rest[0]) is int
    ):  # the common case, first (type: a SymInt reports int as its __class__)
        return max(first, rest[0])
    if all_plain(rest) and all_plain((first,)):
        return max(first, *rest) if rest else first
    _check_int(first, *rest)
    return reduce(lambda a, b: select(b > a, b, a), rest, first)


def gcd(a: Int, b: Int) -> int:
    """``math.gcd`` on concrete ints. Raises NotConcreteError on a symbolic argument."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        raise record_misuse(
            NotConcreteError(
                f"gcd needs concrete ints at {caller_location()}: declare the parameter with a finite "
                "domain (Choice or PowersOfTwo) so it is case-split"
            )
        )
    _check_int(a, b)
    return math.gcd(a, b)


def implies(premise: Bool, conclusion: Bool) -> Bool:
    """Logical implication, symbolic or not."""
    if type(premise) is bool and type(conclusion) is bool:  # plain (replays: a per-request witness)
        return (not premise) or conclusion
    if isinstance(premise, SymBool) or isinstance(conclusion, SymBool):
        if isinstance(premise, SymBool) and isinstance(conclusion, SymBool) and premise.term.ctx is conclusion.term.ctx:
            # z3.simplify(z3.Implies(p, c))'s Z3 calls without z3py's coercions (a
            # per-request witness over a 1,024-request batch makes thousands of them)
            ctx = premise.term.ctx
            ref = ctx.ref()
            return simplified(
                ref, _core.Z3_mk_implies(ref, premise.term.as_ast(), conclusion.term.as_ast()), ctx, boolean=True
            )
        return SymBool(z3.simplify(z3.Implies(to_z3_bool(premise), to_z3_bool(conclusion))))
    return (not premise) or bool(conclusion)


def all_of(*conditions: Bool) -> Bool:
    """Conjunction, symbolic or not (``and`` would branch)."""
    if all_plain(conditions):
        return all(conditions)
    if any(isinstance(c, SymBool) for c in conditions):
        first = next(c for c in conditions if isinstance(c, SymBool)).term.ctx
        if all(type(c) is SymBool and c.term.ctx is first for c in conditions):
            # z3.simplify(z3.And(...))'s Z3 calls without z3py's coercions (see implies)
            ref = first.ref()
            made = _core.Z3_mk_and(ref, len(conditions), ast_array([c.term for c in conditions]))
            term = simplified(ref, made, first, boolean=True).term
        else:
            term = z3.simplify(z3.And(*[to_z3_bool(c) for c in conditions]))
        hook = _all_of_hook()
        if hook is not None:  # per-request conditions over an aggregate batch (capproof.aggregate)
            reduced = hook(term)
            if reduced is not None:
                return SymBool(reduced)
        return SymBool(term)
    return all(conditions)


def _trace_hook(name: str):
    trace = getattr(_symbolic.trace_state, "trace", None)
    return getattr(trace, name, None) if trace is not None else None


def _all_of_hook():
    return _trace_hook("all_of_hook")


def any_of(*conditions: Bool) -> Bool:
    """Disjunction, symbolic or not (``or`` would branch)."""
    if all_plain(conditions):
        return any(conditions)
    if any(isinstance(c, SymBool) for c in conditions):
        return SymBool(z3.simplify(z3.Or(*[to_z3_bool(c) for c in conditions])))
    return any(conditions)


def not_(condition: Bool) -> Bool:
    """Negation, symbolic or not (``~True`` is ``-2`` in Python, so use this)."""
    if isinstance(condition, SymBool):
        return SymBool(z3.simplify(z3.Not(condition.term)))
    return not condition


def divides(divisor: Int, value: Int) -> Bool:
    """``value % divisor == 0``: the usual assumption between block sizes."""
    return value % divisor == 0


# Aggregates over a batch or routing vector (a :class:`~capproof.domain.Vector` parameter, or any
# sequence of ints and symbolic ints).


#: Where a watched symbolic run read a batch's padding (``"lens[-1] at models/x.py:12"``), or None
#: when no run is watched. Set by :class:`watching_padding` (capproof.encode.build_paths): a model that
#: reads its vector's padding itself is decided again on each batch alone (capproof.prover).
_PADDING_READS: list[str] | None = None

#: capproof's modules whose reads of a vector see its batch exactly (the aggregates, the encoding,
#: the symbolic values): their own ``len()``/indexing/iteration is not the model's
_EXACT_READERS = frozenset(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{m}.py")
    for m in ("arith", "encode", "symbolic", "_iteration", "normalise", "guard", "prover", "probe")
)


class watching_padding:  # noqa: N801 - used as a context manager, like a function
    """``with watching_padding() as reads:`` records in the list ``reads`` every read of a
    :class:`Padded` vector's padding by code other than capproof's aggregates (see
    :meth:`Padded.read_padding`); the enclosing watch is restored after."""

    __slots__ = ("reads", "previous")

    def __enter__(self) -> list[str]:
        global _PADDING_READS
        self.previous, self.reads = _PADDING_READS, []
        _PADDING_READS = self.reads
        return self.reads

    def __exit__(self, *exc) -> None:
        global _PADDING_READS
        _PADDING_READS = self.previous


class _Tail:
    """The padding end of a watched iteration (:meth:`Padded.__iter__`): ``itertools.chain``
    asks for its iterator only once the entries every batch has are used up."""

    __slots__ = ("batch", "start", "where")

    def __init__(self, batch: "Padded", start: int, where: str):
        self.batch, self.start, self.where = batch, start, where

    def __iter__(self):
        self.batch.read_padding(f"iteration reaching entry {self.start}", self.where)
        return tuple.__iter__(tuple.__getitem__(self.batch, slice(self.start, None)))


class Padded(tuple):
    """A :class:`~capproof.domain.Vector` parameter as a model receives it: ``size`` entries of
    which the first ``length`` are the batch (``length`` an int or a symbolic int) and the rest
    equal ``fill``; ``lo``/``hi`` bound the batch entries; ``min_length`` is the least batch length
    the domain admits (``length`` itself when it is an int).

    :func:`total`, :func:`max_of` and :func:`min_of` of a ``Padded`` see the batch only (the
    ``length`` leading entries), whatever ``fill`` is; ``len()``, iteration, indexing, slicing,
    ``count``, comparison, hashing and concatenation see every entry, padding included, as does
    :func:`fold` and :func:`prefix_sums`. In a watched symbolic run (:class:`watching_padding`) each
    such read that may reach past ``min_length`` is recorded (:meth:`read_padding`), and the
    prover decides the obligation on each batch alone too (capproof.prover): a model that reads
    its padding is proved only where it holds with the padding and without it.
    """

    def __new__(cls, entries, length, fill: int = 0, lo: int | None = None, hi: int | None = None, min_length=None):
        self = tuple.__new__(cls, entries)  # not super(): made per probe batch (capproof.probe)
        self.length = length
        self.fill = fill
        self.lo = lo
        self.hi = hi
        self.min_length = (length if not isinstance(length, SymInt) else 0) if min_length is None else min_length
        return self

    def __reduce__(self):
        return (Padded, (tuple.__iter__(self), self.length, self.fill, self.lo, self.hi, self.min_length))

    def padded(self) -> bool:
        """True when some entry may be padding (the length is symbolic or below the size)."""
        return isinstance(self.length, SymInt) or self.length < tuple.__len__(self)

    def read_padding(self, what: str, where: str | None = None) -> None:
        """Record (in a watched run, :class:`watching_padding`) that the caller's caller read
        ``what`` of this vector, which may be its padding; capproof's exact readers excepted."""
        reads = _PADDING_READS
        if reads is None or not self.padded():
            return
        if where is None:
            frame = sys._getframe(2)
            if trusted_filename(frame.f_code) in _EXACT_READERS:
                return
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        reads.append(f"{what} at {where}")

    # every way Python reads a tuple's entries or size, watched (a tuple's C code reads them directly)
    def __len__(self) -> int:
        if _PADDING_READS is not None:
            self.read_padding("len()")
        return tuple.__len__(self)

    def __getitem__(self, index):
        if _PADDING_READS is None:
            return tuple.__getitem__(self, index)
        if isinstance(index, slice):  # its bounds as ints first, as tuple's slicing takes them
            step, start, stop = (
                None if b is None else operator.index(b) for b in (index.step, index.start, index.stop)
            )
            inside = (
                step in (None, 1)
                and (start is None or start >= 0)
                and stop is not None
                and 0 <= stop <= self.min_length
            )
            if not inside:
                self.read_padding(f"slice [{start}:{stop}:{step}]")
            return tuple.__getitem__(self, slice(start, stop, step))
        if not hasattr(type(index), "__index__"):  # tuple's own TypeError, its message
            return tuple.__getitem__(self, index)
        index = operator.index(index)  # a symbolic index splits here into one path per value
        if index < 0 or index >= self.min_length:
            self.read_padding(f"entry [{index}]")
        return tuple.__getitem__(self, index)

    def __iter__(self):
        if _PADDING_READS is None or not self.padded():
            return tuple.__iter__(self)
        frame = sys._getframe(1)
        if trusted_filename(frame.f_code) in _EXACT_READERS:
            return tuple.__iter__(self)
        start = self.min_length
        where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        return itertools.chain(tuple.__getitem__(self, slice(0, start)), _Tail(self, start, where))

    def __reversed__(self):
        self.read_padding("reversed()")
        return reversed(tuple(tuple.__iter__(self)))

    def __contains__(self, value) -> bool:
        self.read_padding("'in'")
        return tuple.__contains__(self, value)

    def count(self, value) -> int:
        self.read_padding(".count()")
        return tuple.count(self, value)

    def index(self, value, *args) -> int:
        self.read_padding(".index()")
        return tuple.index(self, value, *args)

    def __hash__(self) -> int:
        self.read_padding("hash()")
        return tuple.__hash__(self)

    def __eq__(self, other):
        self.read_padding("==")
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        self.read_padding("!=")
        return tuple.__ne__(self, other)

    def __lt__(self, other):
        self.read_padding("<")
        return tuple.__lt__(self, other)

    def __le__(self, other):
        self.read_padding("<=")
        return tuple.__le__(self, other)

    def __gt__(self, other):
        self.read_padding(">")
        return tuple.__gt__(self, other)

    def __ge__(self, other):
        self.read_padding(">=")
        return tuple.__ge__(self, other)

    def __add__(self, other):
        self.read_padding("+")
        return tuple.__add__(self, other)

    def __radd__(self, other):
        self.read_padding("+")
        if isinstance(other, tuple):
            return tuple.__add__(other, tuple(tuple.__iter__(self)))
        return NotImplemented

    def __mul__(self, other):
        self.read_padding("*")
        return tuple.__mul__(self, other)

    def __rmul__(self, other):
        self.read_padding("*")
        return tuple.__mul__(self, other)

    def __repr__(self) -> str:
        self.read_padding("repr()")
        return tuple.__repr__(self)

    def __sizeof__(self) -> int:
        self.read_padding("sys.getsizeof()")
        return tuple.__sizeof__(self)

    def shape(self) -> tuple:
        """``(length, fill, lo, hi)``: what an aggregate of the batch depends on besides its
        entries (which cannot change: a tuple)."""
        return (self.length, self.fill, self.lo, self.hi)

    def same_shape(self, shape: tuple) -> bool:
        """Whether ``shape`` (an earlier :meth:`shape`) holds the very objects this batch's
        ``length``, ``fill``, ``lo`` and ``hi`` are now: an aggregate taken then is still its own."""
        return shape[0] is self.length and shape[1] is self.fill and shape[2] is self.lo and shape[3] is self.hi

    def known(self, kind: str):
        """The value of aggregate ``kind`` ("total", "max_of", "min_of") remembered by
        :meth:`remember` while the batch has the same shape (:meth:`same_shape`), else None."""
        seen = self.__dict__.get(kind)
        if seen is not None and self.same_shape(seen[0]):
            return seen[1]
        return None

    def remember(self, kind: str, value: int) -> int:
        """Remember ``value`` as aggregate ``kind`` of this batch of plain ints (the int probe
        evaluates a model at many points sharing a batch, and again in its re-check) and return it."""
        self.__dict__[kind] = (self.shape(), value)
        return value


def _require_nonempty(values: "Padded", what: str) -> None:
    """Record that a symbolic batch length must not be 0 for ``what`` (checked like a divisor)."""
    from .symbolic import record_nonzero

    record_nonzero(to_z3_int(values.length), f"{what} of an empty batch (length 0) at {caller_location()}")


def total(values) -> Int:
    """``sum(values)`` (0 for an empty sequence), built as one Z3 sum when symbolic.

    For a :class:`Padded` vector: the sum of its batch entries (padding excluded).
    """
    if hasattr(values, "_capproof_aggregate"):  # capproof.aggregate.AggregateBatch
        return values._capproof_aggregate("total")
    hook = _trace_hook("total_hook")
    padded = values if type(values) is Padded and hook is None else None
    if padded is not None:  # a batch of plain ints: its total computed once (Padded.remember)
        known = padded.known("total")
        if known is not None:
            return known
        if _trace_hook("derived") is not None and not all_plain(padded):  # shared symbolic entries
            return _derived("total", padded, lambda: _total(padded, padded, None), 0)
    return _total(values, padded, hook)


def _total(values, padded: "Padded | None", hook) -> Int:
    """:func:`total` once the aggregate abstraction and the remembered totals are ruled out."""
    if isinstance(values, Padded) and values.fill != 0 and values.padded():
        n = values.length
        if isinstance(n, SymInt):
            values = [select(i < n, v, 0) for i, v in enumerate(values)]
        else:
            values = values[:n]
    values = list(values)
    if hook is not None:  # total(f(d) for d in batch) over an aggregate batch (capproof.aggregate)
        mapped = hook(values, sys._getframe(2))
        if mapped is not None:
            return mapped
    if all_plain(values):
        return sum(values) if padded is None else padded.remember("total", sum(values))
    _check_int(*values)
    if any(isinstance(v, SymInt) for v in values):
        return sum_of_terms(values)  # SymInt(z3.simplify(z3.Sum([to_z3_int(v) for v in values]))), faster
    return sum(values)


def _balanced(pair, values: list) -> Int:
    """Reduce ``values`` pairwise (a balanced tree of depth log2 n, not a chain of depth n).

    Same value as a left fold; on symbolic entries Z3 decides the shallow ``If`` tree far faster
    (a 256-request ``max(seq_lens)`` counterexample minimises in 0.24 s instead of 10 s).
    """
    while len(values) > 1:
        values = [
            pair(values[i], values[i + 1]) if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)
        ]
    return values[0]


def _batch(values, keep_all: bool, what: str) -> list:
    """The entries of a :class:`Padded` vector an aggregate may look at: the batch when the length
    is concrete (none for an empty batch: ``max(())`` raises, as on the batch alone); else (the
    length must be >= 1, checked like a divisor) every entry when ``keep_all`` (the padding cannot
    change the result: ``fill`` at most every entry for a maximum, at least for a minimum), or every
    entry with padding replaced by the first entry."""
    if not (isinstance(values, Padded) and values.padded()):
        return list(values)
    n = values.length
    if not isinstance(n, SymInt):
        return list(values[:n])  # (an empty batch raises ValueError, as the batch alone does)
    _require_nonempty(values, what)
    if keep_all:  # the padding never wins
        return list(values)
    return [values[0], *(select(i < n, v, values[0]) for i, v in enumerate(values) if i)]


def _note_extremum(kind: str, padded: "Padded | None", result: Int) -> Int:
    """Record ``result`` (the ``kind`` "min"/"max" of the batch of ``padded``) in the trace's
    ``extrema`` (see :class:`capproof.symbolic.Trace`) and return it unchanged."""
    trace = getattr(_symbolic.trace_state, "trace", None)
    if trace is not None and padded is not None and isinstance(result, SymInt):
        n = padded.length
        trace.extrema[result.term.get_id()] = (
            kind,
            result.term,
            tuple(to_z3_int(e) for e in padded),
            to_z3_int(n) if isinstance(n, SymInt) else n,
        )
    return result


def _derived(kind: str, padded: "Padded | None", build, records: int) -> Int:
    """``build()``, aggregate ``kind`` ("total", "max", "min") of the batch ``padded``, remembered
    across the cases of one obligation for a batch of its shared symbolic inputs (the trace's
    ``derived``: see :class:`capproof.encode.SharedInputs`): the aggregate of the same batch object
    is the same term in every case while the batch has the same shape (:meth:`Padded.same_shape`).
    Only a result whose making added nothing to the trace (no divisor, lemma, side condition,
    misuse or branch: :func:`capproof.symbolic.trace_marks`) but ``records`` extremum records (0 for
    a total, 1 for a maximum or minimum: :func:`_note_extremum`) is remembered; a later case gets
    that result and that record again, as a new call would give them. Without a memo or a batch,
    ``build()``. Measured: the 7 cases of a 64-request decode batch took its maximum (63 symbolic
    ``If`` terms) 7 times; slot mapping's 24 cases summed the same 64 symbolic query lengths."""
    trace = getattr(_symbolic.trace_state, "trace", None)
    memo = trace.derived if trace is not None else None
    if memo is None or padded is None:
        return build()
    key = (kind, id(padded))
    hit = memo.get(key)
    if hit is not None and padded.same_shape(hit[3]):
        if hit[1] is not None:
            trace.extrema[hit[1][0]] = hit[1][1]
        return hit[0]
    marks, known = _symbolic.trace_marks(trace), set(trace.extrema)
    result = build()
    after = _symbolic.trace_marks(trace)  # (divisors, lemmas, side conditions, extrema, misuse, branches)
    new = [k for k in trace.extrema if k not in known]
    if (
        isinstance(result, SymInt)
        and after[:3] + after[4:] == marks[:3] + marks[4:]
        and after[3] - marks[3] == len(new) == records
    ):
        memo[key] = (result, (new[0], trace.extrema[new[0]]) if new else None, padded, padded.shape())
    return result


def max_of(values) -> Int:
    """``max(values)``; raises ValueError for an empty sequence (as ``max`` does).

    For a :class:`Padded` vector: the maximum of its batch entries (padding excluded).
    """
    if hasattr(values, "_capproof_aggregate"):
        return values._capproof_aggregate("max_of")
    padded = values if isinstance(values, Padded) else None
    if padded is not None:
        if type(padded) is Padded:  # a batch of plain ints: computed once (Padded.remember)
            known = padded.known("max_of")
            if known is not None:
                return known
        values = _batch(values, values.lo is not None and values.fill <= values.lo, "max_of()")
    values = list(values)
    if not values:
        raise ValueError("max_of() of an empty sequence")
    if all_plain(values):
        return max(values) if type(padded) is not Padded else padded.remember("max_of", max(values))
    _check_int(*values)
    return _derived("max", padded, lambda: _note_extremum("max", padded, _balanced(maximum, values)), 1)


def min_of(values) -> Int:
    """``min(values)``; raises ValueError for an empty sequence (as ``min`` does).

    For a :class:`Padded` vector: the minimum of its batch entries (padding excluded).
    """
    if hasattr(values, "_capproof_aggregate"):
        return values._capproof_aggregate("min_of")
    padded = values if isinstance(values, Padded) else None
    if padded is not None:
        if type(padded) is Padded:  # a batch of plain ints: computed once (Padded.remember)
            known = padded.known("min_of")
            if known is not None:
                return known
        values = _batch(values, values.hi is not None and values.fill >= values.hi, "min_of()")
    values = list(values)
    if not values:
        raise ValueError("min_of() of an empty sequence")
    if all_plain(values):
        return min(values) if type(padded) is not Padded else padded.remember("min_of", min(values))
    _check_int(*values)
    return _derived("min", padded, lambda: _note_extremum("min", padded, _balanced(minimum, values)), 1)


def prefix_sums(values) -> list:
    """``[0, v0, v0+v1, …]``: ``len(values) + 1`` entries, like vLLM's ``query_start_loc`` and
    FlashAttention's ``cu_seqlens`` (cumulative token offsets, in tokens)."""
    if isinstance(values, Padded):  # one sum per entry, padding included: its batch alone has fewer
        values.read_padding("prefix_sums()")
    out = [0]
    for v in values:
        _check_int(v)
        out.append(out[-1] + v)
    return out


def count(conditions) -> Int:
    """How many of ``conditions`` hold (symbolic or not)."""
    return total(select(c, 1, 0) for c in conditions)


# A walk over a batch (a prefix scan): one formula for ints, Z3 terms and induction over the batch.


class InvariantError(AssertionError):
    """A fold's ``invariant`` is false after some prefix (raised only under :func:`checking_invariants`)."""


_CHECK_INVARIANTS = [False]


class checking_invariants:  # noqa: N801 - used as a context manager, like a function
    """Within ``with checking_invariants():`` :func:`fold` on plain ints evaluates its
    ``invariant`` after every prefix (the empty one too) and raises :class:`InvariantError` where
    it is false: how tests check on real batches that an invariant the induction rests on holds."""

    def __enter__(self):
        self._old = _CHECK_INVARIANTS[0]
        _CHECK_INVARIANTS[0] = True
        return self

    def __exit__(self, *exc) -> None:
        _CHECK_INVARIANTS[0] = self._old


def _prefix(values, i: int):
    """The first ``i`` entries of ``values`` as a fold's invariant sees them (a :class:`Padded`
    prefix keeps its batch length, so ``total``/``max_of`` of it see batch entries only)."""
    if isinstance(values, Padded):
        n = values.length
        return Padded(tuple(values[:i]), n if isinstance(n, SymInt) else min(n, i), values.fill, values.lo, values.hi)
    return tuple(values[:i])


def fold(step, init, values, invariant=None):
    """``state = init; for i, x in enumerate(values): state = step(state, i, x)``; returns ``state``.

    A prefix walk over a batch (vLLM's ``split_decodes_and_prefills``, a running offset, ...):
    ``step(state, i, x)`` takes the state after entries ``0..i-1``, the index ``i`` and entry ``x``
    and returns the next state, of the same shape as ``init`` (an int, a bool, or a tuple of them;
    symbolic or not). Over a :class:`Padded` vector the walk sees every entry, padding included
    (compare ``i`` with the batch length in ``step`` to skip it), like ``for`` does.

    ``invariant(state, i, seen)`` (optional) is a condition that holds after every prefix of ``i``
    entries ``seen`` (``total(seen)``, ``fold(..., seen)`` of another walk, ``seen``'s batch
    length); capproof.induction proves a claim for every batch size by base case and step on it.
    It is not evaluated here unless :func:`checking_invariants` is active.

    On a batch standing for every size (capproof.induction) the walk is not run: the batch returns
    a symbolic final state and records the walk.
    """
    hook = getattr(values, "_capproof_fold", None) if not isinstance(values, (tuple, list)) else None
    if hook is not None:
        return hook(step, init, invariant)
    if isinstance(values, Padded):  # the walk steps over the padding too: its batch alone does not
        values.read_padding("fold()")
    check = invariant is not None and _CHECK_INVARIANTS[0]
    state = init
    if check and not invariant(state, 0, _prefix(values, 0)):
        raise InvariantError(f"invariant of the fold false on the empty prefix (state {state!r})")
    for i, x in enumerate(values):
        state = step(state, i, x)
        if check and not invariant(state, i + 1, _prefix(values, i + 1)):
            raise InvariantError(
                f"invariant of the fold false after {i + 1} entries {list(values[: i + 1])} (state {state!r})"
            )
    return state
