"""Reported numbers of Families C and E under pins, and one test per trigger witness.

Values from ../shared/corpus/cases.md: C1 sglang-nsa-dsa-page-table-specdec (sgl-project/sglang
#18780, #18980, #19016, #29379), C2 vllm-specdec-arange-query-start-loc (vllm-project/vllm-ascend
#16316), C3 vllm-ascend-mtp-slot-mapping-capacity (vllm-project/vllm-ascend#14024, #14114), C5
vllm-gdn-num-accepted-minus-one, C6 trtllm-cudagraph-bs-vs-buffers (NVIDIA/TensorRT-LLM#10688),
E4 vllm-topk-indices-buffer-mtp-layout (vllm-project/vllm#47238).
"""

import pytest
from conftest import assert_counterexample, assert_proved, obligation_named, prove

from capproof.prover import replay
from models.vllm.indexer_buffers import native_decode_view_rows, padded_decode_rows

G = "spec/specdec_graphs.py"
P = "spec/per_batch_buffers.py"
T = "spec/vllm_0_33_today.py"
EAGLE = dict(speculative_num_steps=1, speculative_eagle_topk=1, page_size=1)


def witness(result, name):
    found = [w for w in result.witnesses if w.name == name]
    assert found, [w.name for w in result.witnesses]
    return found[0]


# C1 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("context_len, draft, src", [(163840, 2, 163842), (163840, 3, 163843), (202752, 2, 202754)])
def test_c1_round0_request_at_context_len_gives_reported_widths(context_len, draft, src):
    r = prove(G, "page_table_copy_round0", context_len=context_len, speculative_num_draft_tokens=draft, **EAGLE)
    # smallest failing batch: one request one token past context_len - draft
    assert_counterexample(r, dst_cols=context_len, src_cols=context_len + 1)
    assert r.counterexample.params["seq_lens"] == [context_len - draft + 1]
    w = witness(r, "a request at context_len")
    assert w.found and w.values == {"dst_cols": context_len, "src_cols": src}
    assert w.params["seq_lens"] == [context_len] and w.params["num_reqs"] == 1


@pytest.mark.parametrize("draft", [2, 3, 4])
def test_c1_round1_still_fails_90006_vs_90007(draft):
    r = prove(G, "page_table_copy_round1", context_len=90006 - draft, speculative_num_draft_tokens=draft, **EAGLE)
    assert_counterexample(r, dst_cols=90006, src_cols=90007)
    assert r.counterexample.params["seq_lens"] == [90006 - draft + 1]  # one token past context_len
    w = witness(r, "no request past context_len")
    assert not w.found  # round 1 fixed every batch within context_len


def test_c1_round2_proved_at_reported_config():
    assert_proved(prove(G, "page_table_copy_round2", context_len=163840, speculative_num_draft_tokens=2, **EAGLE))


# C2 ------------------------------------------------------------------------------------------


def test_c2_ascend_saturated_batch_needs_241_of_240():
    r = prove(
        G,
        "arange_covers_token_query_start_loc_before_16316",
        max_num_seqs=60,
        max_num_batched_tokens=240,
        num_speculative_tokens=3,
    )
    assert_counterexample(r, demand=241, capacity=240)
    assert r.counterexample.params["decode_lens"] == [4] * 60


def test_c2_short_only_when_mnbt_exceeds_max_num_seqs():
    assert_proved(
        prove(G, "arange_covers_token_query_start_loc_before_16316", max_num_seqs=60, max_num_batched_tokens=60)
    )


def test_c2_fixed_and_0_33_request_slices_proved():
    assert_proved(
        prove(
            G,
            "arange_covers_token_query_start_loc_16316",
            max_num_seqs=60,
            max_num_batched_tokens=240,
            num_speculative_tokens=3,
        )
    )
    r = prove(T, "proposer_arange_covers_request_query_start_loc")
    assert_proved(r)
    assert r.assumptions_used == ["num_reqs <= max_num_seqs"]


# C3 ------------------------------------------------------------------------------------------

C3_PINS = dict(dcp=4, num_speculative_tokens=5, max_num_reqs=12, max_num_batched_tokens=80)


def test_c3_104_entry_buffer_and_the_110_slot_batch():
    r = prove(P, "slot_mapping_fits_before_14024", **C3_PINS)
    assert_counterexample(r, capacity=104, demand=105)  # smallest overflow
    w = witness(r, "every request a full MTP decode")
    assert w.found and w.values == {"demand": 110, "capacity": 104}
    assert w.params["query_lens"] == [6] * 11


def test_c3_mtp3_hides_the_bug():
    assert_proved(prove(P, "slot_mapping_fits_before_14024", num_speculative_tokens=3))


