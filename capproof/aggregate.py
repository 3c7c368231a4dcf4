"""The aggregate abstraction of a batch: proofs for every batch size.

A claim that sees a :class:`~capproof.domain.Vector` only through ``total``, ``max_of``,
``min_of`` and per-request conditions under ``all_of`` can be decided on the vector's aggregates
alone: the query does not grow with the batch. Each vector becomes an :class:`AggregateBatch`
(no entries) whose aggregates are fresh Z3 integers

- ``T`` (``total``), ``M`` (``max_of``), ``m`` (``min_of``) over the ``n`` active entries
  (``n`` the vector's length parameter, or its size), each entry in ``lo..hi``,

related by the facts of :func:`aggregate_facts`, which are *exact*: a tuple ``(n, T, M, m)``
satisfies them iff some batch of ``n`` entries in ``lo..hi`` has these aggregates
(:func:`realise` builds it: ``m``, ``M`` and ``n - 2`` entries between them summing to the rest).
Both directions are checked by Z3 and by enumeration in tests/test_aggregate.py.

A per-request condition ``all_of(*(P(d) for d in batch))`` becomes ``P(m) ∧ P(M)`` (and
``P(fill)`` when padding entries exist): exact when ``P`` is convex in the entry (a conjunction
of linear constraints on it), which Z3 checks for every such condition; otherwise, and for every
other use of an entry (indexing, ``len``, ``enumerate``/``zip``/``list`` on the batch, an entry
left in a term, ``any_of``, ``count``), the abstraction is abandoned (:class:`NotAggregate`) and
the prover uses the bounded encoding.

Verdicts: unsat on the abstraction -> ``proved`` for every batch length the domain admits (the
query has no per-entry terms, so the vector's size plays no part); sat -> the point is realised
as a concrete batch and replayed on ints: a counterexample if it violates the claim there.
Every abstract case is also probed: two admitted points realised and replayed on ints must agree
with the abstraction's claim value (a model that depends on something the abstraction does not
see is caught here and falls back to the bounded encoding).
"""

from __future__ import annotations

import contextlib
import operator
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import z3
import z3.z3core as _core

from . import arith as _arith
from ._iteration import all_of_site as _all_of_site
from ._iteration import at_get_iter, called_from_all_of_site
from ._iteration import concrete as _concrete
from ._iteration import free_consts as _free_consts
from ._iteration import total_site as _total_site
from ._iteration import user_location as _user_location
from .domain import Range, Vector
from .encode import (
    assert_terms,
    call_with_args,
    concrete_args,
    core_labels,
    evaluate,
    literal_name,
    new_solver,
    scalar_inputs,
    track,
)
from .errors import CapproofError
from .minimize import minimize_term
from .obligation import Obligation
from .provenance import trusted_filename
from .symbolic import (
    RawTerms,
    SymBool,
    SymInt,
    differs_from,
    model_int,
    model_true,
    refuse_object_slots,
    to_z3_bool,
    to_z3_int,
    tracing,
)

__all__ = [
    "AggregateBatch",
    "NotAggregate",
    "aggregate_facts",
    "realise",
    "AbstractCase",
    "build_abstract_case",
    "decide_abstract_case",
]


class NotAggregate(CapproofError):
    """The model uses a batch in a way the aggregate abstraction does not capture exactly."""


@refuse_object_slots(lambda why: _refused(why))
class AggregateBatch:
    """A Vector parameter as its aggregates (see the module docstring). Not a sequence: only
    ``total``/``max_of``/``min_of`` and direct iteration by a ``for`` or a comprehension (one
    representative entry, eliminated by ``all_of``) are allowed."""

    #: attributes, but no weak reference (a weak reference to the ints' tuple fails: TypeError)
    __slots__ = ("__dict__",)

    @property
    def __class__(self):  # noqa: D105 - isinstance(batch, tuple) is True, as on the ints' tuple
        return tuple

    def __getattribute__(self, name: str):
        # the model sees a tuple: any attribute it looks up (hasattr(batch, "count"), batch.index,
        # or this class's own fields) would differ from the ints' run; capproof's code may
        if name != "__class__":
            caller = trusted_filename(sys._getframe(1).f_code)
            if caller not in _OWN_FILES:
                raise _refused(f"attribute {name!r} of batch {object.__getattribute__(self, 'name')}")
        return object.__getattribute__(self, name)

    def __init__(self, name: str, dom: Vector, n: int | SymInt):
        self.name = name
        self.dom = dom
        self.n = n
        elem: Range = dom.elem  # type: ignore[assignment]
        self.lo, self.hi, self.fill, self.size = elem.lo, elem.hi, dom.fill, dom.size
        self.T = SymInt.var(f"total({name})")
        self.M = SymInt.var(f"max_of({name})")
        self.m = SymInt.var(f"min_of({name})")
        self.iterations = 0
        self.used: set[str] = set()
        #: mapped totals ``total(f(d) for d in batch)``: (representative, f(representative), fresh total)
        self.mapped: list[tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef]] = []
        #: per mapped total: True when f is non-decreasing in the entry, False non-increasing
        self.mapped_rising: list[bool] = []

    def _mapped_total(self, each: z3.ArithRef, value: object) -> SymInt:
        """``total(f(d) for d in batch)`` as a fresh integer, related to the batch's extremes by
        :func:`mapped_facts` once :func:`build_abstract_case` has checked that ``f`` is monotone."""
        from .symbolic import SymBool

        if isinstance(value, (bool, SymBool)) or not isinstance(value, int):
            raise _refused(f"total over {self.name} of a non-integer per-request term ({type(value).__name__})")
        self.used.update(("max_of", "min_of", "nonempty"))
        t = SymInt.var(f"total(f({self.name}))#{len(self.mapped) + 1}")
        self.mapped.append((each, to_z3_int(value), t.term))
        return t

    # the arith aggregates ask for these (capproof.arith.total/max_of/min_of)
    def _capproof_aggregate(self, kind: str) -> SymInt:
        """The aggregate as capproof.arith computes it on this vector as the model receives it:
        over the active entries when arith knows padding (``arith.Padded``), else
        over every entry, padding included (``fill`` from the length on)."""
        from . import arith

        if kind in ("max_of", "min_of"):
            if not (_concrete(self.n) and self.n >= 1):
                self.used.add("nonempty")
        self.used.add(kind)
        value = {"total": self.T, "max_of": self.M, "min_of": self.m}[kind]
        if hasattr(arith, "Padded"):
            return value
        pad = self.size - self.n
        if _concrete(pad) and pad <= 0:
            return value
        if kind == "total":
            return value + pad * self.fill
        padded = SymBool(z3.simplify(to_z3_int(self.n) < self.size))
        pick = arith.maximum if kind == "max_of" else arith.minimum
        return arith.select(padded, pick(value, self.fill), value)

    def _capproof_each(self) -> tuple[z3.ArithRef, z3.ArithRef, z3.BoolRef]:
        """(min, max, padding present) for ``all_of``'s elimination."""
        self.used.add("max_of")
        self.used.add("min_of")
        self.used.add("nonempty")
        return self.m.term, self.M.term, z3.simplify(to_z3_int(self.n) < self.size)

    def __iter__(self):
        frame = sys._getframe(1)
        where = _user_location(frame)
        if not at_get_iter(frame):
            raise _refused(
                f"{self.name}: iterated other than by a generator expression "
                f"(enumerate, zip, list, * unpacking) at {where}"
            )
        site, kind = _all_of_site(frame), "all_of"
        if site is None:
            site, kind = _total_site(frame), "total"
        if site is None:
            # one representative stands for every entry only under a universal quantifier or a
            # mapped total: a for loop, sum(...), any_of(*...), max(...), len([...]) over the one
            # representative would collapse the batch to a single entry (a total read as a
            # per-request bound was 'proved')
            raise _refused(
                f"{self.name}: iterated other than as all_of(*(P(d) for d in {self.name})) "
                f"or total(f(d) for d in {self.name}) at {where}"
            )
        from .purity import genexpr_impurities

        effects = genexpr_impurities(frame)
        if effects:  # f or P runs once on the representative here, once per entry on ints
            raise _refused(f"{self.name}: code run for each entry has an effect besides its value: {effects[0]}")
        # a fresh representative per iteration: two loops over the same batch in one condition
        # (pairs of entries) are two entries, which the abstraction refuses
        self.iterations += 1
        each = SymInt.var(f"each({self.name})#{self.iterations}")
        _each_registry().append((self, each.term))
        _each_sites()[each.term.decl().name()] = (frame, site, kind, self)
        return iter((each,))

    def __len__(self) -> int:
        raise _refused(f"len() of batch {self.name}")

    def __getitem__(self, index):
        raise _refused(f"indexing batch {self.name}")

    def __bool__(self) -> bool:
        raise _refused(f"truth value of batch {self.name}")


