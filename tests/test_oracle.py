"""Independent brute-force oracle: every shipped obligation against plain-int enumeration.

For each obligation in spec/, enumerate a slice of its domain on plain ints (all finite cases,
the lowest values of each range, every vector's entries over its lowest values) and check the
verdict agrees: a proved claim holds at every admitted point; an expected counterexample's
minimised point is the smallest violating point of the slice when the slice contains one. The
fast tier uses a small slice, and pins the finite parameters of vector obligations to their
smallest case (proof and enumeration alike); the slow tier a wide slice.
"""

from __future__ import annotations

import itertools
import os

import pytest
from conftest import ROOT

from capproof import Options, Verdict
from capproof.domain import Vector
from capproof.loader import load
from capproof.obligation import Obligation
from capproof.prover import _concretely_false_assumptions, concrete_args, evaluate, prove_obligation


def _obligations() -> list[Obligation]:
    items, errors = load([os.path.join(ROOT, "spec")])
    assert not errors, errors
    return [it for it in items if isinstance(it, Obligation)]


def _slice(ob: Obligation, budget: int, pins: dict[str, int]) -> list[dict[str, object]]:
    scalars = [n for n in ob.params if not isinstance(ob.domain[n], Vector)]
    vectors = [n for n in ob.params if isinstance(ob.domain[n], Vector)]
    finite = {
        n: ([pins[n]] if n in pins else ob.domain[n].cases()) for n in scalars if n in pins or ob.domain[n].finite
    }
    ranges = {n: ob.domain[n] for n in scalars if n not in finite}
    n_finite = 1
    for values in finite.values():
        n_finite *= len(values)
    per_axis = max(2, int((budget / n_finite) ** (1 / max(1, len(ranges) + 2 * len(vectors)))))
    axes = {**finite, **{n: list(range(d.lo, min(d.hi, d.lo + per_axis - 1) + 1)) for n, d in ranges.items()}}
    n_combos = 1
    for n in scalars:
        n_combos *= len(axes[n])
    # at most ~16 * budget ints in all: long vectors (1024 experts) get few entry combinations
    width = 1 + sum(ob.domain[v].size for v in vectors)
    per_combo = max(1, (16 * budget) // (n_combos * width))
    points: list[dict[str, object]] = []
    for combo in itertools.product(*(axes[n] for n in scalars)):
        point: dict[str, object] = dict(zip(scalars, combo))
        entry_axes = []
        for v in vectors:
            dom = ob.domain[v]
            n = dom.size if dom.length is None else point[dom.length]
            values = list(range(dom.elem.lo, min(dom.elem.hi, dom.elem.lo + min(per_axis, 3) - 1) + 1))
            entry_axes.append(list(itertools.islice(itertools.product(values, repeat=n), per_combo)))
        for entries in itertools.islice(itertools.product(*entry_axes), per_combo):
            points.append({**point, **{v: list(e) for v, e in zip(vectors, entries)}})
    if len(points) > 4 * budget:  # an even, deterministic sample
        step = len(points) / (4 * budget)
        points = [points[int(i * step)] for i in range(4 * budget)]
    return points


def _check(ob: Obligation, budget: int, pins: dict[str, int] | None = None) -> None:
    pins = pins or {}
    result = prove_obligation(ob, Options(pins=pins))
    violations = []
    for point in _slice(ob, budget, pins):
        ev = evaluate(ob, concrete_args(ob, point))
        if all(ev.assumptions.values()) and not ev.claim.holds:
            violations.append(point)
    if result.verdict is Verdict.PROVED:
        assert not violations, f"{ob.id} proved but brute force violates it at {violations[0]}"
    else:
        assert result.verdict is Verdict.COUNTEREXAMPLE, result.message
        if violations and not any(isinstance(d, Vector) for d in ob.domain.values()):
            key = lambda p: tuple(p[n] for n in ob.params)  # noqa: E731
            smallest = min(violations, key=key)
            # the prover's point is the smallest of the whole domain: no slice violation is smaller,
            # and when it lies inside the slice it is the slice's smallest
            assert key(result.counterexample.params) <= key(smallest), (result.counterexample.params, smallest)
            if result.counterexample.params in violations:
                assert result.counterexample.params == smallest


def _fast_pins(ob: Obligation) -> dict[str, int]:
    """Vector obligations are pinned to their smallest admitted finite case in the fast tier."""
    if not any(isinstance(d, Vector) for d in ob.domain.values()):
        return {}
    finite = {n: d.cases() for n, d in ob.domain.items() if d.finite}
    for combo in itertools.product(*finite.values()):  # the smallest case the assumptions admit
        fixed = dict(zip(finite, combo))
        if not _concretely_false_assumptions(ob, fixed):
            return fixed
    return {n: values[0] for n, values in finite.items()}


#: the slices that take longest (every capture size of a padding table; the block-table columns
#: and the DFlash dummy rows, 2-3 s each on an idle machine): the slow tier checks them
SLOW_SLICES = (
    "cudagraph_padding_is_the_smallest_capture_size",
    "cudagraph_uniform_decode_padding_is_a_multiple_of_q",
    "decode_rows__BaseMambaAttentionMetadataBuilder_decode_is_flush_d",
    "kernel_block_table_columns_fit",
    "v2_block_table_columns_fit",
    "dflash_dummy_run_query_rows_fit_input_ids",
    "chunked_local_rows_fit_paged_kv_indptr",
)


#: the fast tier checks every FAST_EVERY-th obligation's small slice (every spec file keeps some:
#: the obligations are listed file by file), at most one per family (:func:`_family`); the slow tier
#: checks all of them
FAST_EVERY = 4


def _family(ob: Obligation) -> tuple[str, str]:
    """The spec file and the generated family of ``ob`` (``backend_graph_rows_fit__QwenSparseAttnBackend``
    of ``backend_graph_rows_fit__QwenSparseAttnBackend__graph_seq_lens__dim0``: one claim over the
    buffers of one class, whose small slices take the same path), or its own name."""
    head, _, rest = ob.name.partition("__")
    return os.path.basename(ob.file), head + ("__" + rest.split("_")[0] if rest else "")


def _fast_slices(obligations: list[Obligation]) -> set[str]:
    """The names of the obligations the fast tier checks (every FAST_EVERY-th, one per family)."""
    fast: set[str] = set()
    families: set[tuple[str, str]] = set()
    for k, ob in enumerate(obligations):
        if ob.name.startswith(SLOW_SLICES) or k % FAST_EVERY or _family(ob) in families:
            continue
        families.add(_family(ob))
        fast.add(ob.name)
    return fast


@pytest.mark.parametrize(
    "ob",
    [
        pytest.param(ob, id=ob.name) if ob.name in fast else pytest.param(ob, marks=pytest.mark.slow, id=ob.name)
        for obs in [_obligations()]
        for fast in [_fast_slices(obs)]
        for ob in obs
    ],
)
def test_oracle_agrees_small_slice(ob):
    _check(ob, budget=3_000, pins=_fast_pins(ob))


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.parametrize("ob", _obligations(), ids=lambda ob: ob.name)
def test_oracle_agrees_wide_slice(ob):
    _check(ob, budget=300_000)
