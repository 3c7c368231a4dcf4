"""Models and spec helpers on ints at the corpus's reported configurations, both sides of each bound.

An obligation checks one side of an inequality (``demand <= capacity``): a model whose capacity
grows, or whose demand shrinks, keeps the verdict. ``make mutation`` found such changes
surviving ``capproof prove`` (docs/soundness.md); these tests pin each formula's value where the
corpus (/work/shared/corpus/cases.md) reports one, and otherwise at a configuration on the other
side of a ``min``/``max``/``select`` computed by hand from the quoted engine line.
"""

import os

import pytest

from models.lmdeploy import guided_decoding as gd
from models.moe_align import ck_workspace_index_6242, sglang_sorted_ids_capacity, splitk_sorted_size
from models.sglang import dsa_page_table as sg
from models.trtllm import cuda_graph as trt
from models.vllm import gdn
from models.vllm.cudagraph_sizes import default_max_graph_size_cap, is_request_count
from models.vllm.indexer_buffers import arange_buffer_len
from models.vllm.indexer_prefill import default_prefill_workspace_factor
from models.vllm.spec_decode import proposer_arange_len_0_33, proposer_arange_len_16316
from models.vllm_ascend.mtp_slot_mapping import slot_mapping_capacity_14024, slot_mapping_capacity_before_14024
from spec._families import ARANGE, SPEC_COLUMNS


def test_c3_ascend_slot_mapping_capacities_at_the_reported_config():
    # DCP 4, MTP 5, max_num_reqs 12: 104-entry buffer before #14024 (mnbt 80 derived), 128 after.
    assert slot_mapping_capacity_before_14024(80, 12) == 104
    assert slot_mapping_capacity_14024(80, 12, 5) == 128
    assert slot_mapping_capacity_14024(80, 12, 3) == 104  # K = 3: K - 1 = 2 hides the bug (reported)
    assert slot_mapping_capacity_14024(80, 12, 0) == 80  # no MTP: max(K - 1, 0) = 0
    # the demand: 11 full MTP decodes (6 tokens each) append K - 1 = 4 slots each (the reported 110);
    # DCP 4 with no MTP (K = 0) appends none, and no DCP none either
    from models.vllm_ascend.mtp_slot_mapping import slot_mapping_demand

    assert slot_mapping_demand([6] * 11, 11, 5, 4) == 110
    assert slot_mapping_demand([1] * 11, 11, 0, 4) == 11
    assert slot_mapping_demand([6] * 11, 11, 5, 1) == 66


def test_c2_proposer_arange_at_the_reported_config_and_with_few_tokens():
    # DeepSeek-V4 Flash CI: max_num_seqs 60, mnbt 240 -> arange 240, 241 after vllm-ascend#16316.
    assert proposer_arange_len_0_33(60, 240) == 240
    assert proposer_arange_len_16316(60, 240) == 241
    # mnbt below max_num_seqs: the request side of the max.
    assert proposer_arange_len_0_33(256, 128) == 257
    assert proposer_arange_len_16316(256, 128) == 257


def test_c6_trtllm_graph_sizes():
    # Sub-case a (#10688): max_batch_size 4 -> cu_seqlen 5 entries; capture size 113 needs 114.
    assert trt.cu_seqlen_entries(4) == 5
    assert trt.cu_seqlen_demand(113) == 114
    assert trt.autodeploy_capture_size_fixed(113, 4) == 4
    assert trt.autodeploy_capture_size_fixed(1, 4) == 1
    # Sub-case b (#5076): a small max_num_tokens caps the graph batch, draft tokens ignored before.
    assert trt.max_cuda_graph_bs_before_5076(256, 64) == 64
    assert trt.max_cuda_graph_bs_before_5076(4, 64) == 4
    assert trt.max_cuda_graph_bs_fixed(256, 64, 3) == 16
    assert trt.max_cuda_graph_bs_fixed(4, 64, 3) == 4
    assert trt.graph_input_tokens(16, 3) == 64
    # Sub-case c (#16101): 100 context tokens, 8 generation requests, 3 draft tokens each.
    assert trt.scheduled_tokens_before_16101(100, 8, 3) == 108
    assert trt.scheduled_tokens_16101(100, 8, 3) == 132
    assert trt.forward_tokens(100, 8, 3) == 132


