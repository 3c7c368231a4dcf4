"""Adversarial checks of the operator's path: ``capproof check-config`` reading a launch line as vLLM does.

Each test is a ``vllm serve`` line (or a config file the line names) that vLLM 0.33.0 reads one way
and capproof read another, so that ``check-config`` answered ``safe`` (exit 0) for a deployment it
had not checked as vLLM runs it. The truth is vLLM's own code (``vllm/utils/argparse_utils.py``,
``vllm/config/{speculative,compilation,model}.py``; the real-tier test at the end runs its parser).
A tiny spec file (one claim per feature) stands for spec/: the answers under it are exact.

Attempts that did not break it are listed in the git history of docs/soundness.md ("Attempts that found nothing").
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.engines.checkconfig import CheckError, ModelFacts, read_model_config
from capproof.engines.vllm.deployment import run_check
from capproof.engines.vllm.serve import ServeFlagError, parse_serve_args

SPEC = """
from capproof import Range, obligation, at_most

@obligation(domain={"max_model_len": Range(1, 16384), "num_speculative_tokens": Range(1, 8)},
            engine="vllm", versions="==0.33.0", requires=("spec_decode",), expect="proved")
def spec_rows(max_model_len, num_speculative_tokens):
    return at_most(demand=num_speculative_tokens, capacity=3)      # fails from 4 speculative tokens

@obligation(domain={"max_model_len": Range(1, 16384)}, engine="vllm", versions="==0.33.0", expect="proved")
def even_len(max_model_len):
    return max_model_len % 2 == 0                                  # an alignment claim: fails at odd lengths

@obligation(domain={"max_model_len": Range(1, 16384)}, engine="vllm", versions="==0.33.0", expect="proved")
def short_len(max_model_len):
    return at_most(demand=max_model_len, capacity=4096)            # fails past 4096

@obligation(domain={"max_model_len": Range(1, 16384)}, engine="vllm", versions="==0.33.0",
            requires=("dflash", "cudagraph_full"), expect="proved")
def full_graph_rows(max_model_len):
    return max_model_len < 0                                       # always fails: applies = will fail
"""

DFLASH = [
    "--speculative-config",
    '{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 2}',
]


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "spec15.py"
    path.write_text(textwrap.dedent(SPEC))
    return str(path)


def check(spec, *argv, model_config=None):
    extra = ["--model-config", model_config] if model_config else []
    return CliRunner().invoke(main, ["check-config", "--spec", spec, *extra, "--", "vllm", "serve", "m", *argv])


def one_error_line(result, message):
    assert result.exit_code == 4, result.output
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], result.output


# -- speculative decoding whose token count vLLM takes from the draft model -------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--speculative-config", '{"method": "mtp"}'],  # K from the target's num_nextn_predict_layers
        ["--speculative-config", '{"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}'],  # K from the draft's n_predict
        ["--speculative-config.method", "mtp"],
        ["--spec-method", "mtp"],
        ["--spec-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"],  # merged into the speculative config by vLLM
    ],
)
def test_speculative_decoding_without_a_token_count_is_bad_input_not_no_speculative_decoding(spec, argv):
    """Before: num_speculative_tokens stayed 0, every spec-decode obligation was "does not apply: no
    speculative decoding (--speculative-config not given)" and the answer was safe (exit 0); vLLM
    0.33.0 defaults it from the draft model's config (``SpeculativeConfig.__post_init__``, n_predict)."""
    one_error_line(check(spec, "--max-model-len", "4096", *argv), "without num_speculative_tokens")


