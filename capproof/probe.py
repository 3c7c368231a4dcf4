"""The int probe: the claim on plain ints at a few structured points, before any Z3 work.

Before the prover builds Z3 terms for an obligation, :func:`probe` evaluates the model on plain
Python ints at the corners a hand-written test strategy aims at: every parameter at its bound
(all low, all high, one flipped), batches saturated (every entry at its maximum), uniform, at 1,
one large entry and the rest small, and points repaired to satisfy the assumptions (a parameter
moved from its bound to the nearest value where a failing assumption holds: ``numel`` set to the
batch total, an offset just below its limit) or pushed as far as the assumptions allow (the token
budget down to the batch's total). The first point that

- lies in the obligation's (pinned) domain: every scalar in its ``Range``/``Choice``, each batch's
  length its length parameter's value, every entry in the entry range,
- satisfies every assumption on ints, and
- violates the claim on ints, with and without the batch's padding (as the prover's replay),

is a concrete counterexample: it *is* a replay on ints. The order: the two main corners (every
parameter low, every parameter high; with a batch the high one, saturated, first) and the cheap
moves from them, one coordinate of each in turn (a corner where the assumptions hold before one
they exclude, a saturated batch's first, its widest scalar first; when the saturated corner holds,
the low corner is evaluated only when its own moves' turn comes);
then each other base point followed at once by the cheap moves from it (a coordinate a push moved
before tried first); the sweeps; the bisecting moves and two more rounds. A point at which the model or an
assumption raises is skipped (never a counterexample). The probe never proves anything and never
decides a verdict: the verdict, and the smallest counterexample, still come from Z3 and its
minimisation (capproof.prover); the probe gives the *first* counterexample early (its point, the
points tried and the CPU time), and a hit the solver then proves impossible is a disagreement
between the two semantics, reported as an error.

Cost: at most :data:`PROBE_POINTS` evaluations per obligation, and fewer over large batches (at
most :data:`PROBE_WORK` entries evaluated in all: 126 points over a 64-entry batch, 7 over 1,024);
proved obligations pay the whole budget (measured in docs/performance.md). The budget is counted,
not timed, so which points run does not depend on the machine's load: when the probe misses, the
solver's first model is read in the case's Z3 context, and Z3's later answers depend on the terms
made before them (a timed budget made a borderline in-process proof flip to unknown under load).
:data:`PROBE_SECONDS` is only a safety valve for a model that is slow on ints.

Per point: each batch's padded tuple is made once per entries and reused; each assumption is
computed once per argument values (a point's assumptions up to the first false one, in declaration
order, then the claim; a move checks the assumptions it changes, cheapest first); the batch alone
only at a hit. The memo presumes an assumption is a function of its parameters: the final
re-check of the first point and the hit runs everything again without it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from operator import itemgetter

from .domain import Range, Vector
from .encode import as_claim, call_with_args, vector_arg
from .obligation import Obligation, param_signature
from .symbolic import Trace, tracing

perf_counter = time.perf_counter

__all__ = ["ProbeHit", "probe", "PROBE_POINTS", "PROBE_SECONDS", "PROBE_WORK"]

#: At most this many points (assumptions and claim evaluated on ints) per obligation.
PROBE_POINTS = 128
#: At most this many batch entries evaluated per obligation (each point costs 1 + the sizes of its
#: batches): the probe's work grows no faster than a few evaluations of the largest batch.
PROBE_WORK = 8192
#: A safety valve (CPU seconds, checked between points) for models slow on ints; not reached by
#: any obligation of spec/ (when it is, which points ran depends on the load).
PROBE_SECONDS = 0.5
#: Steps of a bisection along one parameter (2**24 values: every Range of the corpus).
_BISECT_STEPS = 24
#: Derived values tried per coordinate by a repair (nearest first).
_DERIVED_TRIES = 8


@dataclass
class ProbeHit:
    """A counterexample found on ints: ``params`` (ints; a Vector as its active entries), the
    claim's named ``values`` there, how many points were evaluated (``points``, this one
    included), the CPU seconds the probe took (``seconds``), which structured point it is
    (``how``: the corner and the moves from it) and the CPU clock (``time.process_time``) when the
    probe's re-check confirmed it (``rechecked_at``: when it is known to be a counterexample; the
    probe's own clean-up, its memo and batches released, comes after)."""

    params: dict[str, object]
    values: dict[str, int]
    points: int
    seconds: float = 0.0
    how: str = ""
    rechecked_at: float | None = None


def _no_keys(keys: dict) -> tuple:
    """The memo key's part of an assumption without parameters."""
    return ()


def _batch_total(base: int, first: int, n: int) -> int:
    """The total of a probe batch of ``n`` entries: ``first``, then ``n - 1`` entries at ``base``
    (as :meth:`_Prober.realise` builds it; 0 for an empty batch)."""
    return first + base * (n - 1) if n else 0


