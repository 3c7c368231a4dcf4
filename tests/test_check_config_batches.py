"""`capproof check-config` at the batch limits deployments use: batch-size generic
obligations raised to --max-num-seqs, bounded proofs not counted as safe, the inventory's
obligations for vLLM 0.33.0, and the headline's scope line. Real command lines: DeepSeek-V3.2 with
MTP (vLLM recipes), vLLM's H100 defaults (1024 requests) and a 65536-token budget."""

import json

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.engines.vllm.serve import parse_serve_args, user_capture_sizes

DSV32_MTP = [
    "vllm",
    "serve",
    "deepseek-ai/DeepSeek-V3.2",
    "-tp",
    "8",
    "--max-model-len",
    "163840",
    "--block-size",
    "64",
    "--kv-cache-dtype",
    "fp8_ds_mla",
    "-sc",
    '{"method": "mtp", "num_speculative_tokens": 1}',
]


def check(*args):
    return CliRunner().invoke(main, ["check-config", *args])


def _inventory():
    with open("proofs/inventory/vllm-0.33.0.json", encoding="utf-8") as fh:
        data = json.load(fh)
    return data.get("entries", []) if isinstance(data, dict) else data


@pytest.mark.slow
@pytest.mark.parametrize("seqs, tokens", [("256", "8192"), ("1024", "65536")])
def test_realistic_batch_limits_give_an_answer(seqs, tokens):
    """The batch obligations are decided at 256 and 1024 requests, not refused as `outside 1..64`:
    the batch-size generic ones (batch_axis) are raised to max_num_seqs and proved; the verdict
    says which rest on the aggregate abstraction (every batch size)."""
    result = check("--", *DSV32_MTP, "--max-num-seqs", seqs, "--max-num-batched-tokens", tokens)
    out = result.output
    assert "outside 1..64" not in out, out
    arange = next(l for l in out.splitlines() if "proposer_arange_covers_request_query_start_loc" in l)
    assert (
        arange.startswith("  safe")
        and f"batches of up to {seqs} requests; spec/ declares max_num_seqs in 1..64" in arange
    )
    indexer = next(l for l in out.splitlines() if "indexer_arange_buffer_covers_decode_slices" in l)
    assert indexer.startswith("  safe") and indexer.endswith("[proved for all batch sizes]")
    # the uniform-split chain (a walk over the batch) by induction: every batch size
    split = next(l for l in out.splitlines() if "padded_decode_rows_fit_0_33" in l)
    assert (
        split.startswith("  safe")
        and f"batches of up to {seqs} requests" in split
        and split.endswith("[proved for all batch sizes]")
    )
    # FlashInfer's page list on the aggregates (a mapped total): every batch size too
    assert "BOUNDED" not in out
    assert result.exit_code == 0 and out.startswith("safe"), out
    scope = out.splitlines()[1]
    assert (
        scope.startswith("  checked: ")
        and "on the aggregate abstraction, for every batch size" in scope
        and "NOT checked: " in scope
    )
    assert "1 by induction over the batch, for every batch size" in scope


BOUNDED_SPEC = """
from capproof import Range, obligation, at_most, all_of
from capproof.arith import total
from capproof.domain import Vector

D = {"max_num_reqs": Range(1, 4096), "max_num_batched_tokens": Range(1, 2**16), "num_reqs": Range(1, 4),
     "query_lens": Vector(4, Range(1, 2**16), length="num_reqs")}
FACTS = {"num_reqs <= max_num_reqs": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs,
         "budget": lambda query_lens, max_num_batched_tokens: total(query_lens) <= max_num_batched_tokens}

@obligation(domain=D, assumptions=FACTS, engine="vllm", versions="==0.33.0")
def tokens_fit_declared_lengths(max_num_reqs, max_num_batched_tokens, num_reqs, query_lens):
    return at_most(tokens=total(query_lens), capacity=max_num_batched_tokens)

@obligation(domain=D, assumptions=FACTS, engine="vllm", versions="==0.33.0")
def first_request_fits(max_num_reqs, max_num_batched_tokens, num_reqs, query_lens):
    return at_most(tokens=query_lens[0], capacity=max_num_batched_tokens)
"""


def test_bounded_batch_proofs_are_not_counted_as_safe(tmp_path):
    """A proof over batches of at most 4 requests does not cover --max-num-seqs 32, whichever
    encoding gave it: the bounded vectors (indexing: first_request_fits) or the aggregate
    abstraction over a length declared 1..4 (tokens_fit_declared_lengths). Both are BOUNDED,
    never safe; at --max-num-seqs 4 both cover the deployment."""
    spec = tmp_path / "bounded_spec.py"
    spec.write_text(BOUNDED_SPEC)
    argv = [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "8192",
        "--block-size",
        "16",
        "--max-num-batched-tokens",
        "2048",
    ]
    big = check("--spec", str(spec), "--", *argv, "--max-num-seqs", "32")
    lines = {
        name: next(l for l in big.output.splitlines() if name in l)
        for name in ("first_request_fits", "tokens_fit_declared_lengths")
    }
    assert (
        lines["first_request_fits"].startswith("  BOUNDED")
        and "at most 4 requests only (bounded encoding" in lines["first_request_fits"]
    )
    assert (
        lines["tokens_fit_declared_lengths"].startswith("  BOUNDED")
        and "at most 4 requests only (aggregate abstraction over the declared batch lengths"
        in lines["tokens_fit_declared_lengths"]
    )
    assert big.exit_code == 2 and "2 proved for smaller batches only (not counted)" in big.output, big.output
    small = check("--spec", str(spec), "--", *argv, "--max-num-seqs", "4")
    assert "BOUNDED" not in small.output and small.exit_code == 0, small.output
    assert small.output.startswith("safe")


