"""`capproof check-config`: corpus deployments as `vllm serve` lines, per vLLM version; bad input."""

import json

import pytest
from click.testing import CliRunner

from capproof.engines.checkconfig import CheckError, parse_engine
from capproof.cli import main
from capproof.engines.vllm.serve import ServeFlagError, human_readable_int, parse_serve_args

GLM_1M_DCP2 = ["vllm", "serve", "zai-org/GLM-5.2", "-tp", "8", "-dcp", "2", "--max-model-len", "1M", "--block-size", "64",
               "--kv-cache-dtype", "fp8_ds_mla", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 5}']
GLM_350K = ["vllm", "serve", "zai-org/GLM-5.2-FP8", "--max-model-len", "350k", "--block-size", "64",
            "--kv-cache-dtype", "fp8_ds_mla", "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}',
            "--trust-remote-code", "--gpu-memory-utilization", "0.9"]
DCP4_480K = ["vllm", "serve", "m", "-dcp", "4", "--max-model-len", "480000", "--block-size", "64",
             "--kv-cache-dtype", "fp8_ds_mla", "--max-num-seqs", "12", "--max-num-batched-tokens", "80",
             "-sc", '{"num_speculative_tokens": 5}']


def check(*args):
    return CliRunner().invoke(main, ["check-config", *args])


@pytest.mark.parametrize("engine, argv, expected", [
    # vllm-dsa-ebt-128align (#46074): vLLM 0.23.0, 350000 tokens, block 64, dcp 1 -> 5469 vs 5470
    ("vllm==0.23.0", GLM_350K, "W_buf=5469, W_bt=5470"),
    # fork PR: 480,000 tokens, dcp 4 -> 1875 vs 1876
    ("vllm==0.23.0", DCP4_480K, "W_buf=1875, W_bt=1876"),
    # vllm-dsa-ebt-dcp-uniformtype (#50825): after #50302 (0.27.0), before #50823 -> 8192 vs 16384
    ("vllm==0.27.0", GLM_1M_DCP2, "W_buf=8192, W_bt=16384"),
])
def test_buggy_versions_fail_with_reported_numbers(engine, argv, expected):
    result = check("--engine", engine, "--", *argv)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("will fail")
    assert expected in result.output


@pytest.mark.parametrize("engine", ["vllm", "vllm==0.33.0", "vllm==0.28.0"])
@pytest.mark.parametrize("argv", [GLM_1M_DCP2, GLM_350K, DCP4_480K])
def test_fixed_versions_are_safe(engine, argv):
    result = check("--engine", engine, "--", *argv)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("safe")
    assert "ebt_width_matches_runner_after_50823" in result.output


def test_a4_smallest_triggering_batch_is_shown_and_bounded_by_max_num_seqs():
    result = check("--engine", "vllm==0.23.0", "--", *GLM_350K)
    assert ("smallest batch that raises (variable-length flatten copy): num_decodes=1, min_decode_len=1, "
            "max_decode_len=1, num_decode_tokens=2") in result.output
    assert "smallest batch that corrupts silently (uniform Triton copy): num_decodes=1" in result.output


def test_pre_39324_trtllm_alignment_fails_for_kimi_numbers():
    # vllm-trtllm-mla-blocknum-align: Kimi K2.5, L=9416, bs=32 -> block_num 295
    result = check("--engine", "vllm==0.20.0", "--", "vllm", "serve", "kimi", "--max-model-len", "9416", "--block-size", "32")
    assert result.exit_code == 1, result.output
    assert "block_num=295" in result.output


def test_pin_outside_domain_is_not_applicable_not_safe():
    result = check("--", "vllm", "serve", "m", "--max-model-len", "4096", "--block-size", "48")
    assert "n/a" in result.output and "block_size=48 outside" in result.output


@pytest.mark.parametrize("argv, message", [
    (["--max-model-len", "1x"], "not an integer"),
    (["--max-model-len", "1.5M"], "decimals are not allowed"),
    (["--frobnicate", "3"], "unknown vllm serve flag '--frobnicate'"),
    (["-sc", '{"num_speculative_tokens": 5'], "malformed JSON"),
    (["-sc", '{"num_speculative_tokens": "five"}'], "num_speculative_tokens must be an integer"),
    (["--block-size"], "--block-size needs a value"),
    (["--kv-cache-dtype", "fp9"], "not a vLLM 0.33.0 cache dtype"),
    (["-tp", "0"], "must be >= 1"),
])
def test_bad_flags_one_line_exit_2(argv, message):
    result = check("--", *argv)
    assert result.exit_code == 2
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], result.output


@pytest.mark.parametrize("engine", ["sglang", "vllm==banana", "vllm==0.5.0", "vllm==1.0.0"])
def test_bad_engine_exit_2(engine):
    result = check("--engine", engine, "--", "--max-model-len", "1000")
    assert result.exit_code == 2 and "error: --engine" in result.output


def test_human_readable_ints_match_vllm_doc_examples():
    assert human_readable_int("f", "1k") == 1000
    assert human_readable_int("f", "1K") == 1024
    assert human_readable_int("f", "25.6k") == 25600
    assert human_readable_int("f", "350k") == 350000
    assert human_readable_int("f", "1M") == 1048576
    assert human_readable_int("f", "1m") == 1000000


