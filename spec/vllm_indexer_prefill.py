"""N1 `vllm-indexer-prefill-chunk-split`: the DSA indexer prefill splitter vs its K workspace.

The splitter is an algorithm with data-dependent loops, so its contract is checked by CrossHair
(bounded batches of up to 4 requests); the arithmetic fact its safety rests on, that no single
request's compressed length exceeds the workspace budget, is proved by Z3 for every config.
"""

from capproof import Choice, Range, at_most, cdiv, claim, contract, obligation
from models.vllm.indexer_prefill import default_prefill_workspace_factor, get_max_prefill_buffer_size

contracts = [
    contract("models/vllm/indexer_prefill.py::first_revision_chunks_fit", expect="counterexample",
             case="vllm-indexer-prefill-chunk-split", sources=["vllm-project/vllm#25999"]),
    # CrossHair exhausts this path tree in about 30 s on one core: give it room.
    contract("models/vllm/indexer_prefill.py::chunks_fit_workspace", crosshair_timeout=120,
             case="vllm-indexer-prefill-chunk-split", sources=["vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py"]),
    contract("models/vllm/indexer_prefill.py::chunks_fit_workspace_any_request", expect="counterexample",
             case="vllm-indexer-prefill-chunk-split", sources=["vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py"]),
]


@obligation(
    domain={
        "max_model_len": Range(1, 2**21),
        "compress_ratio": Choice(1, 4, 128),
        "num_speculative_tokens": Range(0, 15),
        "seq_len": Range(1, 2**21 + 15),
    },
    assumptions={
        "seq_len <= max_model_len + num_speculative_tokens (async-spec extend rows)":
            lambda seq_len, max_model_len, num_speculative_tokens: seq_len <= max_model_len + num_speculative_tokens,
        "max_model_len >= compress_ratio": lambda max_model_len, compress_ratio: max_model_len >= compress_ratio,
    },
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=["vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py::get_max_prefill_buffer_size", "vllm 0.33.0 vllm/config/vllm.py"],
    engine="vllm", requires=("dsa_indexer",),
    versions=">=0.27",
)
def single_request_fits_prefill_workspace(max_model_len, compress_ratio, num_speculative_tokens, seq_len):
    """vLLM 0.33.0's splitter enforces the workspace only for requests that fit it alone, so safety
    rests on this: one request's compressed length ``cdiv(seq_len, compress_ratio)`` (rounded up:
    the conservative choice) is at most ``get_max_prefill_buffer_size(cfg) // compress_ratio`` with
    the default factor (5 up to 256K context, else 2)."""
    budget = get_max_prefill_buffer_size(max_model_len, default_prefill_workspace_factor(max_model_len)) // compress_ratio
    return at_most(compressed_seq_len=cdiv(seq_len, compress_ratio), workspace_size=budget)


@obligation(
    domain={"max_model_len": Choice(256 * 1024, 256 * 1024 + 1)},
    expect="proved", case="vllm-indexer-prefill-chunk-split",
    sources=["vllm==0.33.0 vllm/config/vllm.py:1872-1874 (5 if max_model_len <= 256 * 1024 else 2)",
             "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py:916-927 (max_model_len * (576 * 2 // 132) * factor)"],
    # two pinned lengths: a check of the model's factor step, not of a deployment (check-config does not apply it)
)
def prefill_workspace_at_the_256k_step(max_model_len):
    """The default factor's step (session 15; the domains above cross it only inside a Range, where
    the one-sided claims do not bind): at ``max_model_len = 256 Ki`` the indexer prefill workspace
    is ``262144 * 8 * 5 = 10485760`` rows, at ``256 Ki + 1`` it is ``262145 * 8 * 2 = 4194320``
    rows: vLLM 0.33.0's values (``get_max_prefill_buffer_size`` with the factor the config sets)."""
    rows = get_max_prefill_buffer_size(max_model_len, default_prefill_workspace_factor(max_model_len))
    vllm_rows = {256 * 1024: 10485760, 256 * 1024 + 1: 4194320}[max_model_len]
    return claim(rows == vllm_rows, workspace_rows=rows, vllm_0_33_rows=vllm_rows)
