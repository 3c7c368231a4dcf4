"""V2 DFlash/DSpark drafter: the query rows of the target's post-capture dummy runs (vLLM 0.33.0).

docs/findings.md, finding 11. After CUDA-graph capture, adaptive verification's profiling runs
(``batches_to_profile``, ``vllm/v1/worker/gpu/model_runner.py:1139-1145``) run the target on each
captured token count; ``execute_model`` builds the dummy batch with ``dummy_num_reqs =
batch_desc.num_reqs or num_reqs`` (``:1887-1889``), and the varlen decode descriptors adaptive
verification turns on (``:772``) carry ``num_reqs = min(num_tokens, max_num_reqs)`` for every
captured ``num_tokens <= max_num_reqs * decode_query_len`` (``gpu/cudagraph_utils.py:310-318``).
The drafter's query pass then stores ``num_reqs * num_query_per_req`` rows
(``gpu/spec_decode/dflash/speculator.py:463-467``, ``_prepare_dflash_inputs_kernel`` masked per
request only, ``:703-776``) into its ``InputBuffers`` of ``max_num_batched_tokens`` rows
(``gpu/input_batch.py:29-31``; capacity traced by the inventory). ``num_query_per_req`` is ``1 + K``
for DFlash (``dflash/speculator.py:65``) and for DSpark without ``sample_from_anchor``, ``K`` for
DSpark with it (its default, ``dspark/speculator.py:49-55``): ``K + query_extra`` here.

``num_speculative_tokens`` is a finite choice (1-16, the draft blocks DFlash and DSpark ship), one
case per value, so that every case is linear and ``capproof bound`` can bound it; a line with more
draft tokens is outside the domain (check-config: undecided, never safe).

The captured sizes are vLLM's default list after the spec-decode rounding
(``models/vllm/cudagraph_sizes.py``, the predicates spec/vllm_0_33_today.py proves; non-SM100
``default_max_graph_size`` 512 or SM100's 1024). The real tier checks this obligation's verdict
against vLLM's own ``_dummy_run``/``_init_candidates``/``dispatch_cg_and_sync_dp`` run on the CPU
(``capproof/engines/vllm/fact_tokens_dflash.py::dummy_query_rows``) deployment by deployment.

Applies (check-config) to a line with a DFlash/DSpark ``--speculative-config`` whose
``enable_adaptive_verification`` is true, CUDA graphs captured, one data-parallel rank, the V2
model runner. Not modelled: user ``--cudagraph-capture-sizes``; FULL mode's mixed-batch descriptors
(the same ``min(num_tokens, max_num_reqs)`` for sizes above ``max_num_reqs * (1 + K)``).
"""

from capproof import Choice, Range, all_of, at_most, minimum, obligation
from capproof.inventory import capacity, load
from models.vllm.cudagraph_sizes import is_default_capture_size, spec_rounded_size

INV = "proofs/inventory/vllm-0.33.0.json"
_ENTRIES = load(INV)
_V = "vllm==0.33.0 "
_BUFFERS = "vllm/v1/worker/gpu/input_batch.py::InputBuffers"

DOMAIN = {
    "max_num_seqs": Range(1, 1024),
    "max_num_batched_tokens": Range(1, 2**16),
    "num_speculative_tokens": Choice(*range(1, 17)),
    "query_extra": Choice(0, 1),
    "default_max_graph_size": Choice(512, 1024),
    "size": Range(1, 2**16),
    "n": Range(1, 1024),
    "max_size": Range(1, 2**16),
    "m": Range(1, 1024),
}

FACTS = {
    "max_num_batched_tokens >= max_num_seqs (vllm/config/scheduler.py)": lambda max_num_batched_tokens, max_num_seqs: (
        max_num_batched_tokens >= max_num_seqs
    ),
    "num_lookahead_tokens = K + query_extra < max_num_batched_tokens (vllm/config/vllm.py:626-651, 2371-2377)": lambda num_speculative_tokens, query_extra, max_num_batched_tokens: (
        num_speculative_tokens + query_extra < max_num_batched_tokens
    ),
    "size and max_size are default capture sizes, max_size the largest kept": lambda size, n, max_size, m, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size: (
        all_of(
            is_default_capture_size(
                size, n, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
            ),
            is_default_capture_size(
                max_size, m, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
            ),
            spec_rounded_size(size, num_speculative_tokens) <= max_size,
        )
    ),
    "the rounded size has a varlen decode graph (num_tokens <= max_num_reqs * decode_query_len)": lambda size, max_num_seqs, num_speculative_tokens: (
        spec_rounded_size(size, num_speculative_tokens) <= max_num_seqs * (1 + num_speculative_tokens)
    ),
}


def _query_rows_fit(attribute: str):
    entry_id = f"{_BUFFERS}.{attribute}"

    def claim(
        max_num_seqs,
        max_num_batched_tokens,
        num_speculative_tokens,
        query_extra,
        default_max_graph_size,
        size,
        n,
        max_size,
        m,
    ):
        captured = spec_rounded_size(size, num_speculative_tokens)
        return at_most(
            query_rows=minimum(captured, max_num_seqs) * (num_speculative_tokens + query_extra),
            capacity=capacity(_ENTRIES, entry_id, 0, max_num_batched_tokens=max_num_batched_tokens),
        )

    claim.__name__ = f"dflash_dummy_run_query_rows_fit_{attribute}"
    claim.__doc__ = (
        f"The drafter's query rows in a post-capture profiling dummy run fit the speculator's `InputBuffers.{attribute}` "
        "(rows: the varlen decode descriptor's min(captured size, max_num_reqs) requests times num_query_per_req; "
        "capacity traced)."
    )
    return obligation(
        domain=DOMAIN,
        assumptions=FACTS,
        expect="counterexample",
        engine="vllm",
        versions="==0.33.0",
        requires=("dflash", "adaptive_verification"),
        tags=("inventory", "finding", "cuda_graphs"),
        sources=[
            f"inventory: {INV}::{entry_id}",
            _V + "vllm/v1/worker/gpu/model_runner.py:1139-1145 (adaptive verification's profiling runs after capture)",
            _V + "vllm/v1/worker/gpu/model_runner.py:1887-1889 (dummy_num_reqs = batch_desc.num_reqs or num_reqs)",
            _V
            + "vllm/v1/worker/gpu/cudagraph_utils.py:310-318 (varlen decode descriptors: num_reqs = min(num_tokens, max_num_reqs))",
            _V
            + "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py:463-467,703-776 (num_reqs * num_query_per_req rows)",
            _V
            + "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py:49-55 (DSpark: K rows with sample_from_anchor, else 1 + K)",
            "docs/findings.md (finding 11)",
        ],
        covers=[entry_id],
    )(claim)


dflash_dummy_run_query_rows_fit_input_ids = _query_rows_fit("input_ids")
dflash_dummy_run_query_rows_fit_positions = _query_rows_fit("positions")