def test_c3_fixed_capacity_128_proved():
    r = prove(P, "slot_mapping_fits_14024", **C3_PINS)
    assert_proved(r)
    assert set(r.assumptions_used) >= {"num_reqs <= max_num_reqs", "sum of scheduled tokens <= max_num_batched_tokens"}


def test_c3_pair_8208_vs_8200_and_fixed_pair():
    r = prove(
        P,
        "slot_mapping_pair_equal_one_side_fixed",
        max_num_batched_tokens=8192,
        max_num_reqs=4,
        num_speculative_tokens=5,
    )
    assert_counterexample(r, block_table=8208, slot_mapping_group=8200)
    assert_proved(prove(P, "slot_mapping_pair_equal_both_fixed"))


# C5, C6 --------------------------------------------------------------------------------------


def test_c5_minus_one_column_and_fix():
    assert_counterexample(prove(P, "gdn_state_column_in_row", num_speculative_tokens=5), column=-1, last_column=5)
    assert_proved(prove(P, "gdn_state_column_in_row_fixed"))


def test_c6a_114_entries_vs_5():
    r = prove(G, "autodeploy_capture_fits_cu_seqlen_before_10687", max_batch_size=4, capture_batch_size=113)
    assert_counterexample(r, demand=114, capacity=5)
    assert_proved(prove(G, "autodeploy_capture_fits_cu_seqlen_fixed", max_batch_size=4))


def test_c6b_c6c_buggy_and_fixed():
    assert_counterexample(
        prove(G, "graph_tokens_fit_max_num_tokens_before_5076", max_num_tokens=8, max_batch_size=8, max_draft_len=3),
        demand=32,
        capacity=8,
    )
    assert_proved(prove(G, "graph_tokens_fit_max_num_tokens_fixed"))
    assert prove(P, "forward_fits_max_num_tokens_before_16101").verdict.value == "counterexample"
    assert_proved(prove(P, "forward_fits_max_num_tokens_16101"))


# E2, E4 --------------------------------------------------------------------------------------


def test_e2_bitmask_rows():
    assert_counterexample(prove(P, "bitmask_rows_equal_logits_rows_before_4456", num_reqs=10), bitmask_rows=10)
    assert_proved(prove(P, "bitmask_rows_equal_logits_rows_4456"))
    assert_counterexample(
        prove(
            P,
            "trtllm_bitmask_rows_equal_logits_rows_before_15023",
            runtime_draft_len=0,
            max_draft_len=3,
            num_generation_requests=2,
        ),
        bitmask_rows=8,
        logits_rows=2,
    )
    assert_proved(prove(P, "trtllm_bitmask_rows_equal_logits_rows_15023"))


@pytest.mark.parametrize("k, j", [(2, 0), (3, 1), (5, 3)])
def test_e4_reader_row_j_needs_writer_row_j_times_1_plus_k_plus_k(k, j):
    params = {
        "j": j,
        "num_speculative_tokens": k,
        "max_num_batched_tokens": 8192,
        "num_reqs": j + 1,
        "query_lens": [1 + k] * (j + 1),
    }
    holds, values, failed = replay(obligation_named(P, "mtp_reader_row_is_last_token_before_47238"), params)
    assert not failed and not holds and values == {"source_row": j, "needed_row": j * (1 + k) + k}
    holds, values, failed = replay(obligation_named(P, "mtp_reader_row_is_last_token_47238"), params)
    assert not failed and holds and values["source_row"] == j * (1 + k) + k


def test_e4_fixed_proved_for_k3():
    r = prove(P, "mtp_reader_row_is_last_token_47238", num_speculative_tokens=3)
    assert_proved(r)
    # for every batch size, not only the declared 64 requests: the induction over the batch rests
    # on query_start's invariant (the running offset is at most the tokens seen)
    assert r.encoding == "all batch sizes", r.encoding_note


# vLLM 0.33.0 today ---------------------------------------------------------------------------


def test_padded_rows_sum_equals_engine_product():
    for n in range(0, 9):
        for m in range(0, 5):
            assert padded_decode_rows(n, m, 8) == native_decode_view_rows(n, m) == n * m


@pytest.mark.slow
@pytest.mark.sweep
def test_padded_decode_rows_need_the_uniform_split():
    r = prove(T, "padded_decode_rows_fit_without_uniform_split")
    assert_counterexample(r, padded_rows=4, decode_seq_lens_rows=3)
    assert r.counterexample.params == {
        "max_num_seqs": 2,
        "max_num_batched_tokens": 3,
        "num_speculative_tokens": 1,
        "num_reqs": 2,
        "decode_lens": [1, 2],
    }
    assert not witness(r, "uniform decode lens (requires_padding False)").found


