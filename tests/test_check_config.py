"""`capproof check-config`: corpus deployments as `vllm serve` lines, per vLLM version; bad input."""

import json

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.engines.checkconfig import CheckError
from capproof.engines.registry import parse_engine
from capproof.engines.sglang.launch import parse_launch_args
from capproof.engines.vllm.deployment import v1_runner_possible
from capproof.engines.vllm.serve import ServeFlagError, human_readable_int, parse_serve_args

GLM_1M_DCP2 = [
    "vllm",
    "serve",
    "zai-org/GLM-5.2",
    "-tp",
    "8",
    "-dcp",
    "2",
    "--max-model-len",
    "1M",
    "--block-size",
    "64",
    "--kv-cache-dtype",
    "fp8_ds_mla",
    "--speculative-config",
    '{"method": "mtp", "num_speculative_tokens": 5}',
]
GLM_350K = [
    "vllm",
    "serve",
    "zai-org/GLM-5.2-FP8",
    "--max-model-len",
    "350k",
    "--block-size",
    "64",
    "--kv-cache-dtype",
    "fp8_ds_mla",
    "--speculative-config",
    '{"method":"mtp","num_speculative_tokens":3}',
    "--trust-remote-code",
    "--gpu-memory-utilization",
    "0.9",
]
DCP4_480K = [
    "vllm",
    "serve",
    "zai-org/GLM-5.2-FP8",
    "-tp",
    "8",  # vLLM refuses a -dcp that does not divide -tp
    "-dcp",
    "4",
    "--max-model-len",
    "480000",
    "--block-size",
    "64",
    "--kv-cache-dtype",
    "fp8_ds_mla",
    "--max-num-seqs",
    "12",
    "--max-num-batched-tokens",
    "80",
    "-sc",
    '{"method": "mtp", "num_speculative_tokens": 5}',
]


def check(*args):
    return CliRunner().invoke(main, ["check-config", *args])


@pytest.mark.parametrize(
    "engine, argv, expected",
    [
        # vllm-dsa-ebt-128align (#46074): vLLM 0.23.0, 350000 tokens, block 64, dcp 1 -> 5469 vs 5470
        ("vllm==0.23.0", GLM_350K, "W_buf=5469, W_bt=5470"),
        # fork PR: 480,000 tokens, dcp 4 -> 1875 vs 1876
        ("vllm==0.23.0", DCP4_480K, "W_buf=1875, W_bt=1876"),
        # vllm-dsa-ebt-dcp-uniformtype (#50825): after #50302 (0.27.0), before #50823 -> 8192 vs 16384
        ("vllm==0.27.0", GLM_1M_DCP2, "W_buf=8192, W_bt=16384"),
    ],
)
def test_buggy_versions_fail_with_reported_numbers(engine, argv, expected):
    result = check("--engine", engine, "--", *argv)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("will fail")
    assert expected in result.output


@pytest.mark.parametrize(
    "engine, argv",
    [
        ("vllm==0.28.0", GLM_1M_DCP2),
        ("vllm==0.28.0", GLM_350K),
        ("vllm==0.28.0", DCP4_480K),
        ("vllm==0.32.0", GLM_1M_DCP2),
        # the same obligations on the same lines as 0.28.0 above: slow tier
        pytest.param("vllm==0.32.0", GLM_350K, marks=pytest.mark.slow),
        pytest.param("vllm==0.32.0", DCP4_480K, marks=pytest.mark.slow),
    ],
)
def test_fixed_versions_are_safe(engine, argv):
    result = check("--engine", engine, "--", *argv)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("safe")
    assert "safe    spec/vllm_dsa_indexer.py::ebt_width_matches_runner_after_50823" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["vllm", "vllm==0.33.0"])
@pytest.mark.parametrize("argv", [GLM_1M_DCP2, GLM_350K])
def test_0_33_block_tables_proved_batch_buffers_at_default_limits(engine, argv):
    """On 0.33.0 the fix holds, and the batch-size generic MTP batch buffers are proved at vLLM's
    default max_num_seqs (256 or 1024 by GPU), the uniform-split chain by induction over the batch
    (every batch size), FlashInfer's page list on the aggregates (every batch size): `safe`."""
    result = check("--engine", engine, "--", *argv)
    assert result.exit_code == 0 and result.output.startswith("safe"), result.output
    assert "safe    spec/vllm_dsa_indexer.py::ebt_width_matches_runner_after_50823" in result.output
    arange = next(l for l in result.output.splitlines() if "proposer_arange_covers_request_query_start_loc" in l)
    assert (
        arange.startswith("  safe")
        and "for max_num_seqs in [256, 1024]" in arange
        and "batches of up to 1024 requests" in arange
    )
    split = next(l for l in result.output.splitlines() if "padded_decode_rows_fit_0_33" in l)
    assert (
        split.startswith("  safe")
        and "batches of up to 1024 requests" in split
        and split.endswith("[proved for all batch sizes]")
    )
    assert "by induction over the batch, for every batch size" in result.output.splitlines()[1]
    assert "BOUNDED" not in result.output


