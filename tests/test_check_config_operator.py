"""check-config as operators write it: facts vLLM would find itself, input forms, machine output.

Each failure here was found by running check-config as a new user would: a wrong "safe" on a
reported crash, an inferred speculative method ignored, relative paths, capproof options after
``--``, docker and SGLang launch forms, JSON/SARIF for CI.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.engines.checkconfig import KNOWN_MODELS, resolve_model
from capproof.engines.vllm.serve import parse_serve_args
from capproof.engines.vllm.speculative import infer_method


def check(*args):
    return CliRunner().invoke(main, ["check-config", *args])


# --- bad input: exit 4, one line ------------------------------------------------------------


def test_no_launch_line_is_bad_input_not_safe():
    result = check()
    assert result.exit_code == 4 and "no launch line" in result.output
    result = check("--", "")  # an empty or unset shell variable as the whole line
    assert result.exit_code == 4 and "no launch line" in result.output


@pytest.mark.parametrize("argv", [["vllm", "serve"], ["vllm", "serve", "--max-model-len", "4096"]])
def test_no_model_is_bad_input_not_safe(argv):
    result = check("--", *argv)
    assert result.exit_code == 4 and "no model" in result.output


def test_capproof_option_after_dashdash_is_an_error_with_the_abbreviation_hint():
    """vLLM's argparse reads ``--gpu H100`` as ``--gpu-memory-utilization H100`` (prefix abbreviation)."""
    result = check("--", "vllm", "serve", "m", "--gpu", "H100")
    assert result.exit_code == 4
    assert "--gpu is capproof's option" in result.output and "--gpu-memory-utilization" in result.output
    assert "put it before '--'" in result.output
    result = check("--", "vllm", "serve", "m", "--json", "-")
    assert result.exit_code == 4 and "--json is capproof's option" in result.output


@pytest.mark.parametrize("option", ["--json", "--sarif", "--model-config"])
def test_dashdash_taken_as_an_options_value_is_an_error_not_a_file_named_dashdash(option, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = check(option, "--", "vllm", "serve", "Qwen/Qwen3-8B", "--block-size", "16")
    assert result.exit_code == 4, result.output
    assert f"{option} took '--' as its value" in result.output
    assert not (tmp_path / "--").exists()


# --- facts vLLM finds itself -------------------------------------------------------------------


def test_known_model_name_gives_its_config_fields_with_the_source():
    facts = resolve_model("deepseek-ai/DeepSeek-V3.2", None)
    assert facts.values["index_topk"] == 2048 and facts.values["num_experts"] == 256
    assert "dsa_indexer" in facts.features and "moe" in facts.features
    assert "huggingface.co/deepseek-ai/DeepSeek-V3.2" in facts.path
    assert resolve_model("DEEPSEEK-AI/deepseek-v3.2", None).values == facts.values  # Hub names are case-insensitive
    assert resolve_model("my-org/unknown", None) is None
    assert all(name.count("/") == 1 for name in KNOWN_MODELS)


def test_an_old_hugging_face_name_the_hub_redirects_is_known():
    """SGLang's quickstart names meta-llama/Meta-Llama-3.1-8B-Instruct (the Hub redirects it to
    meta-llama/Llama-3.1-8B-Instruct): it was "not in capproof's table of known models"."""
    facts = resolve_model("meta-llama/Meta-Llama-3.1-8B-Instruct", None)
    assert facts.values == resolve_model("meta-llama/Llama-3.1-8B-Instruct", None).values
    assert "the Hub's old name of meta-llama/Llama-3.1-8B-Instruct" in facts.path
    result = check("--", "vllm", "serve", "meta-llama/Meta-Llama-3.1-8B-Instruct", "--max-model-len", "200000")
    # the table's length is known under the old name too: vLLM 0.33.0 refuses 200000 (llama3 RoPE is not multiplied in)
    assert result.exit_code == 4 and "above the model's length, 131072" in result.output


def test_local_model_directory_and_model_config_directory(tmp_path, monkeypatch):
    model = tmp_path / "ckpt"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"n_routed_experts": 64, "num_experts_per_tok": 6, "index_topk": 512})
    )
    monkeypatch.chdir(tmp_path)
    assert resolve_model("ckpt", None).values["index_topk"] == 512  # MODEL relative to the caller's directory
    assert resolve_model("unknown/name", "ckpt").values["num_experts"] == 64  # --model-config DIR
    assert resolve_model(str(model), None).path == os.path.join(str(model), "config.json")