def test_e2_bitmask_and_logits_rows():
    # LMDeploy #4453: 3 requests in the batch, one finished -> 3 matchers, 2 logits rows; #4456 slices to 2.
    assert gd.bitmask_rows_before_4456([1, 0, 1], 3) == 3
    assert gd.logits_rows([1, 0, 1], 3) == 2
    assert gd.bitmask_rows_4456([1, 0, 1], 3) == 2
    # TensorRT-LLM #15022: configured draft length 3, runtime draft length 0, 2 requests.
    assert gd.trtllm_bitmask_rows_before_15023(2, 3, 0) == 8
    assert gd.trtllm_logits_rows(2, 0) == 2
    assert gd.trtllm_bitmask_rows_15023(2, 3, 0) == 2


def test_c5_gdn_state_column():
    # num_accepted_tokens 0 (a padding row) demands column -1; the proposed fix clamps it to 0.
    assert gdn.state_index_column(0) == -1
    assert gdn.state_index_column(5) == 4
    assert gdn.state_index_column_fixed(0) == 0
    assert gdn.state_index_column_fixed(5) == 4


def test_e6_indexer_arange_buffer_len_both_sides():
    assert arange_buffer_len(256, 3, 8192) == 8192  # mnbt side
    assert arange_buffer_len(256, 3, 512) == 1024  # max_num_seqs * (1 + K) side


def test_cudagraph_default_max_graph_size_cap_both_sides():
    # default_max_graph_size: 512 (1024 on SM100)
    assert default_max_graph_size_cap(16, 1, 512) == 64
    assert default_max_graph_size_cap(512, 0, 512) == 512


def test_cudagraph_request_counts_of_the_default_capture_list():
    # request_counts(max_reqs): [1, 2, 4] + range(8, min(m + 1, 256), 8) + range(256, m + 1, 16) + [m]
    assert [n for n in range(1, 600) if is_request_count(n, 40, 512)] == [1, 2, 4, 8, 16, 24, 32, 40]
    assert [n for n in range(1, 600) if is_request_count(n, 300, 512)] == [
        1,
        2,
        4,
        *range(8, 256, 8),
        256,
        272,
        288,
        300,
    ]
    assert [n for n in range(1, 600) if is_request_count(n, 3, 512)] == [1, 2, 3]
    assert [n for n in range(1, 1100) if is_request_count(n, 1024, 512)][-3:] == [480, 496, 512]


def test_indexer_prefill_default_workspace_factor_switches_at_256k():
    assert default_prefill_workspace_factor(163840) == 5
    assert default_prefill_workspace_factor(256 * 1024) == 5
    assert default_prefill_workspace_factor(256 * 1024 + 1) == 2


def test_ck_sorting_workspace_index_skips_ids_outside_the_experts():
    # ROCm/rocm-libraries#6242: ids outside [0, E) are skipped (slot 0 stands for "no write").
    assert ck_workspace_index_6242(-1, 8) == 0
    assert ck_workspace_index_6242(8, 8) == 0
    assert ck_workspace_index_6242(7, 8) == 7


def test_sglang_sorted_ids_capacity_counts_e_plus_one_buckets():
    # SGLang 0.5.23 moe_align_block_size.py:115-120 at DeepSeek-V3's 256 routed experts, top-8,
    # BLOCK_SIZE_M 64: a 4096-token step (numel 32768) pads with E + 1 = 257 buckets:
    # 32768 + 257 * 63 = 48959, rounded up to 4 -> 48960 (258 buckets would give 49024)
    assert sglang_sorted_ids_capacity(32768, 256, 64) == 48960
    # 25 tokens (numel 200 < 257): numel * block_size
    assert sglang_sorted_ids_capacity(200, 256, 64) == 12800
    # numel 3 at block 1 (3 < 9 buckets): 3 * 1 = 3, rounded up to 4 for the int4 stores
    assert sglang_sorted_ids_capacity(3, 8, 1) == 4


def test_splitk_sorted_size_is_the_smaller_extent():
    assert splitk_sorted_size(1, 1, 16, 100) == 16
    assert splitk_sorted_size(4, 2, 16, 64) == 64