@pytest.mark.slow
def test_flashinfer_page_list_is_proved_for_every_batch_size():
    """vLLM 0.33.0's FlashInfer paged_kv_indices (the sum of cdiv(seq_len, page_size) over the
    batch) is decided on the aggregates with a mapped total: safe at 256 and 1024 requests."""
    argv = [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "8192",
        "--block-size",
        "16",
        "--max-num-batched-tokens",
        "8192",
    ]
    for seqs in ("256", "1024"):
        out = check("--", *argv, "--max-num-seqs", seqs)
        assert out.exit_code == 0 and out.output.startswith("safe"), out.output
        assert "BOUNDED" not in out.output and "(1 on the aggregate abstraction, for every batch size)" in out.output


@pytest.mark.slow
def test_inventory_obligations_apply_to_their_release_only():
    """On vLLM 0.33.0 the inventory's obligations (spec/vllm_0_33_buffers.py, read at run time) are
    applied and summarised; on 0.32.0 none is, and the answer says the inventory is for 0.33.0."""
    entries = _inventory()
    covered = {e["id"] for e in entries if e.get("verdicts")}
    argv = [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "8192",
        "--block-size",
        "16",
        "--max-num-seqs",
        "4",
        "--max-num-batched-tokens",
        "2048",
    ]
    out = check("--", *argv).output
    summary = next(
        l
        for l in out.splitlines()
        if "inventory obligations (spec/vllm_0_33_buffers.py, spec/vllm_0_33_derived.py" in l
    )
    buffers = int(summary.split(" on ")[1].split(" buffers")[0])
    assert 0 < buffers <= len(covered)
    # what held is split by kind; shape-only proofs are not presented as safety
    kinds = {e["id"]: e.get("coverage") for e in entries}
    shape = int(summary.split("fact about the engine, ")[1].split(" shape-only")[0])
    assert summary.startswith("  proved  ") and " verified (demand derived" in summary
    assert 0 < shape <= sum(k == "shape-only" for k in kinds.values())
    uncovered = next(l for l in out.splitlines() if "inventory buffers of vLLM 0.33.0 with no verdict" in l)
    assert f"({len(entries) - len(covered)})" in uncovered
    old = check("--engine", "vllm==0.32.0", "--", *argv).output
    assert "inventory obligations" not in old and "vllm_0_33_buffers" not in old
    assert (
        "capproof's buffer inventory is for vllm-0.33.0 (proofs/inventory/): the pre-allocated buffers of vllm 0.32.0 are not listed"
        in old
    )


@pytest.mark.slow
def test_configuration_conditional_findings_apply_only_to_their_configuration():
    """The DFlash FULL-graph query rows (an expected counterexample on the V1 runner's path) apply
    only with DFlash, cudagraph_mode FULL and the V1 model runner: vLLM 0.33.0 runs DFlash on the V2
    runner unless VLLM_USE_V2_MODEL_RUNNER=0; with all three, the answer is `will fail` on that buffer."""
    argv = [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--max-model-len",
        "8192",
        "--block-size",
        "16",
        "--max-num-seqs",
        "256",
        "--max-num-batched-tokens",
        "2048",
    ]
    plain = check("--", *argv).output
    assert (
        "dflash_query_ids_full_graph_mixed__SpecDecodeBaseProposer_input_ids: does not apply to this deployment: it needs "
        "DFlash/DSpark speculative decoding"
    ) in plain
    dflash_full = (
        "--speculative-config",
        '{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 15}',
        "-cc",
        '{"cudagraph_mode": "FULL"}',
    )
    fails = "FAILS   spec/vllm_0_33_buffers.py::dflash_query_ids_full_graph_mixed__SpecDecodeBaseProposer_input_ids"
    v2 = check("--", *argv, *dflash_full).output
    assert fails not in v2
    assert (
        "dflash_query_ids_full_graph_mixed__SpecDecodeBaseProposer_input_ids: does not apply to this deployment: "
        "it needs the V1 model runner"
    ) in v2
    dflash = check("--", "VLLM_USE_V2_MODEL_RUNNER=0", *argv, *dflash_full)
    assert dflash.exit_code == 1, dflash.output
    assert fails in dflash.output