@pytest.mark.parametrize(
    "argv",
    [
        ["--speculative-config", '{"method": "mtp", "num-speculative-tokens": 5}'],  # vLLM reads dashes as underscores
        ["--spec-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--spec-tokens", "5"],
        ["--spec-method", "mtp", "--spec-tokens", "5"],
    ],
)
def test_speculative_decoding_spelled_otherwise_is_checked(spec, argv):
    """Before: ``num-speculative-tokens`` (dashes) and ``--spec-model`` were not read: no
    speculative decoding, safe (exit 0); vLLM's ``create_speculative_config`` merges the
    ``--spec-*`` flags and replaces dashes in the keys."""
    result = check(spec, "--max-model-len", "4096", *argv)
    assert result.exit_code == 1 and "spec_rows" in result.output and "demand=5" in result.output, result.output


def test_a_token_count_given_still_checks_speculative_decoding(spec):
    result = check(
        spec, "--max-model-len", "4096", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 5}'
    )
    assert result.exit_code == 1 and "FAILS   " in result.output and "spec_rows" in result.output, result.output


# -- CUDA-graph mode: the enum's value, and the FULL that vLLM derives ------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--compilation-config", '{"cudagraph_mode": 2}'],  # CUDAGraphMode.FULL == 2 (pydantic takes the value)
        ["-cc.cudagraph_mode=2"],
        ["-cc.cudagraph_mode=full"],
        ["-cc.splitting_ops=[]"],  # FULL_AND_PIECEWISE + no splitting ops -> FULL
        ["--compilation-config", '{"cudagraph_mode": "FULL_AND_PIECEWISE", "pass_config": {"fuse_attn_quant": true}}'],
    ],
)
def test_full_cuda_graphs_however_spelled_apply_the_full_graph_obligations(spec, argv):
    """Before: ``cudagraph_mode: 2`` was read as the string "2", not FULL; the DFlash FULL-graph
    obligation (a counterexample in spec/) did not apply and the answer was safe (exit 0)."""
    result = check(spec, "--max-model-len", "4096", *DFLASH, *argv)
    assert result.exit_code == 1, result.output
    assert any(l.startswith("  FAILS   ") and "full_graph_rows" in l for l in result.output.splitlines()), result.output


@pytest.mark.parametrize(
    "mode, expected",
    [
        ({"cudagraph_mode": 2}, "FULL"),
        ({"cudagraph_mode": 1}, "PIECEWISE"),
        ({"cudagraph_mode": 0}, "NONE"),
        ({"cudagraph_mode": "full_decode_only"}, "FULL_DECODE_ONLY"),
        ({"cudagraph_mode": "FULL_AND_PIECEWISE"}, "FULL_AND_PIECEWISE"),
        ({"splitting_ops": []}, "FULL"),
        ({"cudagraph_mode": "PIECEWISE", "splitting_ops": []}, "PIECEWISE"),
        ({"pass_config": {"fuse_attn_quant": True}}, "FULL"),
        ({"pass_config": {"fuse_attn_quant": False}}, None),
        ({"mode": 3}, None),
        ({"mode": 0, "splitting_ops": []}, None),
        ({"mode": 3, "splitting_ops": []}, "FULL"),
    ],
)
def test_cudagraph_mode_as_vllm_resolves_it(mode, expected):
    assert parse_serve_args(["vllm", "serve", "m", "-cc", json.dumps(mode)]).cudagraph_mode == expected


@pytest.mark.parametrize("level, expected", [("-O0", None), ("-O1", None), ("-O2", "FULL"), ("-O3", "FULL")])
def test_derived_full_graphs_follow_the_optimization_level(level, expected):
    """-O0/-O1 default to NONE/PIECEWISE graphs, which empty splitting ops do not make FULL."""
    assert parse_serve_args(["vllm", "serve", "m", level, "-cc.splitting_ops=[]"]).cudagraph_mode == expected


@pytest.mark.parametrize("mode", [7, "FULLY", [2, 1], True])
def test_a_cudagraph_mode_vllm_does_not_have_is_bad_input(mode):
    with pytest.raises(ServeFlagError, match="not a vLLM cudagraph mode"):
        parse_serve_args(["vllm", "serve", "m", "-cc", json.dumps({"cudagraph_mode": mode})])