class _Budget(Exception):
    pass


class _Axis:
    """One scalar parameter: its admissible values in order (a Range as lo..hi, else a sorted
    list); moves address them by index (the value itself for a Range)."""

    __slots__ = ("lo", "hi", "values", "pos")

    def __init__(self, lo: int, hi: int, values: list[int] | None = None):
        self.lo, self.hi, self.values = lo, hi, values  # values None: every int in lo..hi
        self.pos: dict[int, int] | None = None  # a finite axis: each value's index
        if values is not None:
            self.pos = pos = {}
            for i, v in enumerate(values):
                pos[v] = i

    def contains(self, v: int) -> bool:
        return self.lo <= v <= self.hi if self.pos is None else v in self.pos

    def index(self, v: int) -> int:
        return v if self.pos is None else self.pos[v]

    def at(self, i: int) -> int:
        return i if self.values is None else self.values[i]

    def span(self) -> tuple[int, int]:
        return (self.lo, self.hi) if self.values is None else (0, len(self.values) - 1)


class _Prober:
    """One probe's search state (a plain class with slots: made once per obligation, before the
    first point, with its code out of the CPU's caches: docs/performance.md)."""

    __slots__ = (
        "ob",
        "axes",
        "vectors",
        "max_points",
        "deadline",
        "seen",
        "points",
        "hit",
        "reference",
        "trace",
        "params_of",
        "calls",
        "made",
        "memo",
        "cost",
        "pushed",
        "ticks",
        "batches",
        "parked",
        "plans",
        "changes",
        "lists",
        "params",
        "order",
    )

    def __init__(
        self, ob: Obligation, axes: dict[str, _Axis], vectors: dict[str, Vector], max_points: int, deadline: float
    ):
        self.ob, self.axes, self.vectors, self.max_points, self.deadline = ob, axes, vectors, max_points, deadline
        self.seen: set = set()
        self.points = 0
        self.hit: ProbeHit | None = None
        #: the first point evaluated and its outcome (re-evaluated at the end: see recheck)
        self.reference: tuple | None = None
        #: the trace every evaluation runs under (one for the whole probe, set by :func:`probe`: on
        #: ints nothing is recorded in it but capproof's misuse errors, checked after each point)
        self.trace: Trace = None  # type: ignore[assignment]
        #: each assumption's parameters, in declaration order (as capproof.encode.evaluate runs them)
        self.params_of: dict[str, list[str]] = {}
        #: each assumption's function and parameters (what :meth:`holds` calls), whether it
        #: takes them by position (capproof.obligation.takes_positionally), and its memo key's
        #: part from the argument keys (their values in one C call: a value, or a tuple of them)
        self.calls: dict[str, tuple[object, list[str], bool, object]] = {}
        for n, f in ob.assumptions.items():
            _, names, positional = param_signature(f)  # as Obligation.assumption_params and takes_positionally
            self.params_of[n] = names = list(names)
            self.calls[n] = (f, names, positional, itemgetter(*names) if names else _no_keys)
        #: each batch as the model takes it (a Padded), its number and its list, per (padding, id of the list)
        self.made: dict[tuple, tuple[object, int, list]] = {}
        #: assumption values by (name, argument keys); None: off (the final re-check)
        self.memo: dict[tuple, bool] | None = {}
        #: the wall seconds each assumption took when last computed (only orders a conjunction)
        self.cost: dict[str, float] = {}
        #: how many pushes moved each coordinate (tried first at the next points)
        self.pushed: dict[tuple[str, str], int] = {}
        self.ticks = 0
        self.batches = 0
        #: the generators of :meth:`run` (the base points', the moves' lists): a hit leaves some
        #: suspended, closed when the probe has read its clock, not while its exception unwinds
        #: (see :func:`probe`)
        self.parked: list[list] = []
        self.plans: dict[tuple[str | None, bool], list[tuple[str, str]]] = {}
        self.changes: dict[tuple, list[str]] = {}
        #: each batch's active entries, one list per (name, length, base, first), so that
        #: :meth:`args` finds its Padded by the list's identity
        self.lists: dict[tuple, list[int]] = {}
        #: each parameter in declaration order with its axis (None: a batch), for :meth:`realise`
        self.params = params = ob.params
        self.order: list[tuple[str, _Axis | None]] = []
        for p in params:
            self.order.append((p, None if p in vectors else axes[p]))

    def tick(self) -> None:
        """Stop the search (``_Budget``) once its CPU time is spent (read every 8th call: reading
        the CPU clock costs ~1 us, the work between two calls a few us)."""
        self.ticks += 1
        if not self.ticks & 7 and time.process_time() > self.deadline:
            raise _Budget

    # -- points ------------------------------------------------------------------------------
    def active(self, scalars: dict[str, int], name: str) -> int:
        dom = self.vectors[name]
        return scalars[dom.length] if dom.length else dom.size

    def realise(self, scalars: dict[str, int], shapes: dict[str, tuple[int, int]]) -> dict[str, object] | None:
        """The parameters of a point (None: outside the domain)."""
        params: dict[str, object] = {}
        for p, axis in self.order:
            if axis is None:
                dom = self.vectors[p]
                elem: Range = dom.elem  # type: ignore[assignment]
                n = self.active(scalars, p)
                base, first = shapes[p]
                if not (0 <= n <= dom.size and elem.lo <= base <= elem.hi and elem.lo <= first <= elem.hi):
                    return None
                key = (p, n, base, first)
                entries = self.lists.get(key)
                if entries is None:
                    entries = self.lists[key] = ([first] + [base] * (n - 1)) if n else []
                params[p] = entries
            else:
                v = scalars[p]
                if not (axis.lo <= v <= axis.hi if axis.pos is None else v in axis.pos):  # axis.contains(v), inline
                    return None
                params[p] = v
        return params

    def args(
        self, params: dict[str, object], names=None, padding: bool = True
    ) -> tuple[dict[str, object], dict[str, object]]:
        """``params`` (only ``names`` when given) as the model takes them (as
        :func:`capproof.encode.concrete_args`), and a key of each value for :meth:`holds` (the
        value, or a batch's number). A batch's Padded is made once per entries and reused (moves
        change one coordinate at a time: most points share their batches)."""
        args: dict[str, object] = {}
        keys: dict[str, object] = {}
        for p in self.params if names is None else names:
            v = params[p]
            if p in self.vectors:
                key = (padding, id(v))  # a list of self.lists (kept alive there), else checked below
                made = self.made.get(key)
                if made is None or made[2] is not v:
                    self.batches += 1  # a new number even where an id was reused
                    made = self.made[key] = (vector_arg(p, self.vectors[p], v, padding), self.batches, v)
                args[p], keys[p] = made[0], made[1]
            else:
                args[p] = keys[p] = v
        return args, keys

    def holds(self, name: str, args: dict[str, object], keys: dict[str, object]) -> bool:
        """Assumption ``name`` on ``args`` (raises what it raises), computed once per argument values
        (``keys``) while :attr:`memo` is on: an assumption is a function of its parameters (the
        probe re-checks at the end, without the memo, the first point and the hit)."""
        func, names, positional, keyed = self.calls[name]
        memo = self.memo
        if memo is None:
            return bool(call_with_args(func, "assumption", name, names, args, positional))
        k = (name, keyed(keys))
        v = memo.get(k)
        if v is None:
            started = perf_counter()
            v = memo[k] = bool(call_with_args(func, "assumption", name, names, args, positional))
            self.cost[name] = perf_counter() - started
        return v

    def assumptions_hold(self, names: list[str], params: dict[str, object], needed: list[str]) -> bool:
        """Whether the assumptions ``names`` (whose parameters are ``needed``) hold on ints at
        ``params`` (False if one raises or is false: the cheapest first, by the time each last took,
        since the answer is the same in any order; an assumption over a 64-entry batch costs ~20x
        one over scalars)."""
        try:
            args, keys = self.args(params, needed)
            if len(names) == 1:
                return self.holds(names[0], args, keys)
            cost = self.cost
            for name in (
                sorted(names, key=lambda n: cost.get(n, 0.0))
                if len(names) > 2
                else (names if cost.get(names[0], 0.0) <= cost.get(names[1], 0.0) else names[::-1])
            ):
                if not self.holds(name, args, keys):
                    return False
            return True
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a raising assumption admits nothing here
            return False

    def evaluate(
        self, scalars: dict[str, int], shapes: dict[str, tuple[int, int]], how: str
    ) -> tuple[str, list[str]] | None:
        """('hit'|'holds'|'excluded', failed assumptions) at the point, or None (not in the
        domain, seen before, or raised). Stops the search (``_Budget``) at a hit or the budget."""
        self.tick()
        params = self.realise(scalars, shapes)
        if params is None:
            return None
        # the point's values as its key, unsorted: every point's dicts list their names in one
        # order (the axes' and the vectors', as bases and sweeps build them and put copies them)
        key = (tuple(scalars.values()), tuple(shapes.values()))
        if key in self.seen:
            return None
        self.seen.add(key)
        if self.points >= self.max_points:
            raise _Budget
        self.points += 1
        outcome = self.run_model(params)
        if outcome is None:
            return None
        if self.reference is None:
            self.reference = (params, outcome)
        holds, values, failed = outcome
        if failed:
            return "excluded", failed
        if holds:
            return "holds", []
        if not self._same_alone(params, values):
            return None
        self.hit = ProbeHit(params, values, self.points, how=how)
        raise _Budget

    def run_model(
        self, params: dict[str, object], padding: bool = True
    ) -> tuple[bool, dict[str, int], list[str]] | None:
        """(claim holds, named values, failed assumptions) on ints at ``params`` (with each batch
        padded, or alone): the assumptions in declaration order up to the first that is false, then
        (all true) the claim; ``(True, {}, [that assumption])`` at a point it excludes, None if one
        raised or returned a non-boolean (as :func:`capproof.encode.evaluate` would raise)."""
        try:
            args, keys = self.args(params, padding=padding)
            holds = self.holds
            for name in self.params_of:
                if not holds(name, args, keys):
                    out: tuple[bool, dict[str, int], list[str]] = (True, {}, [name])
                    break
            else:
                claim = as_claim(self.ob.func(**args), self.ob)
                values: dict[str, int] = {}
                for k, v in claim.values.items():
                    values[k] = int(v)  # type: ignore[call-overload]
                out = (bool(claim.holds), values, [])
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a model raising on ints is not a counterexample
            out = None  # type: ignore[assignment]
        if self.trace.misuse:  # capproof's error raised and caught by the model: never trust the point
            self.trace.misuse.clear()
            return None
        return out

    def recheck(self) -> str | None:
        """The first point evaluated and the hit, evaluated again: None if each gives what it gave,
        else what differs (a model whose result depends on the calls before it, through module
        state: no verdict can be trusted, and the probe has changed what the solver will see)."""
        self.memo = None  # every assumption run again
        again = [self.reference] if self.reference is not None else []
        if self.hit is not None and (self.reference is None or self.reference[0] != self.hit.params):
            again.append((self.hit.params, (False, self.hit.values, [])))
        for params, outcome in again:
            now = self.run_model(params)
            if now != outcome:

                def shown(o):
                    return "raises" if o is None else f"claim {o[0]} {o[1]}" + (f", {o[2]} false" if o[2] else "")

                return f"at {params} it gave {shown(outcome)}, then {shown(now)}"
        return None

    def _same_alone(self, params: dict[str, object], values: dict[str, int]) -> bool:
        """The point fails on its batches alone (no padding) as with the padding (the batch a
        counterexample shows must fail; see capproof.prover._padding_check)."""
        for p, d in self.vectors.items():
            if len(params[p]) < d.size:  # type: ignore[arg-type]
                break
        else:
            return True
        return self.run_model(params, padding=False) == (False, values, [])

    # -- moves -------------------------------------------------------------------------------
    def plan(self, failed: str | None, small: bool) -> list[tuple[str, str]]:
        """The coordinates the moves from a point change, in order: the repairs of assumption
        ``failed``, or with None the saturations of every assumption; ``small``: the point's
        batches are at their low entries. The same at every point of that kind, so made once.

        A coordinate is a scalar, or a vector's base or first entry (a vector named by an
        assumption moves its length parameter too, as a scalar). Plain loops in one function: the
        probe runs once per obligation, after other work has taken the CPU's caches, and each
        comprehension or lambda is one more code object to fetch (docs/performance.md)."""
        out = self.plans.get((failed, small))
        if out is None:
            vectors, params_of, axes = self.vectors, self.params_of, self.axes
            # assumptions that tie a scalar to a batch first (a token budget and the batch's total)
            tied: list[str] = []
            untied: list[str] = []
            for a in (failed,) if failed is not None else params_of:  # params_of: in declaration order
                (untied if vectors.keys().isdisjoint(params_of[a]) else tied).append(a)
            # each coordinate once, in the order the assumptions name them: a batch's base and
            # first entry (always together), its length parameter with the scalars
            entries: list[tuple[str, str]] = []
            scalars: list[tuple[str, str]] = []
            for a in tied + untied:
                for n in params_of[a]:
                    if n in vectors:
                        c = (n, "base")
                        if c not in entries:
                            entries += c, (n, "first")
                            length = vectors[n].length
                            if length and (length, "") not in scalars:
                                scalars.append((length, ""))
                    elif n in axes:
                        c = (n, "")
                        if c not in scalars:
                            scalars.append(c)
            # a small batch grows first (its entries before the scalars), a saturated one's budget
            # shrinks to it first (the scalars before the entries, its length last of the scalars:
            # shortening a saturated batch unsaturates it), the widest range first (a token budget
            # of 1..65536 before a per-request bound's 1..7: the budget is what a saturated batch
            # pushes against); a stable sort
            if small:
                out = entries + scalars
            else:
                lengths = set()
                for d in vectors.values():
                    lengths.add(d.length)
                keyed = []
                i = 0
                for c in scalars:
                    axis = axes[c[0]]
                    keyed.append((c[0] in lengths, axis.lo - axis.hi, i, c))
                    i += 1
                keyed.sort()
                out = []
                for k in keyed:
                    out.append(k[3])
                out += entries
            self.plans[(failed, small)] = out
        return out

    def changed(self, failed: str | None, coord: tuple[str, str]) -> tuple[list[str], list[str]]:
        """The assumptions (``failed``, or with None all) a move of ``coord`` can change (the
        others hold as before), and their parameters."""
        key = (failed, coord)
        out = self.changes.get(key)
        if out is None:
            params_of = self.params_of
            touched = {coord[0]}
            if not coord[1]:
                for n, d in self.vectors.items():
                    if d.length == coord[0]:
                        touched.add(n)
            names: list[str] = []
            needed: dict[str, None] = {}
            for a in [failed] if failed is not None else params_of:
                if not touched.isdisjoint(params_of[a]):
                    names.append(a)
                    needed.update(dict.fromkeys(params_of[a]))
            out = self.changes[key] = (names, list(needed))
        return out

    def span(self, coord: tuple[str, str], scalars: dict[str, int]) -> tuple[int, int]:
        name, part = coord
        if part:
            elem: Range = self.vectors[name].elem  # type: ignore[assignment]
            return elem.lo, elem.hi
        return self.axes[name].span()

    def get(self, coord: tuple[str, str], scalars: dict[str, int], shapes: dict[str, tuple[int, int]]) -> int:
        name, part = coord
        if part:
            return shapes[name][0 if part == "base" else 1]
        return self.axes[name].index(scalars[name])

    def put(self, coord: tuple[str, str], i: int, scalars: dict[str, int], shapes: dict[str, tuple[int, int]]):
        name, part = coord
        scalars, shapes = dict(scalars), dict(shapes)
        if part == "base":
            shapes[name] = (i, i) if shapes[name][0] == shapes[name][1] else (i, shapes[name][1])
        elif part == "first":
            shapes[name] = (shapes[name][0], i)
        else:
            scalars[name] = self.axes[name].at(i)
        return scalars, shapes

    def uniform_at(self, shapes: dict[str, tuple[int, int]], high: bool) -> bool:
        """Whether every batch's base entry is at its range's high (``high``) or low bound."""
        for n, d in self.vectors.items():
            if shapes[n][0] != (d.elem.hi if high else d.elem.lo):  # type: ignore[attr-defined]
                return False
        return True

    def derived(self, coord: tuple[str, str], scalars: dict[str, int], shapes: dict[str, tuple[int, int]]) -> list[int]:
        """Values (indices) a coordinate may take from the point's other quantities: another
        scalar's value or a batch's total, length or entry (and each ± 1); for a vector's first
        entry, the value making its batch total equal to a scalar."""
        name, part = coord
        quantities: set[int] = set()
        for p, v in scalars.items():
            if p != name:
                quantities.add(v)
        for p, (base, first) in shapes.items():
            if p == name and part:
                continue
            n = self.active(scalars, p)
            quantities.update((base, first, n, _batch_total(base, first, n)))
        if part == "first":
            n = self.active(scalars, name)
            base = shapes[name][0]
            quantities.update(v - base * (n - 1) for v in list(scalars.values()))
        out: set[int] = set()
        pos = None if part else self.axes[name].pos  # a finite axis: the values' indices
        lo, hi = self.span(coord, scalars)
        for q in quantities:
            for v in (q, q - 1, q + 1):
                if pos is None:
                    if lo <= v <= hi:
                        out.add(v)
                elif v in pos:
                    out.add(pos[v])
        return sorted(out)

    def bisect(self, coord, scalars, shapes, good, frm: int, to: int) -> int | None:
        """The index nearest ``frm`` (between ``frm`` and ``to``) where ``good`` holds, if it
        holds at ``to`` (``good`` assumed monotone along the line; the result is checked by the
        caller's full evaluation anyway)."""
        if not good(*self.put(coord, to, scalars, shapes)):
            return None
        return self._farthest(coord, scalars, shapes, good, to, frm)

    def moves(self, scalars, shapes, kind: str, failed: list[str], bisect: bool, pushed: object = False):
        """Points moved from this one. ``kind`` "excluded": repairs of the first failed assumption
        (one of its coordinates set to the nearest of its value ± 1 and the derived values where
        it holds, or with
        ``bisect`` moved from its value toward either bound to the nearest value where it holds).
        "holds": saturations (one coordinate of an assumption pushed away from its value, to the
        farthest derived value, or with ``bisect`` the farthest value, where every assumption
        still holds: the token budget down to the batch's total, an offset up to its limit).
        ``pushed``: :attr:`pushed` as this point's moves are to see it (by default as when this
        generator starts)."""
        if pushed is False:
            pushed = dict(self.pushed) if self.pushed else None
        yield None  # one coordinate per turn (see run.step); the plan made when the first turn
        # comes (the moves of a corner whose other corner's moves hit first are never planned)
        small = self.uniform_at(shapes, False)
        which = failed[0] if kind == "excluded" else None
        coords = self.plan(which, small)
        if pushed:  # a coordinate a push moved before first among the scalars or the entries
            # (a limit that binds at one point binds at the next)
            coords = sorted(coords, key=lambda c: (bool(c[1]) != small, -pushed.get(c, 0)))
        for turn, coord in enumerate(coords):
            if turn:
                yield None
            self.tick()
            changed, needed = self.changed(which, coord)

            def good(s, h, changed=changed, needed=needed) -> bool:
                params = self.realise(s, h)
                return params is not None and self.assumptions_hold(changed, params, needed)

            cur = self.get(coord, scalars, shapes)
            lo, hi = self.span(coord, scalars)
            label = coord[0] + ("." + coord[1] if coord[1] else "")
            if kind == "excluded":
                if not bisect:
                    # the derived values nearest first, after the values next to ``cur`` (the
                    # nearest admitted point when ``cur`` is just past the assumption's limit)
                    near = [i for i in (cur - 1, cur + 1) if lo <= i <= hi]
                    tries = near + sorted(
                        set(self.derived(coord, scalars, shapes)).difference(near), key=lambda i: abs(i - cur)
                    )
                    for i in tries[:_DERIVED_TRIES]:
                        if i != cur and good(*self.put(coord, i, scalars, shapes)):
                            yield (*self.put(coord, i, scalars, shapes), f"{label} set to a derived value")
                            break
                    continue
                for end in (lo, hi):
                    if end != cur:
                        i = self.bisect(coord, scalars, shapes, good, cur, end)
                        if i is not None:
                            yield (*self.put(coord, i, scalars, shapes), f"{label} moved to where the assumption holds")
                continue
            far = hi if cur - lo <= hi - cur else lo
            if far == cur:
                continue
            if bisect:
                if good(*self.put(coord, far, scalars, shapes)):
                    continue  # no assumption binds this coordinate here: the far end is a base point's flip
                j = self._farthest(coord, scalars, shapes, good, cur, far)
                if j is not None and j != cur:
                    self.pushed[coord] = self.pushed.get(coord, 0) + 1
                    yield (*self.put(coord, j, scalars, shapes), f"{label} pushed to the assumptions' limit")
                continue
            # the derived values between, from ``cur`` toward ``far``: the last where the
            # assumptions hold, by bisection (``cur`` holds; the far end checked unless a value
            # between is found where they do not: then, monotone along the line as bisection
            # presumes, they do not hold at the far end either)
            # (the derived values come ascending and distinct: nearest first is ascending toward a
            # higher ``far``, descending toward a lower one)
            between = []
            if far > cur:
                for i in self.derived(coord, scalars, shapes):
                    if cur < i < far:
                        between.append(i)
            else:
                for i in self.derived(coord, scalars, shapes):
                    if far < i < cur:
                        between.append(i)
                between.reverse()
            ok, bad = -1, len(between)
            if not coord[1] and bad > 2:  # a scalar's limit is most often a batch's total (a token
                # budget pushed down to it): that value and the next toward ``far`` first, 2 checks
                # when they straddle the limit, then bisection of what is left (the same result as
                # bisection alone where the assumptions are monotone along the line)
                pos = self.axes[coord[0]].pos
                for p, (base, first) in shapes.items():
                    n = self.active(scalars, p)
                    t = _batch_total(base, first, n)
                    if pos is not None:
                        t = pos.get(t)
                    if t in between:
                        g = between.index(t)
                        if good(*self.put(coord, t, scalars, shapes)):
                            ok = g
                            if g + 1 < bad:
                                if good(*self.put(coord, between[g + 1], scalars, shapes)):
                                    ok = g + 1
                                else:
                                    bad = g + 1
                        else:
                            bad = g
                        break
            if bad == len(between):  # no value between found failing: the far end checked
                if good(*self.put(coord, far, scalars, shapes)):
                    continue  # no assumption binds this coordinate here: the far end is a base point's flip
                if ok < 0 and bad & (bad - 1) == 0 and bad:  # 2**k values: the farthest first (it
                    # holds when the assumptions bind beyond every derived value), then bisection of
                    # the other 2**k - 1: at most k + 1 checks, as bisection of the 2**k takes
                    if good(*self.put(coord, between[-1], scalars, shapes)):
                        ok = bad - 1
                    else:
                        bad -= 1
            while bad - ok > 1:
                mid = (ok + bad) // 2
                if good(*self.put(coord, between[mid], scalars, shapes)):
                    ok = mid
                else:
                    bad = mid
            if ok >= 0:
                self.pushed[coord] = self.pushed.get(coord, 0) + 1
                yield (*self.put(coord, between[ok], scalars, shapes), f"{label} pushed to a derived value")

    def _farthest(self, coord, scalars, shapes, good, cur: int, far: int) -> int | None:
        """The value farthest from ``cur`` toward ``far`` where ``good`` holds (``good`` holds at
        ``cur`` and not at ``far``; assumed monotone along the line)."""
        ok, bad = cur, far
        for _ in range(_BISECT_STEPS):
            if abs(bad - ok) <= 1:
                break
            mid = (ok + bad) // 2
            if good(*self.put(coord, mid, scalars, shapes)):
                ok = mid
            else:
                bad = mid
            self.tick()
        return ok

    # -- search ------------------------------------------------------------------------------
    def bases(self):
        lo: dict[str, int] = {}  # an axis's first and last values
        hi: dict[str, int] = {}
        for p, a in self.axes.items():
            lo[p], hi[p] = a.lo, a.hi
        elo: dict[str, int] = {}
        ehi: dict[str, int] = {}
        ulo: dict[str, tuple[int, int]] = {}
        uhi: dict[str, tuple[int, int]] = {}
        for n, d in self.vectors.items():
            elo[n], ehi[n] = d.elem.lo, d.elem.hi  # type: ignore[attr-defined]
            ulo[n], uhi[n] = (elo[n], elo[n]), (ehi[n], ehi[n])
        yield lo, ulo, "every parameter at its low bound"
        yield hi, uhi, "every parameter at its high bound (batches saturated)"
        uni = lambda vals: {n: (v, v) for n, v in vals.items()}  # noqa: E731
        # the other base points made when the two corners' moves found nothing
        one = {n: min(d.elem.lo + 1, d.elem.hi) for n, d in self.vectors.items()}  # type: ignore[attr-defined]
        big = {n: (elo[n], ehi[n]) for n in self.vectors}
        if self.vectors:
            yield lo, uni(one), "low bounds, every entry 1 above its low bound"
            yield hi, uni(one), "high bounds, every entry 1 above its low bound"
            yield lo, uni(ehi), "low bounds, every entry at its maximum"
            yield hi, uni(elo), "high bounds, every entry at its minimum"
            yield hi, big, "high bounds, one large entry and the rest small"
            yield lo, big, "low bounds, one large entry and the rest small"
        shapes = ulo
        for p in self.axes:  # one parameter flipped
            if lo[p] != hi[p]:
                yield {**lo, p: hi[p]}, shapes, f"low bounds, {p} high"
                yield {**hi, p: lo[p]}, uni(ehi), f"high bounds, {p} low"

    def sweeps(self):
        """Each value of each finite parameter, the others at their low and then high bounds; then
        every case (combination of the finite values) with the ranges low and then high."""
        lo = {p: a.at(a.span()[0]) for p, a in self.axes.items()}
        hi = {p: a.at(a.span()[1]) for p, a in self.axes.items()}
        elo = {n: (d.elem.lo, d.elem.lo) for n, d in self.vectors.items()}  # type: ignore[attr-defined]
        ehi = {n: (d.elem.hi, d.elem.hi) for n, d in self.vectors.items()}  # type: ignore[attr-defined]
        finite = [p for p, a in self.axes.items() if a.values is not None and len(a.values) > 2]
        for base, shapes, where in ((lo, elo, "low"), (hi, ehi, "high")):
            for p in finite:
                for v in self.axes[p].values[1:-1]:  # type: ignore[index]
                    yield {**base, p: v}, shapes, f"{where} bounds, {p}={v}"
        cases = [p for p, a in self.axes.items() if a.values is not None and len(a.values) > 1]
        for base, shapes, where in ((lo, elo, "low"), (hi, ehi, "high")):
            for combo in itertools.product(*(self.axes[p].values for p in cases)):  # type: ignore[misc]
                yield {**base, **dict(zip(cases, combo))}, shapes, f"case {dict(zip(cases, combo))}, ranges {where}"

    def _later(self, point, into: list):
        """The moves from ``point`` (scalars, shapes, how) evaluated when its first turn comes (its
        outcome appended to ``into``), as :meth:`moves` would give them had it been evaluated
        before that turn (the pushes seen as at the start)."""
        pushed = dict(self.pushed) if self.pushed else None
        yield None
        s, h, how = point
        out = self.evaluate(s, h, how)
        if out is None:
            return
        into.append((s, h, how, out))
        gen = self.moves(s, h, *out, False, pushed=pushed)
        next(gen)  # its first turn is this one
        yield from gen

    def run(self) -> None:
        """The two main corners (every parameter low, every parameter high; with a batch the
        saturated one evaluated first, and the low one at its moves' first turn when the saturated
        one holds) and the cheap moves from them (derived values), the saturations of an admitted
        corner first (a saturated batch's first); each other base point, each followed by its cheap moves; the sweeps of
        finite values and cases; then the bisecting moves from every point so far, and two more
        rounds of moves from the points moved to."""
        done: list[tuple[dict, dict, str, tuple[str, list[str]]]] = []

        def step(points, bisect: bool, interleave: bool = False, more=()) -> list:
            """The moves from ``points``, point by point, or with ``interleave`` one coordinate of
            each point in turn (the two main corners: so that moves from one that find nothing do
            not hold up the other's); ``more``: (how, generator of moves) taking their turns after them."""
            out_points = []
            gens = []
            self.parked.append(gens)  # a hit raises through them: closed after the probe's clock read
            for s, h, how, (kind, failed) in points:
                gens.append((how, self.moves(s, h, kind, failed, bisect)))
            gens += more
            while gens:
                for how, gen in list(gens) if interleave else gens[:1]:
                    move = next(gen, False)
                    if move is False:
                        gens.remove((how, gen))
                    elif move is not None:
                        s2, h2, how2 = move
                        out = self.evaluate(s2, h2, f"{how}; {how2}")
                        if out is not None:
                            out_points.append((s2, h2, f"{how}; {how2}", out))
            return out_points

        def visit(source) -> list:
            points = []
            for s, h, how in source:
                out = self.evaluate(s, h, how)
                if out is not None:
                    points.append((s, h, how, out))
            return points

        bases = self.bases()
        self.parked.append([bases])  # suspended at a hit too (see step)
        low, high = itertools.islice(bases, 2)
        # the moves from a corner where the assumptions hold (saturations) before the repairs of
        # one they exclude, a saturated batch's first (its budget pushed down to the batch's total)
        saturated = lambda h: bool(self.vectors) and self.uniform_at(h, True)  # noqa: E731
        if self.vectors:  # a batch obligation's saturated corner evaluated first (where a capacity
            # bug shows; the first point is also the final re-check's reference)
            points = visit([high])
            if points and points[0][3][0] == "holds" and saturated(high[1]) and not saturated(low[1]):
                # its moves come first whatever the low corner gives (the order below): the low
                # corner is evaluated when its own moves' first turn comes, after the saturated
                # corner's first move (a hit there needs no second corner)
                lows: list = []
                done += points + step(points, False, interleave=True, more=[(low[2], self._later(low, lows))])
                done[len(points) : len(points)] = lows
            else:
                points = visit([low]) + points
        else:
            points = visit([low, high])
        if not done:
            points.sort(key=lambda pt: (pt[3][0] != "holds", not saturated(pt[1])))
            done += points + step(points, False, interleave=True)
        for base in bases:  # each other base point, then at once the cheap moves from it
            points = visit([base])
            done += points + step(points, False)
        done += visit(self.sweeps())
        frontier = step(done, True)
        for _depth in range(2):
            frontier = step(frontier, False) + step(frontier, True)
            if not frontier:
                return