def test_a4_smallest_triggering_batch_is_shown_and_bounded_by_max_num_seqs():
    result = check("--engine", "vllm==0.23.0", "--", *GLM_350K)
    assert (
        'smallest batch for "raises (variable-length flatten copy)": num_decodes=1, min_decode_len=1, '
        "max_decode_len=1, num_decode_tokens=2"
    ) in result.output
    assert 'smallest batch for "corrupts silently (uniform Triton copy)": num_decodes=1' in result.output


#: The MLA fields of Kimi K2's config.json (moonshotai/Kimi-K2-Instruct: model_type kimi_k2, kv_lora_rank 512).
KIMI_MLA = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "kv_lora_rank": 512}


def test_pre_39324_trtllm_alignment_fails_for_kimi_numbers(tmp_path):
    # vllm-trtllm-mla-blocknum-align: Kimi K2.5, L=9416, bs=32 -> block_num 295
    (tmp_path / "config.json").write_text(json.dumps(KIMI_MLA))
    line = ["vllm", "serve", "kimi", "--max-model-len", "9416", "--block-size", "32"]
    result = check("--engine", "vllm==0.20.0", "--model-config", str(tmp_path), "--", *line)
    assert result.exit_code == 1, result.output
    assert "block_num=295" in result.output
    # the TRTLLM-gen MLA kernel is MLA models' only: without the config it is undecided, never "will fail"
    unknown = check("--engine", "vllm==0.20.0", "--", *line)
    assert unknown.exit_code == 2 and "give --model-config" in unknown.output, unknown.output


@pytest.mark.parametrize("version", ["0.21.0", "0.23.0", "0.26.0"])
def test_row_alignment_for_any_block_size_applies_to_mla_models_only(version, tmp_path):
    """#39324's ``128 // block_size`` misaligns rows at block size 48 on 0.21-0.26, in the TRTLLM-gen
    MLA kernel: a will-fail for an MLA model at --block-size 48, not applied for a dense model."""
    (tmp_path / "config.json").write_text(json.dumps(KIMI_MLA))
    line = ["vllm", "serve", "m", "--max-model-len", "32768", "--block-size", "48"]
    mla = check("--engine", f"vllm=={version}", "--model-config", str(tmp_path), "--", *line)
    assert mla.exit_code == 1 and "row_spans_128_tokens_39324_any_block_size" in mla.output, mla.output
    dense = check("--engine", f"vllm=={version}", "--", "vllm", "serve", "Qwen/Qwen3-8B", *line[3:])
    assert dense.exit_code != 1, dense.output
    assert "row_spans_128_tokens_39324_any_block_size" in dense.output
    assert "shows no MLA attention" in dense.output


@pytest.mark.slow
def test_pin_outside_domain_is_not_applicable_not_safe():
    result = check("--", "vllm", "serve", "m", "--max-model-len", "4096", "--block-size", "48")
    assert "n/a" in result.output and "block_size=48 outside" in result.output


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--max-model-len", "1x"], "not an integer"),
        (["--max-model-len", "1.5M"], "decimals are not allowed"),
        (["--frobnicate", "3"], "unknown vllm serve flag '--frobnicate'"),
        (["-sc", '{"num_speculative_tokens": 5'], "malformed JSON"),
        (["-sc", '{"num_speculative_tokens": "five"}'], "num_speculative_tokens must be an integer"),
        (["--block-size"], "--block-size needs a value"),
        (["--kv-cache-dtype", "fp9"], "not a vLLM 0.33.0 cache dtype"),
        (["-tp", "0"], "must be >= 1"),
    ],
)
def test_bad_flags_one_line_exit_4(argv, message):
    result = check("--", *argv)
    assert result.exit_code == 4
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], result.output


@pytest.mark.parametrize("engine", ["sglang==0.4.0", "vllm==banana", "vllm==0.5.0", "vllm==1.0.0"])
def test_bad_engine_exit_4(engine):
    result = check("--engine", engine, "--", "--max-model-len", "1000")
    assert result.exit_code == 4 and "error: --engine" in result.output


def test_human_readable_ints_match_vllm_doc_examples():
    assert human_readable_int("f", "1k") == 1000
    assert human_readable_int("f", "1K") == 1024
    assert human_readable_int("f", "25.6k") == 25600
    assert human_readable_int("f", "350k") == 350000
    assert human_readable_int("f", "1M") == 1048576
    assert human_readable_int("f", "1m") == 1000000


