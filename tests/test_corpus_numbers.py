"""The reported numbers of the corpus come out of the obligations under pins.

Values from ../shared/corpus/cases.md: vllm-dsa-ebt-128align (vllm-project/vllm#46074, the
local-inference-lab fork PR), vllm-dsa-ebt-dcp-uniformtype (vllm-project/vllm#50825),
vllm-trtllm-mla-blocknum-align (vllm-project/vllm#39324, flashinfer-ai/flashinfer#3915).
"""

import pytest
from conftest import assert_counterexample, assert_proved, prove

A = "spec/vllm_dsa_indexer.py"
B = "spec/vllm_block_table.py"


@pytest.mark.parametrize(
    "max_model_len, dcp, w_buf, w_bt",
    [
        (350000, 1, 5469, 5470),  # GLM-5.2-FP8, reported
        (325000, 1, 5079, 5080),  # crash reported, widths derived
        (200000, 1, 3125, 3126),  # 8xH200 TP8 MTP write-up
        (480000, 4, 1875, 1876),  # fork PR, dcp 4
    ],
)
def test_128align_reported_widths(max_model_len, dcp, w_buf, w_bt):
    r = prove(A, "ebt_width_matches_runner_before_50302", max_model_len=max_model_len, block_size=64, dcp=dcp)
    assert_counterexample(r, W_buf=w_buf, W_bt=w_bt)
    assert r.counterexample.params == {"max_model_len": max_model_len, "block_size": 64, "dcp": dcp}


@pytest.mark.parametrize("max_model_len", [300000, 230000])
def test_128align_reported_stable_lengths_are_proved(max_model_len):
    # Reported stable: even block counts, equal widths (4688 / 3594).
    assert_proved(prove(A, "ebt_width_matches_runner_before_50302", max_model_len=max_model_len, block_size=64, dcp=1))


def test_128align_fixed_by_50302_at_reported_config():
    assert_proved(prove(A, "ebt_width_matches_runner_after_50823", max_model_len=350000, block_size=64, dcp=1))


def test_dcp_uniformtype_reported_widths():
    r = prove(
        A, "ebt_width_matches_runner_before_50823", max_model_len=1048576, block_size=64, dcp=2, kernel_block_size=64
    )
    assert_counterexample(r, W_buf=8192, W_bt=16384)


def test_dcp_uniformtype_needs_dcp_above_one():
    assert_proved(
        prove(
            A,
            "ebt_width_matches_runner_before_50823",
            max_model_len=1048576,
            block_size=64,
            dcp=1,
            kernel_block_size=64,
        )
    )


@pytest.mark.parametrize("max_model_len, block_num", [(9416, 295), (1025, 33)])
def test_trtllm_block_num_not_multiple_of_4(max_model_len, block_num):
    r = prove(B, "trtllm_mla_block_num_aligned_before_39324", max_model_len=max_model_len, block_size=32, dcp=1)
    assert_counterexample(r, block_num=block_num)
    assert block_num % 4 != 0


def test_trtllm_block_num_after_39324_is_296():
    r = prove(B, "trtllm_mla_block_num_aligned_after_39324", max_model_len=9416, block_size=32, dcp=1)
    assert_proved(r)


def _witness(result, prefix):
    (w,) = [w for w in result.witnesses if w.name.startswith(prefix)]
    assert w.found, w.message
    return w.params


def test_indexer_copy_trigger_witnesses_at_350k():
    """A4: one static mismatch (5469 vs 5470), two behaviours by batch. The smallest raising batch
    is 1 decode padded to 2 tokens by the CUDA graph; a plain 1-token decode corrupts silently."""
    r = prove(A, "ebt_width_matches_runner_for_every_batch_before_50302", max_model_len=350000, dcp=1)
    assert_counterexample(r, W_buf=5469, W_bt=5470)
    raising = _witness(r, "raises")
    assert (raising["num_decodes"], raising["max_decode_len"], raising["num_decode_tokens"]) == (1, 1, 2)
    silent = _witness(r, "corrupts silently")
    assert silent["min_decode_len"] == silent["max_decode_len"]
    assert silent["num_decodes"] * silent["max_decode_len"] == silent["num_decode_tokens"]
    for w in r.witnesses:  # the config is held at the counterexample's
        assert (w.params["max_model_len"], w.params["dcp"]) == (350000, 1)
        assert w.values == {"W_buf": 5469, "W_bt": 5470}


