"""The demand families of vLLM 0.33.0's pre-allocated buffers, each stated once.

Each :class:`~spec._inventory.Family` is the largest extent a kind of writer touches, with the
scheduler, CUDA-graph and dummy-run facts it rests on as named assumptions (they appear in each
proof's unsat core). ``spec/vllm_0_33_buffers.py`` applies them to the inventory entries, citing
each buffer's writers. The loader skips this file (leading underscore).

Facts and where they come from (vLLM 0.33.0):

- **padded tokens <= max_num_batched_tokens**: a step's token count is padded to a CUDA-graph
  capture size (``cudagraph_dispatcher.py:139``), which is ``<= max_cudagraph_capture_size <=
  mnbt`` (proved: ``spec/vllm_0_33_today.py::cudagraph_padded_tokens_fit_mnbt``); under DP it is the
  maximum of the ranks' padded counts (``gpu_model_runner.py:3761``, each rank's ``<= mnbt``);
  dummy/warm-up/capture runs assert ``num_tokens <= self.max_num_tokens`` (``gpu_model_runner.py:5524``
  and ``:5715``); unpadded batches hold at most ``mnbt`` scheduled tokens (the scheduler's budget).
- **padded requests <= max_num_reqs**: the scheduler runs at most ``max_num_seqs`` requests; the
  dispatcher pads to ``min(padded // q, max_num_seqs)`` or ``min(padded, max_num_seqs)``
  (``cudagraph_dispatcher.py:142,146``); ``_dummy_run`` uses ``min(num_tokens, max_num_reqs)``,
  ``min(max_num_reqs, cdiv(num_tokens, q))`` or ``min(max_num_reqs - 1, num_tokens // 2) + 1``
  requests (``gpu_model_runner.py:5530-5546``).
"""

from __future__ import annotations

from capproof import Range
from spec._inventory import Family

_VLLM = "vllm==0.33.0 "

PADDED_TOKENS_FIT = {
    "padded tokens <= max_num_batched_tokens (CUDA-graph and DP padding, dummy runs)": lambda num_tokens_padded, max_num_batched_tokens: (
        num_tokens_padded <= max_num_batched_tokens
    ),
}
PADDED_REQS_FIT = {
    "padded requests <= max_num_reqs (scheduler, dispatcher padding, dummy runs)": lambda num_reqs_padded, max_num_reqs: (
        num_reqs_padded <= max_num_reqs
    ),
}
_FACT_SOURCES = [
    _VLLM + "vllm/v1/cudagraph_dispatcher.py:139-146 (padded tokens and requests)",
    _VLLM + "vllm/v1/worker/gpu_model_runner.py:3741-3769 (CUDA-graph and DP padding)",
    _VLLM + "vllm/v1/worker/gpu_model_runner.py:5524-5546 (dummy run: tokens and requests)",
    "spec/vllm_0_33_today.py::cudagraph_padded_tokens_fit_mnbt",
]

TOKENS = Family(
    name="tokens",
    dim=0,
    demand=lambda num_tokens_padded: num_tokens_padded,
    domain={"max_num_batched_tokens": Range(1, 2**17), "num_tokens_padded": Range(1, 2**17)},
    facts=PADDED_TOKENS_FIT,
    sources=_FACT_SOURCES,
    doc="Token-indexed: a step writes or reads entries [:num_tokens_padded] (padded token count).",
    demand_name="num_tokens_padded",
)

REQUESTS = Family(
    name="requests",
    dim=0,
    demand=lambda num_reqs_padded: num_reqs_padded,
    domain={"max_num_reqs": Range(1, 2**12), "num_reqs_padded": Range(1, 2**12)},
    facts=PADDED_REQS_FIT,
    sources=_FACT_SOURCES,
    doc="Request-indexed: a step writes or reads rows [:num_reqs_padded] (one per request, padded).",
    demand_name="num_reqs_padded",
)

QUERY_START_LOC = Family(
    name="query_start_loc",
    dim=0,
    demand=lambda num_reqs_padded: num_reqs_padded + 1,
    domain={"max_num_reqs": Range(1, 2**12), "num_reqs_padded": Range(1, 2**12)},
    facts=PADDED_REQS_FIT,
    sources=_FACT_SOURCES,
    doc="Cumulative per-request offsets: [:num_reqs_padded + 1] entries.",
    demand_name="entries",
)


def _arange_demand(num_tokens_padded, num_reqs_padded):
    from capproof import maximum

    return maximum(num_tokens_padded, num_reqs_padded + 1)


ARANGE = Family(
    name="arange",
    dim=0,
    demand=_arange_demand,
    domain={
        "max_num_batched_tokens": Range(1, 2**17),
        "max_num_reqs": Range(1, 2**12),
        "num_tokens_padded": Range(1, 2**17),
        "num_reqs_padded": Range(1, 2**12),
    },
    facts={**PADDED_TOKENS_FIT, **PADDED_REQS_FIT},
    sources=_FACT_SOURCES,
    doc="Shared aranges sliced both by tokens ([:num_tokens]) and by requests ([:num_reqs + 1]).",
    demand_name="slice",
)