@pytest.mark.parametrize("text", ["16_384", " 16384 ", "+16384"])
def test_integer_flags_read_as_python_int_reads_them(text):
    """vLLM's ``human_readable_int`` and argparse's ``type=int`` fall back to Python's ``int``
    (vllm/utils/argparse_utils.py, 0.33.0), so ``--max-model-len 16_384`` is 16384 there and here."""
    assert parse_serve_args(["--max-model-len", text]).max_model_len == 16384
    assert parse_serve_args(["--max-num-seqs", text]).max_num_seqs == 16384
    assert (
        parse_launch_args(["--model-path", "m", "--max-running-requests", text]).values["max_running_requests"] == 16384
    )


@pytest.mark.parametrize(
    "env, args, v1",
    [
        ({}, ["--speculative-config", '{"method": "dflash", "num_speculative_tokens": 15}'], False),
        (
            {"VLLM_USE_V2_MODEL_RUNNER": "0"},
            ["--speculative-config", '{"method": "dflash", "num_speculative_tokens": 15}'],
            True,
        ),
        ({"VLLM_USE_V2_MODEL_RUNNER": "1"}, ["--enable-dbo"], False),
        ({}, ["--enable-dbo"], True),
        ({}, ["--distributed-executor-backend", "external_launcher", "-pp", "2"], True),
        ({}, ["--distributed-executor-backend", "external_launcher"], False),
        ({}, ["--speculative-config", '{"method": "suffix", "num_speculative_tokens": 4}'], True),
        (
            {},
            ["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 4, "parallel_drafting": true}'],
            True,
        ),
        (
            {},
            ["--speculative-config", '{"method": "dspark", "num_speculative_tokens": 4, "parallel_drafting": true}'],
            False,
        ),
    ],
)
def test_which_model_runner_a_line_may_run(env, args, v1):
    """vLLM 0.33.0 ``VllmConfig.use_v2_model_runner``: the variable decides when set; unset, V1 runs
    only for a feature the V2 runner lacks (``_get_v2_model_runner_unsupported_features``)."""
    cfg = parse_serve_args(args)
    cfg.env = env
    assert v1_runner_possible(cfg) is v1


def test_flag_forms():
    cfg = parse_serve_args(
        [
            "--max_model_len=350k",
            "--speculative-config.num_speculative_tokens",
            "4",
            "--cudagraph-capture-sizes",
            "1",
            "2",
            "4",
            "--max-num-seqs",
            "12",
            "--enforce-eager",
            "--no-enable-prefix-caching",
            "--port",
            "8001",
            "-tp=8",
        ]
    )
    assert (cfg.max_model_len, cfg.num_speculative_tokens, cfg.cudagraph_capture_sizes, cfg.max_num_seqs, cfg.tp) == (
        350000,
        4,
        [1, 2, 4],
        12,
        8,
    )
    assert "--port" in cfg.ignored and "--enforce-eager" in cfg.ignored
    cfg = parse_serve_args(["-cc", json.dumps({"cudagraph_capture_sizes": [8, 4], "max_cudagraph_capture_size": 8})])
    assert cfg.cudagraph_capture_sizes == [4, 8] and cfg.max_cudagraph_capture_size == 8
    with pytest.raises(ServeFlagError, match="mutually exclusive"):
        parse_serve_args(["--cudagraph-capture-sizes", "4", "-cc", '{"cudagraph_capture_sizes": [8]}'])


def test_model_config_pins_and_errors(tmp_path):
    good = tmp_path / "config.json"
    good.write_text(
        json.dumps(
            {
                "index_topk": 2048,
                "n_routed_experts": 256,
                "num_experts_per_tok": 8,
                "hidden_size": 7168,
                "max_position_embeddings": 163840,
            }
        )
    )
    result = check("--engine", "vllm==0.32.0", "--model-config", str(good), "--", "m", "--block-size", "64")
    assert result.exit_code == 0, result.output
    assert "max_model_len=163840" in result.output.splitlines()[0]  # max_position_embeddings, vLLM's default
    bad = tmp_path / "bad.json"
    bad.write_text('{"index_topk": -1}')
    result = check("--model-config", str(bad), "--", "m", "--block-size", "64")
    assert result.exit_code == 4 and "index_topk must be a positive integer" in result.output
    assert parse_engine("vllm") == ("vllm", "0.33.0")
    with pytest.raises(CheckError):
        parse_engine("vllm==0.1")


@pytest.mark.slow
def test_moe_routing_obligation_needs_and_uses_the_model_config(tmp_path):
    """The sorted_token_ids proof is about a model's expert count: n/a without --model-config,
    proved for every routing with DeepSeek-V3's public n_routed_experts = 256."""
    argv = ["vllm", "serve", "my-org/private-moe", "--max-model-len", "163840", "--block-size", "64"]
    without = check("--", *argv)
    assert (
        "NEEDS   spec/moe_align.py::vllm_sorted_ids_fit_every_routing [moe-align-capacity]: needs --model-config for num_experts"
        in without.output
    )
    assert without.exit_code == 2 and without.output.startswith("undecided")  # may apply: never "safe"
    config = tmp_path / "config.json"
    config.write_text('{"n_routed_experts": 256, "num_experts_per_tok": 8, "index_topk": 2048}')
    with_model = check("--engine", "vllm==0.32.0", "--model-config", str(config), "--", *argv)
    assert with_model.exit_code == 0, with_model.output
    assert "safe    spec/moe_align.py::vllm_sorted_ids_fit_every_routing" in with_model.output


def test_flag_outside_every_domain_is_undecided_not_safe():
    """dcp 16 lies outside the block-table obligations' domains: nothing was proved for them, so
    the answer is 'undecided' (exit 2), although vLLM 0.27.0 does fail there (W_buf 1024 vs 16384)."""
    result = check(
        "--engine",
        "vllm==0.27.0",
        "--",
        "vllm",
        "serve",
        "m",
        "-tp",
        "16",
        "-dcp",
        "16",
        "--max-model-len",
        "1M",
        "--block-size",
        "64",
        "--kv-cache-dtype",
        "fp8_ds_mla",
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided")
    assert "not checked: dcp=16 outside {1, 2, 4, 8}" in result.output


def test_batch_limits_from_flags_become_assumptions():
    """--max-num-seqs / --max-num-batched-tokens bound the symbolic batch (no error verdicts)."""
    result = check(
        "--engine",
        "vllm==0.26.0",
        "--",
        "vllm",
        "serve",
        "m",
        "--max-model-len",
        "350000",
        "--max-num-seqs",
        "256",
        "--max-num-batched-tokens",
        "8192",
        "--kv-cache-dtype",
        "fp8_ds_mla",
        "--block-size",
        "64",
        "--spec-tokens",
        "2",
    )
    assert result.exit_code == 1, result.output
    assert "ERROR" not in result.output and "KeyError" not in result.output
    assert 'smallest batch for "raises (variable-length flatten copy)": num_decodes=1' in result.output


ASCEND_DCP4_MTP5 = [
    "vllm",
    "serve",
    "glm",
    "-tp",
    "4",
    "-dcp",
    "4",
    "--max-num-seqs",
    "12",
    "--max-num-batched-tokens",
    "80",
    "-sc",
    '{"method": "mtp", "num_speculative_tokens": 5}',
]


def test_ascend_dcp4_mtp5_12_requests_fails_before_the_fix():
    """vllm-ascend-mtp-slot-mapping-capacity: the 104-entry buffer (80 + 2 * 12); the smallest
    overflow is 105, and 11 full MTP decodes give the reported 110."""
    result = check("--engine", "vllm-ascend==0.25.0", "--", *ASCEND_DCP4_MTP5)
    assert result.exit_code == 1, result.output
    assert "slot_mapping_fits_before_14024" in result.output and "demand=105, capacity=104" in result.output
    assert (
        'every request a full MTP decode": num_reqs=11' in result.output
        and "(demand=110, capacity=104)" in result.output
    )


def test_ascend_dcp4_mtp5_12_requests_safe_after_the_fix():
    result = check("--engine", "vllm-ascend==0.26.0", "--", *ASCEND_DCP4_MTP5)
    assert result.exit_code == 0, result.output
    assert "safe    spec/per_batch_buffers.py::slot_mapping_fits_14024" in result.output


def test_ascend_needs_a_version():
    result = check("--engine", "vllm-ascend", "--", *ASCEND_DCP4_MTP5)
    assert result.exit_code == 4 and "give the vLLM-Ascend release" in result.output


# ---------------------------------------------------------------------------------------------
# Real command lines: --config YAML, launchers, -O, per-release flags, model families.

GLM_YAML = """\
tensor-parallel-size: 8
decode-context-parallel-size: 2
max-model-len: 1M
block-size: 64
kv-cache-dtype: fp8_ds_mla
trust-remote-code: true
enable-prefix-caching: false
speculative-config:
  method: mtp
  num_speculative_tokens: 5
"""


def test_config_yaml_is_read_like_the_inline_flags(tmp_path):
    """The README's known-bad GLM flags in a `--config` file fail exactly as inline (they were
    ignored and answered `safe`)."""
    serve = tmp_path / "serve.yaml"
    serve.write_text(GLM_YAML)
    result = check("--engine", "vllm==0.27.0", "--", "vllm", "serve", "zai-org/GLM-5.2", "--config", str(serve))
    assert result.exit_code == 1, result.output
    assert result.output.startswith("will fail") and "W_buf=8192, W_bt=16384" in result.output
    assert f"from {serve}: --tensor-parallel-size, --decode-context-parallel-size, --max-model-len" in result.output


def test_command_line_wins_over_the_config_file(tmp_path):
    """vLLM inserts the file's flags right after the model, so a flag on the command line wins."""
    serve = tmp_path / "serve.yaml"
    serve.write_text(GLM_YAML)
    cfg = parse_serve_args(
        ["vllm", "serve", "zai-org/GLM-5.2", "--config", str(serve), "-dcp", "1", "--max-model-len", "350k"], "0.27.0"
    )
    assert (cfg.dcp, cfg.max_model_len, cfg.tp, cfg.num_speculative_tokens, cfg.model) == (
        1,
        350000,
        8,
        5,
        "zai-org/GLM-5.2",
    )
    assert cfg.origin["--decode-context-parallel-size"] == "command line" and cfg.origin[
        "--tensor-parallel-size"
    ] == str(serve)
    # model only in the file (`model:` key), as vLLM allows
    alone = tmp_path / "alone.yaml"
    alone.write_text("model: zai-org/GLM-5.2\nmax_model_len: 4096\n")
    cfg = parse_serve_args(["vllm", "serve", "--config", str(alone)])
    assert (cfg.model, cfg.max_model_len) == ("zai-org/GLM-5.2", 4096)


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("serve.json", "{}", "must be of a yaml/yml type"),
        ("serve.yaml", "max-model-len: [1, 2\n", "not valid YAML"),
        ("serve.yaml", "- a\n- b\n", "expected a mapping"),
        ("serve.yaml", "frobnicate: 3\n", "unknown vllm serve flag '--frobnicate'"),
    ],
)
def test_bad_config_file_is_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    result = check("--", "vllm", "serve", "m", "--config", str(path))
    assert result.exit_code == 4
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and message in lines[0], result.output


