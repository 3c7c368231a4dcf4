"""SGLang launch lines as SGLang's own documentation writes them, through the real command line
(``python -m capproof check-config -- ...`` in a subprocess): the verdict's exit code (safe 0, will
fail 1, undecided 2, crash 3, bad input 4) and the line that justifies it.

The EAGLE-2 line is the docs' speculative-decoding example (steps 3, top-k 4, 16 draft tokens,
``--mem-fraction`` as an abbreviation of ``--mem-fraction-static``, which SGLang's argparse
accepts). Its 16 draft tokens exceed ``steps * topk + 1`` (13): the request-row obligations must
still apply to it (SGLang picks the draft tokens among ``topk + (steps - 1) * topk^2`` candidates,
``speculative/eagle_utils.py::organize_draft_results``), and they reach the known req_to_token
finding (docs/findings.md) at page size 1. The whole-deployment runs are in the slow tier; the bad
input answers at argument parsing (fast)."""

from __future__ import annotations

import subprocess
import sys

import pytest

EAGLE2 = [
    "python3",
    "-m",
    "sglang.launch_server",
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
    "--mem-fraction",
    "0.7",
    "--cuda-graph-max-bs-decode",
    "8",
    "--dtype",
    "float16",
]


def _check(*line: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "capproof", "check-config", "--", *line],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow  # a whole-deployment check-config run in a subprocess
def test_docs_eagle2_line_reaches_the_request_row_obligations():
    code, out = _check(*EAGLE2)
    assert code == 2, out
    assert "VACUOUS" not in out
    assert "MAYFAIL spec/sglang_0_5_23_buffers.py::sglang_decode_alloc_row__ReqToTokenPool_req_to_token" in out
    assert "give --page-size N" in out


@pytest.mark.slow  # a whole-deployment check-config run in a subprocess
def test_docs_eagle2_line_at_page_size_1_will_fail():
    code, out = _check(*EAGLE2, "--page-size", "1")
    assert code == 1, out
    assert out.startswith("will fail: SGLang 0.5.23, speculative_num_steps=3, speculative_eagle_topk=4")
    assert "nxt=131093, req_to_token[1]=131092" in out


@pytest.mark.slow  # a whole-deployment check-config run in a subprocess
def test_docs_tp_line_with_sglang_serve_is_undecided_not_safe():
    code, out = _check("sglang", "serve", "--model-path", "Qwen/Qwen3-8B", "--tp", "2", "--port", "30000")
    assert code == 2, out
    assert out.startswith("undecided (not proved safe): SGLang 0.5.23, tp=2")
    assert "flags no applied obligation reads: --tp-size, --port" in out


@pytest.mark.parametrize(
    "flag, value, message",
    [
        # SGLang 0.5.23's argparse: "unrecognized arguments" (no suggestion on Python 3.11)
        ("--context-lenght", "4096", "did you mean --context-length"),
        # SGLang 0.5.23's argparse: "ambiguous option: --cuda-graph-max-bs could match
        # --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"
        ("--cuda-graph-max-bs", "8", "could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"),
    ],
)
def test_bad_arguments_are_bad_input(flag, value, message):
    code, out = _check("python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", flag, value)
    assert code == 4, out
    assert message in out
    assert out.count("\n") <= 2  # one line, no traceback