def test_user_capture_sizes_as_vllm_keeps_them():
    """vLLM 0.33.0 drops sizes above max_num_batched_tokens and rounds the rest up to 1 + K
    (kept when within the largest): the pinned max_cudagraph_capture_size is vLLM's, not the
    largest size given."""
    assert user_capture_sizes([1, 2, 4, 8, 16, 4096], 2048, 0) == ([1, 2, 4, 8, 16], [4096])
    assert user_capture_sizes([1, 2, 4, 8, 16], 2048, 3) == ([4, 8, 16], [])
    assert user_capture_sizes([1, 2], 2048, 3) == ([], [])  # vLLM raises: nothing fits after rounding
    cfg = parse_serve_args(
        [
            "vllm",
            "serve",
            "m",
            "-cc",
            '{"cudagraph_mode": "full", "cudagraph_capture_sizes": [4, 8]}',
            "-dp",
            "2",
            "-sc",
            '{"method": "eagle3", "num_speculative_tokens": 2, "parallel_drafting": true}',
        ]
    )
    assert (cfg.cudagraph_mode, cfg.dp, cfg.parallel_drafting, cfg.speculative_method) == ("FULL", 2, True, "eagle3")


EAGLE_LLAMA = [
    "vllm",
    "serve",
    "meta-llama/Llama-3.1-8B-Instruct",
    "--max-model-len",
    "8192",
    "--block-size",
    "16",
    "--speculative-config",
    '{"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}',
    "--max-num-seqs",
    "4",
    "--max-num-batched-tokens",
    "2048",
]


@pytest.mark.parametrize(
    "sizes",
    [
        ["--cudagraph-capture-sizes", "1", "2", "4", "8", "16", "4096"],
        ["--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 4096]}'],
    ],
)
@pytest.mark.slow
def test_capture_sizes_are_checked_member_by_member(sizes):
    """EAGLE (K = 3) with user capture sizes, as a flag or inside -cc: each size is a case of its own
    (not the maximum); vLLM's own handling is shown: 4096 dropped (above the token budget), the rest
    rounded to multiples of 4, max_cudagraph_capture_size 16."""
    result = check("--", *EAGLE_LLAMA, *sizes)
    assert result.exit_code == 0, result.output
    assert (
        "safe    spec/vllm_0_33_today.py::user_capture_sizes_fit_mnbt: holds for cudagraph_capture_size in [1, 2, 4, 8, 16, 4096]"
        in result.output
    )
    assert (
        "captures CUDA graphs of [4, 8, 16] tokens from your sizes [1, 2, 4, 8, 16, 4096] (drops [4096]: above "
        "max_num_batched_tokens)"
    ) in result.output and "max_cudagraph_capture_size=16" in result.output
    unused = [l for l in result.output.splitlines() if "flags no applied obligation reads" in l]
    assert not unused or sizes[0] not in unused[0]


@pytest.mark.slow
def test_gpu_gives_the_sm_count_for_sm_sized_workspaces():
    """DeepSeek-V3.2's DSA indexer and FlashMLA scheduler metadata are sized by num_sms, which vLLM
    reads from the GPU: without --gpu every GPU of capproof's table is checked (and the answer rests
    on that default); --gpu H100 checks both H100 products (PCIe 114, SXM5 132), --num-sms picks
    one; a GPU with no SM count in the table leaves them undecided (give --num-sms); an unknown GPU
    is one error line (exit 4, bad input)."""
    argv = [*DSV32_MTP, "--max-num-seqs", "256", "--max-num-batched-tokens", "8192"]
    without = check("--", *argv).output
    assert (
        "hardware: num_sms in [48, 108, 114, 132, 142, 148] (no --gpu: every GPU in capproof's table is checked)"
        in without
    )
    assert "rests on a default: num_sms in [48, 108, 114, 132, 142, 148]" in without
    assert "scheduler_metadata_buffer: an SM-count" not in without
    h100 = check("--gpu", "H100", "--", *argv).output
    assert "hardware: num_sms in [114, 132] (H100: NVIDIA H100 whitepaper" in h100
    assert "scheduler_metadata_buffer: an SM-count" not in h100 and "sm_rows 1" in h100
    assert "hardware: num_sms=148 (--num-sms)" in check("--num-sms", "148", "--", *argv).output
    b300 = check("--gpu", "B300", "--", *argv)
    assert "no SM count for B300" in b300.output
    assert b300.exit_code == 2 and "give --num-sms N" in b300.output  # never safe without the SM count
    bad = check("--gpu", "X100", "--", *argv)
    assert bad.exit_code == 4 and bad.output.startswith("error: --gpu 'X100': unknown GPU (known: A100,")


@pytest.mark.slow
def test_safe_headline_says_it_covers_what_was_checked():
    result = check("--", *EAGLE_LLAMA, "--enable-expert-parallel")
    first, scope = result.output.splitlines()[:2]
    assert first.startswith("safe (for what was checked, next line; the rest is listed under 'not checked')"), (
        result.output
    )
    assert scope.startswith("  checked: ") and "applied obligations proved for this deployment" in scope
    assert "1 given flags read by none" in scope and "inventory buffers with no obligation" in scope