@pytest.mark.parametrize(
    "argv",
    [
        # vLLM maps -O3 / -O 3 / -O=3 to --optimization-level (argparse_utils.py)
        ["vllm", "serve", "zai-org/GLM-5.2", "-O3", "-tp", "8", "--max-model-len", "1M", "--block-size", "64"],
        ["vllm", "serve", "zai-org/GLM-5.2", "-O", "3", "-tp", "8", "--max-model-len", "1M", "--block-size", "64"],
        ["vllm", "serve", "zai-org/GLM-5.2", "-O=3", "-tp", "8", "--max-model-len", "1M", "--block-size", "64"],
        # an environment prefix
        [
            "VLLM_USE_DEEP_GEMM=1",
            "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
            "vllm",
            "serve",
            "zai-org/GLM-5.2",
            "-tp",
            "8",
            "--max-model-len",
            "1M",
            "--block-size",
            "64",
        ],
        # the OpenAI server module (model as --model)
        [
            "python",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            "zai-org/GLM-5.2",
            "-tp",
            "8",
            "--max-model-len",
            "1M",
            "--block-size",
            "64",
        ],
        [
            "python3",
            "-m",
            "vllm.entrypoints.cli.main",
            "serve",
            "zai-org/GLM-5.2",
            "-tp",
            "8",
            "--max-model-len",
            "1M",
            "--block-size",
            "64",
        ],
        # --model after `vllm serve` (vLLM moves it to the positional model)
        ["vllm", "serve", "--model", "zai-org/GLM-5.2", "-tp", "8", "--max-model-len", "1M", "--block-size", "64"],
    ],
)
@pytest.mark.slow
def test_command_lines_vllm_accepts_are_accepted(argv):
    cfg = parse_serve_args(argv)
    assert (cfg.model, cfg.tp, cfg.max_model_len, cfg.block_size) == ("zai-org/GLM-5.2", 8, 1048576, 64)
    result = check("--", *argv)
    # parsed and checked: on 0.33.0 every applied obligation is proved at vLLM's default batch limits
    # (the FlashInfer page list for every batch size, on the aggregate abstraction)
    assert result.exit_code == 0 and result.output.startswith("safe") and "error" not in result.output, result.output
    assert "BOUNDED" not in result.output
    if "-O3" in argv or "-O" in argv or "-O=3" in argv:
        assert (
            "--optimization-level" in cfg.ignored
            and "flags no applied obligation reads: --optimization-level" in result.output
        )
    if argv[0].startswith("VLLM_"):
        assert cfg.env == {"VLLM_USE_DEEP_GEMM": "1", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
        assert "environment not read: VLLM_USE_DEEP_GEMM=1" in result.output


def test_unknown_flag_suggests_the_closest():
    result = check("--", "vllm", "serve", "m", "--max-model-lenght", "4096")
    assert result.exit_code == 4
    assert (
        "unknown vllm serve flag '--max-model-lenght' (not an option of vLLM 0.33.0; did you mean --max-model-len"
        in result.output
    )


def test_abbreviated_flags_as_argparse():
    assert parse_serve_args(["--max-model", "4096"]).max_model_len == 4096  # unique prefix (allow_abbrev)
    with pytest.raises(ServeFlagError, match="ambiguous option --max-num"):
        parse_serve_args(["--max-num", "4"])


def test_flags_are_those_of_the_selected_release():
    """0.20.0 has --max-num-partial-prefills (gone in 0.33.0); -sc first appears in 0.19.0."""
    old = check(
        "--engine",
        "vllm==0.20.0",
        "--",
        "vllm",
        "serve",
        "deepseek-ai/DeepSeek-V3",
        "--max-num-partial-prefills",
        "2",
        "--max-model-len",
        "4096",
        "--block-size",
        "64",
    )
    assert old.exit_code == 0, old.output
    assert "flags no applied obligation reads: --max-num-partial-prefills" in old.output
    new = check("--engine", "vllm==0.33.0", "--", "vllm", "serve", "m", "--max-num-partial-prefills", "2")
    assert new.exit_code == 4 and "not an option of vLLM 0.33.0" in new.output
    # --disable-log-requests is in none of 0.18.0-0.33.0 (checked in the wheels): named for the release asked
    gone = check("--engine", "vllm==0.20.0", "--", "vllm", "serve", "m", "--disable-log-requests")
    assert gone.exit_code == 4 and "not an option of vLLM 0.20.0; did you mean --enable-log-requests" in gone.output
    with pytest.raises(ServeFlagError, match="'-sc' .*vLLM 0.18.0"):
        parse_serve_args(["-sc", '{"num_speculative_tokens": 1}'], "0.18.0")
    assert parse_serve_args(["-sc", '{"num_speculative_tokens": 1}'], "0.19.0").num_speculative_tokens == 1


def test_dotted_keys_replace_an_earlier_json_value_as_in_vllm():
    cfg = parse_serve_args(
        ["-sc", '{"method": "mtp", "num_speculative_tokens": 5}', "--speculative-config.num_speculative_tokens", "3"]
    )
    assert (cfg.num_speculative_tokens, cfg.speculative_method) == (3, None)


# Model configs of the common families (public config.json fields, trimmed to the sizing keys).
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 2048,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "max_position_embeddings": 40960,
}  # Qwen/Qwen3-30B-A3B
MIXTRAL = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 32768,
}  # mistralai/Mixtral-8x7B-v0.1
DEEPSEEK_V32 = {
    "architectures": ["DeepseekV32ForCausalLM"],
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "index_topk": 2048,
    "max_position_embeddings": 163840,
}
GLM45 = {
    "architectures": ["Glm4MoeForCausalLM"],
    "hidden_size": 5120,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "n_routed_experts": 160,
    "num_experts_per_tok": 8,
    "max_position_embeddings": 131072,
}  # zai-org/GLM-4.5
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
}  # meta-llama/Llama-3.1-8B