K = "spec/vllm_kpool_tail.py"


@pytest.mark.parametrize("pos, column", [(4, 1), (15999, 3999), (499999, 124999)])
def test_kpool_tail_generic_kernel_columns(pos, column):
    """A7: the first out-of-range position is index_kpool * dcp = 4; a 16,000-token prefill chunk
    reaches column 3,999 and a 500K prompt column 124,999 of a one-column table."""
    r = prove(K, "generic_slot_mapping_reads_kpool_tail_table", pos=pos, dcp=1)
    assert_counterexample(r, column=column, columns=1)


def test_kpool_tail_ring_mapping_is_proved():
    assert_proved(prove(K, "ring_mapping_stays_in_own_block"))


N = "spec/vllm_indexer_prefill.py"


def test_prefill_single_request_fits_default_workspace():
    r = prove(N, "single_request_fits_prefill_workspace")
    assert_proved(r)
    assert "seq_len <= max_model_len + num_speculative_tokens (async-spec extend rows)" in r.assumptions_used


def test_prefill_first_revision_corpus_example():
    """N1 derived example: budget 10, seq_lens [6, 6, 9] -> chunks [6] and [6, 9] (sum 15)."""
    from models.vllm.indexer_prefill import first_revision_chunks_fit, split_prefill_chunks_first_revision

    chunks = split_prefill_chunks_first_revision([6, 6, 9], 10)
    assert chunks == [(0, 1), (1, 3)]
    assert [sum([6, 6, 9][a:b]) for a, b in chunks] == [6, 15]
    assert first_revision_chunks_fit(6, 6, 9, 10) is False


def test_prefill_oversized_single_request_is_admitted_whole():
    """Reference §5: seq [5000] with workspace 3500 is one chunk of 5000 rows (97 query slices)."""
    from models.vllm.indexer_prefill import split_indexer_prefill_chunks

    q = 97 * ((512 * 2**20 // 4) // 5000)  # enough queries for 97 slices
    chunks = split_indexer_prefill_chunks([5000], [q], 3500, 512 * 2**20)
    assert {c[0] for c in chunks} == {(0, 1)} and len(chunks) == 97


S = "spec/sglang_req_to_token.py"
_REF_EXAMPLE = dict(
    context_len=163840, page_size=64, speculative_num_steps=3, speculative_eagle_topk=4, speculative_num_draft_tokens=8
)


def test_sglang_hybrid_mamba_mirror_width_reference_example():
    """Reference §11.1 example: the main row width is 164927 (extra 1087), the hybrid-Mamba
    'mirror' gives 163852."""
    r = prove(S, "hybrid_mamba_width_mirrors_main_width", **_REF_EXAMPLE)
    assert_counterexample(r, W_hybrid_mamba=163852, W_req_to_token=164927)


def test_sglang_decode_alloc_vs_rows_reference_example():
    """Committed 163839 -> nxt 164864: fits the main row (164927), not the mirror (163852)."""
    pins = dict(_REF_EXAMPLE, kv_committed_len=163839, kv_allocated_len=163839)
    assert_counterexample(prove(S, "decode_alloc_fits_hybrid_mamba_row", **pins), nxt=164864, W_hybrid_mamba=163852)


def test_sglang_main_row_covers_page_64_reference_batch():
    pins = dict(_REF_EXAMPLE, kv_committed_len=163839, kv_allocated_len=163839)
    r = prove(S, "decode_alloc_fits_req_to_token_row", **pins)
    assert_proved(r)


def test_sglang_main_row_one_short_at_page_1_topk_4():
    """Finding (unconfirmed): at page 1 with topk > 1 the 4 + draft headroom misses the double
    reserve at the last decode step: nxt = context_len + 7 vs context_len + 6."""
    r = prove(
        S,
        "decode_alloc_fits_req_to_token_row",
        context_len=1024,
        page_size=1,
        speculative_eagle_topk=4,
        speculative_num_steps=1,
        speculative_num_draft_tokens=2,
    )
    assert_counterexample(r, nxt=1031, W_req_to_token=1030)
