"""SGLang 0.5.23: capacity against a demand derived from SGLang's own code, per dimension.

Both sides come from the committed inventory (``proofs/inventory/sglang-0.5.23.json``): the
capacity is the allocation's shape (``capproof.inventory.capacity``), the demand is what
``capproof inventory --engine sglang==0.5.23`` derived from SGLang's access sites, running its
code where it can (``capproof/engines/sglang/demand.py``; ``capproof.inventory.demand``). No formula
is written here. A fact the derivation checked on every path needs no assumption; a fact it did
not check is a named assumption ``assumed: ...`` (listed in proofs/coverage.md with its paths).

Family "backend graph rows": an attention backend's buffer allocated in ``init_cuda_graph_state(max_bs)``
whose every use is ``[:bs]``/``[:bs + 1]`` in a CUDA-graph method, or ``[:metadata_rows]`` (+ 1) where
the capture method picks the batch or the captured token count (Qwen sparse attention); that ``bs``
is the runner's graph batch, and the token count the captured batch's ``bs * captured_req_width``
tokens, are assumed facts (the call chain crosses files), the padded batch they are compared with
is SGLang's ``_pad_to_bucket``, run.

Family "graph rows": the EAGLE draft and draft-extend CUDA-graph runners' static inputs, sliced
by a captured size, the padded batch (SGLang's ``_pad_to_bucket``, run on every path) or the raw
batch, times the captured width (SGLang's ``resolve_num_tokens_per_req``, run) and the draft
steps where the code says so. One obligation per entry and dimension.
"""

from capproof import Choice, Range, any_of, at_most, obligation
from capproof.inventory import bound_name, capacity, demand, derived, expression_names, load

INV = "proofs/inventory/sglang-0.5.23.json"
_ENTRIES = load(INV)

#: Domains of the names the derived extents and the capacities use.
DOMAIN = {
    "raw_bs": Range(1, 2**12),
    "max_batch_size": Range(1, 2**12),
    "max_bs": Range(1, 2**12),
    "capture_gap_0": Range(1, 2**12),
    "capture_gap_1": Range(1, 2**12),
    "capture_gap_2": Range(1, 2**12),
    "dp_gather": Choice(0, 1),
    # token extents multiply by these: split into cases, so each query stays linear
    "speculative_eagle_topk": Choice(1, 2, 4, 8),
    "speculative_num_steps": Choice(1, 2, 3, 4, 5, 6, 7, 8),
    "speculative_num_draft_tokens": Choice(2, 3, 4, 5, 8, 16),
    "hidden_size": Range(1, 2**16),
    "vocab_size": Range(1, 2**18),
    "dsa_seed_topk_width": Range(1, 2**12),
    "backend_bs": Range(1, 2**12),
    "backend_num_tokens": Range(1, 2**16),
    # a page table's columns (taken whole by every use: demand and capacity are the same expression)
    "context_len": Range(1, 2**21),
    "max_context_len": Range(1, 2**21),
    "page_size": Range(1, 1024),
    "max_num_pages": Range(1, 2**21),
    # tokens per captured request (1 for plain decode; the draft tokens or top-k under speculative
    # decoding): split into cases, so ``captured_req_width * max_bs`` stays linear
    "captured_req_width": Choice(1, 2, 3, 4, 5, 6, 7, 8, 16),
}

DP_FACT = "raw_bs <= max_batch_size"


def _facts(entry_id: str, dim: int) -> dict:
    """The derivation's unchecked facts, as named assumptions (the DP-gather one is the only form
    the derivation records: ``raw_bs <= max_batch_size`` when ``dp_gather`` is 1)."""
    out = {}
    for f in derived(_ENTRIES, entry_id, dim).get("facts", []):
        if f.get("checked"):
            continue
        if not f["fact"].startswith(DP_FACT):
            raise ValueError(f"{entry_id}[{dim}]: unchecked fact of an unknown form: {f['fact']}")
        out[f"assumed: {f['fact']}"] = lambda dp_gather, raw_bs, max_batch_size: any_of(
            dp_gather == 0, raw_bs <= max_batch_size
        )
    return out


def _graph_rows(entry_id: str, dim: int):
    rec = derived(_ENTRIES, entry_id, dim)
    entry = next(e for e in _ENTRIES if e.id == entry_id)
    names = sorted(set(expression_names(rec["extent"])) | set(expression_names(entry.shape[dim])))
    facts = _facts(entry_id, dim)
    if facts:
        names = sorted(set(names) | {"dp_gather", "raw_bs", "max_batch_size"})
    attribute = entry_id.split("::", 1)[1]

    def claim(**kw):
        return at_most(
            demand=demand(_ENTRIES, entry_id, dim, **kw),
            capacity=capacity(_ENTRIES, entry_id, dim, **kw),
        )

    import inspect

    claim.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    claim.__name__ = f"graph_rows_fit__{attribute.replace('.', '_')}__dim{dim}"
    claim.__qualname__ = claim.__name__
    claim.__doc__ = (
        f"Every slice of dimension {dim} of `{attribute}` in its runner (a captured size, the padded or raw "
        "batch, times the captured width and draft steps: derived) fits its allocation."
    )
    return obligation(
        domain={n: DOMAIN[n] for n in names},
        assumptions=facts,
        expect="proved",
        sources=[
            f"inventory: {INV}::{entry_id}",
            f"demand: {INV}::{entry_id}[{dim}]",
            *(f"sglang==0.5.23 {s}" for s in rec["from"]),
        ],
        covers=[entry_id],
        engine="sglang",
        versions="==0.5.23",
        tags=("inventory", "derived"),
        # the EAGLE draft runners exist only under speculative decoding
        requires=("spec_decode",),
    )(claim)