@pytest.mark.parametrize(
    "config, experts, field",
    [
        (QWEN3_MOE, 128, "num_experts"),
        (MIXTRAL, 8, "num_local_experts"),
        (DEEPSEEK_V32, 256, "n_routed_experts"),
        (GLM45, 160, "n_routed_experts"),
        ({"text_config": MIXTRAL}, 8, "text_config.num_local_experts"),
    ],
)
def test_model_families_expert_fields(tmp_path, config, experts, field):
    from capproof.engines.checkconfig import read_model_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    facts = read_model_config(str(path))
    assert facts.values["num_experts"] == experts and facts.fields["num_experts"] == field
    assert facts.fields["top_k"].endswith("num_experts_per_tok") and "moe" in facts.features
    result = check(
        "--engine",
        "vllm==0.32.0",
        "--model-config",
        str(path),
        "--",
        "vllm",
        "serve",
        "m",
        "--max-model-len",
        "32768",
        "--block-size",
        "16",
    )
    assert f"num_experts={experts} (from {field})" in result.output
    assert "spec/moe_align.py::vllm_sorted_ids_fit_every_routing" in result.output
    assert result.exit_code == 0, result.output  # proved for this expert count (never 'safe' by ignoring it)
    assert "safe    spec/moe_align.py::vllm_sorted_ids_fit_every_routing" in result.output