def test_sglang_row_widths():
    # DeepSeek-V3.2 context 163840 with 2 draft tokens (C1): round 1 gives context + draft.
    assert sg.page_table_width_round1(163840, 2) == 163842
    assert sg.hybrid_mamba_req_to_token_width(163840, 8) == 163852
    # page 64, 3 steps, topk 4, 8 draft tokens: per-decode alloc 2 pages * 64 * 4 = 512, reserve 1024.
    assert sg.get_alloc_reserve_per_decode(8, 3, 4, 64) == 1024
    assert sg.decode_alloc_end(128, 0, 8, 3, 4, 64) == 1152  # 128 + 1024 already page-aligned
    assert sg.decode_alloc_end(129, 0, 8, 3, 4, 64) == 1216  # rounded up to the next page
    assert sg.decode_alloc_end(128, 2048, 8, 3, 4, 64) == 2048  # already allocated further


def test_families_demands():
    # shared arange: sliced by tokens and by requests + 1
    assert ARANGE.demand(num_tokens_padded=16, num_reqs_padded=4) == 16
    assert ARANGE.demand(num_tokens_padded=8, num_reqs_padded=8) == 9
    assert SPEC_COLUMNS.demand(num_draft_tokens=3) == 3


@pytest.mark.parametrize("worst_case, capacity", [(100, 111), (0, 1)])
def test_margin_capacity_default_margin(worst_case, capacity):
    from models.runtime_indexers import margin_capacity

    assert margin_capacity(worst_case) == capacity


def _capture_sizes(max_num_seqs, k, mnbt, default=512):
    """Sizes up to 600 the model admits as default capture sizes (``n``: any request count; it only
    matters for uniform decode sizes with ``k > 0``)."""
    from models.vllm.cudagraph_sizes import is_default_capture_size

    ns = range(1, max_num_seqs + 1) if k else [1]
    return [s for s in range(1, 601) if any(is_default_capture_size(s, n, max_num_seqs, k, mnbt, default) for n in ns)]


def test_cudagraph_default_capture_sizes_as_vllm_0_33_lists_them():
    # vllm==0.33.0 vllm/config/vllm.py::_set_cudagraph_sizes (its docstring's example list):
    # max_graph_size = min(max_num_seqs * q * 2, 512); [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)
    assert _capture_sizes(256, 0, 8192) == [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)]
    # mnbt 300 below the cap: the list stops at 300 and 300 itself is appended
    assert _capture_sizes(256, 0, 300) == [1, 2, 4, *range(8, 256, 8), 256, 272, 288, 300]
    # max_num_seqs 6, 2 draft tokens (q = 3): cap 36; uniform decode sizes n * 3 for n in [1, 2, 4, 6]
    assert _capture_sizes(6, 2, 8192) == [1, 2, 3, 4, 6, 8, 12, 16, 18, 24, 32]
    # K = 0, max_num_seqs 20: cap 40, the uniform size is max_num_seqs itself
    assert _capture_sizes(20, 0, 8192) == [1, 2, 4, 8, 16, 20, 24, 32, 40]