# -- max_model_len: auto, and the default vLLM derives from config.json ---------------------------


def _config(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("value", ["auto", "-1", "AUTO"])
def test_max_model_len_auto_is_not_pinned_to_max_position_embeddings(spec, tmp_path, value):
    """Before: ``--max-model-len auto`` with --model-config pinned max_position_embeddings (4096,
    even: safe, exit 0); vLLM fits it to the GPU memory at startup (``_auto_fit_max_model_len``),
    so any shorter length, odd ones too, can be served. A failure at a length the line does not
    give is MAYFAIL (undecided, exit 2, naming --max-model-len), never safe."""
    result = check(spec, "--max-model-len", value, model_config=_config(tmp_path, {"max_position_embeddings": 4096}))
    assert result.exit_code == 2, result.output
    assert "MAYFAIL" in result.output and "even_len" in result.output and "FAILS" not in result.output
    assert "give --max-model-len N (--max-model-len auto: vLLM fits it to the GPU memory at startup)" in result.output
    assert "rests on no max_model_len: --max-model-len auto: vLLM fits it to the GPU memory" in result.output
    assert "--max-model-len" not in result.output.partition("flags no applied obligation reads")[2]


@pytest.mark.parametrize(
    "extra, caveat",
    [
        ({"rope_scaling": {"rope_type": "linear", "factor": 4.0}}, "linear factor 4.0"),
        ({"rope_scaling": {"type": "dynamic", "factor": 2.0}}, "dynamic factor 2.0"),
        (
            {
                "rope_parameters": {
                    "full_attention": {"rope_type": "linear", "factor": 2.0},
                    "sliding_attention": {"rope_type": "default"},
                }
            },
            "linear factor 2.0",
        ),
        ({"rope_scaling": {"rope_type": "longrope", "factor": 4.0, "long_factor": [1.0]}}, "longrope"),
        ({"seq_length": 2048}, "also has seq_length"),
    ],
)
def test_default_max_model_len_that_is_not_max_position_embeddings_is_not_pinned(spec, tmp_path, extra, caveat):
    """Before: the default max_model_len was max_position_embeddings (4096) whatever the config
    said; vLLM 0.33.0 multiplies it by a linear/dynamic RoPE factor (16384 here: short_len fails)
    or takes the smallest length key (``_get_and_verify_max_len``). capproof does not derive that
    length: a failure at one it picked is MAYFAIL (undecided, exit 2), never safe."""
    path = _config(tmp_path, {"max_position_embeddings": 4096, **extra})
    assert caveat in read_model_config(path).max_len_caveat
    result = check(spec, model_config=path)
    assert result.exit_code == 2 and "MAYFAIL" in result.output, result.output
    assert "give --max-model-len N (not given: vLLM derives it from the model config: config.json" in result.output
    assert "max_model_len=4096" not in result.output.splitlines()[0]
    assert "rests on no max_model_len: --max-model-len not given and config.json" in result.output


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"rope_scaling": {"rope_type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}},
        {"rope_scaling": {"rope_type": "llama3", "factor": 8.0}},
        {"rope_scaling": {"rope_type": "default"}},
        {
            "model_type": "gemma3_text",
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        },  # already scaled (vLLM skips it)
    ],
)
def test_max_position_embeddings_is_the_default_where_vllm_takes_it_and_the_answer_says_so(spec, tmp_path, extra):
    path = _config(tmp_path, {"max_position_embeddings": 4096, **extra})
    assert read_model_config(path).max_len_caveat == ""
    result = check(spec, model_config=path)
    assert result.exit_code == 0 and "max_model_len=4096" in result.output.splitlines()[0], result.output
    assert "rests on a default: max_model_len in [4096] (not given: vLLM's default" in result.output


# -- --hf-overrides changes the model config vLLM serves -------------------------------------------


