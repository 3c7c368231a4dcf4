"""Obligation + case -> Z3 problem; evaluation and replay on plain ints.

The layer under the prover and the analyses (density, bound): :func:`build_case` runs an
obligation once on symbolic ints for its range and vector parameters (the finite ones fixed),
giving labelled Z3 constraints (domain bounds, vector bounds and padding, assumptions), the claim
and its named quantities; :func:`evaluate` and :func:`replay` run the same functions on ints.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from dataclasses import dataclass, field

import z3
import z3.z3core as _core

from .arith import Padded, all_plain, watching_padding
from .domain import MAX_CASES, Range, Vector
from .errors import CapproofError, ReplayError, SpecError
from .guard import introspections
from .normalise import normalise
from .obligation import Claim, Obligation, is_boolean, is_integer
from .symbolic import (
    DEFAULT_FORK_BUDGET,
    Path,
    RawTerms,
    SymBool,
    SymInt,
    decision_literal,
    equal_int,
    explore,
    int_relation,
    model_int,
    show_decision,
    to_z3_bool,
    to_z3_int,
    trace_marks,
    tracing,
    z3_and,
    z3_ge,
    z3_le,
)

__all__ = [
    "CaseProblem",
    "CasePaths",
    "PathFailure",
    "build_case",
    "build_paths",
    "evaluate",
    "concrete_args",
    "replay",
    "effective_domains",
    "checked_domains",
    "path_labels",
]


@dataclass
class _Evaluated:
    assumptions: dict[str, object]
    claim: Claim
    divisors: list[tuple[z3.ArithRef, str]]
    lemmas: list[z3.BoolRef]
    witnesses: dict[str, object]
    #: for each divisor, how many assumptions precede it (a divisor met while evaluating
    #: assumption i may be checked only under assumptions 0..i-1: Z3's ``x % 0`` is unconstrained,
    #: so the assumption itself could otherwise exclude the zero)
    divisor_scope: list[int] = field(default_factory=list)
    #: conditions for capproof's encoding to be exact (``Trace.side_conditions``) and, as for
    #: divisors, how many assumptions precede each
    side_conditions: list[tuple[z3.BoolRef, object]] = field(default_factory=list)
    side_scope: list[int] = field(default_factory=list)
    #: ``min_of``/``max_of`` results over padded batches (``Trace.extrema``), for capproof.normalise
    extrema: dict[int, tuple] = field(default_factory=dict)


def as_claim(value: object, ob: Obligation) -> Claim:
    if isinstance(value, Claim):
        result = value
    else:
        result = Claim(value, {}, "")
    if type(result.holds) is not bool and not is_boolean(result.holds):  # a bool first: the int probe's case
        raise SpecError(
            f"claim is not boolean: it returned {type(result.holds).__name__} "
            f"{result.holds!r} (return a bool, a comparison, or equal()/at_most())"
        )
    for name, v in result.values.items():
        if type(v) is not int and not is_integer(v):
            raise SpecError(f"named quantity {name!r} is not an integer: {v!r}")
    return result


def call_with_args(
    func, kind: str, name: str, params: list[str], args: dict[str, object], positional: bool = False
) -> object:
    """``func`` on the ``params`` of ``args`` by keyword, or with ``positional`` (``params`` then
    in ``func``'s order and :func:`capproof.obligation.takes_positionally` true) by position: the
    same binding; raises SpecError if the value is not boolean."""
    if positional:
        value = func(*map(args.__getitem__, params))
    else:
        value = func(**dict(zip(params, map(args.__getitem__, params))))  # no comprehension: see capproof.probe.plan
    if type(value) is not bool and not is_boolean(value):
        raise SpecError(f"{kind} {name!r} is not boolean: returned {value!r}")
    return value


def evaluate(
    ob: Obligation,
    args: dict[str, object],
    assumed: dict[str, object] | None = None,
    witnesses: bool = True,
    symbolic: bool | None = None,
    memo: dict[tuple, tuple] | None = None,
    derived: dict | None = None,
) -> _Evaluated:
    """Run the assumptions, the claim and (unless ``witnesses=False``) the witness conditions on
    ``args`` (ints and/or SymInts; a Vector parameter is a tuple of ``size`` entries). ``assumed``
    (optional) receives each assumption's value as soon as it is computed (what was known when a
    later part raised). ``symbolic``: whether some argument is a SymInt (None: looked up; the
    int probe, capproof.probe, says False). ``memo``: witness values by their arguments, shared
    by the cases of one obligation (:func:`_witness`); ``derived``: the values they derive from
    their shared symbolic inputs alone (:class:`SharedInputs`)."""
    scope: list[int] = []
    side: list[int] = []
    if symbolic is None:
        symbolic = any(
            isinstance(v, SymInt)
            or (isinstance(v, tuple) and not all_plain(v) and any(isinstance(e, SymInt) for e in v))
            for v in args.values()
        )  # all_plain: a batch of ints in one pass in C (4096-request replays)
    with tracing(watch=symbolic) as trace:
        trace.derived = derived
        if symbolic:
            trace.misuse.extend(introspections(ob.func, *ob.assumptions.values(), *ob.witnesses.values()))
        assumed = {} if assumed is None else assumed
        for i, (n, f) in enumerate(ob.assumptions.items()):
            assumed[n] = call_with_args(f, "assumption", n, ob.assumption_params(n), args)
            scope += [i] * (len(trace.divisors) - len(scope))
            side += [i] * (len(trace.side_conditions) - len(side))
        result = as_claim(ob.func(**args), ob)
        scope += [len(ob.assumptions)] * (len(trace.divisors) - len(scope))
        side += [len(ob.assumptions)] * (len(trace.side_conditions) - len(side))
        # a witness condition's divisors (the maximum of a batch that may be empty) restrict where
        # it is searched for, not the verdict: scope len(assumptions) + 1
        witnesses = {n: _witness(ob, n, f, args, trace, memo) for n, f in ob.witnesses.items()} if witnesses else {}
        scope += [len(ob.assumptions) + 1] * (len(trace.divisors) - len(scope))
        side += [len(ob.assumptions) + 1] * (len(trace.side_conditions) - len(side))
    if trace.misuse:  # raised on a symbolic value, then caught by the model: never trust the result
        raise SpecError(
            f"the symbolic run cannot be trusted (the model caught or avoided capproof's error): {trace.misuse[0]}"
        )
    return _Evaluated(
        assumed, result, trace.divisors, trace.lemmas, witnesses, scope, trace.side_conditions, side, trace.extrema
    )


def _witness(
    ob: Obligation, name: str, func, args: dict[str, object], trace, memo: dict[tuple, tuple] | None
) -> object:
    """The witness condition ``name`` at ``args``; with a ``memo``, taken from an earlier case whose
    arguments were the same objects (the shared symbolic inputs) or equal ints. Only a call that
    added nothing to the trace (no division, lemma, side condition, extremum, misuse) and took no
    branch on a symbolic value is memoised: its value is then a function of its arguments alone (a
    model is a function of its parameters: the int probe checks it), and reusing it leaves the
    case's trace and path as a new call would. A witness is only searched for, and every witness
    found is replayed on ints, never a verdict (:func:`capproof.prover.find_witnesses`)."""
    params = ob.witness_params(name)
    if memo is None:
        return call_with_args(func, "witness", name, params, args)
    key = (name, *((p, args[p]) if type(args[p]) is int else (p, "object", id(args[p])) for p in params))
    hit = memo.get(key)
    if hit is not None:
        return hit[0]
    before = trace_marks(trace)
    value = call_with_args(func, "witness", name, params, args)
    if trace_marks(trace) == before:
        memo[key] = (value, [args[p] for p in params])  # the arguments kept alive: their ids stay theirs
    return value


def concrete_args(ob: Obligation, params: dict[str, object], padding: bool = True) -> dict[str, object]:
    """``params`` as the model takes them: each Vector's active entries padded to its size (a
    :class:`~capproof.arith.Padded`); with ``padding=False`` the active entries alone (the batch
    as shown in a counterexample).

    Raises ReplayError for a missing parameter or a vector longer than its size.
    """
    missing = [p for p in ob.params if p not in params]
    if missing:
        raise ReplayError(f"missing parameters {missing} for {ob.id}")
    args: dict[str, object] = {}
    for p in ob.params:
        dom, value = ob.domain[p], params[p]
        args[p] = vector_arg(p, dom, value, padding) if isinstance(dom, Vector) else value
    return args


def vector_arg(name: str, dom: Vector, value: object, padding: bool = True) -> Padded:
    """One Vector parameter's active entries ``value`` as the model takes them (see
    :func:`concrete_args`). Raises ReplayError for a value that is not a list or is too long."""
    if not isinstance(value, (list, tuple)):
        raise ReplayError(f"vector parameter {name} needs a list of ints, got {value!r}")
    try:
        entries = dom.expand(value) if padding else tuple(value)  # expand copies: no list() first
    except ValueError as exc:
        raise ReplayError(f"{name}: {exc}") from None
    return Padded(entries, len(value), dom.fill, dom.elem.lo, dom.elem.hi)  # type: ignore[attr-defined]


def replay(ob: Obligation, params: dict[str, object], padding: bool = True) -> tuple[bool, dict[str, int], list[str]]:
    """Run the obligation on plain ints: (claim holds, named values, assumptions that fail).

    ``params`` maps every parameter to an int, or for a Vector to the list of its active entries
    (padded to the vector's size with its ``fill``, or with ``padding=False`` passed alone, and
    then the witness conditions, which may look at the padding, are not run).
    """
    ev = evaluate(ob, concrete_args(ob, params, padding), witnesses=padding)
    failed = [n for n, v in ev.assumptions.items() if not v]
    holds = ev.claim.holds
    if isinstance(holds, SymBool):  # pragma: no cover - cannot happen on ints
        raise ReplayError("replay on ints produced a symbolic claim")
    return bool(holds), {k: int(v) for k, v in ev.claim.values.items()}, failed


def describe_exception(exc: BaseException) -> str:
    """One line for an exception raised by a model or spec: its message and the innermost line of
    the project's code that led to it (never capproof's, Z3's or the standard library's)."""
    if isinstance(exc, CapproofError):
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = ""
    if tb:
        frame = next((f for f in reversed(tb) if _is_user_file(f.filename)), tb[-1])
        where = f" at {_shown(frame.filename)}:{frame.lineno}"
    return f"{type(exc).__name__}: {exc}{where}"


_LIBRARY_DIRS = tuple(
    os.path.abspath(p) + os.sep
    for p in {
        os.path.dirname(os.path.abspath(__file__)),
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        os.path.dirname(os.path.abspath(z3.__file__)),
    }
)


def _is_user_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    return not filename.startswith("<") and not path.startswith(_LIBRARY_DIRS) and "site-packages" not in path


def _shown(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:  # pragma: no cover - other drive on Windows
        return filename


def new_solver(rlimit: int) -> z3.Solver:
    s = z3.Solver()
    # one Z3_solver_set_params with the three (a fresh solver only appends them; the same
    # parameters as three calls, each of which builds a parameter set and validates it)
    s.set("rlimit", rlimit, "random_seed", 0, "core.minimize", True)
    return s


def track(s: z3.Solver, trackers: dict[str, str], label: str, cond: z3.BoolRef) -> None:
    """Assert ``cond`` on ``s`` tracked by a new literal ``__track_<k>`` and record ``label``
    under its name in ``trackers`` (so an unsat core names ``label``: :func:`core_labels`)."""
    name = f"__track_{len(trackers)}"
    trackers[name] = label  # str(t), without z3's printer (~0.1 ms a literal)
    if type(cond) is not z3.BoolRef or cond.ctx is not s.ctx:
        s.assert_and_track(cond, z3.Bool(name, s.ctx))
        return
    # ``s.assert_and_track(cond, z3.Bool(name))``'s Z3 calls, in order, without z3py's wrappers and
    # checks (~8 tracked constraints per case): the literal, referenced while asserted
    ref = s.ctx.ref()
    lit = _core.Z3_mk_const(ref, _core.Z3_mk_string_symbol(ref, name), _core.Z3_mk_bool_sort(ref))
    _core.Z3_inc_ref(ref, lit)
    try:
        _core.Z3_solver_assert_and_track(ref, s.solver, cond.as_ast(), lit)
    finally:
        _core.Z3_dec_ref(ref, lit)


def assert_terms(s: z3.Solver, terms) -> None:
    """``s.add(*terms)``: each term asserted on ``s`` in order, with ``Solver.add``'s one Z3 call
    per term (``Z3_solver_assert``) and without its per-term cast (a ``BoolRef`` of ``s``'s
    context is its own cast: the same call on the same term; 35,000 lemmas on a MoE
    routing, a fresh solver per trial of a minimal core). Other terms go through ``s.add``."""
    ref, ctx, solver = s.ctx.ref(), s.ctx, s.solver
    for t in terms:
        if type(t) is z3.BoolRef and t.ctx is ctx:
            _core.Z3_solver_assert(ref, solver, t.ast)
        else:
            s.add(t)


def literal_name(t: z3.ExprRef) -> str:
    """``str(t)`` for a tracking literal (a Boolean constant named ``__track_<k>``, which z3's
    printer shows as its name), read from its declaration instead of printed (the printer was a
    tenth of the engine's time on the heaviest obligations); other terms are printed."""
    if z3.is_const(t):
        name = t.decl().name()
        if name.startswith("__track_"):
            return name
    return str(t)


def core_labels(core, trackers: dict[str, str]) -> list[str]:
    """The labels of the tracking literals in an unsat ``core``, in its order:
    ``[trackers[str(t)] for t in core if str(t) in trackers]``."""
    out = []
    for t in core:
        name = literal_name(t)
        if name in trackers:
            out.append(trackers[name])
    return out


#: Above this many active entries a vector is minimised by its sum, not entry by entry.
ENTRYWISE_LIMIT = 32


@dataclass
class CaseProblem:
    """One case of an obligation as Z3 terms: what :func:`build_case` returns.

    ``constraints`` are labelled (domain bounds, vector bounds and padding, assumptions), so an
    unsat core names them; ``lemmas`` are valid facts added unlabelled; ``false_assumptions`` are
    assumptions that are concretely false in this case (the case is excluded). ``path`` is the
    execution path this problem is about when the model branched on symbolic values (its
    decisions are among the constraints, labelled ``path: <condition> at <file:line>``).
    """

    ob: Obligation
    fixed: dict[str, int]
    scalars: dict[str, SymInt]
    vectors: dict[str, tuple]
    constraints: list[tuple[str, z3.BoolRef]]
    false_assumptions: list[str]
    ev: _Evaluated
    path: Path | None = None
    #: assumptions rewritten into an equivalent faster form (capproof.normalise), one line each
    #: (``"name: what"``), reported with the verdict
    normalised: list[str] = field(default_factory=list)
    #: a merged case (:func:`build_case` of a model that branched): each path's condition and the
    #: relation of the claim it returned (``less_than`` on one branch, ``at_most`` on another);
    #: empty otherwise (``ev.claim.relation`` is the case's)
    relations: list[tuple[z3.BoolRef, str]] = field(default_factory=list)
    #: each vector is its batch alone (no padding): the case checks a model that reads its padding
    alone: bool = False
    #: where the model read a vector's padding (:func:`build_case`; :attr:`CasePaths.padding_reads`)
    padding_reads: list[str] = field(default_factory=list)

    @property
    def path_text(self) -> str:
        """The path condition in words ('' when the model did not branch)."""
        return self.path.describe() if self.path is not None and self.path.decisions else ""

    @property
    def claim(self) -> z3.BoolRef:
        return to_z3_bool(self.ev.claim.holds)

    @property
    def lemmas(self) -> list[z3.BoolRef]:
        return self.ev.lemmas

    def solver(self, rlimit: int, assumptions_upto: int | None = None) -> tuple[z3.Solver, dict[str, str]]:
        """A solver holding the constraints (tracked, for unsat cores) and the lemmas; with
        ``assumptions_upto=k`` only the first ``k`` assumptions (and every domain constraint)."""
        s = new_solver(rlimit)
        trackers: dict[str, str] = {}
        names = list(self.ob.assumptions)
        dropped = set(names[assumptions_upto:]) if assumptions_upto is not None else set()
        for label, cond in self.constraints:
            if label in dropped:
                continue
            track(s, trackers, label, cond)
        assert_terms(s, self.lemmas)
        return s, trackers

    def active(self, name: str, model: z3.ModelRef | None = None) -> int:
        """How many leading entries of vector ``name`` are free (its length's value)."""
        dom: Vector = self.ob.domain[name]  # type: ignore[assignment]
        if dom.length is None:
            return dom.size
        if dom.length in self.fixed:
            return self.fixed[dom.length]
        assert model is not None
        return model_int(model, self.scalars[dom.length].term)

    def point(self, model: z3.ModelRef) -> dict[str, object]:
        """The parameters at ``model``: ints, and each vector's active entries as a list."""
        out: dict[str, object] = {}
        for p in self.ob.params:
            if p in self.fixed:
                out[p] = self.fixed[p]
            elif p in self.scalars:
                out[p] = model_int(model, self.scalars[p].term)
            else:
                entries = self.vectors[p][: self.active(p, model)]
                out[p] = [_value(model, e) for e in entries]
        return out

    def fix(self, params: dict[str, object], names: list[str]) -> list[z3.BoolRef]:
        """Equalities pinning ``names`` (scalars or vectors) to their values in ``params``."""
        out: list[z3.BoolRef] = []
        for p in names:  # equal_int: ``term == value``, z3py's very term
            if p in self.scalars:
                out.append(equal_int(self.scalars[p].term, params[p]))  # type: ignore[arg-type]
            elif p in self.vectors:
                dom: Vector = self.ob.domain[p]  # type: ignore[assignment]
                for e, v in zip(self.vectors[p], dom.expand(list(params[p]))):
                    if isinstance(e, SymInt):
                        out.append(equal_int(e.term, v))
        return out


def _value(model: z3.ModelRef, entry: object) -> int:
    """``model.eval(to_z3_int(entry), model_completion=True).as_long()``: for a SymInt the same Z3
    calls without the wrapper of the value (:func:`capproof.symbolic.model_int`; a 1024-entry
    batch is read twice per case)."""
    if type(entry) is not SymInt:
        return model.eval(to_z3_int(entry), model_completion=True).as_long()
    return model_int(model, entry.term)


def scalar_inputs(ranges: dict[str, Range]) -> tuple[dict[str, SymInt], list[tuple[str, z3.BoolRef]]]:
    """A symbolic int per ``Range`` parameter and its labelled bounds (``name >= lo``, ``name <= hi``)."""
    scalars = {name: SymInt.var(name) for name in ranges}
    constraints: list[tuple[str, z3.BoolRef]] = []
    for name, dom in ranges.items():  # int_relation: z3py's ``term >= lo``, ``term <= hi``, its very calls
        constraints.append((f"{name} >= {dom.lo}", int_relation(scalars[name].term, ">=", dom.lo)))
        constraints.append((f"{name} <= {dom.hi}", int_relation(scalars[name].term, "<=", dom.hi)))
    return scalars, constraints


def _entry_bound(i: int, n: z3.ArithRef, e: z3.ArithRef, lo: int, hi: int) -> z3.BoolRef:
    """``z3.Implies(i < n, z3.And(e >= lo, e <= hi))`` through Z3's C API: the same calls in the
    same order as z3py makes them (``i < n`` is Python's reflected ``n > i``), so the same term
    and the same ids, without z3py's coercions (these were most of building a case
    whose batch length is symbolic)."""
    raw = RawTerms(n.ctx)
    gt = raw.keep(_core.Z3_mk_gt(raw.ref, n.as_ast(), raw.num(i)))
    ge = raw.ge(e.as_ast(), raw.num(lo))
    le = raw.le(e.as_ast(), raw.num(hi))
    return raw.done(raw.implies(gt, raw.nary(_core.Z3_mk_and, ge, le)))


def _padding_bound(i: int, n: z3.ArithRef, e: z3.ArithRef, fill: int) -> z3.BoolRef:
    """``z3.Implies(i >= n, e == fill)`` as z3py builds it (``i >= n`` is ``n <= i``), through the
    C API (see :func:`_entry_bound`)."""
    raw = RawTerms(n.ctx)
    le = raw.le(n.as_ast(), raw.num(i))
    eq = raw.keep(_core.Z3_mk_eq(raw.ref, e.as_ast(), raw.num(fill)))
    return raw.done(raw.implies(le, eq))


def _symbolic_inputs(ranges: dict[str, Range], vectors: dict[str, Vector], fixed: dict[str, int], alone: bool = False):
    """Symbolic scalars and vectors for a case, with their labelled domain constraints; with
    ``alone`` (every vector length in ``fixed``) each vector is its batch alone, no padding."""
    scalars, constraints = scalar_inputs(ranges)
    vecs: dict[str, tuple] = {}
    for name, dom in vectors.items():
        elem: Range = dom.elem  # type: ignore[assignment]
        if dom.length is not None and dom.length in fixed:
            n = fixed[dom.length]
            entries = tuple(SymInt.var(f"{name}[{i}]") for i in range(n)) + (dom.fill,) * (0 if alone else dom.size - n)
            bounds = [z3_and(z3_ge(e.term, elem.lo), z3_le(e.term, elem.hi)) for e in entries[:n]]
            padding: list[z3.BoolRef] = []
        else:
            entries = tuple(SymInt.var(f"{name}[{i}]") for i in range(dom.size))
            if dom.length is None:
                bounds = [z3_and(z3_ge(e.term, elem.lo), z3_le(e.term, elem.hi)) for e in entries]
                padding = []
            else:
                n_term = scalars[dom.length].term
                bounds = [_entry_bound(i, n_term, e.term, elem.lo, elem.hi) for i, e in enumerate(entries)]
                padding = [_padding_bound(i, n_term, e.term, dom.fill) for i, e in enumerate(entries)]
        # z3_and/z3_ge/z3_le: z3.And's and >='s Z3 calls without z3py's per-term coercions
        if bounds:
            constraints.append((f"{name} entries in {elem.lo}..{elem.hi}", z3_and(*bounds)))
        if padding:
            constraints.append((f"{name} entries from {dom.length} on are {dom.fill}", z3_and(*padding)))
        length = dom.size if dom.length is None else (fixed[dom.length] if dom.length in fixed else scalars[dom.length])
        least = ranges[dom.length].lo if dom.length in ranges else None  # the least length admitted
        vecs[name] = Padded(entries, length, dom.fill, elem.lo, elem.hi, least)
    return scalars, constraints, vecs


def variable_bounds(ranges: dict[str, Range], vectors: dict[str, Vector]) -> dict[str, tuple[int, int]]:
    """``(lo, hi)`` of every symbolic input by its Z3 name (``"topk_ids[3]"``; padding's fill
    included), for :func:`capproof.normalise.normalise`."""
    out = {name: (dom.lo, dom.hi) for name, dom in ranges.items()}
    for name, dom in vectors.items():
        elem: Range = dom.elem  # type: ignore[assignment]
        lo, hi = (elem.lo, elem.hi) if dom.length is None else (min(elem.lo, dom.fill), max(elem.hi, dom.fill))
        out.update({f"{name}[{i}]": (lo, hi) for i in range(dom.size)})
    return out


def path_labels(path: Path) -> list[tuple[str, z3.BoolRef]]:
    """One labelled constraint per decision of ``path``: ``path: dcp > 1 at models/x.py:12``."""
    return [
        (f"path: {show_decision(c, taken)} at {loc}", decision_literal(c, taken)) for loc, c, taken in path.decisions
    ]


@dataclass
class PathFailure:
    """A path on which the model (or an assumption) raised: ``constraints`` are the domain, the
    path condition and the assumptions evaluated before the error (an error only counts if they
    are satisfiable: a path the assumptions exclude is never taken)."""

    path: Path
    constraints: list[tuple[str, z3.BoolRef]]
    error: BaseException


@dataclass
class CasePaths:
    """All paths of one case (:func:`build_paths`). ``complete`` is False when the fork budget
    ran out: the unexplored paths are then undecided (never proved)."""

    paths: list[CaseProblem]
    failures: list[PathFailure]
    complete: bool
    unexplored: int
    budget: int
    #: where the model read a vector's padding itself (:meth:`capproof.arith.Padded.read_padding`):
    #: then its batches alone are decided too (capproof.prover)
    padding_reads: list[str] = field(default_factory=list)

    @property
    def forked(self) -> bool:
        return (
            len(self.paths) + len(self.failures) > 1
            or not self.complete
            or any(c.path is not None and c.path.decisions for c in self.paths)
        )


class _Raised:
    __slots__ = ("error", "assumed")

    def __init__(self, error: BaseException, assumed: dict[str, object]):
        self.error, self.assumed = error, assumed


class SharedInputs:
    """What the cases of one obligation share (:func:`build_paths`' ``shared``): the symbolic
    inputs (scalars, each batch's entries, their labelled domain bounds and padding), made once
    per combination of fixed batch lengths instead of once per case, the witness conditions'
    values memoised by their arguments (:func:`evaluate`'s ``memo``) and what the model derives
    from those inputs alone (``derived``: ``round_up(count, block)`` of an entry,
    ``max_of``/``min_of`` of a batch; :func:`capproof.arith.round_up`, :func:`capproof.arith.max_of`).

    Every case of an obligation gets the same terms either way (the same names and bounds give
    the same Z3 terms); what sharing changes is that Z3 does not rebuild them, so the ids it gives
    later terms differ from a per-case build. The verdicts and the reported cores of proofs/
    are the same (checked with ``capproof report --check``; docs/performance.md)."""

    __slots__ = ("inputs", "witnesses", "derived")

    def __init__(self) -> None:
        self.inputs: dict[tuple, tuple] = {}
        self.witnesses: dict[tuple, tuple] = {}
        #: ``("round_up", id of x's term, y)``: (result, its lemmas, x); ``("max"/"min", id(batch))``:
        #: (result, its extremum record, batch, its shape); ``("total", id(batch))``: (result, None,
        #: batch, its shape)
        self.derived: dict[tuple, tuple] = {}

    def symbolic_inputs(
        self, ranges: dict[str, Range], vectors: dict[str, Vector], fixed: dict[str, int], alone: bool = False
    ):
        """:func:`_symbolic_inputs` for ``fixed``, made at the first case with these batch lengths."""
        key = (alone, *((dom.length, fixed[dom.length]) for dom in vectors.values() if dom.length in fixed))
        if key not in self.inputs:
            self.inputs[key] = _symbolic_inputs(ranges, vectors, fixed, alone)
        return self.inputs[key]


def build_paths(
    ob: Obligation,
    fixed: dict[str, int],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    budget: int = DEFAULT_FORK_BUDGET,
    shared: SharedInputs | None = None,
    alone: bool = False,
) -> CasePaths:
    """Run ``ob`` on symbolic values for ``ranges`` and ``vectors`` (``fixed`` elsewhere), forking
    at every branch on a symbolic value (:func:`capproof.symbolic.explore`, at most ``budget``
    paths, directions infeasible under the domain bounds pruned). One :class:`CaseProblem` per
    path that evaluated, with the path's decisions as labelled constraints; paths that raised are
    :class:`PathFailure`. Without branches: one problem, no path constraint (as before forking).
    ``shared``: inputs and witness values shared with the obligation's other cases (see
    :class:`SharedInputs`); None: made for this case alone. ``alone``: each vector is its batch
    alone (every length in ``fixed``; no padding, no witness conditions: they may read the
    padding); else the reads of the padding by the model are recorded (``padding_reads``).
    """
    if shared is None:
        scalars, domain, vecs = _symbolic_inputs(ranges, vectors, fixed, alone)
    else:
        scalars, domain, vecs = shared.symbolic_inputs(ranges, vectors, fixed, alone)
    values: dict[str, object] = {**fixed, **scalars, **vecs}
    args = {p: values[p] for p in ob.params}
    memo = shared.witnesses if shared is not None else None
    derived = shared.derived if shared is not None else None

    def run() -> object:
        assumed: dict[str, object] = {}
        try:
            return evaluate(ob, args, assumed, witnesses=not alone, memo=memo, derived=derived)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - kept with its path
            return _Raised(exc, assumed)

    with watching_padding() as reads:
        ex = explore(run, budget=budget, assume=[c for _, c in domain])
    bounds = variable_bounds(ranges, vectors)
    problems: list[CaseProblem] = []
    failures: list[PathFailure] = []
    for path in ex.paths:
        labelled = path_labels(path)
        result = path.value
        if path.error is not None or isinstance(result, _Raised):
            error = path.error if path.error is not None else result.error  # type: ignore[union-attr]
            assumed = {} if path.error is not None else result.assumed  # type: ignore[union-attr]
            known = [(n, to_z3_bool(v)) for n, v in assumed.items() if is_boolean(v)]
            failures.append(PathFailure(path, [*domain, *labelled, *known], error))
            continue
        ev: _Evaluated = result  # type: ignore[assignment]
        constraints = [*domain, *labelled]
        false: list[str] = []
        notes: list[str] = []
        for name, value in ev.assumptions.items():
            if isinstance(value, bool):
                if not value:
                    false.append(name)
                continue
            norm = normalise(to_z3_bool(value), bounds, ev.extrema)
            notes += [f"{name}: {note}" for note in norm.notes]
            constraints.append((name, norm.term))
        problems.append(CaseProblem(ob, dict(fixed), scalars, vecs, constraints, false, ev, path, notes, alone=alone))
    return CasePaths(problems, failures, ex.complete, ex.unexplored, budget, list(dict.fromkeys(reads)))


def build_case(
    ob: Obligation,
    fixed: dict[str, int],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    budget: int = DEFAULT_FORK_BUDGET,
    alone: bool = False,
) -> CaseProblem:
    """Run ``ob`` once on symbolic values for ``ranges`` and ``vectors``, ``fixed`` elsewhere:
    one problem for the whole case (the analyses' view; the prover decides path by path with
    :func:`build_paths`). ``alone``: each vector its batch alone (every length in ``fixed``; see
    :func:`build_paths`).

    A model that branches on symbolic values gives one problem whose assumptions, claim, named
    values and witness conditions are ``If`` chains over the path conditions (exact, since the
    paths partition the domain). Raises whatever the model raises on a path (the caller turns
    it into an ``error`` verdict) and SpecError when the fork budget ran out.
    """
    cp = build_paths(ob, fixed, ranges, vectors, budget, alone=alone)
    if cp.failures:
        raise cp.failures[0].error
    if not cp.complete:
        raise SpecError(f"fork budget of {budget} paths exceeded ({cp.unexplored} paths unexplored)")
    case = cp.paths[0] if len(cp.paths) == 1 else _merge(cp)
    case.padding_reads = cp.padding_reads
    return case


def _merge(cp: CasePaths) -> CaseProblem:
    """One problem equivalent to the paths of ``cp`` (complete, no failures)."""
    first = cp.paths[0]
    conds = [c.path.condition.term for c in cp.paths]  # type: ignore[union-attr]

    def chain(terms: list) -> object:
        out = terms[-1]
        for cond, term in zip(reversed(conds[:-1]), reversed(terms[:-1])):
            out = z3.If(cond, term, out)
        return out

    def bool_chain(vals: list) -> SymBool:
        return SymBool(chain([to_z3_bool(v) for v in vals]))

    def int_chain(vals: list) -> SymInt:
        return SymInt(chain([to_z3_int(v) for v in vals]))

    evs = [c.ev for c in cp.paths]
    names = list(first.ev.claim.values)
    if any(list(ev.claim.values) != names for ev in evs):
        raise SpecError(
            "the claim names different quantities on different paths: "
            + "; ".join(f"{c.path_text}: {list(c.ev.claim.values)}" for c in cp.paths)
        )
    distinct = list(dict.fromkeys(ev.claim.relation for ev in evs))
    claim = Claim(
        bool_chain([ev.claim.holds for ev in evs]),
        {n: int_chain([ev.claim.values[n] for ev in evs]) for n in names},
        " or ".join(distinct),  # each path's own (capproof.bound reads them path by path)
    )
    assumptions = {n: bool_chain([ev.assumptions[n] for ev in evs]) for n in first.ev.assumptions}
    witnesses = {n: bool_chain([ev.witnesses[n] for ev in evs]) for n in first.ev.witnesses}
    divisors, scope, lemmas, side, side_scope = [], [], [], [], []
    for cond, ev in zip(conds, evs):
        divisors += [(z3.If(cond, term, 1), where) for term, where in ev.divisors]
        scope += ev.divisor_scope
        lemmas += ev.lemmas
        side += [(z3.Implies(cond, fact), what) for fact, what in ev.side_conditions]
        side_scope += ev.side_scope
    merged = _Evaluated(assumptions, claim, divisors, lemmas, witnesses, scope, side, side_scope)
    domain = [
        (label, c)
        for label, c in first.constraints
        if label not in first.ob.assumptions and not label.startswith("path: ")
    ]
    constraints = [*domain, *((n, v.term) for n, v in assumptions.items())]
    relations = [(cond, ev.claim.relation) for cond, ev in zip(conds, evs)]
    return CaseProblem(
        first.ob, first.fixed, first.scalars, first.vectors, constraints, [], merged, None, relations=relations
    )


def effective_domains(
    ob: Obligation, pins: dict[str, int]
) -> tuple[dict[str, list[int]], dict[str, Range], dict[str, Vector]]:
    """Split ``ob``'s domain under ``pins``: (finite case values, symbolic ranges, vectors).

    Raises SpecError for a pin outside its domain, a pinned vector, or too many cases.
    """
    finite: dict[str, list[int]] = {}
    ranges: dict[str, Range] = {}
    vectors: dict[str, Vector] = {}
    for name, dom in ob.domain.items():
        if isinstance(dom, Vector):
            if name in pins:
                raise SpecError(f"vector parameter {name} cannot be pinned; pin its length ({dom.length}) instead")
            vectors[name] = dom
        elif name in pins:
            value = pins[name]
            if not dom.contains(value):
                raise SpecError(f"pin {name}={value} is outside its domain {dom.describe()}")
            finite[name] = [value]
        elif dom.finite:
            finite[name] = dom.cases()  # type: ignore[attr-defined]
        else:
            ranges[name] = dom  # type: ignore[assignment]
    total = 1
    for values in finite.values():
        total *= len(values)
    if total > MAX_CASES:
        raise SpecError(f"{total} finite cases exceed the limit of {MAX_CASES}: declare large parameters as Range")
    return finite, ranges, vectors


def checked_domains(
    ob: Obligation, pins: dict[str, int], rlimit: object
) -> tuple[dict[str, list[int]], dict[str, Range], dict[str, Vector]]:
    """:func:`effective_domains` after checking the obligation is runnable.

    Raises SpecError for an rlimit outside 1..2**32-1 or a problem recorded at declaration.
    """
    if not (isinstance(rlimit, int) and not isinstance(rlimit, bool) and 1 <= rlimit < 2**32):
        raise SpecError(f"rlimit must be an int in 1..2**32-1, got {rlimit!r}")
    if ob.problems:
        raise SpecError("; ".join(ob.problems))
    return effective_domains(ob, pins)
