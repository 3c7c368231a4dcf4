"""Obligations on the indexer prefill splitter, the MoE align closed forms and the
indexer's decode split (docs/soundness.md): each is proved on the models, and each side of each
two-sided claim fails on a model broken on that side (the broken model is the real one with its
inputs or output altered, not a rewrite), so the obligation kills such a mutant by its verdict."""

from __future__ import annotations

import pytest
from conftest import assert_proved, obligation_named

from capproof import Options, Verdict
from capproof.prover import prove_obligation
from models import moe_align as m_moe
from models.vllm import indexer_buffers as m_ib
from models.vllm import indexer_prefill as m_pf

PREFILL = "spec/vllm_indexer_prefill.py"
MOE = "spec/moe_align.py"
TODAY = "spec/vllm_0_33_today.py"

NEW = [
    (PREFILL, "indexer_prefill_chunks_cover_every_row_within_budget"),
    (PREFILL, "indexer_prefill_largest_chunk_is_a_chunk_within_the_workspace"),
    (PREFILL, "first_revision_chunks_tile_the_requests"),
    (PREFILL, "first_revision_overflows_at_the_corpus_example"),
    (MOE, "moe_align_demand_bound_is_tight"),
    (MOE, "vllm_sorted_ids_small_numel_min_only_shrinks"),
    (MOE, "moe_align_last_writes_are_block_aligned_runs"),
    (TODAY, "uniform_decode_split_is_the_leading_uniform_run"),
]


def test_new_obligations_are_untagged():
    # pinned budgets / enumerated batches: not applied by check-config (an earlier lesson)
    for spec, name in NEW:
        ob = obligation_named(spec, name)
        assert ob.engine is None and ob.versions is None, name


# re-proving shipped obligations is `make verify`'s job (proofs/ is checked there): slow tier
@pytest.mark.slow
@pytest.mark.parametrize("spec, name", NEW, ids=[n for _, n in NEW])
def test_new_obligation_is_proved(spec, name):
    assert_proved(prove_obligation(obligation_named(spec, name), Options(density="off")))


def _broken(monkeypatch, spec, name, model_name, replacement):
    """Decide ``name`` with ``model_name`` replaced in its spec module by ``replacement``."""
    ob = obligation_named(spec, name)
    with monkeypatch.context() as patched:  # one broken model at a time
        patched.setitem(ob.func.__globals__, model_name, replacement)
        result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is Verdict.COUNTEREXAMPLE, f"{name}: {result.verdict}: {result.message}"
    return result.counterexample.values


SPLIT = m_pf.split_indexer_prefill_chunks