def _refused(why: str) -> NotAggregate:
    """NotAggregate, also recorded in the active trace: a model's ``except`` (a fallback taken
    only because the batch is not a tuple) cannot hide it."""
    from .symbolic import record_misuse

    return record_misuse(NotAggregate(why))  # type: ignore[return-value]


_OWN_FILES = {__file__, _arith.__file__}


def _each_sites() -> dict[str, tuple[Any, int, str, "AggregateBatch"]]:
    from . import symbolic

    trace = getattr(symbolic.trace_state, "trace", None)
    sites = getattr(trace, "each_sites", None)
    if sites is None:
        sites = {}
        trace.each_sites = sites  # type: ignore[union-attr]
    return sites


def _each_registry() -> list[tuple[AggregateBatch, z3.ArithRef]]:
    from . import symbolic

    trace = getattr(symbolic.trace_state, "trace", None)
    if trace is None:
        raise NotAggregate("batch iterated outside an evaluation")
    reg = getattr(trace, "each_batches", None)
    if reg is None:
        reg = []
        trace.each_batches = reg  # type: ignore[attr-defined]
    return reg


def _mentions(term: z3.ExprRef, consts: list[z3.ArithRef]) -> bool:
    """Whether ``term`` contains any of ``consts`` (Z3's substitution, in C: an unchanged term is
    the very same AST; walking a 1024-request claim in Python took seconds)."""
    if not consts:
        return False
    zero = z3.IntVal(0)
    return not z3.substitute(term, *[(c, zero) for c in consts]).eq(term)


def mapped_total(items: list, caller) -> SymInt | None:
    """The hook :func:`capproof.arith.total` calls with its materialised items and its caller's
    frame: when the call consumes a ``total(f(d) for d in batch)`` site of an aggregate batch,
    the batch's mapped total (one representative entry yielded one item ``f(d)``); None for any
    other ``total``. Raises NotAggregate when the generator did not yield exactly one item (a
    filter ``if`` over the entry)."""
    from . import symbolic

    trace = getattr(symbolic.trace_state, "trace", None)
    sites = getattr(trace, "each_sites", None) if trace is not None else None
    if not sites:
        return None
    hits = [k for k, v in sites.items() if v[2] == "total" and v[0] is caller and v[1][0] <= caller.f_lasti < v[1][1]]
    if not hits:
        return None
    if len(hits) > 1:
        raise _refused("two batches iterated in one total()")
    _, _, _, b = sites.pop(hits[0])
    each = next(e for bb, e in getattr(trace, "each_batches", []) if e.decl().name() == hits[0])
    if len(items) != 1:
        raise _refused(
            f"total over {b.name}: the generator yielded {len(items)} values for one entry "
            "(a filter over the entry, or a nested loop)"
        )
    return b._mapped_total(each, items[0])


#: The per-entry facts already decided in the current attempt (:func:`shared_facts`), by the ids of
#: the terms they are about; each entry keeps those terms alive, so their ids are not reused.
_FACTS: list[dict[tuple, tuple[object, tuple]]] = []


@contextlib.contextmanager
def shared_facts() -> Iterator[None]:
    """Within this block, :func:`build_abstract_case` decides each per-entry fact (monotonicity,
    the affine envelope, the common residue, an identity of ``f``) once per distinct term and
    range, not once per case: the cases of one obligation share their ``f`` (a 1,024-expert
    routing's ``round_up(cnt, block_size)`` for every ``block_size`` case of one value). The
    answers are the same queries' answers; only repeated Z3 calls are saved."""
    _FACTS.append({})
    try:
        yield
    finally:
        _FACTS.pop()


def _once(kind: str, terms: tuple, extra: tuple, compute):
    """``compute()``, or its answer for the same ``kind``, ``terms`` (by Z3 id) and ``extra`` within
    :func:`shared_facts`."""
    if not _FACTS:
        return compute()
    memo = _FACTS[-1]
    key = (kind, *(t.get_id() for t in terms), *extra)
    if key not in memo:
        memo[key] = (compute(), terms)
    return memo[key][0]


def _valid_once(claim: z3.BoolRef, background: list[z3.BoolRef]) -> bool:
    """:func:`_valid`, decided once per claim within :func:`shared_facts` (outside it no term
    outlives the call, as with :func:`_valid` itself: a longer-lived term shifts the ids Z3
    gives later terms, and with them the arbitrary models of later queries)."""
    return _once("valid", (claim, *background), (), lambda: _valid(claim, background))