def test_reported_crash_line_with_a_local_model_directory_will_fail(tmp_path, monkeypatch):
    """The DeepSeek-V3.2 line with MODEL a local directory holding config.json: will fail (5469 vs 5470)."""
    model = tmp_path / "DeepSeek-V3.2"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(KNOWN_MODELS["deepseek-ai/DeepSeek-V3.2"]))
    monkeypatch.chdir(tmp_path)
    result = check(
        "--engine",
        "vllm==0.26.0",
        "--",
        "vllm",
        "serve",
        "DeepSeek-V3.2",
        "-tp",
        "8",
        "--max-model-len",
        "350000",
        "--block-size",
        "64",
    )
    assert result.exit_code == 1, result.output
    assert result.output.startswith("will fail") and "W_buf=5469, W_bt=5470" in result.output


def test_unknown_model_with_model_obligations_is_undecided_naming_model_config():
    result = check(
        "--engine",
        "vllm==0.26.0",
        "--",
        "vllm",
        "serve",
        "my-org/private",
        "-tp",
        "8",
        "--max-model-len",
        "350000",
        "--block-size",
        "64",
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided") and "give --model-config" in result.output


@pytest.mark.parametrize(
    "method, model, expected",
    [
        (None, "yuhuili/EAGLE-LLaMA3-Instruct-8B", "eagle"),
        (None, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3"),
        (None, "AngelSlim/Qwen3-8B_eagle3", "eagle3"),
        (None, "z-lab/Qwen3-8B-DFlash-b16", "dflash"),
        (None, "deepseek-ai/dspark_qwen3_8b_block7", "dspark"),
        (None, "ngram", "ngram"),
        (None, "my_pkg.MyProposer", "custom_class"),
        ("deepseek_mtp", None, "mtp"),
        ("eagle", "some/draft", "eagle"),
        ("draft_model", "yuhuili/EAGLE-LLaMA3-Instruct-8B", "eagle"),  # vLLM's detection runs for draft_model too
        (None, "Qwen/Qwen3-0.6B", None),  # depends on the draft's config.json: not guessed
    ],
)
def test_speculative_method_inferred_as_vllm_0_33_does(method, model, expected):
    assert infer_method(method, model).method == expected


@pytest.mark.parametrize("method", [None, "draft_model", "eagle", "eagle3", "dflash"])
def test_speculative_tokens_without_a_model_is_not_guessed(method):
    """vLLM 0.33.0 raises 'num_speculative_tokens was provided but without speculative model' for these."""
    inferred = infer_method(method, None)
    assert inferred.method is None and "without speculative model" in inferred.how


@pytest.mark.parametrize(
    "method, expected", [("mtp", "mtp"), ("deepseek_mtp", "mtp"), ("dspark", "dspark"), ("ngram", "ngram")]
)
def test_speculative_methods_that_need_no_model(method, expected):
    assert infer_method(method, None).method == expected


def test_spec_config_with_only_num_speculative_tokens_is_undecided_not_safe():
    """The line as often written (no method, no model) is refused by vLLM 0.33.0 at startup: never safe."""
    result = check(
        "--engine",
        "vllm==0.26.0",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--max-model-len",
        "32768",
        "--block-size",
        "16",
        "--speculative-config",
        '{"num_speculative_tokens": 2}',
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided") and "without speculative model" in result.output
    assert '"method": "mtp"' in result.output


def test_speculative_method_from_a_local_draft_config(tmp_path):
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(
        json.dumps({"model_type": "deepseek_mtp", "architectures": ["DeepSeekMTPModel"]})
    )
    assert infer_method(None, str(draft)).method == "mtp"
    (draft / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    assert infer_method(None, str(draft)).method == "draft_model"


# --- input forms --------------------------------------------------------------------------------


def test_relative_config_file_from_another_directory(tmp_path, monkeypatch):
    (tmp_path / "serve.yaml").write_text("max-model-len: 350000\nblock-size: 64\n")
    monkeypatch.chdir(tmp_path)
    result = check(
        "--engine", "vllm==0.26.0", "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "--config", "serve.yaml"
    )
    assert "No such file" not in result.output
    assert result.exit_code == 1 and "W_buf=5469, W_bt=5470" in result.output, result.output


@pytest.mark.parametrize(
    "argv",
    [
        "docker run --runtime nvidia --gpus all -v /cache:/root/.cache/huggingface --env HF_TOKEN=x -p 8000:8000 --ipc=host "
        "vllm/vllm-openai:latest --model deepseek-ai/DeepSeek-V3.2 --max-model-len 350000 --block-size 64",
        "docker run --gpus all vllm/vllm-openai:v0.26.0 deepseek-ai/DeepSeek-V3.2 --max-model-len 350000 --block-size 64",
    ],
)
def test_docker_run_vllm_openai_lines_are_read(argv):
    cfg = parse_serve_args(argv.split())
    assert cfg.model == "deepseek-ai/DeepSeek-V3.2" and cfg.max_model_len == 350000 and cfg.block_size == 64


def test_docker_image_tag_selects_the_release_checked():
    """vllm/vllm-openai:v0.26.0 runs vLLM 0.26.0: without --engine that release's formulas apply
    (checking the newest would call the reported crash safe); --engine still wins."""
    line = [
        "docker",
        "run",
        "--gpus",
        "all",
        "vllm/vllm-openai:v0.26.0",
        "deepseek-ai/DeepSeek-V3.2",
        "--max-model-len",
        "350000",
        "--block-size",
        "64",
    ]
    result = check("--", *line)
    assert result.exit_code == 1 and "W_buf=5469, W_bt=5470" in result.output, result.output
    assert "engine vLLM 0.26.0: from the image tag vllm/vllm-openai:v0.26.0" in result.output
    unknown = check("--", "docker", "run", "vllm/vllm-openai:v0.10.0", "m")
    assert unknown.exit_code == 4 and "does not model that vLLM release" in unknown.output


def test_sglang_launch_forms_are_read():
    from capproof.engines.sglang.launch import parse_launch_args

    for argv in (
        ["python", "-m", "sglang.launch_server", "--model-path", "m", "--context-length", "4096"],
        ["sglang", "serve", "--model-path", "m", "--context-length", "4096"],
        [
            "docker",
            "run",
            "--gpus",
            "all",
            "--shm-size",
            "32g",
            "-p",
            "30000:30000",
            "--ipc=host",
            "lmsysorg/sglang:latest",
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "m",
            "--context-length",
            "4096",
        ],
    ):
        cfg = parse_launch_args(argv)
        assert cfg.model == "m" and cfg.values["context_len"] == 4096


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp", "2"],
        ["sglang", "serve", "--model-path", "Qwen/Qwen3-8B"],
    ],
)
def test_sglang_line_is_refused_with_another_engine(argv):
    wrong = check("--engine", "vllm", "--", *argv)
    assert wrong.exit_code == 4, wrong.output
    assert "give --engine sglang before '--'" in wrong.output


@pytest.mark.slow  # two whole SGLang deployments; the fast tier picks the engine of a `sglang serve` line below
@pytest.mark.parametrize(
    "argv",
    [
        ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp", "2"],
        ["sglang", "serve", "--model-path", "Qwen/Qwen3-8B"],
    ],
)
def test_sglang_line_picks_the_engine_unless_engine_says_otherwise(argv):
    result = check("--", *argv)
    assert result.exit_code in (0, 2) and "SGLang 0.5.23" in result.output.splitlines()[0], result.output
    assert "engine SGLang 0.5.23: from the launch command" in result.output


@pytest.mark.slow  # a whole SGLang deployment; the next test checks the same defaults on a `sglang serve` line fast
def test_sglang_defaults_it_leaves_free_are_not_printed_as_an_empty_list():
    """No --max-running-requests / --cuda-graph-max-bs: SGLang picks them from GPU memory."""
    result = check("--engine", "sglang", "--", "python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B")
    assert result.exit_code == 2 and result.output.startswith("undecided"), result.output
    assert "rests on a default: req_pool_size (any value) (not given" in result.output
    assert " in []" not in result.output


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(("--spec", "spec/sglang_0_5_23_buffers.py"), id="buffers-spec"),
        # the whole spec/ at this line: 51 obligations, a whole SGLang deployment
        pytest.param((), id="whole-spec", marks=pytest.mark.slow),
    ],
)
def test_sglang_line_is_not_safe_while_its_backend_buffers_are_undecided(tmp_path, spec):
    """A plain Qwen3-8B line proves its applied obligations (Triton's decode-graph KV indices among
    them), but the index buffers of the attention backends it may run (SGLang's defaults, or the one
    named) have no verdict: the answer is undecided (exit 2) and names them, in the text and in --json."""
    out = tmp_path / "out.json"
    result = check(*spec, "--json", str(out), "--", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B")
    assert result.exit_code == 2 and result.output.startswith("undecided (not proved safe)"), result.output
    assert "SGLang 0.5.23" in result.output.splitlines()[0]
    assert "engine SGLang 0.5.23: from the launch command" in result.output  # no --engine given
    # no --max-running-requests / --cuda-graph-max-bs: SGLang picks them from GPU memory
    assert "rests on a default: req_pool_size (any value) (not given" in result.output
    assert " in []" not in result.output
    assert re.search(
        r"not safe because \d+ index buffers of the attention backend triton this line runs", result.output
    )
    data = json.loads(out.read_text())
    assert data["verdict"] == "undecided" and data["exit_code"] == 2
    groups = data["undecided_buffers"]
    assert set(groups) == {
        "attention backends fa3, fa4",
        "attention backend flashinfer",
        "attention backend triton",
        "attention backend trtllm_mha",
    }
    assert (
        "sglang/srt/layers/attention/flashinfer_backend.py::FlashInferAttnBackend.cuda_graph_kv_indices[]"
        in (groups["attention backend flashinfer"])
    )
    # the obligation proved at this line (Triton's decode-graph KV indices) decides its buffer
    assert not any(i.endswith("TritonAttnBackend.cuda_graph_kv_indices") for i in groups["attention backend triton"])
    named = check(*spec, "--", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B", "--attention-backend", "triton")
    assert named.exit_code == 2 and "attention backend flashinfer" not in named.output, named.output
    assert "index buffers of the attention backend triton this line runs" in named.output


def test_sglang_undecided_backend_buffers_per_model_kind():
    """flashinfer runs FlashInferMLAAttnBackend for an MLA model (SGLang's registry), and a buffer a
    proved obligation covers at this line is decided."""
    from types import SimpleNamespace

    from capproof.engines.sglang.deployment import undecided_backend_buffers
    from capproof.verdict import Verdict

    mha = undecided_backend_buffers(["flashinfer"], False, [], "0.5.23")
    mla = undecided_backend_buffers(["flashinfer"], True, [], "0.5.23")
    assert all("/flashinfer_backend.py::" in i for i in mha["attention backend flashinfer"])
    assert mla["attention backend flashinfer"] and all(
        "/flashinfer_mla_backend.py::" in i for i in mla["attention backend flashinfer"]
    )
    first = mha["attention backend flashinfer"][0]
    proved = SimpleNamespace(
        applicable=True, result=SimpleNamespace(verdict=Verdict.PROVED), obligation=SimpleNamespace(covers=[first])
    )
    assert (
        first
        not in undecided_backend_buffers(["flashinfer"], False, [proved], "0.5.23")["attention backend flashinfer"]
    )
    # a backend without a file in the table: none of its buffers is checked, so it blocks "safe"
    unmapped = undecided_backend_buffers(["dsv4"], True, [], "0.5.23")
    assert list(unmapped) == ["attention backend dsv4"] and "no table" in unmapped["attention backend dsv4"][0]
    # a backend class's parent-class buffers are its own: trtllm_mla runs FlashInferMLAAttnBackend.__init__
    trtllm = undecided_backend_buffers(["trtllm_mla"], True, [], "0.5.23")["attention backend trtllm_mla"]
    assert {i.split("::")[0].rsplit("/", 1)[-1] for i in trtllm} == {
        "trtllm_mla_backend.py",
        "flashinfer_mla_backend.py",
    }


# --- machine-readable output (one run shared) ----------------------------------------------------


@pytest.fixture(scope="module")
def crash_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("json")
    sarif = out / "check.sarif"
    result = CliRunner().invoke(
        main,
        [
            "check-config",
            "--engine",
            "vllm==0.26.0",
            "--json",
            "-",
            "--sarif",
            str(sarif),
            "--",
            "vllm",
            "serve",
            "deepseek-ai/DeepSeek-V3.2",
            "-tp",
            "8",
            "--max-model-len",
            "350000",
            "--block-size",
            "64",
        ],
    )
    return result, json.loads(result.output), json.loads(sarif.read_text())


def test_json_has_verdict_exit_code_obligations_assumed_and_not_checked(crash_json):
    result, data, _ = crash_json
    assert result.exit_code == 1 and data["verdict"] == "will fail" and data["exit_code"] == 1
    failing = [o for o in data["obligations"] if o["verdict"] == "counterexample"]
    assert failing and failing[0]["counterexample"]["values"] == {"W_buf": 5469, "W_bt": 5470}
    assert {o["kind"] for o in data["obligations"]} <= {"verified", "shape-checked"}
    assert data["model_config"]["values"]["index_topk"] == 2048 and "huggingface.co" in data["model_config"]["source"]
    assert all({"id", "why", "give"} <= set(n) for n in data["not_checked"])
    assert isinstance(data["assumed"], list) and isinstance(data["give"], list)


def test_sarif_lists_the_failing_obligation(crash_json):
    _, _, sarif = crash_json
    results = sarif["runs"][0]["results"]
    assert any("ebt_width_matches_runner_before_50302" in r["message"]["text"] for r in results)
    assert sarif["runs"][0]["invocations"][0]["exitCode"] == 1


def test_a_will_fail_names_the_release_that_changed_the_formula(crash_json):
    _, data, _ = crash_json
    failing = next(o for o in data["obligations"] if o["verdict"] == "counterexample")
    assert failing["formula_changed_in"] == "0.27.0"


def test_a_will_fail_names_a_nearby_max_model_len_that_holds(crash_json):
    """350000 tokens fail (5469 blocks vs 5470); the solver proves the obligation at 349952 (5468
    blocks of 64, a 128-token multiple), the nearest rounding down."""
    _, data, _ = crash_json
    failing = next(o for o in data["obligations"] if o["verdict"] == "counterexample")
    assert failing["holds_at_max_model_len"] == 349952


def test_a_closed_pipe_keeps_the_verdicts_exit_code():
    """`capproof check-config … | head -1`: rich exits 1 on a broken pipe by default, which would
    read as "will fail"; the exit code stays the verdict's (here undecided: 2)."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "capproof",
            "check-config",
            "--engine",
            "vllm==0.26.0",
            "--",
            "vllm",
            "serve",
            "my-org/private",
            "--max-model-len",
            "350000",
            "--block-size",
            "64",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    proc.stdout.close()  # closed before the answer is printed: every write meets a broken pipe
    assert proc.wait(timeout=120) == 2


def test_quiet_after_the_subcommand_prints_the_verdict_and_the_failure():
    result = CliRunner().invoke(
        main,
        [
            "check-config",
            "-q",
            "--engine",
            "vllm==0.26.0",
            "--",
            "vllm",
            "serve",
            "deepseek-ai/DeepSeek-V3.2",
            "--max-model-len",
            "350000",
            "--block-size",
            "64",
        ],
    )
    assert result.exit_code == 1
    assert result.output.startswith("will fail") and "W_buf=5469" in result.output
    assert "safe    " not in result.output and "n/a" not in result.output


@pytest.mark.parametrize(
    "tail, engine_word",
    [
        (["-q"], "vLLM 0.33.0's own -q needs a value"),  # vLLM's -q is --quantization
        (["-v"], "vLLM 0.33.0 has no -v"),
        (["-qq", "--block-size", "16"], "vLLM 0.33.0 has no -qq"),
    ],
)
def test_quiet_or_verbose_after_dashdash_says_capproofs_goes_before(tail, engine_word):
    """``check-config -- vllm serve M -q`` said only "-q needs a value"."""
    result = check("--", "vllm", "serve", "Qwen/Qwen3-8B", *tail)
    assert result.exit_code == 4, result.output
    text = " ".join(result.output.split())
    assert text.startswith(f"error: {tail[0]} after '--' belongs to the launch line, where {engine_word}")
    assert "capproof's -q/-v go before '--'" in text
    # vLLM's -q with a value is vLLM's (a quantization method), not capproof's
    assert "capproof's -q/-v" not in check("--", "vllm", "serve", "Qwen/Qwen3-8B", "-q", "fp8", "-tp", "0").output


def test_dockers_own_v_before_the_image_is_dockers_volume_not_capproofs_verbose():
    """vLLM's and SGLang's documented docker lines mount the Hugging Face cache with ``-v``: that
    ``-v`` is docker's (before the image); only a ``-v`` among the engine's arguments is capproof's."""
    docker = ["docker", "run", "--gpus", "all", "-v", "~/.cache/huggingface:/root/.cache/huggingface", "--ipc=host"]
    line = [*docker, "vllm/vllm-openai:v0.33.0", "--model", "Qwen/Qwen3-8B"]
    result = check("--", *line, "-tp", "0")  # -tp 0: vLLM refuses it, so the answer comes before proving
    assert result.exit_code == 4, result.output
    assert "capproof's -q/-v" not in result.output and "tensor" in result.output.lower()
    after = check("--", *line, "-v")
    assert after.exit_code == 4 and "capproof's -q/-v go before '--'" in " ".join(after.output.split())


def test_verbose_check_config_names_where_its_obligations_come_from_and_the_time(tmp_path):
    spec = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec", "vllm_block_table.py")
    result = CliRunner().invoke(
        main, ["-v", "check-config", "--spec", spec, "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"]
    )
    assert result.exit_code in (0, 2), result.output
    assert "capproof: root " in result.output and "--spec " in result.output and "read as vllm 0.33.0" in result.output
    assert re.search(r"capproof: \d+ obligations decided of \d+ in \d+\.\d s", result.output), result.output
    quiet = CliRunner().invoke(
        main, ["check-config", "--spec", spec, "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"]
    )
    assert "capproof: root" not in quiet.output


def test_worker_processes_give_the_same_answer_as_one_process():
    """check-config decides its obligations in -j forked processes: the answer does not depend on it."""
    spec = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec", "vllm_block_table.py")
    line = ["--", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "-tp", "8", "--block-size", "64"]
    answers = []
    for jobs in ("1", "2"):
        result = check("-j", jobs, "--spec", spec, "--json", "-", *line)
        data = json.loads(result.output)
        verdicts = [(o["id"], o.get("verdict"), o.get("counterexample")) for o in data["obligations"]]
        answers.append((result.exit_code, data["verdict"], verdicts))
    assert len(answers[0][2]) > 2 and answers[0] == answers[1]


@pytest.mark.parametrize("option", ["--json", "--sarif"])
def test_an_output_file_that_cannot_be_written_is_refused_before_proving(option, tmp_path):
    """``--json /nonexistent/dir/x.json`` ran the whole check (minutes), then failed to write."""
    missing = str(tmp_path / "no-such-dir" / "x.json")
    for path, why in ((missing, "no such directory"), (str(tmp_path), "it is a directory")):
        result = check(option, path, "--", "vllm", "serve", "Qwen/Qwen3-8B")
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 4 and len(lines) == 1, result.output
        assert lines[0].startswith(f"error: {option} {path}: cannot write: {why}")


@pytest.mark.parametrize("tp, dcp", [("1", "4"), ("8", "16"), ("6", "4")])
def test_a_dcp_that_does_not_divide_tp_is_refused_as_vllm_refuses_it(tp, dcp):
    """vLLM's ParallelConfig raises ``tp_size=1 must be divisible by dcp_size=4`` at startup;
    the line was checked as if it started (will fail, or undecided "dcp=16 outside")."""
    line = ["vllm", "serve", "zai-org/GLM-5.2", "-tp", tp, "-dcp", dcp, "--max-model-len", "480000"]
    result = check("--engine", "vllm==0.26.0", "--", *line, "--block-size", "64")
    assert result.exit_code == 4, result.output
    assert result.output.startswith(f"error: -dcp {dcp} does not divide -tp {tp}: vLLM refuses the line at startup")
    # with prefill context parallelism on, DCP may span it: not refused here
    assert "does not divide" not in check("--engine", "vllm==0.26.0", "--", *line, "-pcp", "4").output


def test_the_summary_counts_obligations_as_the_inventory_line_counts_buffers():
    """An SGLang line said "0 verified and 1 only shape-checked" above "0 verified, 1 on a demand
    modelled in spec/, 0 shape-only" for the same obligation."""
    spec = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec", "sglang_0_5_23_buffers.py")
    result = check("--spec", spec, "--", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B")
    text = " ".join(result.output.split())
    assert (
        "of these 0 verified, 1 on a demand modelled in spec/, 0 on an assumed fact about the engine and "
        "0 only shape-checked" in text
    ), result.output
    assert (
        "0 verified (demand derived from the engine's accesses), 1 on a demand modelled in spec/, 0 on a derived "
        "demand and an assumed (unchecked) fact about the engine, 0 shape-only" in text
    )


def test_sarif_to_stdout_leaves_stdout_to_the_sarif():
    """``--sarif - … | jq`` failed: the human answer followed the SARIF on stdout."""
    spec = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec", "vllm_dsa_indexer.py")
    line = ["--", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "-tp", "8", "--max-model-len", "350000"]
    result = check("--engine", "vllm==0.26.0", "--spec", spec, "--sarif", "-", *line, "--block-size", "64")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["version"] == "2.1.0"
    assert result.stderr.startswith("will fail")
    both = check("--json", "-", "--sarif", "-", *line)
    assert both.exit_code == 4 and "only one of them can have stdout" in both.output


@pytest.mark.parametrize("version", ["0.26.1rc1", "0.27.0.dev3", "0.26.0.post1", "0.26.2"])
def test_a_vllm_build_that_is_no_published_release_is_refused_not_checked_as_its_neighbour(version):
    """Corpus A2's reported deployment on vLLM 0.26.1rc1 (after #50302, 8192 vs 16384) was answered
    safe: the pre-release was checked with 0.26.x's formulas."""
    line = ["vllm", "serve", "zai-org/GLM-5.2", "-tp", "8", "-dcp", "2", "--max-model-len", "1M", "--block-size", "64"]
    line += ["--kv-cache-dtype", "fp8_ds_mla", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 5}']
    result = check("--engine", f"vllm=={version}", "--", *line)
    assert result.exit_code == 4, result.output
    assert f"{version} is not a published vLLM release capproof models" in result.output
    assert "safe" not in result.output.partition("models (")[0]
    assert check("--engine", "vllm==0.27", "--", "vllm", "serve", "m", "-tp", "0").output.startswith(
        "error: --tensor-parallel-size"
    )  # 0.27 is 0.27.0, a release


@pytest.mark.slow  # two check-config runs (2-3 s); the undecided-naming-the-gap answer stays fast (the Ascend CI line below)
def test_a_gated_delta_net_model_with_speculative_decoding_is_not_safe(tmp_path, monkeypatch):
    """Corpus C5 (vllm-project/vllm#50021, #48475 open): a Qwen3-Next GDN model from its local
    directory with MTP 5 was safe; the GDN kernels read the state index at num_accepted_tokens - 1,
    -1 on a row with no accepted token, and no obligation models it."""
    model = tmp_path / "qwen3-next"
    model.mkdir()
    config = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "linear_num_value_heads": 32}
    (model / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 262144}))
    monkeypatch.chdir(tmp_path)
    spec = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec", "vllm_block_table.py")
    line = ["vllm", "serve", "./qwen3-next", "-tp", "4", "--max-model-len", "32768"]
    mtp = ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 5}']
    result = check("--spec", spec, "--", *line, *mtp)
    assert result.exit_code == 2 and result.output.startswith("undecided"), result.output
    assert "give a verdict on the gated-delta-net state index read at num_accepted_tokens - 1" in result.output
    assert "gated-delta-net" not in check("--spec", spec, "--", *line).output  # no speculative decoding