@pytest.mark.parametrize(
    "overrides, named",
    [
        ({"max_position_embeddings": 16384}, "max_position_embeddings"),
        ({"text_config": {"num_experts": 8}}, "num_experts"),
        ({"rope_scaling": {"rope_type": "linear", "factor": 4.0}}, "rope_scaling"),
    ],
)
def test_hf_overrides_of_a_field_read_from_the_model_config_is_bad_input(spec, tmp_path, overrides, named):
    """Before: --hf-overrides was listed as a flag "no obligation reads" while the answer used the
    file's value (max_model_len=4096: safe, exit 0); vLLM serves the overridden one."""
    result = check(
        spec, "--hf-overrides", json.dumps(overrides), model_config=_config(tmp_path, {"max_position_embeddings": 4096})
    )
    one_error_line(result, f"--hf-overrides sets {named}" if named != "num_experts" else "num_experts")


def test_hf_overrides_of_other_fields_are_listed_not_refused(spec, tmp_path):
    result = check(
        spec,
        "--hf-overrides",
        '{"attn_logit_softcapping": 30.0}',
        model_config=_config(tmp_path, {"max_position_embeddings": 4096}),
    )
    assert result.exit_code == 0 and "flags no applied obligation reads: --hf-overrides" in result.output, result.output


def test_run_check_refuses_hf_overrides_too(tmp_path):
    cfg = parse_serve_args(["vllm", "serve", "m", "--hf-overrides", '{"num_local_experts": 4}'])
    with pytest.raises(CheckError, match="num_local_experts"):
        run_check(cfg, "vllm", "0.33.0", ModelFacts("config.json", {"num_experts": 8}), paths=())


# -- the --config YAML file, read as vLLM reads it ---------------------------------------------------

API_SERVER = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]


@pytest.mark.parametrize(
    "text, serve, api_server",
    [
        ("enable_chunked_prefill: false\n", None, None),
        ("enable-chunked-prefill: false\n", None, False),
        ("enable-chunked-prefill: true\n", True, True),
        ("enable_chunked_prefill: true\n", True, True),
    ],
)
def test_a_yaml_false_is_dropped_where_vllm_drops_it(tmp_path, text, serve, api_server):
    """vLLM appends ``--no-<key>`` for ``key: false`` only when the parser reading the file has
    that exact option string (``load_config_file``). Under ``vllm serve`` that is the top-level CLI
    parser, which has none: every ``false`` is dropped and chunked prefill keeps its default. Before,
    capproof read it as disabled, so the default token budget it checked was raised to
    max_model_len and vLLM's real default (2,048 tokens on an A100) was not checked."""
    path = tmp_path / "serve.yaml"
    path.write_text(text + "max_model_len: 8192\n")
    assert parse_serve_args(["vllm", "serve", "m", "--config", str(path)]).enable_chunked_prefill is serve
    assert parse_serve_args([*API_SERVER, "--config", str(path)]).enable_chunked_prefill is api_server


def test_the_default_token_budget_is_checked_when_the_yaml_false_is_dropped(tmp_path):
    spec = tmp_path / "spec15b.py"
    spec.write_text(
        textwrap.dedent("""
        from capproof import Range, obligation
        @obligation(domain={"max_num_batched_tokens": Range(1, 65536)}, engine="vllm", versions="==0.33.0", expect="proved")
        def big_budget(max_num_batched_tokens):
            return max_num_batched_tokens >= 4096
    """)
    )
    path = tmp_path / "serve.yaml"
    path.write_text("enable-chunked-prefill: false\nmax_model_len: 8192\n")
    result = CliRunner().invoke(
        main, ["check-config", "--spec", str(spec), "--gpu", "A100", "--", "vllm", "serve", "m", "--config", str(path)]
    )
    assert result.exit_code == 1 and "max_num_batched_tokens in [2048]" in result.output, result.output