@pytest.mark.slow
def test_qwen3_moe_experts_are_checked_not_ignored(tmp_path):
    """Qwen3-MoE spells the expert count `num_experts`: it was ignored and the answer was `safe`
    without the MoE obligation; now 128 experts are proved as their own case."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_MOE))
    result = check("--model-config", str(path), "--", "vllm", "serve", "Qwen/Qwen3-30B-A3B", "--max-model-len", "32768")
    assert "num_experts=128 checked as its own case" in result.output


def test_dense_model_and_dsa_obligations_do_not_apply(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))
    result = check(
        "--engine",
        "vllm==0.23.0",
        "--model-config",
        str(path),
        "--",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",  # above the model's 131072: vLLM refuses it without
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B",
        "--max-model-len",
        "350k",
        "--block-size",
        "64",
    )
    # 350k/64 is the #46074 DSA mismatch, but Llama has no DSA indexer (nor MLA): not a failure of
    # this deployment; no obligation of 0.23.0 is about a dense model, so nothing is proved either
    assert result.exit_code == 2, result.output
    assert "no obligation of spec/ applies to these flags" in result.output
    assert (
        "ebt_width_matches_runner_before_50302 [vllm-dsa-ebt-128align]: does not apply to this model" in result.output
    )
    assert (
        "vllm_sorted_ids_fit_every_routing [moe-align-capacity]: does not apply to this model: no routed experts"
        in result.output
    )
    # without a model config the DSA obligations are listed as not checked (unknown model)
    result = check(
        "--engine", "vllm==0.23.0", "--", "vllm", "serve", "m", "--max-model-len", "350k", "--block-size", "64"
    )
    assert "applies only to models with a DSA indexer" in result.output and "FAILS" not in result.output


@pytest.mark.slow
def test_not_checked_lists_unused_flags():
    """EAGLE with explicit capture sizes and expert parallelism: no applied obligation reads
    --enable-expert-parallel, so it is listed, not silently 'safe'; the capture sizes are read
    (the drafting-slot buffers under FULL-graph padding to a user size, EAGLE pinned as method 0)."""
    result = check(
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "8192",
        "--block-size",
        "16",
        "--speculative-config",
        '{"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}',
        "--cudagraph-capture-sizes",
        "1",
        "2",
        "4",
        "8",
        "16",
        "--enable-expert-parallel",
        "--max-num-seqs",
        "32",
        "--max-num-batched-tokens",
        "2048",
    )
    assert "not checked for this deployment:" in result.output
    unused = next(l for l in result.output.splitlines() if "flags no applied obligation reads" in l)
    assert "--enable-expert-parallel" in unused and "--cudagraph-capture-sizes" not in unused
    assert "--speculative-config" not in unused  # read by the EAGLE proposer's arange obligation
    assert "safe    spec/vllm_0_33_today.py::proposer_arange_covers_request_query_start_loc" in result.output
    assert (
        "spec_slots_full_graph__" not in result.output.split("not checked for this deployment:")[1]
    )  # applied, proved
    assert "spec_slots_full_graph 5" in result.output


def test_answer_resting_on_a_default_says_so():
    """vLLM-Ascend C3 without --max-num-batched-tokens: the failure is shown at vLLM 0.25.0's
    default token budget (2048 on A100-class devices), named as a default, never as `=1`."""
    result = check(
        "--engine",
        "vllm-ascend==0.25.0",
        "--",
        "vllm",
        "serve",
        "glm",
        "-tp",
        "4",
        "-dcp",
        "4",
        "--max-num-seqs",
        "12",
        "-sc",
        '{"num_speculative_tokens": 5}',
    )
    assert result.exit_code == 1, result.output
    assert "demand=2073, capacity=2072" in result.output
    assert "with values you did not give: max_num_batched_tokens=2048" in result.output
    assert "rests on a default: max_num_batched_tokens in [2048, 8192]" in result.output
    with_gpu = check(
        "--engine",
        "vllm-ascend==0.25.0",
        "--gpu",
        "H100",
        "--",
        "vllm",
        "serve",
        "glm",
        "-tp",
        "4",
        "-dcp",
        "4",
        "--max-num-seqs",
        "12",
        "-sc",
        '{"num_speculative_tokens": 5}',
    )
    assert (
        "rests on a default: max_num_batched_tokens in [8192]" in with_gpu.output
        and "demand=8217, capacity=8216" in with_gpu.output
    )


@pytest.mark.slow
def test_user_capture_sizes_are_not_covered_by_the_default_size_proofs():
    result = check(
        "--",
        "vllm",
        "serve",
        "m",
        "--max-model-len",
        "8192",
        "--block-size",
        "16",
        "--cudagraph-capture-sizes",
        "1",
        "2",
        "4",
        "8",
        "--max-num-seqs",
        "8",
        "--max-num-batched-tokens",
        "2048",
    )
    assert (
        "cudagraph_padded_tokens_fit_mnbt: about vLLM's default capture sizes; yours (--cudagraph-capture-sizes) are checked "
        "member by member (user_capture_sizes_fit_mnbt)"
    ) in result.output
    assert (
        "safe    spec/vllm_0_33_today.py::user_capture_sizes_fit_mnbt: holds for cudagraph_capture_size in [1, 2, 4, 8]"
        in result.output
    )


QWEN3_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"],
    "hidden_size": 2048,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "linear_num_value_heads": 32,
    "full_attention_interval": 4,
    "max_position_embeddings": 262144,
}  # Qwen/Qwen3-Next-80B-A3B-Instruct
SGLANG_EAGLE = [
    "python",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "--tp",
    "4",
    "--context-length",
    "163840",
    "--page-size",
    "64",
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "4",
    "--speculative-num-draft-tokens",
    "8",
    "--mem-fraction-static",
    "0.8",
]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(("--spec", "spec/sglang_req_to_token.py"), id="req-to-token-spec"),
        pytest.param((), id="whole-spec", marks=pytest.mark.slow),  # a whole SGLang deployment
    ],
)
def test_sglang_launch_line_hybrid_mamba_reference_numbers(tmp_path, spec):
    """SGLang 0.5.23 reference §11.1: the hybrid-Mamba width 163852 vs the main 164927 at context
    163840, page 64, 3 steps, topk 4, 8 draft tokens (a finding under stated assumptions)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(QWEN3_NEXT))
    result = check("--engine", "sglang==0.5.23", *spec, "--model-config", str(config), "--", *SGLANG_EAGLE)
    assert result.exit_code == 1, result.output
    assert "W_hybrid_mamba=163852, W_req_to_token=164927" in result.output
    assert "hybrid_mamba=yes (from architectures)" in result.output
    assert "safe    spec/sglang_req_to_token.py::decode_alloc_fits_req_to_token_row" in result.output
    assert "flags no applied obligation reads: --tp-size, --mem-fraction-static" in result.output


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(("--spec", "spec/sglang_req_to_token.py"), id="req-to-token-spec"),
        # the whole spec/ at this line: 96 obligations applied, a whole SGLang deployment
        pytest.param((), id="whole-spec", marks=pytest.mark.slow),
    ],
)
def test_sglang_dense_model_without_hybrid_layers(tmp_path, spec):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    # 163840 is above this config's 131072: SGLang runs it only with the variable set
    line = ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", *SGLANG_EAGLE]
    result = check("--engine", "sglang", *spec, "--model-config", str(config), "--", *line)
    # every applied obligation holds, but the default attention backends' index buffers are not
    # decided: undecided, never safe on those few
    assert result.exit_code == 2, result.output
    assert "safe    spec/sglang_req_to_token.py::decode_alloc_fits_req_to_token_row" in result.output
    assert "index buffers of the attention backend triton this line runs are not verified or proved" in result.output
    assert (
        "hybrid_mamba_width_mirrors_main_width [sglang-req-to-token-hybrid-mamba-mirror]: does not apply to this model"
        in result.output
    )