def test_json_on_bad_input_is_still_json():
    result = check("--json", "-", "--", "vllm", "serve")
    assert result.exit_code == 4
    first = result.output[: result.output.index("}") + 1]
    assert json.loads(first)["verdict"] == "bad input"


def test_ascend_ci_line_of_the_arange_report_is_undecided_naming_the_fix_not_safe():
    """Corpus C2 (vllm-project/vllm-ascend#16316): the weekly Ascend CI job, max_num_seqs 60,
    max_num_batched_tokens 240, MTP 3: 60 x 4 = 240 tokens need 241 entries of the proposer's
    240-entry arange. Which vLLM-Ascend release first ships the fix is not known to capproof, so
    the answer names that fact (undecided, exit 2) instead of "safe"; without speculative decoding
    the obligation does not apply."""
    line = ["vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "-dp", "16", "-tp", "1", "--max-num-seqs", "60"]
    line += ["--max-num-batched-tokens", "240"]
    spec = ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 3}']
    result = check("--engine", "vllm-ascend==0.26.0", "--", *line, *spec)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided")
    assert "vllm-project/vllm-ascend#16316" in result.output and "arange_covers_token_query_start_loc_before_16316" in (
        result.output
    )
    plain = check("--engine", "vllm-ascend==0.26.0", "--", *line)
    assert "arange_covers_token_query_start_loc_before_16316" not in plain.output.split("not checked")[0]