def model_default_capture_sizes(max_num_seqs, k, mnbt, default):
    """The sizes ``is_default_capture_size`` admits, in ascending order, up to ``min(mnbt, 2 *
    default) + 32`` (past every element vLLM can list, so a model admitting more is caught). A size
    ``s`` is tried with the one request count that can make it a uniform-decode size, ``s // (1 + k)``
    (``n`` is unread for ``k = 0``)."""
    from models.vllm.cudagraph_sizes import is_default_capture_size

    q = 1 + k
    return [
        s
        for s in range(1, min(mnbt, 2 * default) + 33)
        if is_default_capture_size(s, s // q if k and s % q == 0 else 1, max_num_seqs, k, mnbt, default)
    ]


def test_default_capture_lists_at_the_clause_boundaries_are_vllm_0_33s():
    """vLLM 0.33.0's own ``_set_cudagraph_sizes`` output where the list's clauses meet (caps 1-9, 15
    and 255-257, request counts next to a multiple of 8, ``max_num_seqs`` above the 512 ceiling,
    ``max_num_batched_tokens`` on and off the stride, K = 0, 1, 3), recorded in
    tests/data/vllm-0.33.0-default-capture-lists.json; tests/test_real_engine.py (``-m real``)
    checks the record against vLLM's code and the model at random configurations. The lists are
    sorted, without duplicates, as vLLM's ``sorted(set(...))`` makes them."""
    import json
    import os

    with open(os.path.join(os.path.dirname(__file__), "data", "vllm-0.33.0-default-capture-lists.json")) as fh:
        record = json.load(fh)
    assert len(record["lists"]) >= 450
    for entry in record["lists"]:
        assert entry["sizes"] == sorted(set(entry["sizes"]))
        point = (
            entry["max_num_seqs"],
            entry["num_speculative_tokens"],
            entry["max_num_batched_tokens"],
            entry["default_max_graph_size"],
        )
        assert model_default_capture_sizes(*point) == entry["sizes"], point


def test_a4_indexer_decode_copy_route():
    # vllm-dsa-ebt-128align (A4): a plain 1-token decode takes the silent uniform copy; 1 decode
    # padded to 2 tokens by the CUDA graph takes the raising variable copy.
    from models.vllm.indexer import takes_uniform_decode_copy, takes_variable_decode_copy

    assert takes_uniform_decode_copy(1, 1, 1, 1) and not takes_variable_decode_copy(1, 1, 1, 1)
    assert not takes_uniform_decode_copy(1, 1, 1, 2) and takes_variable_decode_copy(1, 1, 1, 2)
    assert takes_uniform_decode_copy(2, 3, 3, 6)
    # ragged lengths 1 and 3 padded to 6 = 2 * 3 tokens: still variable
    assert not takes_uniform_decode_copy(2, 1, 3, 6) and takes_variable_decode_copy(2, 1, 3, 6)


def test_cudagraph_spec_decode_rounding_and_padding_tables():
    from models.vllm import cudagraph as cg

    # reference §10 example (/work/shared/reference/vllm-0.33-sglang-0.5.23-buffers.md): q = 4
    sizes = [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert cg.adjust_cudagraph_sizes_for_spec_decode(sizes, 64, 4) == ([4, 8, 16, 24, 32, 40, 48, 56, 64], 64)
    # rounded sizes past the maximum are dropped; the maximum becomes the largest kept size
    assert cg.adjust_cudagraph_sizes_for_spec_decode([1, 2, 4, 8, 10], 10, 3) == ([3, 6, 9], 9)
    assert cg.adjust_cudagraph_sizes_for_spec_decode([5], 6, 4) == ([4], 4)  # nothing kept: fall back to [q]
    assert cg.adjust_cudagraph_sizes_for_spec_decode([5], 4, 4) == (
        [4],
        4,
    )  # q == the maximum still fits (compilation.py:1551)
    assert cg.adjust_cudagraph_sizes_for_spec_decode([1, 2, 4, 8, 10], 10, 2) == (
        [2, 4, 8, 10],
        10,
    )  # MTP K = 1: q = 2 rounds
    assert cg.adjust_cudagraph_sizes_for_spec_decode(sizes, 64, 1) == (sizes, 64)  # no speculation: unchanged
    # ... even a maximum above the largest size (compilation.py:1539 returns before rounding at q <= 1;
    # tests/test_real_engine.py draws such maxima against the engine's own method)
    assert cg.adjust_cudagraph_sizes_for_spec_decode([1, 2, 4], 8, 1) == ([1, 2, 4], 8)
    assert cg.adjust_cudagraph_sizes_for_spec_decode([], 64, 4) == ([], 64)
    with pytest.raises(ValueError, match="no capture size is a multiple of 8 within 6"):
        cg.adjust_cudagraph_sizes_for_spec_decode([5], 6, 8)
    # padding: the smallest capture size >= n; 0 stays 0; past the list pads to max + 1
    assert cg.bs_to_padded_graph_size([1, 2, 4, 8], 8) == [0, 1, 2, 4, 4, 8, 8, 8, 8]
    assert [cg.padded_graph_size(n, [1, 2, 4, 8], 8) for n in (0, 3, 8, 9)] == [0, 4, 8, 9]


def _split_within_deadline(*args, seconds=10, **kwargs):
    """``split_indexer_prefill_chunks(*args)`` run in a thread with a deadline (the split of a few
    requests takes microseconds): a splitter that steps back or never advances fails the test
    instead of hanging it (and the mutation run's per-mutant limit, 60 s at least, is longer)."""
    import threading

    from models.vllm.indexer_prefill import split_indexer_prefill_chunks

    out = []
    walk = threading.Thread(target=lambda: out.append(split_indexer_prefill_chunks(*args, **kwargs)), daemon=True)
    walk.start()
    walk.join(seconds)
    assert not walk.is_alive(), f"the splitter did not return within {seconds} s on {args}"
    return out[0]


def test_indexer_prefill_chunks_by_hand():
    # vllm==0.33.0 indexer split (corpus N1): greedy over requests under the workspace and the
    # logits budget (max_logits_bytes // 4), each chunk cut along queries into budget // seq rows.
    split = _split_within_deadline

    assert split([3, 3, 3], [1, 1, 1], 6, 400) == [((0, 2), (0, 2)), ((2, 3), (0, 1))]  # workspace-bound
    assert split([4, 4], [3, 3], 100, 80) == [((0, 1), (0, 3)), ((1, 2), (0, 3))]  # logits-bound
    assert split([10], [7], 100, 80) == [((0, 1), (0, 2)), ((0, 1), (2, 4)), ((0, 1), (4, 6)), ((0, 1), (6, 7))]
    assert split([3], [1], 6, 400, request_offset=5) == [((5, 6), (0, 1))]
    assert split([0], [3], 6, 400) == [((0, 1), (0, 3))]  # no sequence: one piece of all queries
    assert split([1], [5], 6, 8) == [
        ((0, 1), (0, 2)),
        ((0, 1), (2, 4)),
        ((0, 1), (4, 5)),
    ]  # budget 2 // seq 1 rows a piece
    # at the logits budget exactly the request joins: (2 + 3) * (2 + 2) == 80 // 4 (vllm==0.33.0
    # v1/attention/backends/mla/indexer.py line 1390: new_m * new_n <= max_logits_elems)
    assert split([2, 2], [2, 3], 100, 80) == [((0, 2), (0, 5))]


def test_indexer_prefill_query_cut_contract_on_ints(monkeypatch):
    """query_pieces_fit_logits (the query cut's CrossHair contract) on ints: true for vLLM 0.33.0's
    cut at every point of its declared domain and at corpus N1's cuts above (one-row pieces
    included), false for each wrong cut of corpus N1's ``[10]``/``[7]`` request shape."""
    import models.vllm.indexer_prefill as pf

    for chunk_m in range(1, 7):
        for chunk_n in range(0, 49):
            for max_logits_bytes in range(4, 257):
                assert pf.query_pieces_fit_logits(chunk_m, chunk_n, max_logits_bytes)
    assert pf.query_pieces_fit_logits(7, 10, 80)  # split([10], [7], 100, 80): pieces of 2 rows
    assert pf.query_pieces_fit_logits(5, 1, 8)  # split([1], [5], 6, 8): budget 2 // seq 1
    assert pf.cut_query_rows(3, 16, 80) == [(0, 1), (1, 2), (2, 3)]  # one row a piece: budget 20 // 16
    assert pf.query_pieces_fit_logits(3, 16, 80)
    for wrong in (
        [(0, 2), (2, 4), (4, 6), (6, 8)],  # the last piece past the slice's 7 rows
        [(0, 3), (3, 6), (6, 7)],  # 3 rows * 10 > budget 20
        [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)],  # one row where two fit
        [(0, 2), (3, 5), (5, 7)],  # a row skipped
        [(0, 2), (2, 2), (2, 4), (4, 6), (6, 7)],  # an empty piece
    ):
        monkeypatch.setattr(pf, "cut_query_rows", lambda m, n, b, wrong=wrong: wrong)
        assert not pf.query_pieces_fit_logits(7, 10, 80), wrong


def test_indexer_prefill_oversized_request_after_others_is_its_own_chunk():
    # Corpus N1's 5000-token request against a 3500 workspace, after a 1000-token request and
    # before a 200-token one (vllm==0.33.0's default 512 MiB logits budget): the oversized request
    # is a chunk of its own and the walk goes on past it. Run with a deadline: a splitter that
    # steps back never returns.
    within_deadline = _split_within_deadline
    assert within_deadline([1000, 5000, 200], [1000, 5000, 200], 3500, 512 * 2**20) == [
        ((0, 1), (0, 1000)),
        ((1, 2), (0, 5000)),
        ((2, 3), (0, 200)),
    ]
    # a request longer than the whole logits budget (8 // 4 = 2 rows) still advances: pieces of 1 query row
    assert within_deadline([10], [2], 100, 8) == [((0, 1), (0, 1)), ((0, 1), (1, 2))]


def test_b0_moe_align_capacity_forms():
    # B0: numel + num_experts * (B - 1), round_up to B with pad_sorted_ids; older vLLM had no
    # small-numel min. 64 tokens x topk 8 = 512 ids, 256 experts, block 16; and 3 ids, 8 experts.
    from models.moe_align import (
        moe_align_demand_bound,
        vllm_sorted_ids_capacity,
        vllm_sorted_ids_capacity_before_small_numel_min,
    )

    assert vllm_sorted_ids_capacity_before_small_numel_min(512, 256, 16, 0) == 512 + 256 * 15
    assert vllm_sorted_ids_capacity_before_small_numel_min(3, 8, 16, 0) == 3 + 8 * 15
    assert vllm_sorted_ids_capacity_before_small_numel_min(3, 8, 16, 1) == 128  # round_up(123, 16)
    assert vllm_sorted_ids_capacity(3, 8, 16, 0) == 48  # numel < num_experts: min(3 * 16, 123)
    # pad_sorted_ids: 513 + 256 * 15 = 4353 rounded up to 4368, a multiple of the block
    assert vllm_sorted_ids_capacity(513, 256, 16, 1) == 4368
    assert vllm_sorted_ids_capacity(513, 256, 16, 0) == 4353
    # the demand bound: numel + min(numel, active experts) * (B - 1)
    assert moe_align_demand_bound(512, 256, 16) == 512 + 256 * 15
    assert moe_align_demand_bound(3, 8, 16) == 3 + 3 * 15


def test_sglang_alloc_sizes_at_page_boundaries():
    # SGLang 0.5.23 allocation_sizing.py: pages per topk = ((p - 1) + steps + p - 1) // p
    assert sg.get_alloc_len_per_decode(8, 1, 4, 64) == 256  # 127 // 64 = 1 page per topk
    assert sg.get_alloc_len_per_decode(8, 2, 4, 64) == 512  # 128 // 64 = 2 pages
    assert sg.get_alloc_len_per_decode(600, 1, 4, 64) == 600  # the draft tokens dominate
    assert sg.get_alloc_len_per_decode(8, 3, 4, 2) == 16  # page 2, topk 4: the paged branch
    assert sg.get_req_to_token_extra_context_len(8, 3, 4, 2) == 33  # max(4 + 8, 2 * 16 + 2 - 1)
    assert sg.get_req_to_token_extra_context_len(1, 1, 1, 2) == 5  # 4 + 1 beats 2 * 1 + 1
    assert sg.req_to_token_width(163840, 8) == 163852  # defaults: 1 step, topk 1, page 1
    assert sg.clamped_copy_widths(163846, 163842, 163844) == (163842, 163844)


def test_deepep_v2_capacity_small_numel():
    from models.moe_align import deepep_v2_sorted_ids_capacity

    assert deepep_v2_sorted_ids_capacity(3, 8, 16) == 48  # numel < local experts: min(3 * 16, 123)
    assert deepep_v2_sorted_ids_capacity(512, 8, 16) == 512 + 8 * 15


def test_moe_align_last_write_position_by_hand():
    # csrc/moe/moe_align_sum_kernels.cu count_and_sort_expert_tokens_kernel: a token of expert e
    # writes sorted_token_ids[cumsum_buffer[e] + rank], the prefix padded to block_size per expert.
    # Routing topk_ids = [0, 1, 1, 2, 2, 2], block 4: counts [1, 2, 3], padded prefixes 0, 4, 8,
    # so expert 2 writes 8, 9, 10; expert 1 writes 4, 5; expert 0 writes 0; an empty expert none.
    from models.moe_align import max_write_position

    assert max_write_position([1, 2, 3], 2, 4) == 10
    assert max_write_position([1, 2, 3], 1, 4) == 5
    assert max_write_position([1, 2, 3], 0, 4) == 0
    assert max_write_position([0, 2], 0, 4) == -1


def test_moe_align_writes_walk_is_the_largest_write_and_its_invariant_holds():
    """align_writes (one walk, proved for every number of experts by induction) gives the
    largest max_write_position over the first num_experts experts and num_tokens_post_pad, on
    every routing of up to 4 experts with counts 0..5 padded with empty experts, and its invariant
    holds after every prefix (checked on ints). The #27917 routing: counts [1, 2, 3], block 4."""
    import itertools

    from capproof.arith import Padded, checking_invariants
    from models.moe_align import align_writes, max_write_position, num_tokens_post_pad

    assert align_writes([1, 2, 3], 3, 4) == (12, 10)
    checked = 0
    with checking_invariants():
        for n in range(0, 5):
            for active in itertools.product(range(6), repeat=n):
                for block in (1, 4):
                    counts = Padded(tuple(active) + (0,) * (6 - n), n, 0, 0, 2**20)
                    post_pad, last = align_writes(counts, n, block)
                    assert post_pad == num_tokens_post_pad(active, block)
                    assert last == max((max_write_position(active, e, block) for e in range(n)), default=-1)
                    checked += 1
    assert checked > 2000


def test_indexer_prefill_largest_chunk_by_hand():
    # The value the CrossHair contracts bound (models/vllm/indexer_prefill.py): the largest chunk's
    # summed sequence length. Corpus N1 / reference §5: one request of 5000 tokens against a
    # workspace of 3500 is admitted whole; [1000, 2000, 1000] under 3500 splits as [1000, 2000]
    # (3000) then [1000] (the greedy split of the test above).
    from models.vllm.indexer_prefill import chunks_fit_workspace, chunks_fit_workspace_any_request

    assert chunks_fit_workspace_any_request(5000, 0, 0, 1, 1, 1, 3500, 512 * 2**20) == 5000
    assert chunks_fit_workspace(1000, 2000, 1000, 1, 1, 1, 3500, 512 * 2**20) == 3000
    assert chunks_fit_workspace(1000, 1000, 3000, 1, 1, 1, 3500, 512 * 2**20) == 3000


def test_indexer_prefill_first_revision_chunks_by_hand():
    # The first revision of vllm-project/vllm#25999 (corpus N1): a chunk is cut when the running sum
    # passes the buffer, at the request that passed it; the tail after the loop. No request: no chunk.
    from models.vllm.indexer_prefill import split_prefill_chunks_first_revision as split

    assert split([], 10) == []
    assert split([4, 4, 4], 10) == [(0, 2), (2, 3)]
    assert split([11], 10) == [(0, 0), (0, 1)]
    assert split([5, 5], 10) == [(0, 2)]  # a running sum equal to the buffer is not cut (``>``)
    # after a cut the sum restarts at 0 although the new chunk holds request i (the revision's bug):
    # 0 + 10 is not past 10, so [6, 10] (16 tokens) is one chunk
    assert split([6, 6, 10], 10) == [(0, 1), (1, 3)]
    # its contract: every chunk sums to at most the buffer (a chunk of exactly 10 fits)
    from models.vllm.indexer_prefill import first_revision_chunks_fit

    assert first_revision_chunks_fit(5, 5, 1, 10) is True  # chunks [5, 5] and [1]
    assert first_revision_chunks_fit(6, 6, 9, 10) is False  # corpus N1: [6] and [6, 9]


def test_default_capture_list_of_the_spec_is_the_recorded_vllm_list():
    """spec/vllm_0_33_today.py enumerates the default list from the membership predicate up to
    ``min(mnbt, cap)``; on the recorded grid (vLLM 0.33.0's own lists) it is vLLM's list, and the
    test's wider enumeration adds nothing past that limit."""
    import json

    from spec.vllm_0_33_today import default_capture_list, dispatched_capture_list

    with open(os.path.join(os.path.dirname(__file__), "data", "vllm-0.33.0-default-capture-lists.json")) as fh:
        lists = json.load(fh)["lists"]
    for entry in lists:
        config = (
            entry["max_num_seqs"],
            entry["num_speculative_tokens"],
            entry["max_num_batched_tokens"],
            entry["default_max_graph_size"],
        )
        assert default_capture_list(*config) == entry["sizes"] == model_default_capture_sizes(*config), config
    # the deployment of the vllm#28207 regression: the default list of 40 requests, K = 2, and its rounding
    default, sizes, max_size = dispatched_capture_list(40, 2, 8192, 512)
    assert default == [
        1,
        2,
        3,
        4,
        6,
        8,
        12,
        16,
        24,
        32,
        40,
        48,
        56,
        64,
        72,
        80,
        88,
        96,
        104,
        112,
        120,
        128,
        136,
        144,
        152,
        160,
        168,
        176,
        184,
        192,
        200,
        208,
        216,
        224,
        232,
        240,
    ]
    assert (
        sizes[:6] == [3, 6, 9, 12, 18, 24] and max_size == 240
    )  # vLLM 0.33.0 adjust_cudagraph_sizes_for_spec_decode gives the same