def test_config_file_given_with_equals_is_bad_input(spec, tmp_path):
    """vLLM pulls a config file only from the token ``--config`` (``"--config" in args``); with
    ``--config=FILE`` it ignores the file and serves its defaults. Before, capproof read the file
    (max_model_len 4096 pinned: safe, exit 0) while vLLM served the model's default length."""
    path = tmp_path / "serve.yaml"
    path.write_text("max_model_len: 4096\n")
    one_error_line(check(spec, f"--config={path}"), "vLLM reads a config file only as two words")
    result = check(spec, "--config", str(path))
    assert "max_model_len=4096" in result.output.splitlines()[0], result.output


# -- real tier: vLLM 0.33.0's own parser agrees on every line above ---------------------------------

REAL_SRC = os.path.join(os.path.dirname(__file__), "..", ".capproof", "src")
REAL_PY = os.path.join(os.path.dirname(__file__), "..", ".capproof", "real-venv", "bin", "python")

_VLLM_PARSE = r"""
import contextlib, io, json, logging, os, sys
logging.disable(logging.CRITICAL)
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.common.cli_args import make_arg_parser
out = []
for argv in json.load(sys.stdin):
    parser = FlexibleArgumentParser()
    if argv[0] == "serve":  # vllm serve: the top-level CLI parser reads --config
        make_arg_parser(parser.add_subparsers(dest="subparser").add_parser("serve"))
    else:  # python -m vllm.entrypoints.openai.api_server: the server's own parser
        parser = make_arg_parser(parser)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            a = parser.parse_args(argv)
    except (SystemExit, Exception):
        out.append(None)
        continue
    out.append({"max_model_len": a.max_model_len, "enable_chunked_prefill": a.enable_chunked_prefill,
                "tp": a.tensor_parallel_size,
                "cudagraph_mode": getattr(a.compilation_config.cudagraph_mode, "name", None)})
json.dump(out, sys.stdout)
"""