def probe(
    ob: Obligation,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    max_points: int = PROBE_POINTS,
    max_seconds: float = PROBE_SECONDS,
    stats: dict[str, object] | None = None,
    max_work: int = PROBE_WORK,
) -> ProbeHit | None:
    """The first counterexample on ints at the structured points of ``ob``'s domain (``finite``,
    ``ranges``, ``vectors`` as :func:`capproof.encode.checked_domains` gives them, pins applied),
    or None. At most ``max_points`` evaluations, ``max_work // (1 + the batches' sizes)`` of them
    over batches, and about ``max_seconds`` CPU seconds (a safety valve); never
    raises for a model that raises (that point is skipped). ``ProbeHit.seconds`` is the probe's
    own CPU time; ``stats`` (optional) receives ``points`` evaluated and ``seconds``, hit or not,
    and ``unstable`` when the model gave another result at a point evaluated again (the first
    point, and the hit; then no hit is returned): its result depends on module state its calls
    change."""
    axes: dict[str, _Axis] = {}
    for p, v in finite.items():
        v = sorted(v)
        axes[p] = _Axis(v[0], v[-1], v)
    for p, r in ranges.items():
        axes[p] = _Axis(r.lo, r.hi)
    started = time.process_time()
    per_point = 1
    for vec in vectors.values():
        per_point += vec.size
    prober = _Prober(ob, axes, dict(vectors), max(1, min(max_points, max_work // per_point)), started + max_seconds)
    with tracing() as trace:
        prober.trace = trace
        try:
            prober.run()
        except _Budget:
            pass
        unstable = prober.recheck()
        ended = time.process_time()  # the hit is a counterexample from here (re-checked)
    prober.parked.clear()  # the suspended move generators closed (they hold the prober: a cycle until then)
    if unstable is not None:
        prober.hit = None
    took = ended - started
    if prober.hit is not None:
        prober.hit.seconds = took
        prober.hit.rechecked_at = ended
    if stats is not None:
        stats.update(points=prober.points, seconds=took)
        if unstable is not None:
            stats["unstable"] = unstable  # type: ignore[assignment]
    return prober.hit
