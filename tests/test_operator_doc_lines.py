"""Launch lines as SGLang's and vLLM's docs write them (docs/reference/operator-round.md, the second
round), through the real command line (``python -m capproof check-config -- ...`` in a
subprocess): the exit code (safe 0, will fail 1, undecided 2, bad input 4) and the line that
justifies it.

The bad inputs are answered while the line is read (fast); a whole-deployment check is in the
slow tier. What each answer rests on, from SGLang 0.5.23's own code:

- ``--attention-backend nsa`` is a deprecated name of ``dsa``: the registry's ``nsa`` entry builds
  the DSA backend (``layers/attention/attention_registry.py::_create_nsa_compat``), whose index
  buffers no obligation proves, so the line is not safe (it was "safe" on three MoE obligations);
- ``tokenspeed_mla`` runs ``cutedsl_mla`` (``arg_groups/serving_hook.py::_handle_deprecated_args``);
- argparse's ``choices`` (``--attention-backend fa5``) and ``json.loads`` of
  ``--json-model-override-args`` (``configs/model_config.py``) stop SGLang at startup;
- ``--chunked-prefill-size -1`` disables chunked prefill (``arg_groups/fields/schedule.py``);
- a config-file key of a deprecated valueless flag is refused by ``ConfigArgumentMerger``;
- ``get_context_length`` keeps the factor 1 when ``rope_scaling`` has
  ``original_max_position_embeddings``: the Qwen3 YaRN line of the docs needs
  ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`` in 0.5.23 (``_derive_context_length``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def _check(*args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "capproof", "check-config", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


SG = ("python3", "-m", "sglang.launch_server")
QWEN = (*SG, "--model-path", "Qwen/Qwen3-8B")


@pytest.mark.parametrize(
    "line, message",
    [
        (
            (
                "--engine",
                "sglang==0.4.0",
                "--",
                "python",
                "-m",
                "sglang.launch_server",
                "--model-path",
                "Qwen/Qwen3-8B",
            ),
            "error: --engine 'sglang==0.4.0': capproof models sglang 0.5.23 only",
        ),
        pytest.param(
            *(
                ("--engine", "vllm==0.4.0", "--", "vllm", "serve", "Qwen/Qwen3-8B"),
                "error: --engine 'vllm==0.4.0': capproof models vllm 0.18.0..0.33.0",
            ),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        pytest.param(
            *(("--", *QWEN, "--speculative-algoritm", "EAGLE"), "did you mean --speculative-algorithm"),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        pytest.param(
            *(("--", *QWEN, "--max-num-seqs", "256"), "unknown SGLang flag '--max-num-seqs'"),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        (("--", *QWEN, "--attention-backend", "fa5"), "--attention-backend 'fa5': invalid choice for SGLang 0.5.23"),
        pytest.param(
            *(("--", *QWEN, "--tp", "eight"), "--tp-size 'eight': not an integer"),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        (
            ("--", *QWEN, "--json-model-override-args", "{rope_scaling: 1}"),
            "--json-model-override-args: malformed JSON",
        ),
        pytest.param(
            *(
                (
                    "--",
                    "vllm",
                    "serve",
                    "Qwen/Qwen3-8B",
                    "--speculative-config",
                    '{"method": "eagle3", "num_speculative_tokens": 3',
                ),
                "--speculative-config: malformed JSON",
            ),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        pytest.param(
            *(("--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-length", "4096"), "did you mean --max-model-len"),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        pytest.param(
            *(
                ("--", *QWEN, "--context-length", "1000000"),
                "--context-length 1000000 is above the model's length, 40960",
            ),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        pytest.param(
            *(
                (
                    "--",
                    *QWEN,
                    "--json-model-override-args",
                    '{"rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}}',
                    "--context-length",
                    "131072",
                ),
                "--context-length 131072 is above the model's length, 40960",
            ),
            marks=pytest.mark.slow,  # the whole CLI start-up, ~2-4 s under load
        ),
        (
            (
                "--",
                "docker",
                "run",
                "--gpus",
                "all",
                "--ipc=host",
                "lmsysorg/sglang:v0.5.8-rocm700-mi35x",
                *SG,
                "--model-path",
                "deepseek-ai/DeepSeek-V3.2",
                "--tp",
                "8",
            ),
            "image lmsysorg/sglang:v0.5.8-rocm700-mi35x: runs SGLang 0.5.8; capproof models sglang 0.5.23 only",
        ),
    ],
)
def test_bad_lines_are_one_line_of_bad_input(line, message):
    code, out = _check(*line)
    assert code == 4, out
    assert out.startswith("error: ") and message in out, out
    assert out.count("\n") <= 2  # one line, no traceback


@pytest.mark.slow  # the whole CLI start-up, ~2-4 s under load
def test_a_config_file_key_sglang_refuses_is_bad_input(tmp_path):
    config = tmp_path / "sglang.yaml"
    config.write_text("model-path: deepseek-ai/DeepSeek-V3.2\ntp-size: 8\ndp-size: 8\nenable-dp-attention: true\n")
    code, out = _check("--", "sglang", "serve", "--config", str(config))
    assert code == 4, out
    assert "refuses the key 'enable-dp-attention' in a config file" in out


@pytest.mark.slow  # a whole-deployment check-config run in a subprocess
def test_the_deprecated_nsa_backend_is_the_dsa_backend_not_safe():
    code, out = _check(
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model",
        "deepseek-ai/DeepSeek-V3.2",
        "--tp",
        "8",
        "--dp",
        "8",
        "--enable-dp-attention",
        "--attention-backend",
        "nsa",
    )
    assert code == 2, out
    assert out.startswith("undecided (not proved safe): SGLang 0.5.23, tp=8, dp_size=8")
    assert "index buffers of the attention backend dsa this line runs are not verified or proved" in out


@pytest.mark.slow  # a whole-deployment check-config run in a subprocess
@pytest.mark.parametrize(
    "line, first, why",
    [
        # cutedsl_mla's class is a TRTLLMMLABackend, a FlashInferMLAAttnBackend: their buffers are its own
        (
            (*SG, "--model-path", "deepseek-ai/DeepSeek-R1", "--tp", "8", "--attention-backend", "cutedsl_mla"),
            "undecided (not proved safe): SGLang 0.5.23, tp=8",
            "index buffers of the attention backend cutedsl_mla this line runs are not verified",
        ),
        # tokenspeed_mla is renamed cutedsl_mla before the registry is asked
        (
            (*SG, "--model-path", "deepseek-ai/DeepSeek-R1", "--tp", "8", "--attention-backend", "tokenspeed_mla"),
            "undecided (not proved safe): SGLang 0.5.23, tp=8",
            "attention backend cutedsl_mla",
        ),
        # XPUAttentionBackend (xpu_backend.py): its decode-graph rows are checked, the rest named
        (
            (*QWEN, "--attention-backend", "intel_xpu", "--page-size", "64"),
            "undecided (not proved safe): SGLang 0.5.23, page_size=64",
            "attention backend intel_xpu this line runs",
        ),
        # -1 disables chunked prefill: read, not refused
        (
            (*QWEN, "--chunked-prefill-size", "-1", "--context-length", "40960", "--attention-backend", "flashinfer"),
            "undecided (not proved safe): SGLang 0.5.23, context_len=40960",
            "attention backend flashinfer this line runs",
        ),
        # an overridden max_position_embeddings is the length SGLang derives: not refused
        (
            (
                *QWEN,
                "--json-model-override-args",
                '{"max_position_embeddings": 131072}',
                "--context-length",
                "131072",
                "--attention-backend",
                "fa3",
            ),
            "undecided (not proved safe): SGLang 0.5.23, context_len=131072",
            "attention backend fa3 this line runs",
        ),
        # the docs' DeepSeek-V3.2 MTP line: the model override picks the backend
        (
            (
                *SG,
                "--model-path",
                "deepseek-ai/DeepSeek-V3.2-Exp",
                "--tp",
                "8",
                "--dp",
                "8",
                "--enable-dp-attention",
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "3",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "4",
            ),
            "undecided (not proved safe): SGLang 0.5.23, tp=8, dp_size=8, speculative_num_steps=3",
            "give --attention-backend NAME (SGLang 0.5.23's model override for DeepseekV32ForCausalLM",
        ),
        # corpus F10's shape (DP attention, attention-TP gather off, 100 requests): not safe
        (
            (
                *SG,
                "--model-path",
                "meta-llama/Llama-3.1-70B-Instruct",
                "--tp",
                "8",
                "--dp",
                "8",
                "--enable-dp-attention",
                "--disable-attn-tp-gather",
                "--max-running-requests",
                "100",
                "--attention-backend",
                "flashinfer",
            ),
            "undecided (not proved safe): SGLang 0.5.23, tp=8, dp_size=8, max_running_requests=100",
            "attention backend flashinfer this line runs",
        ),
        # the docker quickstart with a release tag: that release, said so
        (
            (
                "docker",
                "run",
                "--gpus",
                "all",
                "--ipc=host",
                "lmsysorg/sglang:v0.5.23-cu129",
                *QWEN,
                "--attention-backend",
                "fa3",
            ),
            "undecided (not proved safe): SGLang 0.5.23, no sizing flags",
            "engine SGLang 0.5.23: from the image tag lmsysorg/sglang:v0.5.23-cu129",
        ),
    ],
)
def test_doc_lines_are_not_safe_and_say_why(line, first, why):
    code, out = _check("--", *line)
    assert code == 2, out
    assert out.startswith(first), out
    assert why in out, out
    assert "VACUOUS" not in out


@pytest.mark.slow  # a whole-deployment check-config run in a subprocess
def test_docs_eagle_flashinfer_line_at_page_size_1_will_fail():
    """The EAGLE-2 line with FlashInfer at page size 1: the known req_to_token finding
    (docs/findings.md), 131093 vs 131092 at Llama 3.1's 131072 tokens."""
    code, out = _check(
        "--",
        *SG,
        "--model-path",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-draft-model-path",
        "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "4",
        "--speculative-num-draft-tokens",
        "16",
        "--attention-backend",
        "flashinfer",
        "--page-size",
        "1",
    )
    assert code == 1, out
    assert out.startswith("will fail: SGLang 0.5.23, speculative_num_steps=3, speculative_eagle_topk=4")
    assert "nxt=131093, req_to_token[1]=131092" in out


