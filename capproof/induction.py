"""Induction over the batch: proofs for every batch size of claims on prefix walks.

A model that walks a batch with :func:`capproof.arith.fold` (``split_decodes_and_prefills``, a
running offset) is outside the aggregate abstraction (capproof.aggregate), and the bounded encoding
grows with the batch. When the obligation sees its one :class:`~capproof.domain.Vector` only
through folds, ``total``/``max_of``/``min_of`` (walks too: a running sum, maximum, minimum over the
batch entries) and reads of constant positions (``batch[0]``), it is decided for **every vector
size** by induction on the number of entries walked:

- every walk over the batch returns a symbolic final state ``S`` (fresh Z3 constants shaped like
  its ``init``); the model's code after the walks runs once on ``S``: the assumptions and the claim
  become terms over the parameters, the constant-position reads ``h_k`` and ``S``;
- the *joint state* is every walk's state (walks are matched by their ``step`` code, closure and
  ``init``, so the same walk written twice is one); an *invariant* ``Inv(S, i)`` is the conjunction
  of the walks' own ``invariant=`` (evaluated on the final state and ``i = N``, then instantiated
  at any state by substitution), optionally with the claim stated at every prefix
  (``assumptions(S) -> claim(S)``);
- three constant-size queries, each required ``unsat``:
  base ``not Inv(init, 0)``; step ``Inv(S, i) and entry(i, x) and not Inv(step(S, i, x), i + 1)``
  for a symbolic index ``i >= 0`` and entry ``x`` (``lo <= x <= hi`` for ``i < n``, ``x == fill``
  from the batch length ``n`` on, ``x == h_k`` at ``i == k``); conclusion ``Inv(S, N) and
  assumptions(S) and not claim(S)`` for a symbolic size ``N >= n``. The assumptions that mention
  no walk state (domain bounds, config facts, ``batch[0] >= 1``) hold at every step and are
  assumed in all three.

Together these show: for every vector size ``N`` and every batch admitted by the assumptions, the
claim holds (the walk's state after ``N`` entries satisfies ``Inv`` by induction, and ``Inv`` with
the assumptions implies the claim). The verdict is ``proved`` only with all three ``unsat`` and an
admitted point found on a small concrete batch and replayed on ints (non-vacuous); anything else
(sat, unknown, a use of the batch other than the above, a symbolic divisor) gives None and the
prover uses the bounded encoding, saying why. Induction never reports a counterexample: a failed
step may start from an unreachable state; the bounded encoding finds and replays real ones.

Soundness rests on the model being the same Python on ints and on Z3 terms (capproof's one
formula): :func:`~capproof.arith.fold` on ints is the plain loop the step query abstracts, and
``tests/test_induction.py`` checks the rule (a claim true up to N but false at N + 1 is not
proved; a non-inductive invariant falls back) and the invariants on ints
(:func:`capproof.arith.checking_invariants`).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

import z3

from . import arith as _arith
from ._iteration import all_of_site, at_get_iter, called_from_all_of_site, free_consts, user_location
from ._iteration import concrete as _concrete
from .domain import Range, Vector
from .encode import (
    as_claim,
    build_case,
    call_with_args,
    concrete_args,
    core_labels,
    evaluate,
    new_solver,
    scalar_inputs,
    track,
)
from .errors import CapproofError
from .obligation import Obligation
from .provenance import trusted_filename
from .symbolic import SymBool, SymInt, refuse_object_slots, to_z3_bool, to_z3_int, tracing

__all__ = ["NotInductive", "InductionBatch", "InductionOutcome", "prove_by_induction"]


#: walks over one batch at most (the joint state's size; the queries stay constant-size)
MAX_WALKS = 16


class NotInductive(CapproofError):
    """The obligation uses its batch other than through walks, aggregates and constant positions."""


def _refused(why: str) -> NotInductive:
    from .symbolic import record_misuse

    return record_misuse(NotInductive(why))  # type: ignore[return-value]


@dataclass
class Walk:
    """One walk over the batch: ``step``, ``init``, its invariant and its symbolic final state.

    The step and the invariant run when the model calls the fold (at the model's own time, as the
    ints run them: a closure reads its cells then), once on a symbolic state ``cur``: ``nxt`` is
    the state after one entry, ``inits`` the init's terms, ``invariant_term`` the invariant on the
    final state."""

    key: tuple
    step: Any
    init: Any
    invariant: Any
    final: Any  # same shape as init: SymInt / SymBool leaves
    label: str
    cur: Any = None
    nxt: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    invariant_term: Any = None


def _leaves(value: Any) -> list[Any]:
    return [x for v in value for x in _leaves(v)] if isinstance(value, tuple) else [value]


def _is_bool(value: Any) -> bool:
    return isinstance(value, SymBool) or (isinstance(value, bool) and not isinstance(value, SymInt))


def _fresh(shape: Any, name: str) -> Any:
    if isinstance(shape, tuple):
        return tuple(_fresh(v, f"{name}.{k}") for k, v in enumerate(shape))
    if _is_bool(shape):
        return SymBool(z3.Bool(name))
    if isinstance(shape, (int, SymInt)):
        return SymInt.var(name)
    raise _refused(f"a walk state of type {type(shape).__name__} (ints, bools and tuples of them only)")


def _terms(value: Any, shape: Any) -> list[z3.ExprRef]:
    """The Z3 terms of ``value``'s leaves, checked against ``shape`` (the walk's init)."""
    if isinstance(shape, tuple):
        if not isinstance(value, tuple) or len(value) != len(shape):
            raise _refused(f"a walk step returned {value!r}, not a state shaped like {shape!r}")
        return [t for v, s in zip(value, shape) for t in _terms(v, s)]
    return [to_z3_bool(value) if _is_bool(shape) else to_z3_int(value)]


def _cell(value: Any) -> Any:
    if isinstance(value, (SymInt, SymBool)):
        return ("term", value.term.sexpr())
    if isinstance(value, tuple):
        return tuple(_cell(v) for v in value)
    if isinstance(value, (int, bool, str, type(None))):
        return value
    return ("id", id(value))


def _key(init: Any, cur: Any, nxt: list[z3.ExprRef]) -> tuple:
    """What makes two walks the same: their init and their step's terms on a state named alike
    (not the step's code and closure: a closure's mutable object may change between two folds)."""
    inputs = [t for t in _terms(cur, init)]
    canonical = [z3.Bool(f"step.in.{k}") if z3.is_bool(t) else z3.Int(f"step.in.{k}") for k, t in enumerate(inputs)]
    renamed = [z3.substitute(t, *zip(inputs, canonical)) if inputs else t for t in nxt]
    return (_cell(init), tuple(t.sexpr() for t in renamed))


_OWN_FILES = {__file__}


@refuse_object_slots(lambda why: _refused(why))
class InductionBatch:
    """The batch for every size: walks return symbolic final states; ``total``/``max_of``/
    ``min_of`` are walks; ``batch[k]`` (a constant ``k >= 0``) is a symbolic entry. Anything
    else (``len``, iteration, a symbolic index, attributes) raises :class:`NotInductive`."""

    #: attributes, but no weak reference (a weak reference to the ints' tuple fails: TypeError)
    __slots__ = ("__dict__",)

    def __getattribute__(self, name: str):
        if name != "__class__":
            caller = trusted_filename(sys._getframe(1).f_code)
            if caller not in _OWN_FILES and caller != _arith.__file__:
                raise _refused(f"attribute {name!r} of batch {object.__getattribute__(self, 'name')}")
        return object.__getattribute__(self, name)

    def __init__(self, name: str, dom: Vector, n: int | SymInt, size: SymInt, n_lo: int = 0):
        self.name = name
        self.n_lo = n_lo  # the least batch length the domain admits
        self.dom = dom
        self.n = n
        elem: Range = dom.elem  # type: ignore[assignment]
        self.lo, self.hi, self.fill = elem.lo, elem.hi, dom.fill
        self.walks: list[Walk] = []
        self.eaches: dict[str, tuple] = {}
        self.conditions: list[z3.BoolRef] = []  # per-entry conditions, kept alive (their walks close over them)
        self.heads: dict[int, SymInt] = {}
        self.size = size  # the vector's size N: any N >= n
        self.seen = SymInt.var(f"seen({name})")  # the invariants' prefix length, instantiated per query
        self.index = SymInt.var(f"i({name})")  # the walk's index in the step query
        self.x = SymInt.var(f"x({name})")  # the walk's entry in the step query
        self.lemmas: list[z3.BoolRef] = []
        self.stepping = False

    def walk(self, step: Any, init: Any, invariant: Any, label: str) -> Walk:
        """The walk of ``step`` from ``init``: its step (and invariant) run now, on a symbolic
        state; an existing walk with the same init and step terms is returned instead."""
        if self.stepping:
            raise _refused("a walk step walks the batch again")
        k = len(self.walks)
        cur = _fresh(init, f"cur.{k}")
        self.stepping = True
        try:
            nxt = _terms(_run(self.lemmas, step, cur, self.index, self.x, batch=self), init)
            inits = _terms(_run(self.lemmas, lambda: init), init)
        except NotInductive:
            raise
        except Exception as exc:  # noqa: BLE001 - the step raised on a symbolic state: the bounded encoding runs it
            raise _refused(f"a walk step raised {type(exc).__name__}: {exc}") from exc
        finally:
            self.stepping = False
        key = _key(init, cur, nxt)
        w = next((w for w in self.walks if w.key == key), None)
        if w is None:
            if len(self.walks) >= MAX_WALKS:
                raise _refused(f"more than {MAX_WALKS} walks over {self.name}")
            w = Walk(key, step, init, None, _fresh(init, f"{label}#{k}({self.name})"), label, cur, nxt, inits)
            self.walks.append(w)
        if invariant is not None and w.invariant is None:
            w.invariant = invariant
            w.invariant_term = to_z3_bool(_run(self.lemmas, invariant, w.final, self.seen, self, batch=self))
        return w

    def _capproof_fold(self, step: Any, init: Any, invariant: Any) -> Any:
        from .purity import function_impurities

        effects = function_impurities(step) + (function_impurities(invariant) if invariant is not None else [])
        if effects:  # run once here, once per entry on ints: the same only without effects
            raise _refused(f"the fold's step or invariant has an effect besides its value: {effects[0]}")
        code = getattr(step, "__code__", None)
        return self.walk(step, init, invariant, getattr(code, "co_name", "fold")).final

    def _capproof_aggregate(self, kind: str) -> SymInt:
        if kind == "total":
            w = self.walk(_TOTAL, 0, None, "total")
        elif kind in ("max_of", "min_of"):
            if not (self.n_lo >= 1):
                raise _refused(f"{kind} of batch {self.name} whose length may be 0")
            # from the entries' bound: max(lo, entries) = max(entries) for a nonempty batch, and the
            # running maximum only grows (min: from hi, only falls)
            w = self.walk(_MAX if kind == "max_of" else _MIN, self.lo if kind == "max_of" else self.hi, None, kind)
        else:  # pragma: no cover - arith asks for these three only
            raise _refused(f"aggregate {kind}")
        return w.final

    def __getitem__(self, index):
        if not _concrete(index) or index < 0:
            raise _refused(f"batch {self.name} indexed by {index!r} (a constant position >= 0 only)")
        if self.dom.length is not None and index >= self.n_lo:
            # a batch of n <= index entries alone has no entry there (IndexError) where the padded
            # vector has its fill; the conclusion covers only sizes above the index
            raise _refused(f"batch {self.name} indexed at {index}, at or past its least length {self.n_lo}")
        if index not in self.heads:
            self.heads[index] = SymInt.var(f"{self.name}[{index}]")
        return self.heads[index]

    def __iter__(self):
        # all_of(*(P(d) for d in batch)): one representative entry, turned into the walk
        # "P holds for every entry so far" by all_of's hook (_all_of_walk); any other iteration
        # (a for loop, sum, enumerate, zip, any_of) is refused
        frame = sys._getframe(1)
        site = all_of_site(frame) if at_get_iter(frame) else None
        if site is None:
            raise _refused(
                f"batch {self.name} iterated other than by capproof.arith.fold or as all_of(*(P(d) for d in "
                f"{self.name})) at {user_location(frame)}"
            )
        from .purity import genexpr_impurities

        effects = genexpr_impurities(frame)
        if effects:  # P runs once on a representative entry here, once per entry on ints
            raise _refused(f"a condition over the entries of {self.name} has an effect besides its value: {effects[0]}")
        each = SymInt.var(f"each({self.name})#{len(self.eaches)}")
        self.eaches[each.term.decl().name()] = (each.term, frame, site)
        return iter((each,))

    def _all_of_walk(self, conj: z3.BoolRef) -> z3.BoolRef | None:
        """all_of's hook: a conjunction over the representative entry becomes a walk's final state."""
        names = free_consts(conj) & set(self.eaches)
        if not names:
            return None
        if len(names) > 1:
            raise _refused(f"a condition over two entries of {self.name} together")
        (name,) = names
        each, frame, site = self.eaches.pop(name)
        if not called_from_all_of_site(frame, site):
            raise _refused(f"an entry of {self.name} reaches all_of other than as all_of(*(P(d) for d in {self.name}))")

        entry = z3.Int(f"entry({self.name})")  # one name for the entry: the same condition is one walk
        cond = z3.substitute(conj, (each, entry))

        def every_entry(ok, i, x):
            return SymBool(z3.And(to_z3_bool(ok), z3.substitute(cond, (entry, to_z3_int(x)))))

        self.conditions.append(cond)
        return to_z3_bool(self.walk(every_entry, True, None, "all_of").final)

    def __len__(self) -> int:
        raise _refused(f"len() of batch {self.name}")

    def __bool__(self) -> bool:
        raise _refused(f"truth value of batch {self.name}")


def _batch_length() -> Any:
    return _LENGTH[-1]


_LENGTH: list[Any] = []


# the aggregates as walks over the batch entries (padding excluded, as capproof.arith computes them
# on a Padded vector); the batch length is read from the batch being walked (_LENGTH)
def _TOTAL(state, i, x):  # noqa: N802
    from .arith import select

    return state + select(i < _batch_length(), x, 0)


def _MAX(state, i, x):  # noqa: N802
    from .arith import maximum, select

    return select(i < _batch_length(), maximum(state, x), state)


def _MIN(state, i, x):  # noqa: N802
    from .arith import minimum, select

    return select(i < _batch_length(), minimum(state, x), state)


@dataclass
class InductionOutcome:
    kind: str  # proved | excluded | undecided
    message: str = ""
    core: list[str] = field(default_factory=list)
    invariant: str = ""


def _run(trace_lemmas: list, fn, *args, batch: InductionBatch | None = None):
    with tracing(watch=True) as trace:
        if batch is not None:
            trace.all_of_hook = batch._all_of_walk  # type: ignore[attr-defined]
        value = fn(*args)
    # _refused: also recorded in the enclosing trace (a step run inside the model's fold call: the
    # model's ``except`` cannot hide it)
    if trace.misuse:
        raise _refused(f"the model misused a symbolic value or the batch: {trace.misuse[0]}")
    if trace.divisors:
        raise _refused(f"symbolic divisor {trace.divisors[0][0]} (checked on the bounded encoding)")
    if trace.side_conditions:  # an encoding exact only where a condition holds: checked there
        raise _refused(f"side condition {trace.side_conditions[0][1]} (checked on the bounded encoding)")
    trace_lemmas.extend(trace.lemmas)
    return value


def _decide(
    s: z3.Solver,
    goal: z3.BoolRef,
    trackers: dict[str, str],
    core: list[str],
    tracked: list[tuple[str, z3.BoolRef]] = (),
) -> z3.CheckSatResult:  # type: ignore[assignment]
    """Check ``goal`` (and the labelled ``tracked`` facts) on top of ``s``'s tracked facts; on
    unsat add the labels of the facts used to ``core``."""
    s.push()
    for label, cond in tracked:
        track(s, trackers, label, cond)
    s.add(goal)
    answer = s.check()
    if answer == z3.unsat:
        core.extend(label for label in core_labels(s.unsat_core(), trackers) if label not in core)
    s.pop()
    return answer


def decide_case(
    ob: Obligation, fixed: dict[str, int], ranges: dict[str, Range], vectors: dict[str, Vector], rlimit: int
) -> InductionOutcome:
    """Decide one case (``fixed`` the case-split parameters) by induction over the batch.
    Raises NotInductive when the rule does not apply."""
    if len(vectors) != 1:
        raise NotInductive(f"{len(vectors)} vector parameters (induction walks one batch)")
    ((vname, dom),) = vectors.items()
    scalars, constraints = scalar_inputs(ranges)
    size = SymInt.var(f"size({vname})")
    if dom.length is None:  # every entry is a batch entry, for every vector size
        n: int | SymInt | None = size
    else:
        n = fixed[dom.length] if dom.length in fixed else scalars.get(dom.length)
    if n is None:
        raise NotInductive(f"{vname}: length {dom.length} is neither fixed nor a Range")
    n_lo = n if _concrete(n) else ranges[dom.length].lo if dom.length in ranges else 1  # no length: N >= 1 below
    batch = InductionBatch(vname, dom, n, size, n_lo)
    from .guard import introspections

    where = introspections(ob.func, *ob.assumptions.values())
    if where:
        raise NotInductive(where[0])
    values: dict[str, object] = {**fixed, **scalars, vname: batch}
    args = {p: values[p] for p in ob.params}
    lemmas: list[z3.BoolRef] = []
    _LENGTH.append(n)
    try:

        def body():
            assumed = {
                k: call_with_args(f, "assumption", k, ob.assumption_params(k), args) for k, f in ob.assumptions.items()
            }
            return assumed, ob.func(**args)

        assumed, result = _run(lemmas, body, batch=batch)
        claim_ = as_claim(result, ob)
        if not batch.walks:
            raise NotInductive(f"{vname} is not walked (no fold, total, max_of or min_of over it)")
        lemmas.extend(batch.lemmas)
        # each walk's step and invariant ran when the model called its fold (InductionBatch.walk)
        walks = list(batch.walks)
        invariants = [w.invariant_term for w in walks if w.invariant_term is not None]
        finals = [t for w in walks for t in _terms(w.final, w.init)]
        cur = [w.cur for w in walks]
        x = batch.x
        i = batch.index
        nxt = [w.nxt for w in walks]
        inits = [w.inits for w in walks]
    except NotInductive:
        raise
    finally:
        _LENGTH.pop()

    if batch.eaches:  # a representative entry not consumed by all_of
        raise NotInductive(f"an entry of {vname} used other than in all_of(*(P(d) for d in {vname}))")
    cur_terms = [t for c, w in zip(cur, walks) for t in _terms(c, w.init)]
    nxt_terms = [t for ts in nxt for t in ts]
    init_terms = [t for ts in inits for t in ts]

    def mentions_state(term):
        return not z3.substitute(term, *[(f, _zero(f)) for f in finals]).eq(term) if finals else False

    n_t, size_t, seen_t, i_t, x_t = to_z3_int(n), batch.size.term, batch.seen.term, i.term, x.term
    heads = dict(batch.heads)
    glob: list[tuple[str, z3.BoolRef]] = list(constraints)
    glob.append((f"{vname} length", z3.And(n_t >= (1 if dom.length is None else 0), size_t >= 1)))
    # labelled as the bounded encoding labels the entry bounds (prover._bound_labels)
    in_range = f"{vname} entries in {batch.lo}..{batch.hi}"
    padding = f"{vname} entries from {dom.length} on are {batch.fill}"
    for k, h in heads.items():
        glob.append((in_range, z3.Implies(k < n_t, z3.And(batch.lo <= h.term, h.term <= batch.hi))))
        glob.append((padding, z3.Implies(k >= n_t, h.term == batch.fill)))
    final_facts: list[tuple[str, z3.BoolRef]] = []
    false_assumptions = []
    for name, value in assumed.items():
        if isinstance(value, bool) and not isinstance(value, SymInt):
            if not value:
                false_assumptions.append(name)
            continue
        term = to_z3_bool(value)
        (final_facts if mentions_state(term) else glob).append((name, term))
    if false_assumptions:
        return InductionOutcome("excluded", core=false_assumptions[:1])
    claim_term = to_z3_bool(claim_.holds)

    entry = z3.And(
        i_t >= 0, i_t < size_t, size_t >= n_t, *[z3.Implies(i_t == k, x_t == h.term) for k, h in heads.items()]
    )
    entry_bounds = [
        (in_range, z3.Implies(i_t < n_t, z3.And(batch.lo <= x_t, x_t <= batch.hi))),
        (padding, z3.Implies(i_t >= n_t, x_t == batch.fill)),
    ]

    def at(term: z3.BoolRef, state: list[z3.ExprRef], index: z3.ArithRef) -> z3.BoolRef:
        return z3.substitute(term, *zip(finals, state), (seen_t, index))

    s = new_solver(rlimit)
    trackers: dict[str, str] = {}
    for label, cond in glob:
        track(s, trackers, label, cond)
    for lemma in lemmas:
        s.add(lemma)
    if s.check() == z3.unsat:
        return InductionOutcome("excluded", core=core_labels(s.unsat_core(), trackers))

    prefix_claim = z3.Implies(z3.And(*[t for _, t in final_facts]), claim_term)
    candidates = []
    if invariants:
        candidates.append(("the walks' invariants and the claim at every prefix", z3.And(*invariants, prefix_claim)))
        candidates.append(("the walks' invariants", z3.And(*invariants)))
    else:
        candidates.append(("the claim at every prefix", prefix_claim))
    why = []
    for label, inv in candidates:
        used: list[str] = []
        base = _decide(s, z3.Not(at(inv, init_terms, z3.IntVal(0))), trackers, used)
        if base != z3.unsat:
            why.append(f"{label}: base case {base}")
            continue
        step = _decide(
            s, z3.And(entry, at(inv, cur_terms, i_t), z3.Not(at(inv, nxt_terms, i_t + 1))), trackers, used, entry_bounds
        )
        if step != z3.unsat:
            why.append(f"{label}: not inductive (step {step})")
            continue
        s.push()
        for name, term in final_facts:
            track(s, trackers, name, term)
        s.add(size_t >= n_t, *[size_t >= k + 1 for k in heads], at(inv, finals, size_t))
        admitted = s.check()
        if admitted == z3.unsat:
            s.pop()
            why.append(
                f"{label}: no final state admitted (the assumptions exclude every batch, or the invariant is false)"
            )
            continue
        s.add(z3.Not(claim_term))
        answer = s.check()
        core = core_labels(s.unsat_core(), trackers) if answer == z3.unsat else []
        s.pop()
        if answer == z3.unsat:
            return InductionOutcome("proved", core=[*used, *(c for c in core if c not in used)], invariant=label)
        why.append(f"{label}: the invariant and the assumptions do not imply the claim ({answer})")
    return InductionOutcome("undecided", message="; ".join(why))


def _zero(term: z3.ExprRef) -> z3.ExprRef:
    return z3.BoolVal(False) if z3.is_bool(term) else z3.IntVal(0)


#: the largest fixed batch length a non-vacuity witness is searched at (the bounded encoding)
WITNESS_LENGTH = 64


def admitted_point(
    ob: Obligation, fixed: dict[str, int], ranges: dict[str, Range], vectors: dict[str, Vector], rlimit: int
) -> dict[str, object] | None:
    """A point the assumptions admit, with a batch of at most 4 entries (or of the case's fixed
    batch length, up to :data:`WITNESS_LENGTH`: a routing over 8 experts has 8 entries), found on
    the bounded encoding and replayed on ints, padded to the vector's size and alone (the
    assumptions hold on both); None if there is none that small."""
    ((vname, dom),) = vectors.items()
    sizes = [1, 2, 4]
    if 4 < fixed.get(dom.length or "", 0) <= min(dom.size, WITNESS_LENGTH):
        sizes.append(fixed[dom.length])
    for size in sizes:
        if size > dom.size:
            break
        small_ranges = dict(ranges)
        if dom.length in ranges:
            r = ranges[dom.length]
            if r.lo > size:
                continue
            small_ranges[dom.length] = Range(r.lo, min(r.hi, size))
        elif fixed.get(dom.length, 0) > size:
            continue
        small = dataclasses.replace(dom, size=size)
        domain = {**ob.domain, vname: small, **{k: v for k, v in small_ranges.items()}}
        small_ob = dataclasses.replace(ob, domain=domain)
        try:
            case = build_case(small_ob, fixed, small_ranges, {vname: small})
            s, _ = case.solver(rlimit)
            if s.check() != z3.sat:
                continue
            params = case.point(s.model())
            padded = evaluate(ob, concrete_args(ob, params))
            alone = evaluate(
                ob, concrete_args(ob, params, padding=False)
            )  # the batch as shown (padding must not move the result)
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - e.g. the model reads batch[10] of a 1-entry witness: no witness this size
            continue
        if all(bool(v) for ev in (padded, alone) for v in ev.assumptions.values()):
            return params
    return None


def prove_by_induction(
    ob: Obligation, finite: dict[str, list[int]], ranges: dict[str, Range], vectors: dict[str, Vector], rlimit: int
) -> tuple[str, list[InductionOutcome], str]:
    """Every case of ``ob`` by induction over its batch: ``("proved", outcomes, "")`` when every
    admitted case is proved and one is shown admitted by a replayed concrete point, else
    ``("undecided", [], why)`` (the caller uses the bounded encoding)."""
    import itertools

    names = list(finite)
    outcomes: list[InductionOutcome] = []
    witness = None
    for combo in itertools.product(*(finite[k] for k in names)):
        fixed = dict(zip(names, combo))
        try:
            outcome = decide_case(ob, fixed, ranges, vectors, rlimit)
        except NotInductive as exc:
            return "undecided", [], f"not applicable: {exc}"
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - the bounded run reports model errors
            return "undecided", [], f"not applicable: {type(exc).__name__}: {exc}"
        if outcome.kind == "undecided":
            return "undecided", [], f"case {fixed}: {outcome.message}"
        if outcome.kind == "proved" and witness is None:
            witness = admitted_point(ob, fixed, ranges, vectors, rlimit)
        outcomes.append(outcome)
    if not any(o.kind == "proved" for o in outcomes):
        return "undecided", [], "every case excluded (vacuity is reported by the bounded encoding)"
    if witness is None:
        return (
            "undecided",
            [],
            "no admitted batch of at most 4 entries (or of the case's fixed length) found to show the proof non-vacuous",
        )
    return "proved", outcomes, ""