@pytest.mark.parametrize(
    "broken, count",
    [
        # the last piece dropped: a query row (or a request) is never scored
        # (each side 1.5-2 s: the fast tier keeps the budget side, the others run in the slow tier)
        pytest.param(
            lambda s, q, ws, mlb, off=0: SPLIT(s, q, ws, mlb, off)[:-1], "batches_not_covered", marks=pytest.mark.slow
        ),
        # the logits budget ignored: a chunk's M x N logits past it
        (lambda s, q, ws, mlb, off=0: SPLIT(s, q, ws, 4 * 10**6, off), "batches_over_budget"),
        # a smaller workspace than given: the greedy stops before the constraint binds
        pytest.param(
            lambda s, q, ws, mlb, off=0: SPLIT(s, q, max(ws - 1, 1), mlb, off),
            "batches_not_maximal",
            marks=pytest.mark.slow,
        ),
        # a smaller logits budget than given: pieces smaller than the budget allows (the same side
        # as the smaller workspace above: slow tier)
        pytest.param(
            lambda s, q, ws, mlb, off=0: SPLIT(s, q, ws, max(mlb - 4, 4), off),
            "batches_not_maximal",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_splitter_obligation_fails_on_each_side(monkeypatch, broken, count):
    values = _broken(
        monkeypatch,
        PREFILL,
        "indexer_prefill_chunks_cover_every_row_within_budget",
        "split_indexer_prefill_chunks",
        broken,
    )
    assert values[count] > 0, values


def test_largest_chunk_obligation_fails_below_and_above(monkeypatch):
    below = _broken(
        monkeypatch,
        PREFILL,
        "indexer_prefill_largest_chunk_is_a_chunk_within_the_workspace",
        "chunks_fit_workspace",
        lambda *a: m_pf.chunks_fit_workspace(*a) - 1,
    )
    assert below["batches_not_the_largest_chunk"] > 0, below
    above = _broken(
        monkeypatch,
        PREFILL,
        "indexer_prefill_largest_chunk_is_a_chunk_within_the_workspace",
        "chunks_fit_workspace_any_request",
        lambda *a: m_pf.chunks_fit_workspace_any_request(*a) + 100,
    )
    assert above["batches_over_the_workspace"] > 0 and above["batches_not_the_largest_chunk"] > 0, above


def test_first_revision_obligations_fail_when_fixed_or_untiled(monkeypatch):
    # the overflow is the first revision's: a splitter that counts the request it splits at has none
    fixed = _broken(
        monkeypatch,
        PREFILL,
        "first_revision_overflows_at_the_corpus_example",
        "split_prefill_chunks_first_revision",
        lambda s, b: [(0, 1), (1, 2), (2, 3)],
    )
    assert fixed["largest_chunk_tokens"] == 9, fixed
    untiled = _broken(
        monkeypatch,
        PREFILL,
        "first_revision_chunks_tile_the_requests",
        "split_prefill_chunks_first_revision",
        lambda s, b: m_pf.split_prefill_chunks_first_revision(s, b)[1:],
    )
    assert untiled["batches_not_tiled"] > 0, untiled
    always_fails = _broken(
        monkeypatch, PREFILL, "first_revision_chunks_tile_the_requests", "first_revision_chunks_fit", lambda *a: False
    )
    assert always_fails["batches_wrong_verdict"] > 0, always_fails


def test_moe_obligations_fail_on_a_loose_or_low_bound(monkeypatch):
    loose = _broken(
        monkeypatch,
        MOE,
        "moe_align_demand_bound_is_tight",
        "moe_align_demand_bound",
        lambda numel, active, bs: m_moe.moe_align_demand_bound(numel, active, bs) + 1,
    )
    assert loose["worst_routings_not_attaining_it"] > 0, loose
    low = _broken(
        monkeypatch,
        MOE,
        "moe_align_demand_bound_is_tight",
        "moe_align_demand_bound",
        lambda numel, active, bs: numel + active * (bs - 1) - (bs - 1),
    )
    assert low["routings_over_the_bound"] > 0, low
    _broken(
        monkeypatch,
        MOE,
        "vllm_sorted_ids_small_numel_min_only_shrinks",
        "vllm_sorted_ids_capacity_before_small_numel_min",
        lambda numel, e, bs, pad: m_moe.vllm_sorted_ids_capacity(numel, e, bs, pad),
    )
    shifted = _broken(
        monkeypatch,
        MOE,
        "moe_align_last_writes_are_block_aligned_runs",
        "max_write_position",
        lambda counts, e, bs: m_moe.max_write_position(counts, e, bs) + 1,
    )
    assert shifted["misplaced_runs"] > 0, shifted


@pytest.mark.slow  # 2-3 s of mutants; the splitter, largest-chunk and MoE mutants stay fast
def test_decode_split_obligation_fails_on_a_short_run_or_a_wrong_flag(monkeypatch):
    def one_short(ql, n, k):
        decodes, longest = m_ib.uniform_decode_split(ql, n, k)
        return max(decodes - 1, 0), longest

    short = _broken(
        monkeypatch, TODAY, "uniform_decode_split_is_the_leading_uniform_run", "uniform_decode_split", one_short
    )
    assert short["batches_wrong_split"] > 0, short
    flag = _broken(
        monkeypatch,
        TODAY,
        "uniform_decode_split_is_the_leading_uniform_run",
        "has_padding_request",
        lambda ql, n: m_ib.has_padding_request(ql, n - 1),
    )
    assert flag["batches_wrong_padding_request"] > 0, flag