def _backend_rows(entry_id: str, dim: int):
    rec = derived(_ENTRIES, entry_id, dim)
    entry = next(e for e in _ENTRIES if e.id == entry_id)
    padded = (rec.get("binds") or {}).get("padded_bs")
    names = set(expression_names(rec["extent"])) | set(expression_names(entry.shape[dim]))
    facts = {}
    if padded is not None:
        names |= set(expression_names(padded))
        pnames = sorted(expression_names(padded))
        for f in rec.get("facts", []):
            if f.get("checked"):
                continue
            if f["fact"].startswith("backend_bs <= padded_bs"):

                def fact(backend_bs, **kw):
                    return backend_bs <= bound_name(_ENTRIES, entry_id, dim, "padded_bs", **kw)

                fact.__signature__ = _sig(["backend_bs", *pnames])
            elif f["fact"].startswith("backend_num_tokens <= captured_req_width * padded_bs"):
                names |= {"captured_req_width"}

                def fact(backend_num_tokens, captured_req_width, **kw):
                    return backend_num_tokens <= captured_req_width * bound_name(
                        _ENTRIES, entry_id, dim, "padded_bs", **kw
                    )

                fact.__signature__ = _sig(["backend_num_tokens", "captured_req_width", *pnames])
            else:
                raise ValueError(f"{entry_id}[{dim}]: unchecked fact of an unknown form: {f['fact']}")
            facts[f"assumed: {f['fact']}"] = fact
    names = sorted(names)
    attribute = entry_id.split("::", 1)[1]

    def claim(**kw):
        return at_most(
            demand=demand(_ENTRIES, entry_id, dim, **kw),
            capacity=capacity(_ENTRIES, entry_id, dim, **kw),
        )

    claim.__signature__ = _sig(names)
    claim.__name__ = f"backend_graph_rows_fit__{attribute.replace('.', '_')}__dim{dim}"
    claim.__qualname__ = claim.__name__
    claim.__doc__ = (
        f"Every slice of dimension {dim} of `{attribute}` in the backend's CUDA-graph methods (the graph batch, "
        "at most the runner's padded batch) fits its `max_bs` allocation."
    )
    return obligation(
        domain={n: DOMAIN[n] for n in names},
        assumptions=facts,
        expect="proved",
        sources=[
            f"inventory: {INV}::{entry_id}",
            f"demand: {INV}::{entry_id}[{dim}]",
            *(f"sglang==0.5.23 {s}" for s in rec["from"]),
        ],
        covers=[entry_id],
        engine="sglang",
        versions="==0.5.23",
        tags=("inventory", "derived"),
        requires=_backend_requires(entry.file) + _speculative(names),
    )(claim)


def _speculative(names) -> tuple:
    """``("spec_decode",)`` when the buffer's shape or demand names a speculative argument (the
    draft/verify metadata exist only under speculative decoding), else ``()``."""
    return ("spec_decode",) if any(n.startswith("speculative_") for n in names) else ()


def _backend_requires(file: str) -> tuple:
    """The deployment feature a backend's buffers exist under: the hybrid Mamba/linear-attention
    backend's for a model with such layers, any other backend's when the line runs that file
    (``sglang_attention_backend_<stem>``, set by check-config from the backends the line names or
    SGLang picks: fa3 and fa4 both run ``flashattention_backend.py``)."""
    stem = file.rsplit("/", 1)[-1].removesuffix(".py").removesuffix("_backend")
    return ("hybrid_mamba",) if stem == "hybrid_linear_attn" else (f"sglang_attention_backend_{stem}",)


def _sig(names):
    import inspect

    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])


def _derivable(entry, family: str = "graph rows") -> bool:
    """Every name of every dimension's capacity and derived extent has a domain here."""
    for d in entry.demands:
        if not isinstance(d, dict) or d.get("family") != family:
            return False
        if "padded_bs" in (d.get("binds") or {}) and not set(expression_names(d["binds"]["padded_bs"])) <= set(DOMAIN):
            return False
        names = set(expression_names(d["extent"])) | set(expression_names(entry.shape[d["dim"]]))
        if not names <= set(DOMAIN):
            return False
    return bool(entry.demands)


GRAPH_ROWS = [_graph_rows(e.id, d["dim"]) for e in _ENTRIES if _derivable(e) for d in e.demands]

BACKEND_ROWS = [
    _backend_rows(e.id, d["dim"]) for e in _ENTRIES if _derivable(e, "backend graph rows") for d in e.demands
]