@pytest.mark.real
def test_backend_parent_files_are_the_wheels_class_statements():
    """``BASE_FILES``: each file's main backend class subclasses a class of the parent file and its
    ``__init__`` calls ``super().__init__`` (so the parent's buffers are allocated), read from
    SGLang 0.5.23's source."""
    import ast
    import os

    from capproof.engines.sglang.deployment import ATTENTION, BACKEND_FILES, BASE_FILES
    from capproof.engines.vllm import wheels

    try:
        wheels.fetch_version("sglang", "0.5.23", download=False)
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    root = os.path.join(wheels.source_root("sglang", "0.5.23"), *ATTENTION.split("/"))

    def classes(name):
        with open(os.path.join(root, name), encoding="utf-8") as fh:
            return [n for n in ast.parse(fh.read()).body if isinstance(n, ast.ClassDef)]

    for child, parent in BASE_FILES.items():
        parents = {c.name for c in classes(parent)}
        mains = [c for c in classes(child) if c.name.endswith("Backend") and "Draft" not in c.name]
        main = mains[0]
        assert any(getattr(b, "id", None) in parents for b in main.bases), (child, main.name)
        init = next(f for f in main.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
        assert "super().__init__" in ast.unparse(init), child
    files = {f for pair in BACKEND_FILES.values() for f in pair}
    assert set(BASE_FILES) <= files | set(BASE_FILES.values())