def test_flag_forms():
    cfg = parse_serve_args(["--max_model_len=350k", "--speculative-config.num_speculative_tokens", "4",
                            "--cudagraph-capture-sizes", "1", "2", "4", "--max-num-seqs", "12", "--enforce-eager",
                            "--no-enable-prefix-caching", "--port", "8001", "-tp=8"])
    assert (cfg.max_model_len, cfg.num_speculative_tokens, cfg.cudagraph_capture_sizes, cfg.max_num_seqs, cfg.tp) == (
        350000, 4, [1, 2, 4], 12, 8)
    assert "--port" in cfg.ignored and "--enforce-eager" in cfg.ignored
    cfg = parse_serve_args(["-cc", json.dumps({"cudagraph_capture_sizes": [8, 4], "max_cudagraph_capture_size": 8})])
    assert cfg.cudagraph_capture_sizes == [4, 8] and cfg.max_cudagraph_capture_size == 8
    with pytest.raises(ServeFlagError, match="mutually exclusive"):
        parse_serve_args(["--cudagraph-capture-sizes", "4", "-cc", '{"cudagraph_capture_sizes": [8]}'])


def test_model_config_pins_and_errors(tmp_path):
    good = tmp_path / "config.json"
    good.write_text(json.dumps({"index_topk": 2048, "n_routed_experts": 256, "num_experts_per_tok": 8,
                                "hidden_size": 7168, "max_position_embeddings": 163840}))
    result = check("--model-config", str(good), "--", "--block-size", "64")
    assert result.exit_code == 0, result.output
    assert "max_model_len=163840" in result.output.splitlines()[0]  # max_position_embeddings, vLLM's default
    bad = tmp_path / "bad.json"
    bad.write_text('{"index_topk": -1}')
    result = check("--model-config", str(bad), "--", "--block-size", "64")
    assert result.exit_code == 2 and "index_topk must be a positive integer" in result.output
    assert parse_engine("vllm") == ("vllm", "0.33.0")
    with pytest.raises(CheckError):
        parse_engine("vllm==0.1")


def test_moe_routing_obligation_needs_and_uses_the_model_config(tmp_path):
    """The sorted_token_ids proof is about a model's expert count: n/a without --model-config,
    proved for every routing with DeepSeek-V3's public n_routed_experts = 256."""
    argv = ["vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "--max-model-len", "163840", "--block-size", "64"]
    without = check("--", *argv)
    assert "vllm_sorted_ids_fit_every_routing [moe-align-capacity]: needs --model-config for num_experts" in without.output
    config = tmp_path / "config.json"
    config.write_text('{"n_routed_experts": 256, "num_experts_per_tok": 8, "index_topk": 2048}')
    with_model = check("--model-config", str(config), "--", *argv)
    assert with_model.exit_code == 0, with_model.output
    assert "safe    spec/moe_align.py::vllm_sorted_ids_fit_every_routing" in with_model.output


def test_flag_outside_every_domain_is_undecided_not_safe():
    """dcp 16 lies outside the block-table obligations' domains: nothing was proved for them, so
    the answer is 'undecided' (exit 2), although vLLM 0.27.0 does fail there (W_buf 1024 vs 16384)."""
    result = check("--engine", "vllm==0.27.0", "--", "vllm", "serve", "m", "-tp", "16", "-dcp", "16",
                   "--max-model-len", "1M", "--block-size", "64", "--kv-cache-dtype", "fp8_ds_mla")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided")
    assert "not checked: dcp=16 outside {1, 2, 4, 8}" in result.output


def test_batch_limits_from_flags_become_assumptions():
    """--max-num-seqs / --max-num-batched-tokens bound the symbolic batch (no error verdicts)."""
    result = check("--engine", "vllm==0.26.0", "--", "vllm", "serve", "m", "--max-model-len", "350000",
                   "--max-num-seqs", "256", "--max-num-batched-tokens", "8192", "--kv-cache-dtype", "fp8_ds_mla",
                   "--block-size", "64", "--spec-tokens", "2")
    assert result.exit_code == 1, result.output
    assert "ERROR" not in result.output and "KeyError" not in result.output
    assert "smallest batch that raises (variable-length flatten copy): num_decodes=1" in result.output


ASCEND_DCP4_MTP5 = ["vllm", "serve", "glm", "-dcp", "4", "--max-num-seqs", "12", "--max-num-batched-tokens", "80",
                    "-sc", '{"num_speculative_tokens": 5}']


def test_ascend_dcp4_mtp5_12_requests_fails_before_the_fix():
    """vllm-ascend-mtp-slot-mapping-capacity: the 104-entry buffer (80 + 2 * 12); the smallest
    overflow is 105, and 11 full MTP decodes give the reported 110."""
    result = check("--engine", "vllm-ascend==0.25.0", "--", *ASCEND_DCP4_MTP5)
    assert result.exit_code == 1, result.output
    assert "slot_mapping_fits_before_14024" in result.output and "demand=105, capacity=104" in result.output
    assert "every request a full MTP decode: num_reqs=11" in result.output and "(demand=110, capacity=104)" in result.output


def test_ascend_dcp4_mtp5_12_requests_safe_after_the_fix():
    result = check("--engine", "vllm-ascend==0.26.0", "--", *ASCEND_DCP4_MTP5)
    assert result.exit_code == 0, result.output
    assert "safe    spec/per_batch_buffers.py::slot_mapping_fits_14024" in result.output


def test_ascend_needs_a_version():
    result = check("--engine", "vllm-ascend", "--", *ASCEND_DCP4_MTP5)
    assert result.exit_code == 2 and "give the vLLM-Ascend release" in result.output
