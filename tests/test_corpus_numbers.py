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
    r = prove(A, "ebt_width_matches_runner_before_50823", max_model_len=1048576, block_size=64, dcp=2, kernel_block_size=64)
    assert_counterexample(r, W_buf=8192, W_bt=16384)


def test_dcp_uniformtype_needs_dcp_above_one():
    assert_proved(prove(A, "ebt_width_matches_runner_before_50823", max_model_len=1048576, block_size=64, dcp=1, kernel_block_size=64))


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
