"""check-config on a vllm serve line that reaches the chunked-local-attention finding (docs/findings.md):
a model with attention_chunk_size on FlashInfer is told "will fail"; without FlashInfer, or on a
model without chunked local attention, the obligations do not apply."""

import json

import pytest
from click.testing import CliRunner

from capproof.cli import main

SPEC = "spec/vllm_0_33_local_attention.py"
#: The fields of Llama-4-Scout's config.json check-config reads (its text config holds the chunk).
LLAMA4 = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text",
        "attention_chunk_size": 8192,
        "hidden_size": 5120,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "max_position_embeddings": 10485760,
    },
}
LINE = ["m", "--max-num-seqs", "1", "--max-num-batched-tokens", "5000", "--max-model-len", "16384"]


def check(tmp_path, config, *flags):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return CliRunner().invoke(
        main,
        [
            "check-config",
            "--engine",
            "vllm==0.33.0",
            "--spec",
            SPEC,
            "-j",
            "1",
            "--model-config",
            str(tmp_path),
            "--",
            *LINE,
            *flags,
        ],
    )


@pytest.mark.slow
def test_llama4_on_flashinfer_will_fail_with_two_virtual_requests(tmp_path):
    result = check(tmp_path, LLAMA4, "--attention-backend", "FLASHINFER")
    assert result.exit_code == 1, result.output
    assert result.output.startswith("will fail: vLLM 0.33.0")
    assert (
        "FAILS   spec/vllm_0_33_local_attention.py::chunked_local_rows_fit_paged_kv_last_page_len: rows <= capacity fails: rows=2, capacity=1"
        in result.output
    )
    assert (
        "smallest triggering batch: attention_chunk_size=8192, num_reqs=1, query_len=2, seq_len=8193" in result.output
    )
    assert "chunked_local_attention=yes (from text_config.attention_chunk_size)" in result.output


def test_without_flashinfer_the_finding_does_not_apply(tmp_path):
    result = check(tmp_path, LLAMA4)
    assert (
        "chunked_local_rows_fit_paged_kv_indptr: does not apply to this deployment: it needs the FlashInfer attention backend chosen (--attention-backend FLASHINFER)"
        in result.output
    )
    assert "will fail" not in result.output


def test_without_chunked_local_attention_the_finding_does_not_apply(tmp_path):
    dense = {**LLAMA4, "text_config": {k: v for k, v in LLAMA4["text_config"].items() if k != "attention_chunk_size"}}
    result = check(tmp_path, dense, "--attention-backend", "FLASHINFER")
    assert (
        "does not apply to this model" in result.output
        and "chunked local attention (attention_chunk_size" in result.output
    )
    assert "will fail" not in result.output
