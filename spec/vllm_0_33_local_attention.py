"""Chunked local attention: FlashInfer's request rows against the virtual requests vLLM 0.33.0 makes.

docs/findings.md, "Chunked local attention: virtual requests vs FlashInfer's request rows". The
capacity is the one the inventory traced (``max_num_reqs + 1`` and ``max_num_reqs`` rows); the
demand is the one ``capproof inventory`` derived by running vLLM's own count of virtual requests
(``make_local_attention_virtual_batches``: ``capproof/engines/vllm/demand_local_attention.py``) for
a step of ``num_reqs`` requests, one of which has ``query_len`` new tokens ending at ``seq_len``
and the others one new token each. The assumptions are the scheduler's caps on that step (none
restates the claim). No formula is written here.

Applies to models with chunked local attention (``attention_chunk_size`` in config.json; in vLLM
0.33.0 only Llama 4, chunk 8192) on FlashInfer's native paged path (``--attention-backend
FLASHINFER``). Not modelled: SM100's default FlashInfer selection for these models with an FP8 KV
cache or more than 256 decode tokens (the finding lists those).
"""

from capproof import Choice, Range, at_most, obligation
from capproof.inventory import capacity, derived, evaluate, load

INV = "proofs/inventory/vllm-0.33.0.json"
_ENTRIES = load(INV)
_FI = "vllm/v1/attention/backends/flashinfer.py"

#: The attention chunk of the models vLLM 0.33.0 serves with chunked local attention (Llama 4:
#: ``attention_chunk_size`` 8192 in its text config; ``vllm/model_executor/models/llama4.py``).
DOMAIN = {
    "max_num_seqs": Range(1, 2**10),
    "max_num_batched_tokens": Range(1, 2**16),
    "max_model_len": Range(1, 2**20),
    "attention_chunk_size": Choice((8192,)),
    "num_reqs": Range(1, 2**10),
    "query_len": Range(1, 2**16),
    "seq_len": Range(1, 2**20),
}
FACTS = {
    "the scheduler runs at most max_num_seqs requests": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
    "the step's new tokens (query_len, and one per other request) fit max_num_batched_tokens": lambda num_reqs, query_len, max_num_batched_tokens: (
        num_reqs - 1 + query_len <= max_num_batched_tokens
    ),
    "a request's new tokens end at its sequence length, within max_model_len": lambda query_len, seq_len, max_model_len: (
        (query_len <= seq_len) & (seq_len <= max_model_len)
    ),
}


def _rows(entry_id: str, name: str):
    def claim(max_num_seqs, max_num_batched_tokens, max_model_len, attention_chunk_size, num_reqs, query_len, seq_len):
        return at_most(
            rows=evaluate(
                _record(entry_id)["extent"],
                num_reqs=num_reqs,
                query_len=query_len,
                seq_len=seq_len,
                attention_chunk_size=attention_chunk_size,
            ),
            capacity=capacity(_ENTRIES, entry_id, 0, max_num_reqs=max_num_seqs),
        )

    claim.__name__ = name
    claim.__doc__ = (
        f"The virtual requests chunked local attention hands FlashInfer's builder fit `{entry_id.split('::')[1]}` "
        "(rows derived from vLLM's make_local_attention_virtual_batches; capacity traced)."
    )
    return obligation(
        domain=DOMAIN,
        assumptions=FACTS,
        expect="counterexample",
        engine="vllm",
        versions="==0.33.0",
        requires=("chunked_local_attention", "flashinfer_backend"),
        tags=("inventory", "derived", "finding"),
        sources=[
            f"inventory: {INV}::{entry_id}",
            f"demand: {INV}::{entry_id}[0]",
            *derived_sources(entry_id),
            "docs/findings.md (Chunked local attention: virtual requests vs FlashInfer's request rows)",
        ],
        covers=[entry_id],
    )(claim)


def _record(entry_id: str) -> dict:
    """The chunked-local demand record the inventory derived for ``entry_id`` (SpecError when none)."""
    e = next(x for x in _ENTRIES if x.id == entry_id)
    rec = next((d for d in e.demands if d.get("family") == "chunked local attention rows"), None)
    return rec if rec is not None else derived(_ENTRIES, entry_id, 99)  # raises SpecError: none derived


def derived_sources(entry_id: str) -> list[str]:
    """The derivation's ``from`` lines of the chunked-local demand of ``entry_id``."""
    return list(_record(entry_id)["from"])


chunked_local_rows_fit_paged_kv_indptr = _rows(
    f"{_FI}::FlashInferMetadataBuilder.paged_kv_indptr", "chunked_local_rows_fit_paged_kv_indptr"
)
chunked_local_rows_fit_paged_kv_last_page_len = _rows(
    f"{_FI}::FlashInferMetadataBuilder.paged_kv_last_page_len", "chunked_local_rows_fit_paged_kv_last_page_len"
)