def test_sglang_config_file_and_bad_flags(tmp_path):
    from capproof.engines.sglang.launch import LaunchFlagError, parse_launch_args

    serve = tmp_path / "sglang.yaml"
    serve.write_text(
        "model-path: Qwen/Qwen3-Next-80B-A3B-Instruct\ncontext-length: 163840\npage-size: 64\ntrust-remote-code: true\n"
    )
    cfg = parse_launch_args(["sglang", "serve", "--config", str(serve), "--page-size", "1"])
    assert (cfg.model, cfg.values["context_len"], cfg.values["page_size"]) == (
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        163840,
        1,
    )
    assert cfg.origin["--page-size"] == "command line" and cfg.origin["--context-length"] == str(serve)
    with pytest.raises(LaunchFlagError, match="unknown SGLang flag '--context-lenght'.*did you mean --context-length"):
        parse_launch_args(["python", "-m", "sglang.launch_server", "--context-lenght", "4096"])
    result = check("--engine", "sglang", "--", "vllm", "serve", "m")
    assert result.exit_code == 4 and "not an SGLang command line" in result.output


@pytest.mark.slow
def test_kernel_offset_obligations_apply_only_to_their_release_and_kernel(tmp_path):
    """spec/kernel_offsets.py: the vLLM 0.33.0 forms are checked for 0.33.0 only, the fused-MoE
    offset only for a model with routed experts (DeepSeek-V3's public config: 256 experts, top-8),
    the UltraQuant decode offset only under --kv-cache-dtype ultraquant_4bit; the historical
    what-ifs (counterexamples by design) never."""
    argv = ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "163840", "--block-size", "64"]
    config = tmp_path / "config.json"
    config.write_text('{"n_routed_experts": 256, "num_experts_per_tok": 8, "hidden_size": 7168}')
    result = check("--model-config", str(config), "--", *argv)
    out = result.output
    assert "safe    spec/kernel_offsets.py::slot_mapping_row_offset_fits_int32_v0_33" in out, out
    assert "safe    spec/kernel_offsets.py::fused_moe_c_offset_v0_33" in out, out
    assert "ultraquant_in_block_byte_offset_v0_33" in out.split("not checked for this deployment:")[1]
    assert "--kv-cache-dtype ultraquant_4bit" in out
    assert "before_13693" not in out and "with_block_base" not in out
    uq = check("--", *argv, "--kv-cache-dtype", "ultraquant_4bit")
    assert "safe    spec/kernel_offsets.py::ultraquant_in_block_byte_offset_v0_33" in uq.output, uq.output
    assert "--kv-cache-dtype" not in next(
        (l for l in uq.output.splitlines() if "flags no applied obligation reads" in l), ""
    )
    dense = check(
        "--", "vllm", "serve", "my-org/unknown-model", *argv[3:]
    )  # no model config: the MoE offset needs top_k
    assert "fused_moe_c_offset_v0_33" in dense.output.split("not checked for this deployment:")[1]
    assert dense.exit_code == 2 and dense.output.startswith("undecided")  # it may apply: never "safe"
    older = check("--engine", "vllm==0.32.0", "--model-config", str(config), "--", *argv)
    assert "kernel_offsets.py" not in older.output
