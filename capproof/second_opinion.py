"""A second opinion on ints: every ``proved`` (and ``vacuous``) verdict is also tested with Hypothesis.

The solver's verdict rests on the model meaning the same on Z3 terms as on ints. The int probe
(capproof.probe) evaluates structured points before the solver runs; this check runs after a
verdict that says no admitted point fails (``proved``) or none is admitted (``vacuous``), on
points the probe does not aim at:

- *small batches*: every Vector at its smallest lengths (1, 2, 3 entries where its length
  parameter allows) with entries from the boundary values of the entry range (``lo``, ``lo+1``,
  the middle, ``hi-1``, ``hi``, the ``fill``), scalars at their bounds;
- *Hypothesis*: :func:`hypothesis.find` over the whole (pinned) domain, derandomized (the same
  examples every run, whatever the machine), no example database, ``max_examples`` small
  (:data:`EXAMPLES`), every scalar drawn from its bounds or its range, batches of any admitted
  length, large batches as a few drawn entries followed by a repeated one.

Each point is evaluated padded (the tuple the model receives) and on the batch alone (the active
entries only, as a counterexample shows it). A point where every assumption holds and the claim
is false, padded or alone, contradicts ``proved``; a point where every assumption holds
contradicts ``vacuous``. Either makes the verdict an ``error`` naming the point (never a
counterexample: the solver's encoding and the ints disagree, so neither is trusted). A point
where the model or an assumption raises is skipped, as the probe skips it.

Cost: at most :data:`SMALL_POINTS` + :data:`EXAMPLES` evaluations (twice with a batch) per proved
obligation; measured on ``make verify`` in docs/performance.md.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from dataclasses import dataclass

# imported here, not at the first use: capproof prove forks each item's process from one that
# imported the prover, so Hypothesis (~0.2 s with its engine) is imported once, not per process
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.internal.conjecture import engine as _engine  # noqa: F401 - imported by find() on first use

from .domain import Range, Vector
from .encode import concrete_args, evaluate
from .obligation import Obligation

__all__ = ["Disagreement", "second_opinion", "EXAMPLES", "SMALL_POINTS"]

#: Hypothesis examples per verdict checked (derandomized: the same ones every run).
EXAMPLES = 10
#: Small-batch points per verdict checked (boundary entries, lengths 1..3).
SMALL_POINTS = 120
#: Small batches per Vector combined with the others' (boundary entries first).
_BATCHES_PER_VECTOR = 64
#: Entries drawn one by one in a large batch; the rest repeat one drawn value.
_DRAWN_ENTRIES = 8


@dataclass
class Disagreement:
    """A point of the domain that contradicts the verdict on ints."""

    params: dict[str, object]
    how: str  # "padded" or "alone"
    source: str  # "small batches" or "Hypothesis"
    what: str  # "the claim fails" or "every assumption holds"


def _bounds(lo: int, hi: int, extra: tuple[int, ...] = ()) -> list[int]:
    values = [lo, lo + 1, (lo + hi) // 2, hi - 1, hi, *extra]
    return sorted({v for v in values if lo <= v <= hi})


def _scalar_values(finite: dict[str, list[int]], ranges: dict[str, Range]) -> dict[str, list[int]]:
    out = {k: list(v) for k, v in finite.items()}
    out.update({k: _bounds(r.lo, r.hi) for k, r in ranges.items()})
    return out


def _length_values(name: str, dom: Vector, scalars: dict[str, list[int]], finite, ranges) -> list[int] | None:
    """The batch lengths to try small: the smallest admitted ones up to 3 (None: fixed size)."""
    if dom.length is None:
        return None
    if dom.length in finite:
        return sorted(v for v in finite[dom.length] if v <= dom.size)[:3]
    r = ranges.get(dom.length)
    if r is None:
        return None
    return [v for v in range(r.lo, min(r.hi, dom.size, r.lo + 2) + 1)]


class _Evaluator:
    def __init__(self, ob: Obligation, vectors: dict[str, Vector], verdict: str):
        self.ob = ob
        self.vectors = vectors
        self.verdict = verdict

    def contradicts(self, params: dict[str, object]) -> str | None:
        """ "padded"/"alone" when ``params`` contradicts the verdict that way, else None."""
        for padding in (True, False) if self.vectors else (True,):
            try:
                ev = evaluate(self.ob, concrete_args(self.ob, params, padding), witnesses=False, symbolic=False)
            except KeyboardInterrupt:
                raise
            except Exception:  # noqa: BLE001 - a point where the model raises is skipped (as the probe does)
                continue
            if not all(bool(v) for v in ev.assumptions.values()):
                continue
            if self.verdict == "vacuous" or not bool(ev.claim.holds):
                return "padded" if padding else "alone"
        return None


def _small_points(ob: Obligation, finite, ranges, vectors: dict[str, Vector]):
    scalars = _scalar_values(finite, ranges)
    names = [p for p in ob.params if p not in vectors]
    # scalars: every one low, every one high, then each bound of each in turn from the low corner
    low = {k: scalars[k][0] for k in names}
    high = {k: scalars[k][-1] for k in names}
    bases = [low, high] + [{**low, k: v} for k in names for v in scalars[k][1:]]
    for base in bases:
        per_vector = []
        for v, dom in vectors.items():
            elem: Range = dom.elem  # type: ignore[assignment]
            entries = _bounds(elem.lo, elem.hi, (dom.fill,))
            lengths = _length_values(v, dom, scalars, finite, ranges)
            per_vector.append(list(itertools.islice(_batches(entries, lengths, dom.size), _BATCHES_PER_VECTOR)))
        for chosen in itertools.product(*per_vector) if per_vector else [()]:
            point = dict(base)
            lengths: dict[str, int] = {}
            ok = True
            for (v, dom), (n, entries) in zip(vectors.items(), chosen):
                if n is not None:
                    if lengths.setdefault(dom.length, n) != n:  # two batches sharing one length parameter
                        ok = False
                        break
                    point[dom.length] = n
                point[v] = entries
            if ok:
                yield {p: point[p] for p in ob.params}


def _batches(entries: list[int], lengths: list[int] | None, size: int):
    """(length or None, active entries): every batch of boundary entries up to 3 long, then for
    longer ones uniform batches and one entry different (first or last)."""
    for n in lengths if lengths is not None else [size]:
        if n <= 3:
            for t in itertools.product(entries, repeat=n):
                yield (n if lengths is not None else None), list(t)
            continue
        for e in entries:
            yield (n if lengths is not None else None), [e] * n
        lo, hi = entries[0], entries[-1]
        yield (n if lengths is not None else None), [hi] + [lo] * (n - 1)
        yield (n if lengths is not None else None), [lo] * (n - 1) + [hi]


def _strategy(ob: Obligation, finite, ranges, vectors: dict[str, Vector]):
    # the strategies are built once per obligation, not in each example: Hypothesis computes the
    # properties of every new strategy object (emptiness, labels) when it first draws from it, which
    # was about half the cost of an example (the draws, and so the examples, are the same)
    scalar = {}
    for name in ob.params:
        if name in finite:
            scalar[name] = st.sampled_from(finite[name])
        elif name in ranges:
            r = ranges[name]
            scalar[name] = st.one_of(st.sampled_from(_bounds(r.lo, r.hi)), st.integers(r.lo, r.hi))
    entries = {}
    for name, dom in vectors.items():
        elem: Range = dom.elem  # type: ignore[assignment]
        entries[name] = st.one_of(
            st.sampled_from(_bounds(elem.lo, elem.hi, (dom.fill,))), st.integers(elem.lo, elem.hi)
        )
    heads = {name: st.lists(entry, min_size=0, max_size=_DRAWN_ENTRIES) for name, entry in entries.items()}
    fixed: dict[tuple[str, int], object] = {}  # (vector, length) -> lists of exactly that length

    @st.composite
    def points(draw):
        point: dict[str, object] = {}
        for name, strategy in scalar.items():
            point[name] = draw(strategy)
        for name, dom in vectors.items():
            n = point[dom.length] if dom.length is not None else dom.size
            entry = entries[name]
            if n <= _DRAWN_ENTRIES:
                exact = fixed.get((name, n))
                if exact is None:
                    exact = fixed[(name, n)] = st.lists(entry, min_size=n, max_size=n)
                point[name] = draw(exact)
            else:
                head = draw(heads[name])
                point[name] = head + [draw(entry)] * (n - len(head))
        return {p: point[p] for p in ob.params}

    return points()


def second_opinion(
    ob: Obligation,
    verdict: str,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    examples: int = EXAMPLES,
) -> Disagreement | None:
    """A point of the (pinned) domain contradicting ``verdict`` ("proved" or "vacuous") on ints,
    or None. Small batches first, then Hypothesis (``examples`` examples, derandomized; shrunk
    when one is found). Never raises for a model error (such points are skipped)."""
    ev = _Evaluator(ob, vectors, verdict)
    if any(not isinstance(d.elem, Range) for d in vectors.values()):
        return None
    for k, params in enumerate(_small_points(ob, finite, ranges, vectors)):
        if k >= SMALL_POINTS:
            break
        how = ev.contradicts(params)
        if how is not None:
            return Disagreement(params, how, "small batches", _what(verdict))
    if examples <= 0:
        return None
    config = settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )
    try:
        with _storage_outside_cwd():
            found = find(
                _strategy(ob, finite, ranges, vectors), lambda p: ev.contradicts(p) is not None, settings=config
            )
    except NoSuchExample:
        return None
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - Hypothesis could not draw (e.g. an unsatisfiable filter): no opinion
        return None
    return Disagreement(found, ev.contradicts(found) or "padded", "Hypothesis", _what(verdict))


@contextlib.contextmanager
def _storage_outside_cwd():
    """Hypothesis keeps caches (``.hypothesis/``) in the directory it was imported from even with
    ``database=None``; an operator's ``capproof check-config`` must not leave one in their checkout.
    While ``find`` runs, its home is a directory under the system's temporary directory, unless
    the caller chose another home."""
    from hypothesis import configuration

    default = configuration.storage_directory(intent_to_write=False).home_directory.name == ".hypothesis"
    if default:
        configuration.set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "capproof-hypothesis"))
    try:
        yield
    finally:
        if default:
            configuration.set_hypothesis_home_dir(None)


def _what(verdict: str) -> str:
    return "every assumption holds and the claim fails" if verdict == "proved" else "every assumption holds"