@pytest.mark.real
def test_vllm_0_33_parser_agrees(tmp_path):
    """vLLM 0.33.0's FlexibleArgumentParser (``make real-install``) on the lines of this module:
    where capproof reads a value, it is vLLM's (``cudagraph_mode`` as given, before the
    splitting-ops rules, which run in ``VllmConfig``)."""
    import subprocess

    if not os.path.exists(REAL_PY) or not os.path.isdir(os.path.join(REAL_SRC, "vllm")):
        pytest.skip("no real venv (make real-install)")
    under = tmp_path / "u.yaml"
    under.write_text("enable_chunked_prefill: false\nmax_model_len: 8192\n")
    dashes = tmp_path / "d.yaml"
    dashes.write_text("enable-chunked-prefill: false\ntensor_parallel_size: 2\n")
    lines = [
        ["serve", "m", "--config", str(under)],
        ["serve", "m", "--config", str(dashes)],
        ["serve", "m", f"--config={dashes}"],
        ["serve", "m", "-cc", '{"cudagraph_mode": 2}'],
        ["serve", "m", "-cc.cudagraph_mode=full"],
        ["serve", "m", "--max-model-len", "auto"],
        ["serve", "m", "--max-model-len", "32k", "-tp", "2"],
        ["--model", "m", "--config", str(dashes)],
        ["--model", "m", "--config", str(under)],
    ]
    env = {**os.environ, "PYTHONPATH": REAL_SRC, "VLLM_TARGET_DEVICE": "cpu"}
    got = json.loads(
        subprocess.run(
            [REAL_PY, "-c", _VLLM_PARSE],
            input=json.dumps(lines),
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout
    )
    assert got[2] == {
        "max_model_len": None,
        "enable_chunked_prefill": None,
        "tp": 1,
        "cudagraph_mode": None,
    }  # file ignored
    with pytest.raises(ServeFlagError):
        parse_serve_args(["vllm", *lines[2]])
    for argv, vllm in zip(lines[:2] + lines[3:], got[:2] + got[3:]):
        cfg = parse_serve_args(["vllm", *argv] if argv[0] == "serve" else [*API_SERVER[:3], *argv])
        mine = {
            "max_model_len": -1 if cfg.max_model_len_auto else cfg.max_model_len,
            "enable_chunked_prefill": cfg.enable_chunked_prefill,
            "tp": cfg.tp,
            "cudagraph_mode": cfg.cudagraph_mode,
        }
        assert mine == vllm, f"{argv}: capproof {mine}, vLLM {vllm}"


# -- the default token budget: the rules vLLM applies after the GPU table ---------------------------

BUDGET_SPEC = """
from capproof import Range, obligation
@obligation(domain={"max_num_batched_tokens": Range(1, 65536), "max_num_seqs": Range(1, 4096)},
            engine="vllm", versions="==0.33.0", expect="proved")
def big_budget(max_num_batched_tokens, max_num_seqs):
    return max_num_batched_tokens >= 2048
"""


@pytest.mark.parametrize(
    "argv, default",
    [
        # at most max_num_seqs * max_model_len (arg_utils.py:3221-3224): 1 * 1024 < 2048
        (["--gpu", "A100", "--", "vllm", "serve", "m", "--max-model-len", "1024", "--max-num-seqs", "1"], "[1024]"),
        (["--gpu", "H100", "--", "vllm", "serve", "m", "--max-model-len", "512", "--max-num-seqs", "2"], "[1024]"),
        # batched DP MoE (SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP = 256)
        (
            [
                "--gpu",
                "H100",
                "--",
                "vllm",
                "serve",
                "m",
                "--max-model-len",
                "4096",
                "--all2all-backend",
                "deepep_low_latency",
                "-ep",
                "-dp",
                "2",
            ],
            "[256]",
        ),
        (
            [
                "--",
                "vllm",
                "serve",
                "m",
                "--max-model-len",
                "4096",
                "--all2all-backend=nixl_ep",
                "--enable-expert-parallel",
                "--data-parallel-size",
                "4",
                "--performance-mode",
                "throughput",
            ],
            "[512]",
        ),
    ],
)
def test_a_default_token_budget_below_the_gpu_table_is_the_one_checked(tmp_path, argv, default):
    """Before: the default max_num_batched_tokens was the GPU table's (2048 or more) whatever
    max_num_seqs * max_model_len or the MoE all2all backend said: safe (exit 0) for a budget vLLM
    does not use."""
    spec = tmp_path / "budget15.py"
    spec.write_text(textwrap.dedent(BUDGET_SPEC))
    result = CliRunner().invoke(main, ["check-config", "--spec", str(spec), *argv])
    assert result.exit_code == 1, result.output
    assert f"rests on a default: max_num_batched_tokens in {default}" in result.output, result.output


def test_the_token_budget_without_chunked_prefill_and_no_length_is_left_free(tmp_path):
    """Without chunked prefill vLLM's default budget is at least max_model_len; when that is not
    known the budget is not a default capproof can name: every value of the domain is checked."""
    spec = tmp_path / "budget15.py"
    spec.write_text(textwrap.dedent(BUDGET_SPEC.replace(">= 2048", "<= 16384")))
    result = CliRunner().invoke(
        main, ["check-config", "--spec", str(spec), "--", "vllm", "serve", "m", "--no-enable-chunked-prefill"]
    )
    assert result.exit_code == 1 and "max_num_batched_tokens in [" not in result.output, result.output


@pytest.mark.parametrize("text", ["vllm==0.33", "vllm==v0.33.0", "vllm == 0.33.0", "VLLM==0.33.0"])
def test_an_engine_version_spelled_otherwise_is_the_release(text):
    """``--engine vllm==0.33`` named no flag table, batch defaults or inventory (keyed "0.33.0"):
    the defaults were dropped and the answer undecided; it is release 0.33.0."""
    from capproof.engines.registry import parse_engine

    assert parse_engine(text) == ("vllm", "0.33.0")