def _monotone(f: z3.ArithRef, each: z3.ArithRef, lo: int, hi: int, background: list[z3.BoolRef]) -> bool | None:
    """True when ``f`` is non-decreasing in ``each`` over ``lo..hi`` for every value of its other
    names under ``background`` (Z3: no ``a <= b`` with ``f(a) > f(b)``), False when non-increasing,
    None when neither is proved."""
    a, c = z3.Ints("__mono_a __mono_b")
    fa, fc = z3.substitute(f, (each, a)), z3.substitute(f, (each, c))
    for rising, bad in ((True, fa > fc), (False, fa < fc)):
        s = z3.Solver()
        s.set("rlimit", 2_000_000)
        s.add(*background, lo <= a, a <= c, c <= hi, bad)
        if s.check() == z3.unsat:
            return rising
    return None


def _value_at(f: z3.ArithRef, each: z3.ArithRef, v: int) -> int | None:
    """``f`` at ``each = v`` as an int (``f`` of the entry alone), or None when it does not simplify to one."""
    value = z3.simplify(z3.substitute(f, (each, z3.IntVal(v))))
    return value.as_long() if z3.is_int_value(value) else None


def _extremum(g: z3.ArithRef, x: z3.ArithRef, lo: int, hi: int, maximize: bool) -> int | None:
    """The exact maximum (minimum) of ``g(x)`` over ``lo..hi`` (``g`` has no other free name), or
    None when Z3 cannot say within its rlimit."""
    opt = z3.Optimize()
    opt.set("rlimit", 2_000_000)
    opt.add(lo <= x, x <= hi)
    h = opt.maximize(g) if maximize else opt.minimize(g)
    if opt.check() != z3.sat:
        return None
    value = opt.upper(h) if maximize else opt.lower(h)
    if not z3.is_int_value(value):  # +-oo, or an epsilon bound
        return None
    # certify: no point beyond the optimum (an Optimize answer is not taken on trust)
    s = z3.Solver()
    s.set("rlimit", 2_000_000)
    s.add(lo <= x, x <= hi, g > value if maximize else g < value)
    return value.as_long() if s.check() == z3.unsat else None