TOKEN_OFFSETS = Family(
    name="token_offsets",
    dim=0,
    demand=lambda num_tokens_padded: num_tokens_padded + 1,
    domain={"max_num_batched_tokens": Range(1, 2**17), "num_tokens_padded": Range(1, 2**17)},
    facts=PADDED_TOKENS_FIT,
    sources=_FACT_SOURCES,
    doc="Cumulative per-token offsets (indptr over tokens): [:num_tokens_padded + 1] entries.",
    demand_name="entries",
)

DECODE_ROWS = Family(
    name="decode_rows",
    dim=0,
    demand=lambda padded_bs: padded_bs,
    domain={"padded_bs": Range(1, 2**12)},
    facts={
        "the writer runs only when padded_bs (= num_decodes, no prefills) <= decode_cudagraph_max_bs, the allocation's own size": lambda padded_bs, capacity: (
            padded_bs <= capacity
        ),
    },
    sources=[
        _VLLM + "vllm/v1/attention/backends/mamba_attn.py:645-651 (guard: num_prefills == 0 and num_decodes <= "
        "decode_cudagraph_max_bs; padded_bs = num_reqs)"
    ],
    doc="Decode-only CUDA-graph rows of the Mamba/GDN/linear-attention builders: [:padded_bs], written only "
    "under the guard `num_decodes <= self.decode_cudagraph_max_bs` (Mamba: padded requests have no tokens and "
    "count as decodes, so num_reqs == num_decodes when there are no prefills; GDN's spec path, whose "
    "decode_cudagraph_max_bs is min(max_num_seqs * (1 + K), capture size) (gdn_attn.py:195-202), writes "
    "[:num_reqs] with num_reqs either the unpadded spec decodes the guard bounds or a FULL-graph padding "
    "min(p // q, max_num_seqs) <= min(max_num_seqs, capture size)). The fact is stated on the capacity itself.",
    demand_name="padded_bs",
)

DECODE_OFFSETS = Family(
    name="decode_offsets",
    dim=0,
    demand=lambda padded_bs: padded_bs + 1,
    domain={"padded_bs": Range(1, 2**12)},
    facts={
        "the writer runs only when padded_bs <= decode_cudagraph_max_bs (allocated decode_cudagraph_max_bs + 1)": lambda padded_bs, capacity: (
            padded_bs + 1 <= capacity
        ),
    },
    sources=DECODE_ROWS.sources,
    doc="Decode query_start_loc of the decode-only CUDA-graph path: [:padded_bs + 1] under the same guard.",
    demand_name="entries",
)

TOKEN_COLUMNS = Family(
    name="token_columns",
    dim=1,
    demand=lambda end: end,
    domain={"max_model_len": Range(1, 2**21), "end": Range(1, 2**21)},
    facts={
        "a request's tokens end within max_model_len (scheduler caps num_new_tokens; sampled tokens asserted)": lambda end, max_model_len: (
            end <= max_model_len
        ),
    },
    sources=[
        _VLLM + "vllm/v1/core/sched/scheduler.py:852-857 (num_new_tokens <= max_model_len - num_computed_tokens "
        "- num_sampled_tokens_per_step)",
        _VLLM + "vllm/v1/worker/gpu_model_runner.py:3539-3543 (assert end_idx <= self.max_model_len)",
    ],
    doc="Per-request token columns: [req, start:end] with end = computed + scheduled (+ draft) tokens.",
    demand_name="end",
)


def _spec_cols(num_draft_tokens):
    return num_draft_tokens


SPEC_COLUMNS = Family(
    name="spec_columns",
    dim=1,
    demand=_spec_cols,
    domain={"num_speculative_tokens": Range(0, 64), "num_draft_tokens": Range(0, 64)},
    facts={
        "a request has at most num_speculative_tokens draft tokens (scheduled_spec_decode_tokens, proposer output)": lambda num_draft_tokens, num_speculative_tokens: (
            num_draft_tokens <= num_speculative_tokens
        ),
    },
    sources=[_VLLM + "vllm/v1/core/sched/scheduler.py:1315-1330 (spec decode padding to 1 + num_spec_tokens)"],
    doc="Per-request draft-token columns: [:num_reqs, :num_draft_tokens].",
    demand_name="num_draft_tokens",
)


TOKEN_TOPK = Family(
    name="token_topk",
    dim=0,
    demand=lambda num_tokens_padded, index_topk: num_tokens_padded * index_topk,
    domain={
        "max_num_batched_tokens": Range(1, 2**17),
        "num_tokens_padded": Range(1, 2**17),
        "index_topk": Range(1, 2**13),
    },
    facts=PADDED_TOKENS_FIT,
    sources=_FACT_SOURCES,
    doc="Flattened per-token top-k lists: [:num_tokens * index_topk] entries, index_topk the same top-k width "
    "the allocation uses (the builder's topk_tokens, the HF config's index_topk).",
    demand_name="entries",
)