@pytest.mark.slow  # a whole GLM-5.2 deployment; the next test checks the backend-buffer matching fast
def test_a_chosen_backend_whose_buffers_nothing_checks_is_not_safe():
    """Corpus D2 (vllm-project/vllm#50781, open): GLM-5.2 on B200 with FLASHINFER_MLA_SPARSE and
    DCP 8 overflows FlashInfer's 394 MiB workspace, a buffer no obligation checks. A line that
    picks that backend is undecided, naming the buffers; a backend vLLM selects itself is not
    held to this (its buffers are listed under 'not checked')."""
    line = ["vllm", "serve", "zai-org/GLM-5.2", "-tp", "8", "-dcp", "8", "--max-num-batched-tokens", "16384"]
    result = check("--gpu", "B200", "--", *line, "--attention-backend", "FLASHINFER_MLA_SPARSE", "--block-size", "64")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided")
    assert "chosen --attention-backend FLASHINFER_MLA_SPARSE" in result.output
    assert "flashinfer_mla_sparse.py::_get_workspace_buffer._fi_sparse_workspace" in result.output


def test_backend_buffers_without_verdict_match_the_backend_module_and_its_arch_variant():
    from capproof.engines.vllm.deployment import backend_buffers_without_verdict

    uncovered = [
        "vllm/v1/attention/backends/flashinfer.py::FlashInferMetadataBuilder._workspace_buffer",
        "vllm/v1/attention/backends/mla/flashinfer_mla.py::_get_workspace_buffer._fi_workspace",
        "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py::_SM90State.workspace",
        "vllm/model_executor/layers/fused_moe/moe_align_block_size.py::moe_align_block_size.scatter_idx",
    ]
    assert backend_buffers_without_verdict("FLASHINFER", uncovered) == uncovered[:1]
    assert backend_buffers_without_verdict("flashinfer_mla_sparse", uncovered) == uncovered[2:3]
    assert backend_buffers_without_verdict(None, uncovered) == []