@pytest.mark.slow
@pytest.mark.sweep
def test_padded_decode_rows_counterexample_at_a_decode_instance_config():
    """max_num_seqs 64, mnbt 128, MTP 3: 33 decodes (one with 4 tokens) pad to 132 rows > 128."""
    r = prove(
        T,
        "padded_decode_rows_fit_without_uniform_split",
        max_num_seqs=64,
        max_num_batched_tokens=128,
        num_speculative_tokens=3,
    )
    assert_counterexample(r, decode_seq_lens_rows=128)
    p = r.counterexample.params
    assert p["num_reqs"] * max(p["decode_lens"]) > 128 >= sum(p["decode_lens"])


@pytest.mark.slow
@pytest.mark.sweep
def test_padded_decode_rows_fit_on_0_33_and_rest_on_budget_and_padding():
    r = prove(T, "padded_decode_rows_fit_0_33")
    assert_proved(r)
    assert "sum of scheduled tokens <= max_num_batched_tokens" in r.assumptions_used
    assert "zero-length requests only as uniform CUDA-graph padding" in r.assumptions_used


def test_cudagraph_sizes_fit_mnbt():
    r = prove(T, "cudagraph_default_sizes_fit_mnbt")
    assert_proved(r)
    assert "size is a default capture size" in r.assumptions_used
    r = prove(T, "cudagraph_padded_tokens_fit_mnbt")
    assert_proved(r)
    # rounded <= max_cudagraph_capture_size, itself a default size, hence <= mnbt
    assert {"max_size is a default capture size", "the rounded size is kept (<= max_cudagraph_capture_size)"} <= set(
        r.assumptions_used
    )
    assert_proved(prove(T, "indexer_arange_buffer_covers_decode_slices"))


# obligations for functions no obligation called, and two-sided claims --


# slow (3.4 s of CPU: 16 cases of a shipped obligation, which make verify proves); the padding tests below keep it fast
@pytest.mark.slow
def test_cudagraph_padding_is_the_smallest_capture_size_on_every_deployment():
    r = prove(T, "cudagraph_padding_is_the_smallest_capture_size")
    assert_proved(r)
    assert r.cases == 16  # 2 max_num_seqs x 4 K x 2 default ceilings


def test_cudagraph_uniform_decode_padding_is_a_multiple_of_q_after_the_rounding():
    assert_proved(prove(T, "cudagraph_uniform_decode_padding_is_a_multiple_of_q"))


def test_cudagraph_uniform_decode_padding_before_28207_five_requests_of_three_tokens_pad_to_16():
    """Unrounded default list of 40 requests, K = 2: 5 requests x 3 tokens = 15 pad to 16 (vLLM
     0.33.0's own _set_cudagraph_sizes and _compute_bs_to_padded_graph_size give the same, run once
    : tests/test_real_engine.py::test_uniform_decode_padding_before_28207_on_vllm)."""
    r = prove(T, "cudagraph_uniform_decode_padding_unrounded_before_28207")
    assert_counterexample(r, padded_tokens=16, query_len=3, num_reqs=5, max_cudagraph_capture_size=240)
    holds, values, _ = replay(
        obligation_named(T, "cudagraph_uniform_decode_padding_unrounded_before_28207"), r.counterexample.params
    )
    assert not holds and values["padded_tokens"] == 16


def test_gdn_exact_column_and_mtp_off_slot_mapping():
    assert_proved(prove(P, "gdn_state_column_is_the_last_accepted_token_fixed"))
    r = prove(P, "slot_mapping_mtp_off_is_the_token_budget_14024")
    assert_proved(r)
    assert "sum of scheduled tokens <= max_num_batched_tokens" in r.assumptions_used


def test_prefill_workspace_at_the_256k_step_is_vllms():
    r = prove("spec/vllm_indexer_prefill.py", "prefill_workspace_at_the_256k_step")
    assert_proved(r)
    assert r.cases == 2


def test_the_decode_batch_bound_is_the_per_request_bound():
    """``DECODE_BATCH_FACTS``'s per-request bound computes ``uniform_decode_query_len`` once per
    call: on ints it is every request's ``d <= 1 + num_speculative_tokens``, on a
    plain list as on a padded batch (proofs/ show the symbolic side unchanged)."""
    from capproof.arith import Padded
    from models.vllm.spec_decode import uniform_decode_query_len
    from spec._batches import DECODE_BATCH_FACTS

    fits = DECODE_BATCH_FACTS["decode length <= 1 + num_speculative_tokens"]
    for k in range(1, 8):
        for lens in ([1], [1 + k], [2 + k], [1] * 63 + [1 + k], [1 + k] * 63 + [2 + k], [2 + k] + [1] * 63):
            expected = all(d <= uniform_decode_query_len(k) for d in lens)
            assert fits(lens, k) is expected
            assert fits(Padded(tuple(lens) + (0,) * (64 - len(lens)), len(lens), 0, 1, 8), k) is expected