def affine_envelope(f: z3.ArithRef, each: z3.ArithRef, lo: int, hi: int) -> list[tuple[int, int, int]]:
    """Affine bounds of a per-entry term: ``(a, c_lo, c_hi)`` with ``a*x + c_lo <= f(x) <= a*x + c_hi``
    for every ``x`` in ``lo..hi``, each ``c`` exact (Z3 optimum, certified by an unsat query).

    Summed over a batch of ``n`` entries they give ``a*T + n*c_lo <= sum f(x_i) <= a*T + n*c_hi``
    (``T`` the batch's total): the relation a mapped total such as ``sum_e round_up(cnt_e, B)``
    needs to be compared with ``numel + E*(B - 1)`` (slope 1, ``c_hi = B - 1``) and with
    ``numel*B`` (slope ``B``, ``c_hi = 0``). The slopes tried are the first step ``f(lo+1) - f(lo)``
    and the secant ``(f(hi) - f(lo)) / (hi - lo)`` rounded down and up (0 excluded: the monotone
    facts already bound ``f`` by its values at the extremes). Only for ``f`` of the entry alone
    (a case constant elsewhere); ``[]`` when ``f`` has another free name or nothing is certified.
    """
    if hi <= lo or _free_consts(f) - {each.decl().name()}:
        return []

    f_lo, f_next, f_hi = (_value_at(f, each, v) for v in (lo, lo + 1, hi))
    if f_lo is None or f_next is None or f_hi is None:
        return []
    slopes = [f_next - f_lo, (f_hi - f_lo) // (hi - lo), -((f_lo - f_hi) // (hi - lo))]
    out: list[tuple[int, int, int]] = []
    x = z3.Int("__envelope_x")
    fx = z3.substitute(f, (each, x))
    for a in dict.fromkeys(slopes):
        if a == 0:
            continue
        c_hi = _extremum(fx - a * x, x, lo, hi, True)
        c_lo = _extremum(fx - a * x, x, lo, hi, False)
        if c_hi is not None and c_lo is not None:
            out.append((a, c_lo, c_hi))
    return out


def common_residue(f: z3.ArithRef, each: z3.ArithRef, lo: int, hi: int) -> tuple[int, int] | None:
    """``(g, r)`` with ``g >= 2`` and ``f(x) % g == r`` for every ``x`` in ``lo..hi`` (proved by Z3),
    or None: e.g. ``round_up(cnt, B)`` is always a multiple of ``B``. Summed over ``n`` entries:
    ``(sum f(x_i) - n*r) % g == 0``. ``g`` is the gcd of ``f``'s differences at a few points; only
    for ``f`` of the entry alone."""
    import math

    if hi <= lo or _free_consts(f) - {each.decl().name()}:
        return None
    values = [_value_at(f, each, v) for v in dict.fromkeys((lo, lo + 1, min(lo + 2, hi), (lo + hi) // 2, hi - 1, hi))]
    if None in values:
        return None
    g = 0
    for value in values[1:]:
        g = math.gcd(g, value - values[0])
    if g < 2:
        return None
    r = values[0] % g
    x = z3.Int("__residue_x")
    if not _valid(z3.Implies(z3.And(lo <= x, x <= hi), z3.substitute(f, (each, x)) % g == r), []):
        return None
    return g, r


def mapped_facts(n: z3.ArithRef, T: z3.ArithRef, y_max: z3.ArithRef, y_min: z3.ArithRef) -> z3.BoolRef:
    """What every batch of ``n >= 1`` entries gives a mapped total ``T = sum f(x_i)`` when ``f`` is
    monotone and ``y_max``/``y_min`` are ``f`` at the batch's extremes (the entries that are them
    map to them, every other entry between): ``n = 1``: ``T = y_max = y_min``; ``n >= 2``:
    ``(n-1)*y_min + y_max <= T <= y_min + (n-1)*y_max``. Sound, not exact (``f`` may skip values
    between ``y_min`` and ``y_max``): a counterexample is realised by :meth:`AbstractCase.point`
    and replayed, or the bounded encoding is used."""
    b = _Built(n, T, y_max, y_min)
    n, T, y_max, y_min = b.args
    # z3.And(z3.Implies(n == 1, z3.And(T == y_max, y_max == y_min)),
    #        z3.Implies(n >= 2, z3.And((n - 1) * y_min + y_max <= T, T <= y_min + (n - 1) * y_max)))
    return b.done(
        b.and_(
            b.implies(b.eq(n, 1), b.and_(b.eq(T, y_max), b.eq(y_max, y_min))),
            b.implies(
                b.ge(n, 2),
                b.and_(
                    b.le(b.add(b.mul(b.sub(n, 1), y_min), y_max), T), b.le(T, b.add(y_min, b.mul(b.sub(n, 1), y_max)))
                ),
            ),
        )
    )


def eliminate_each(conj: z3.BoolRef) -> z3.BoolRef | None:
    """``all_of`` over per-request conditions: ``conj`` mentions at most one batch's
    representative entry; return the exact aggregate form, or None if ``conj`` mentions none.
    Raises NotAggregate when it is not convex in the entry or mentions two batches."""
    from . import symbolic

    trace = getattr(symbolic.trace_state, "trace", None)
    batches = getattr(trace, "each_batches", None) if trace is not None else None
    if not batches:
        return None
    names = _free_consts(conj)
    hits = [(b, e) for b, e in batches if e.decl().name() in names]
    if not hits:
        return None
    if len(hits) > 1:
        raise NotAggregate("a condition over two entries together (pairs of entries, or two batches zipped)")
    ((b, e),) = hits
    # the all_of call that consumes the representative's generator expression, and no other
    # (an any_of or a sum over the one representative, wrapped in all_of, is not "for every entry")
    sites = getattr(trace, "each_sites", {})
    site = sites.pop(e.decl().name(), None)
    if site is None or site[2] != "all_of" or not called_from_all_of_site(site[0], site[1]):
        raise NotAggregate(
            f"an entry of {b.name} reaches all_of other than as all_of(*(P(d) for d in {b.name})) "
            "(through any_of, a sum, a loop or a variable)"
        )
    lo_t, hi_t, padding = b._capproof_each()
    a, c, x = z3.Ints("__agg_a __agg_b __agg_x")
    s = z3.Solver()
    s.set("rlimit", 2_000_000)
    s.add(z3.substitute(conj, (e, a)), z3.substitute(conj, (e, c)), a <= x, x <= c, z3.Not(z3.substitute(conj, (e, x))))
    if s.check() != z3.unsat:
        raise NotAggregate(f"a per-request condition over {b.name} that is not convex in the entry: {conj}")
    return z3.simplify(
        z3.And(
            z3.substitute(conj, (e, lo_t)),
            z3.substitute(conj, (e, hi_t)),
            z3.Implies(padding, z3.substitute(conj, (e, z3.IntVal(b.fill)))),
        )
    )


def aggregate_facts(
    n: z3.ArithRef, T: z3.ArithRef, M: z3.ArithRef, m: z3.ArithRef, lo: int, hi: int, extremes: bool
) -> z3.BoolRef:
    """Exactly the ``(n, T[, M, m])`` realised by some batch of ``n >= 0`` entries in ``lo..hi``.

    Without ``extremes`` only the total: ``n*lo <= T <= n*hi`` (linear: ``lo``, ``hi`` constants).
    With them (``n >= 1`` required by the caller): ``lo <= m <= M <= hi``; ``n = 1``: ``T = M = m``;
    ``n >= 2``: ``(n-1)*m + M <= T <= m + (n-1)*M``; plus the linear consequences that help Z3
    (``T >= M + (n-1)*lo``, ``T <= m + (n-1)*hi``).
    """
    b = _Built(n, T, M, m, ints=(lo, hi))
    n, T, M, m = b.args
    # [n * lo <= T, T <= n * hi] and with extremes [lo <= m, m <= M, M <= hi, z3.Implies(n == 1,
    # z3.And(T == M, M == m)), z3.Implies(n >= 2, z3.And((n - 1) * m + M <= T, T <= m + (n - 1) * M)),
    # T >= M + (n - 1) * lo, T <= m + (n - 1) * hi], then z3.And of them
    built = [b.le(b.mul(n, lo), T), b.le(T, b.mul(n, hi))]
    if extremes:
        built += [
            b.le(lo, m),
            b.le(m, M),
            b.le(M, hi),
            b.implies(b.eq(n, 1), b.and_(b.eq(T, M), b.eq(M, m))),
            b.implies(
                b.ge(n, 2), b.and_(b.le(b.add(b.mul(b.sub(n, 1), m), M), T), b.le(T, b.add(m, b.mul(b.sub(n, 1), M))))
            ),
            b.ge(T, b.add(M, b.mul(b.sub(n, 1), lo))),
            b.le(T, b.add(m, b.mul(b.sub(n, 1), hi))),
        ]
    return b.done(b.and_(*built))


class _Built:
    """z3py's operators for :func:`aggregate_facts` and :func:`mapped_facts` (the formulas are
    written once, with these), making z3py's very Z3 calls in the same order without a Python
    wrapper, coercion and sort check per operation (the facts are built again for every
    abstract case) when every term is an Int term of one context and every other operand a Python
    int; otherwise z3py's operators themselves (``raw`` is None).

    On the C path operands are ``(ast, z3py class)`` pairs or Python ints. Each operation makes
    what z3py's makes: an int operand's numeral (``IntVal``, in the operation, after both operands
    are built, as ``_coerce_exprs`` casts it), then the application. A comparison takes Python's
    reflected method where Python would (an int on the left; a right operand whose class,
    ``IntNumRef``, is a proper subclass of the left's, ``ArithRef``): ``lo <= m`` is ``m >= lo``,
    ``x == numeral`` is ``numeral == x``. Every term made ends up inside the result (no term is freed
    before it is held), so Z3 gives the same ids (tests/test_aggregate.py compares them)."""

    __slots__ = ("raw", "args", "terms")

    def __init__(self, *terms, ints: tuple = ()):
        self.terms = terms  # the caller's wrappers, alive while the raw terms are used (as z3py's arguments are)
        ctx = terms[0].ctx if isinstance(terms[0], z3.ArithRef) else None
        ok = (
            ctx is not None
            and all(type(i) is int for i in ints)
            and all(type(t) in (z3.ArithRef, z3.IntNumRef) and t.ctx is ctx and t.is_int() for t in terms)
        )
        self.raw = RawTerms(ctx) if ok else None
        self.args = [(t.as_ast(), type(t)) for t in terms] if ok else list(terms)

    def _operand(self, x):
        return (self.raw.num(x), z3.IntNumRef) if type(x) is int else x

    def _arith(self, mk, z3py, a, b):
        if self.raw is None:
            return z3py(a, b)
        a, b = self._operand(a), self._operand(b)
        return self.raw.nary(mk, a[0], b[0]), z3.ArithRef

    def add(self, a, b):
        return self._arith(_core.Z3_mk_add, operator.add, a, b)

    def sub(self, a, b):
        return self._arith(_core.Z3_mk_sub, operator.sub, a, b)

    def mul(self, a, b):
        return self._arith(_core.Z3_mk_mul, operator.mul, a, b)

    def _compare(self, mk, reflected, z3py, a, b):
        if self.raw is None:
            return z3py(a, b)
        if type(a) is int:  # int <= x: Python calls x.__ge__(int)
            mk, a, b = reflected, b, a
        elif type(b) is not int and b[1] is not a[1] and issubclass(b[1], a[1]):
            mk, a, b = reflected, b, a
        a, b = self._operand(a), self._operand(b)
        return self.raw.keep(mk(self.raw.ref, a[0], b[0])), z3.BoolRef

    def le(self, a, b):
        return self._compare(_core.Z3_mk_le, _core.Z3_mk_ge, operator.le, a, b)

    def ge(self, a, b):
        return self._compare(_core.Z3_mk_ge, _core.Z3_mk_le, operator.ge, a, b)

    def eq(self, a, b):
        return self._compare(_core.Z3_mk_eq, _core.Z3_mk_eq, operator.eq, a, b)

    def implies(self, a, b):
        return z3.Implies(a, b) if self.raw is None else (self.raw.implies(a[0], b[0]), z3.BoolRef)

    def and_(self, *args):
        return (
            z3.And(*args) if self.raw is None else (self.raw.nary(_core.Z3_mk_and, *(a[0] for a in args)), z3.BoolRef)
        )

    def done(self, built) -> z3.BoolRef:
        return built if self.raw is None else self.raw.done(built[0])


def realise(n: int, T: int, M: int | None, m: int | None, lo: int, hi: int) -> list[int]:
    """A batch of ``n`` entries in ``lo..hi`` with total ``T`` (and maximum ``M``, minimum ``m``
    when given), in ascending order. Raises ValueError if the aggregates are not realisable."""
    if n < 0:
        raise ValueError(f"negative length {n}")
    if M is None or m is None:
        if not n * lo <= T <= n * hi:
            raise ValueError(f"total {T} not reachable by {n} entries in {lo}..{hi}")
        if n == 0:
            return []
        m, M = lo, hi
        base, extra = divmod(T - n * lo, n)  # spread evenly: base + lo each, extra of them one more
        out = [lo + base + 1] * extra + [lo + base] * (n - extra)
        return sorted(out)
    if n == 0 or not lo <= m <= M <= hi:
        raise ValueError(f"no batch of {n} entries with min {m} and max {M} in {lo}..{hi}")
    if n == 1:
        if not T == M == m:
            raise ValueError(f"one entry cannot have total {T}, max {M}, min {m}")
        return [T]
    rest = T - M - m
    k = n - 2
    if not k * m <= rest <= k * M:
        raise ValueError(f"total {T} not reachable with min {m}, max {M} and {n} entries")
    if k == 0:
        return [m, M]
    base, extra = divmod(rest - k * m, k)
    middle = [m + base + 1] * extra + [m + base] * (k - extra)
    return sorted([m, *middle, M])


@dataclass
class AbstractCase:
    """One case of an obligation on the aggregate abstraction."""

    ob: Obligation
    fixed: dict[str, int]
    scalars: dict[str, SymInt]
    batches: dict[str, AggregateBatch]
    constraints: list[tuple[str, z3.BoolRef]]
    false_assumptions: list[str]
    claim: z3.BoolRef
    values: dict[str, z3.ArithRef]
    divisors: list[z3.ArithRef] = field(default_factory=list)
    lemmas: list[z3.BoolRef] = field(default_factory=list)
    relation: str = ""
    #: batches with a mapped total whose facts over-approximate (f not affine): a proof holds, a
    #: point must be realised and replayed, and an optimum (capproof bound) may not be attained
    inexact: list[str] = field(default_factory=list)

    def solver(self, rlimit: int) -> tuple[z3.Solver, dict[str, str]]:
        s = new_solver(rlimit)
        trackers: dict[str, str] = {}
        for label, cond in self.constraints:
            track(s, trackers, label, cond)
        assert_terms(s, self.lemmas)
        return s, trackers

    def aggregate_terms(self) -> list[tuple[z3.ArithRef, int]]:
        """Each batch's aggregates the model used, with a lower bound from the domain: its total,
        then its maximum and minimum (the order in which a canonical point minimises them)."""
        out: list[tuple[z3.ArithRef, int]] = []
        for b in self.batches.values():
            out.append((b.T.term, b.lo * b.size if b.lo < 0 else 0))
            if {"max_of", "min_of"} & b.used:
                out += [(b.M.term, b.lo), (b.m.term, b.lo)]
        return out

    def aggregate_values(self, point: dict[str, object]) -> list[int]:
        """The values of :meth:`aggregate_terms` at a concrete ``point`` (each batch a list): its
        sum, then its maximum and minimum, in the same order."""
        out: list[int] = []
        for name, b in self.batches.items():
            xs = list(point[name])  # type: ignore[call-overload]
            out.append(sum(xs))
            if {"max_of", "min_of"} & b.used:
                out += [max(xs), min(xs)]
        return out

    def point(self, model: z3.ModelRef) -> dict[str, object]:
        """The parameters at ``model``, each batch realised as a concrete list (ascending)."""
        ev = lambda t: model_int(model, t)  # noqa: E731
        out: dict[str, object] = {}
        for p in self.ob.params:
            if p in self.fixed:
                out[p] = self.fixed[p]
            elif p in self.scalars:
                out[p] = ev(self.scalars[p].term)
        for p, b in self.batches.items():
            n = b.n if _concrete(b.n) else ev(to_z3_int(b.n))
            ext = bool({"max_of", "min_of"} & b.used)
            if b.mapped:
                out[p] = _realise_mapped(b, n, model)
                continue
            out[p] = realise(n, ev(b.T.term), ev(b.M.term) if ext else None, ev(b.m.term) if ext else None, b.lo, b.hi)
        return {p: out[p] for p in self.ob.params}


def _mapped_sum(ev, each: z3.ArithRef, f: z3.ArithRef, xs: list[int]) -> int:
    """``sum(f(x) for x in xs)`` evaluated by ``ev``, once per distinct entry (a realised batch
    has few distinct values: evaluating each of 1,024 entries dominated the MoE proofs)."""
    return sum(k * ev(z3.substitute(f, (each, z3.IntVal(x)))) for x, k in Counter(xs).items())


def _realise_mapped(b: AggregateBatch, n: int, model: z3.ModelRef) -> list[int]:
    """A batch of ``n`` entries with the model's minimum and maximum whose first mapped total is
    the model's (entries found by binary search on the monotone ``f``); every other total of the
    batch the model used must then agree. Raises ValueError when no such batch is found."""
    ev = lambda t: model_int(model, t)  # noqa: E731
    lo_x, hi_x = ev(b.m.term), ev(b.M.term)
    if "total" in b.used:  # the plain total is used too (or f is affine): realise it, check the mapped ones
        xs = realise(n, ev(b.T.term), hi_x, lo_x, b.lo, b.hi)
        if all(_mapped_sum(ev, e2, f2, xs) == ev(t2) for e2, f2, t2 in b.mapped):
            return xs
    each, f, t = b.mapped[0]
    rising = b.mapped_rising[0]
    memo: dict[int, int] = {}

    def fx(x: int) -> int:
        if x not in memo:
            memo[x] = ev(z3.substitute(f, (each, z3.IntVal(x))))
        return memo[x]

    if n == 1:
        xs = [hi_x]
    else:
        y_lo, y_hi = sorted((fx(lo_x), fx(hi_x)))
        ys = realise(n, ev(t), y_hi, y_lo, y_lo, y_hi)
        inverse: dict[int, int] = {}
        for y in ys[1:-1]:
            if y in inverse:
                continue
            a, c = lo_x, hi_x  # the least x in a..c with f(x) >= y (rising) or <= y (falling)
            while a < c:
                mid = (a + c) // 2
                if (fx(mid) >= y) if rising else (fx(mid) <= y):
                    c = mid
                else:
                    a = mid + 1
            if fx(a) != y:
                raise ValueError(f"no entry of {b.name} in {lo_x}..{hi_x} maps to {y}")
            inverse[y] = a
        ends = [lo_x, hi_x] if rising else [hi_x, lo_x]
        xs = [ends[0], *(inverse[y] for y in ys[1:-1]), ends[1]]
    for e2, f2, t2 in b.mapped[1:]:
        if _mapped_sum(ev, e2, f2, xs) != ev(t2):
            raise ValueError(f"{b.name}: a second total over the batch is not realised by {xs}")
    if "total" in b.used and sum(xs) != ev(b.T.term):
        raise ValueError(f"{b.name}: total and a mapped total not realised together by {xs}")
    return sorted(xs)


def build_abstract_case(
    ob: Obligation,
    fixed: dict[str, int],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    stop_if_excluded: bool = False,
) -> AbstractCase:
    """Run ``ob`` on the aggregate abstraction. Raises NotAggregate (or whatever the model
    raises) when the abstraction does not apply.

    ``stop_if_excluded``: when an assumption is concretely false in this case (no point of it is
    admitted), return the case with its ``false_assumptions`` and nothing else built (no claim,
    facts or lemmas: a 40-case MoE split has 32 such cases); what the model would raise or misuse
    there after its assumptions does not matter, as no point of the case is checked."""
    scalars, constraints = scalar_inputs(ranges)
    background = [c for _, c in constraints]  # the scalars' domains, for the monotonicity checks
    batches: dict[str, AggregateBatch] = {}
    for name, dom in vectors.items():
        if dom.length is None:
            n: int | SymInt = dom.size
        elif dom.length in fixed:
            n = fixed[dom.length]
        elif dom.length in scalars:
            n = scalars[dom.length]
        else:
            raise NotAggregate(f"{name}: length {dom.length} is neither fixed nor a Range")
        batches[name] = AggregateBatch(name, dom, n)
    from .guard import introspections

    where = introspections(ob.func, *ob.assumptions.values())
    if where:  # type() of a symbolic int or of a batch is not int/tuple: another branch than the ints'
        raise NotAggregate(where[0])
    values: dict[str, object] = {**fixed, **scalars, **batches}
    args = {p: values[p] for p in ob.params}
    with tracing(watch=True) as trace:
        trace.each_batches = []  # type: ignore[attr-defined]
        trace.all_of_hook = eliminate_each  # type: ignore[attr-defined]
        trace.total_hook = mapped_total  # type: ignore[attr-defined]
        assumed = {
            n_: call_with_args(f, "assumption", n_, ob.assumption_params(n_), args) for n_, f in ob.assumptions.items()
        }
        false = [n_ for n_, v in assumed.items() if isinstance(v, bool) and not v]  # concretely false
        excluded = stop_if_excluded and bool(false)
        result = None if excluded else ob.func(**args)
    if trace.misuse:
        raise NotAggregate(f"the model misused a symbolic value or the batch: {trace.misuse[0]}")
    if excluded:
        return AbstractCase(ob, dict(fixed), scalars, batches, [], false, z3.BoolVal(False), {})
    left_sites = [v for v in getattr(trace, "each_sites", {}).values() if v[2] == "total"]
    if left_sites:  # sum(...), max(...), a custom fold: the one representative was taken for the batch
        raise NotAggregate(
            f"{left_sites[0][3].name}: a generator over the batch consumed by a call other than "
            "capproof's total() (sum, max, len, ...)"
        )
    from .encode import as_claim

    claim_ = as_claim(result, ob)
    for name, value in assumed.items():
        if not isinstance(value, bool):
            constraints.append((name, to_z3_bool(value)))
    claim_term = to_z3_bool(claim_.holds)
    value_terms = {k: to_z3_int(v) for k, v in claim_.values.items()}
    each_terms = [e for _, e in trace.each_batches]  # type: ignore[attr-defined]
    eaches = {e.decl().name() for e in each_terms}
    for label, term in [*constraints, ("claim", claim_term), *value_terms.items()]:
        left = _free_consts(term) & eaches if _mentions(term, each_terms) else set()
        if left:
            names = ", ".join(sorted({n_[len("each(") :].split(")#")[0] for n_ in left}))
            raise NotAggregate(
                f"{label} uses entries of {names} other than through total/max_of/min_of or "
                "all_of (a per-entry term such as a sum of f(entry))"
            )
    mono_lemmas: list[z3.BoolRef] = []
    inexact: list[str] = []
    for name, b in batches.items():
        if not b.used:
            continue
        n_t = to_z3_int(b.n)
        extremes = bool({"max_of", "min_of"} & b.used)
        if extremes:
            lo_n = b.n if _concrete(b.n) else ob.domain[b.dom.length].lo  # type: ignore[index,union-attr]
            if lo_n < 1:
                raise NotAggregate(f"{name}: max_of/min_of of a batch whose length can be 0")
        constraints.append(
            (
                f"{name} aggregates (n entries in {b.lo}..{b.hi})",
                aggregate_facts(n_t, b.T.term, b.M.term, b.m.term, b.lo, b.hi, extremes),
            )
        )
        for _k, (each, f, t) in enumerate(b.mapped):
            others = _free_consts(f) & (eaches - {each.decl().name()})
            if others:  # f(d) over another batch's (or another loop's) representative: two entries at once
                raise NotAggregate(f"total over {name} of a term that also uses an entry of another iteration")
            rising = _once(
                "monotone", (f, each, *background), (b.lo, b.hi), lambda: _monotone(f, each, b.lo, b.hi, background)
            )
            if rising is None:
                raise NotAggregate(f"total over {name} of a per-request term not monotone in the entry: {f}")
            if not (_concrete(b.n) and b.n >= b.size) and not _valid_once(
                z3.substitute(f, (each, z3.IntVal(b.fill))) == 0, background
            ):
                raise NotAggregate(
                    f"total over {name}: the padding entries (fill {b.fill}) may contribute a nonzero term on ints"
                )
            b.mapped_rising.append(rising)
            at_max, at_min = z3.substitute(f, (each, b.M.term)), z3.substitute(f, (each, b.m.term))
            y_max, y_min = (at_max, at_min) if rising else (at_min, at_max)
            facts = mapped_facts(n_t, t, y_max, y_min)
            f0, f1 = z3.substitute(f, (each, z3.IntVal(0))), z3.substitute(f, (each, z3.IntVal(1)))
            x = z3.Int("__affine_x")
            if _valid_once(
                z3.Implies(z3.And(b.lo <= x, x <= b.hi), z3.substitute(f, (each, x)) == f0 + x * (f1 - f0)), background
            ):
                # f(x) = f(0) + x*(f(1) - f(0)): the mapped total is exact, n*f(0) + (f(1) - f(0))*total
                facts = z3.And(facts, t == n_t * f0 + (f1 - f0) * b.T.term)
                b.used.add("total")
            else:
                inexact.append(name)
                envelope = _once("envelope", (f, each), (b.lo, b.hi), lambda: affine_envelope(f, each, b.lo, b.hi))
                if envelope:
                    b.used.add("total")
                    facts = z3.And(
                        facts,
                        *(
                            z3.And(a * b.T.term + n_t * c_lo <= t, t <= a * b.T.term + n_t * c_hi)
                            for a, c_lo, c_hi in envelope
                        ),
                    )
                residue = _once("residue", (f, each), (b.lo, b.hi), lambda: common_residue(f, each, b.lo, b.hi))
                if residue:
                    g, r = residue
                    facts = z3.And(facts, (t - n_t * r) % g == 0)
            constraints.append((f"{name} aggregates (n entries in {b.lo}..{b.hi})", facts))
            # a per-request term bounded through its request's bound: for each scalar u in the
            # entries' range, f(max) <= f(u) when max <= u (rising; mirrored when falling). Valid
            # because f is monotone on lo..hi (checked above); without them Z3's nonlinear search
            # proved the FlashInfer page list for one random seed in four
            for u in scalars.values():
                ut = u.term
                fu = z3.substitute(f, (each, ut))
                inside = z3.And(b.lo <= ut, ut <= b.hi)
                if rising:
                    mono_lemmas += [
                        z3.Implies(z3.And(inside, b.M.term <= ut), at_max <= fu),
                        z3.Implies(z3.And(inside, ut <= b.m.term), fu <= at_min),
                    ]
                else:
                    mono_lemmas += [
                        z3.Implies(z3.And(inside, b.M.term <= ut), fu <= at_max),
                        z3.Implies(z3.And(inside, ut <= b.m.term), at_min <= fu),
                    ]
    divisors = [t for t, _ in trace.divisors]
    if divisors:  # the bounded encoding checks each divisor under the assumptions before it
        raise NotAggregate(f"symbolic divisor {divisors[0]} (checked on the bounded encoding)")
    if trace.side_conditions:  # an encoding exact only where a condition holds: checked there too
        raise NotAggregate(f"side condition {trace.side_conditions[0][1]} (checked on the bounded encoding)")
    return AbstractCase(
        ob,
        dict(fixed),
        scalars,
        batches,
        constraints,
        false,
        claim_term,
        value_terms,
        divisors,
        [*trace.lemmas, *mono_lemmas],
        claim_.relation,
        inexact,
    )


def _valid(claim: z3.BoolRef, background: list[z3.BoolRef]) -> bool:
    s = z3.Solver()
    s.set("rlimit", 2_000_000)
    s.add(*background, z3.Not(claim))
    return s.check() == z3.unsat


@dataclass
class AbstractOutcome:
    kind: str  # proved | excluded | counterexample | unknown | abandon
    core: list[str] = field(default_factory=list)
    params: dict[str, object] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    message: str = ""


def _replay_agrees(case: AbstractCase, params: dict[str, object], holds: bool) -> str | None:
    """None when the realised batch ``params`` gives the claim the value ``holds`` on ints with
    its padding and on the batch alone (as a counterexample is shown), every assumption holding
    both ways; else the problem."""
    for padding in (True, False):
        ev = evaluate(case.ob, concrete_args(case.ob, params, padding), witnesses=padding)
        how = "" if padding else " on the batch alone"
        failed = [n for n, v in ev.assumptions.items() if not v]
        if failed:
            return f"realised batch {params} violates {failed} on ints{how}"
        if bool(ev.claim.holds) != holds:
            return f"realised batch {params}: abstraction says claim {holds}, ints say {bool(ev.claim.holds)}{how}"
    return None


def _probe_real_batch(case: AbstractCase, s: z3.Solver, model: z3.ModelRef) -> str | None:
    """Probe an inexact abstraction at a real batch: realise the model's scalars and plain
    aggregates (total, maximum, minimum) as a concrete batch, pin every abstract term to that
    batch's true value (mapped totals included), and check that the abstraction admits the point
    (its facts are valid there) and gives the claim the verdict the ints give. Returns the problem,
    or None. Raises ValueError when the plain aggregates are not realisable."""
    ev = lambda t: model_int(model, t)  # noqa: E731
    params: dict[str, object] = {}
    pins: list[z3.BoolRef] = []
    for p in case.ob.params:
        if p in case.fixed:
            params[p] = case.fixed[p]
        elif p in case.scalars:
            params[p] = ev(case.scalars[p].term)
            pins.append(case.scalars[p].term == params[p])
    for p, b in case.batches.items():
        n = b.n if _concrete(b.n) else ev(to_z3_int(b.n))
        ext = bool({"max_of", "min_of"} & b.used)
        xs = realise(n, ev(b.T.term), ev(b.M.term) if ext else None, ev(b.m.term) if ext else None, b.lo, b.hi)
        params[p] = xs
        pins.append(b.T.term == sum(xs))
        if xs:
            pins += [b.M.term == max(xs), b.m.term == min(xs)]
        for each, f, t in b.mapped:  # f evaluated once per distinct entry (a 4,096-entry batch has few)
            pins.append(t == _mapped_sum(ev, each, f, xs))
    params = {p: params[p] for p in case.ob.params}
    s.push()
    try:
        s.add(*pins)
        answer = s.check()
        if answer != z3.sat:
            return f"realised batch {params}: the abstraction does not admit it ({answer})"
        holds = model_true(s.model(), case.claim)
    finally:
        s.pop()
    return _replay_agrees(case, params, holds)


def decide_abstract_case(
    case: AbstractCase, rlimit: int, minimize: bool = True, minimal_core: bool = True
) -> AbstractOutcome:
    """Decide one abstract case; ``abandon`` means: use the bounded encoding for this obligation.
    ``minimal_core=False``: a proof's core is Z3's (not :func:`_minimal_core`'s queries), for a
    caller that will not show it."""
    if case.false_assumptions:
        return AbstractOutcome("excluded", core=case.false_assumptions[:1])
    s, trackers = case.solver(rlimit)
    answer = s.check()
    if answer == z3.unsat:
        return AbstractOutcome("excluded", core=core_labels(s.unsat_core(), trackers))
    if answer == z3.unknown:
        return AbstractOutcome("unknown", message=f"assumption check: {s.reason_unknown()}")
    for d in case.divisors:
        s.push()
        s.add(d == 0)
        zero = s.check()
        s.pop()
        if zero != z3.unsat:
            return AbstractOutcome("abandon", message=f"divisor {d} may be zero (the bounded encoding reports it)")
    # probe: two admitted points, realised and replayed, must agree with the abstraction
    model = s.model()
    free = [v.term for v in case.scalars.values()] + [
        t for b in case.batches.values() for t in (b.T.term, b.M.term, b.m.term)
    ]
    free += [t for b in case.batches.values() for _, _, t in b.mapped]
    for attempt in range(2):
        try:
            params = case.point(model)
            problem = _replay_agrees(case, params, model_true(model, case.claim))
        except ValueError as exc:
            problem = f"abstract point not realisable: {exc}"
            if case.inexact:  # an over-approximation's point need not be a batch's: probe a real batch instead
                try:
                    problem = _probe_real_batch(case, s, model)
                except ValueError as exc2:
                    problem = f"abstract point not realisable: {exc}; nor its plain aggregates: {exc2}"
        except Exception as exc:  # noqa: BLE001 - the model failed on ints: let the bounded run report it
            problem = f"replay raised {type(exc).__name__}: {exc}"
        if problem:
            return AbstractOutcome("abandon", message=problem)
        if attempt:
            break
        s.push()
        # z3.Or(*[t != model.eval(t, model_completion=True) for t in free]), its very calls
        s.add(differs_from(model, free, anywhere=True) if free else z3.BoolVal(False))
        again = s.check()
        model2 = s.model() if again == z3.sat else None
        s.pop()
        if model2 is None:
            break
        model = model2
    s.push()
    s.add(z3.Not(case.claim))
    s.set("core.minimize", False)  # Z3's minimisation took ~6 s on a nonlinear 10-fact core (FlashInfer pages)
    answer = s.check()
    if answer == z3.unsat:
        core = [t for t in s.unsat_core() if literal_name(t) in trackers]
        core = (
            _minimal_core(case, trackers, core, rlimit) if minimal_core else [trackers[literal_name(t)] for t in core]
        )
        return AbstractOutcome("proved", core=[c for c in core if " aggregates (" not in c])
    if answer == z3.unknown:
        return AbstractOutcome("unknown", message=s.reason_unknown())
    model = s.model()
    if minimize:
        # (term, a lower bound from the domain): scalars by their Range, aggregates by the entries'
        terms = [(case.scalars[p].term, case.ob.domain[p].lo) for p in case.ob.params if p in case.scalars]
        for b in case.batches.values():
            t_lo = 0 if b.lo >= 0 else b.lo * b.size
            terms.append((b.T.term, t_lo))
            if {"max_of", "min_of"} & b.used:
                terms += [(b.M.term, b.lo), (b.m.term, b.lo)]
        for t, lo in terms:
            model, done = minimize_term(s, model, t, lo)
            if not done:
                break
    try:
        params = case.point(model)
    except ValueError as exc:
        return AbstractOutcome("abandon", message=f"abstract counterexample not realisable: {exc}")
    ev = evaluate(case.ob, concrete_args(case.ob, params))
    failed = [n for n, v in ev.assumptions.items() if not v]
    if failed or bool(ev.claim.holds):
        return AbstractOutcome("abandon", message=f"abstract counterexample {params} does not replay on ints")
    values = {k: int(v) for k, v in ev.claim.values.items()}
    return AbstractOutcome("counterexample", params=params, values=values)


def _minimal_core(case: AbstractCase, trackers: dict[str, str], core: list[z3.BoolRef], rlimit: int) -> list[str]:
    """The facts a proof needs: Z3's core, then each fact dropped in turn (in declared order) if
    the claim stays unsat without it (a fresh solver per query, a tenth of the rlimit each; an
    unknown keeps the fact). Deterministic for a given case and rlimit."""
    keep = [trackers[literal_name(t)] for t in core]
    order = [label for label, _ in case.constraints]
    keep.sort(key=order.index)
    conds = dict(case.constraints)
    for label in list(keep):
        trial = [k for k in keep if k != label]
        s = new_solver(max(rlimit // 10, 1))
        assert_terms(s, [*[conds[k] for k in trial], *case.lemmas, z3.Not(case.claim)])
        if s.check() == z3.unsat:
            keep = trial
    return keep


def summary(case_count: int, batches: dict[str, Vector], ob: Obligation, pins: dict[str, int] | None = None) -> str:
    """``all batch sizes (num_reqs 1..N)`` wording for the verdict; a length parameter pinned in this
    run (``--set num_reqs=2``) is shown as pinned, since the verdict then covers that length only."""
    parts = []
    for name, dom in batches.items():
        if dom.length and pins and dom.length in pins:
            parts.append(f"{name}: {dom.length} = {pins[dom.length]} (pinned in this run)")
        elif dom.length and dom.length in ob.domain:
            d = ob.domain[dom.length]
            rng = d.describe() if hasattr(d, "describe") else repr(d)
            parts.append(f"{name}: {dom.length} in {rng}")
        else:
            parts.append(f"{name}: {dom.size} entries")
    return "; ".join(parts)


def abstract_available(ob: Obligation) -> bool:
    return any(isinstance(d, Vector) for d in ob.domain.values())
