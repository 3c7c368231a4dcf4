"""Hand-written Hypothesis strategies for the corpus counterexamples (``benchmarks/compare.py``).

The generic strategy in compare.py draws every parameter from its declared domain and rejects points
that violate an assumption. A user who knows the bug class writes better ones; these are the
strategies such a user would write from the obligation's declaration and docstring, without knowing
the counterexample:

- routings: draw the per-expert counts first and set ``numel`` to their sum (the assumption
  ``total(counts) == numel`` is an equality: random draws never satisfy it), with small counts
  (a few tokens per expert) mixed in, since padding per expert is the quantity under test;
- batches: saturated batches, i.e. ``num_reqs`` at its limit, every request a full decode
  (``1 + K`` tokens) or an arbitrary length up to it, and the token budget equal to the batch's
  total (the limit the scheduler allows);
- lengths near a limit: ``seq_lens`` / ``kv_committed_len`` / ``offs_token`` drawn within a few
  tokens of the bound their assumption gives (the edge where off-by-a-few bugs live).

Each function takes the obligation and returns a strategy of parameter dicts (vectors as the list of
their active entries, as ``replay`` takes them); assumptions are still checked with ``assume`` by the
caller, so a strategy may over-approximate. Obligations not listed here use the generic strategy
for both columns (their domains are scalar ranges and choices, which Hypothesis already draws with
a bias to the bounds).
"""

from __future__ import annotations

from hypothesis import strategies as st

from capproof.domain import Range, Vector


def _scalar(dom):
    if isinstance(dom, Range):
        return st.integers(dom.lo, dom.hi)
    return st.sampled_from(dom.cases())


def _small_or_any(hi: int):
    """A count: mostly small (a few tokens per expert), sometimes anywhere in its range."""
    return st.one_of(st.integers(0, 8), st.integers(0, 256), st.integers(0, hi))


def _routing(vector: str, length: str | None):
    """Counts first, ``numel`` = their sum; the vector length from its own parameter or the domain."""

    def build(ob):
        dom = ob.domain
        vec: Vector = dom[vector]
        others = {n: _scalar(d) for n, d in dom.items() if n not in (vector, "numel")}

        @st.composite
        def strat(draw):
            point = {n: draw(s) for n, s in others.items()}
            size = point[length] if length else vec.size
            counts = draw(st.lists(_small_or_any(vec.elem.hi), min_size=size, max_size=size))
            return point | {vector: counts, "numel": max(1, sum(counts))}

        return strat()

    return build


def _saturated_batch(vector: str, per_request_max, budget: str, limit: str | None):
    """``num_reqs`` at ``limit`` (when given) or anywhere, each entry a full request or up to it,
    ``budget`` equal to the batch's total."""

    def build(ob):
        dom = ob.domain
        vec: Vector = dom[vector]
        others = {n: _scalar(d) for n, d in dom.items() if n not in (vector, budget, "num_reqs", "j")}

        @st.composite
        def strat(draw):
            point = {n: draw(s) for n, s in others.items()}
            full = per_request_max(point)
            n = point[limit] if limit else draw(st.integers(dom["num_reqs"].lo, dom["num_reqs"].hi))
            entry = st.one_of(st.just(full), st.integers(vec.elem.lo, full))
            lens = draw(st.lists(entry, min_size=n, max_size=n))
            point |= {"num_reqs": n, vector: lens, budget: sum(lens)}
            if "j" in dom:
                point["j"] = draw(st.integers(0, n - 1))
            return point

        return strat()

    return build


def _near(base, spread: int = 16):
    return st.integers(-spread, spread).map(lambda d: base + d)


def _seq_lens_near_context(ob):
    dom = ob.domain
    others = {n: _scalar(d) for n, d in dom.items() if n not in ("num_reqs", "seq_lens")}

    @st.composite
    def strat(draw):
        point = {n: draw(s) for n, s in others.items()}
        n = draw(st.integers(1, dom["num_reqs"].hi))
        lo, hi = dom["seq_lens"].elem.lo, dom["seq_lens"].elem.hi
        near = _near(point["context_len"]).map(lambda v: min(max(v, lo), hi))
        lens = draw(st.lists(st.one_of(near, st.integers(lo, hi)), min_size=n, max_size=n))
        return point | {"num_reqs": n, "seq_lens": lens}

    return strat()


def _kv_near_context(ob):
    dom = ob.domain
    others = {n: _scalar(d) for n, d in dom.items() if n not in ("kv_committed_len", "kv_allocated_len")}

    @st.composite
    def strat(draw):
        point = {n: draw(s) for n, s in others.items()}
        committed = max(0, point["context_len"] - 1 - draw(st.integers(0, 16)))
        allocated = max(0, committed - draw(st.integers(0, 16)))
        return point | {"kv_committed_len": committed, "kv_allocated_len": allocated}

    return strat()


def _last_row_and_column(ob):
    dom = ob.domain
    others = {n: _scalar(d) for n, d in dom.items() if n not in ("offs_token", "offs_cn")}

    @st.composite
    def strat(draw):
        point = {n: draw(s) for n, s in others.items()}
        rows = point["num_tokens"] * point["top_k"]
        tok = min(dom["offs_token"].hi, max(0, rows - 1 - draw(st.integers(0, 16))))
        col = min(dom["offs_cn"].hi, max(0, point["N"] - 1 - draw(st.integers(0, 16))))
        return point | {"offs_token": tok, "offs_cn": col}

    return strat()


def _decode_len(point):
    return 1 + point["num_speculative_tokens"]


#: obligation name -> function(obligation) -> strategy of parameter dicts.
BEST = {
    "vllm_sizing_with_filtered_ids_counted": _routing("buckets", "num_buckets"),
    "wna16_reads_within_sorted_ids": _routing("counts", "num_experts"),
    "local_sizing_with_global_counts": _routing("buckets", "num_buckets"),
    "slot_mapping_fits_before_14024": _saturated_batch(
        "query_lens", _decode_len, "max_num_batched_tokens", "max_num_reqs"
    ),
    "arange_covers_token_query_start_loc_before_16316": _saturated_batch(
        "decode_lens", _decode_len, "max_num_batched_tokens", "max_num_seqs"
    ),
    "mtp_reader_row_is_last_token_before_47238": _saturated_batch(
        "query_lens", _decode_len, "max_num_batched_tokens", None
    ),
    "page_table_copy_round0": _seq_lens_near_context,
    "page_table_copy_round1": _seq_lens_near_context,
    "decode_alloc_fits_req_to_token_row": _kv_near_context,
    "decode_alloc_fits_hybrid_mamba_row": _kv_near_context,
    "fused_moe_c_offset_int32_before_13693": _last_row_and_column,
}
