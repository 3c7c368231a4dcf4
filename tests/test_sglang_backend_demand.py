"""SGLang attention backends' CUDA-graph buffers: the source reading behind the "backend graph rows"
demands (capproof/engines/sglang/demand.py), on small backends written the way SGLang 0.5.23's are,
and the demands committed in proofs/inventory/sglang-0.5.23.json.

Fast tier: AST only (no SGLang import). What a reading refuses leaves the buffer without a demand.
"""

from __future__ import annotations

import ast
import json
import os
import textwrap

import pytest

from capproof.engines.sglang import demand as D

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INV = os.path.join(ROOT, "proofs", "inventory", "sglang-0.5.23.json")

# shaped after flashattention_backend.py: per-batch-size metadata dicts whose string keys hold the
# buffers and whose int keys (bs) hold the metadata objects built on views of them
DICTS = textwrap.dedent(
    """
    class Backend:
        def __init__(self, topk):
            self.decode_cuda_graph_metadata = {}
            self.topk = topk

        def init_cuda_graph_state(self, max_bs, max_num_tokens):
            self.decode_cuda_graph_metadata = {
                "cache_seqlens": torch.zeros(max_bs, dtype=torch.int32),
                "cu_seqlens_q": torch.arange(0, max_bs + 1, dtype=torch.int32),
                "page_table": torch.zeros(max_bs, 64, dtype=torch.int32),
                "strided_indices": torch.arange(0, 4096, 16),
            }
            self.decode_cuda_graph_metadata["swa_page_table"] = torch.zeros(max_bs, 64)
            self.expand = {"cache_seqlens": torch.full((max_bs * self.topk,), 1)}

        def init_forward_metadata_out_graph(self, forward_batch, in_capture):
            self._init_full_cg(forward_batch, in_capture)

        def _init_full_cg(self, forward_batch, in_capture):
            bs = forward_batch.batch_size
            self._bind(bs, forward_batch.positions.numel())
            metadata = self.decode_cuda_graph_metadata[bs]

        def _bind(self, bs, num_tokens):
            metadata = Metadata()
            metadata.cache_seqlens = self.decode_cuda_graph_metadata["cache_seqlens"][:bs]
            metadata.cu_seqlens_q = self.decode_cuda_graph_metadata["cu_seqlens_q"][: bs + 1]
            metadata.page_table = self.decode_cuda_graph_metadata["page_table"][:bs, :]
            metadata.swa = self.decode_cuda_graph_metadata["swa_page_table"][:bs, :]
            metadata.expand = self.expand["cache_seqlens"][: bs * self.topk]
            self._bind_swa(metadata, self.decode_cuda_graph_metadata, "swa_page_table", bs)
            self.decode_cuda_graph_metadata[bs] = metadata

        def _bind_swa(self, metadata, source, key, bs):
            buf = source.get(key)
            if buf is not None:
                metadata.swa2 = buf[:bs, :]

        def forward(self, n):
            strided = self.decode_cuda_graph_metadata["strided_indices"]
            return strided[:n]
    """
)


def _line(source: str, text: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if text in ln)


def test_dict_items_are_keyed_and_sliced_by_the_graph_batch():
    tree = ast.parse(DICTS)
    line = _line(DICTS, '"cu_seqlens_q": torch.arange')
    assert D.dict_item_key(tree, "decode_cuda_graph_metadata#2", line) == "cu_seqlens_q"
    swa = _line(DICTS, '["swa_page_table"] = torch.zeros')
    assert D.dict_item_key(tree, "decode_cuda_graph_metadata[]", swa) == "swa_page_table"
    # _bind's bs is the graph batch: its one caller passes bs = forward_batch.batch_size of a helper
    # whose only caller is a graph method handing it its own forward_batch
    assert D.dict_item_uses(tree, "decode_cuda_graph_metadata#2", "cu_seqlens_q", 1, line) == [
        (_line(DICTS, '["cu_seqlens_q"][: bs + 1]'), ["rows+1"])
    ]
    page = _line(DICTS, '"page_table": torch.zeros')
    assert [u[1] for u in D.dict_item_uses(tree, "decode_cuda_graph_metadata#3", "page_table", 2, page)] == [
        ["rows", None]
    ]
    # the other keys are other buffers; the alias of "strided_indices" is refused for that key only
    with pytest.raises(D._Reject, match="Assign use"):
        D.dict_item_uses(tree, "decode_cuda_graph_metadata#4", "strided_indices", 1, _line(DICTS, '"strided_indices"'))


@pytest.mark.parametrize(
    "change, reason",
    [
        ("metadata = self.decode_cuda_graph_metadata[bs]", "for k in self.decode_cuda_graph_metadata.items(): pass"),
        ('metadata.cache_seqlens = self.decode_cuda_graph_metadata["cache_seqlens"][:bs]', "stop num_tokens"),
        ("def _init_full_cg(self, forward_batch, in_capture):", "outside a graph method's batch"),
    ],
)
def test_dict_items_refuse_what_they_cannot_bound(change, reason):
    if reason.startswith("for k"):  # the dict iterated: any key may be read
        source = DICTS.replace(change, change + "\n        " + reason)
        match = "Attribute use"
    elif reason == "stop num_tokens":
        source = DICTS.replace('["cache_seqlens"][:bs]', '["cache_seqlens"][:num_tokens]')
        match = reason
    else:  # the helper is also called from a method that is not a graph method
        source = DICTS.replace(
            "    def forward(self, n):",
            "    def prefill(self, forward_batch):\n        self._init_full_cg(forward_batch, False)\n\n    def forward(self, n):",
        )
        match = reason
    tree = ast.parse(source)
    line = _line(source, '"cache_seqlens": torch.zeros')
    with pytest.raises(D._Reject, match=match):
        D.dict_item_uses(tree, "decode_cuda_graph_metadata", "cache_seqlens", 1, line)


def test_a_helper_given_the_dict_and_a_key_reads_that_key_only():
    """TRT-LLM MHA's ``_bind_swa_page_table(metadata, self.<dict>, "key", bs)``: the helper's slice
    counts for that key's buffer, not for the dict's other buffers; a helper that reads the dict
    otherwise refuses every buffer of it."""
    tree = ast.parse(DICTS)
    swa = _line(DICTS, '["swa_page_table"] = torch.zeros')
    lines = [u[0] for u in D.dict_item_uses(tree, "decode_cuda_graph_metadata[]", "swa_page_table", 2, swa)]
    assert _line(DICTS, "metadata.swa2 = buf[:bs, :]") in lines
    cache = _line(DICTS, '"cache_seqlens": torch.zeros')
    assert D.dict_item_uses(tree, "decode_cuda_graph_metadata", "cache_seqlens", 1, cache) == [
        (_line(DICTS, '["cache_seqlens"][:bs]'), ["rows"])
    ]
    loose = ast.parse(DICTS.replace("buf = source.get(key)", "buf = source.get(key)\n        n = len(source)"))
    with pytest.raises(D._Reject, match="uses source otherwise"):
        D.dict_item_uses(loose, "decode_cuda_graph_metadata", "cache_seqlens", 1, cache)


def test_a_stop_scaled_by_a_factor_is_checked_against_the_allocation():
    tree = ast.parse(DICTS)
    line = _line(DICTS, "self.expand = ")
    assert D.dict_item_key(tree, "expand", line) == "cache_seqlens"
    assert [u[1] for u in D.dict_item_uses(tree, "expand", "cache_seqlens", 1, line)] == [["scaled:self.topk"]]
    assert D.allocation_rows(tree, line) == "max_bs*self.topk"
    assert D.allocation_rows(tree, _line(DICTS, '"cu_seqlens_q": torch.arange')) == "max_bs+1"
    assert D.allocation_rows(tree, _line(DICTS, '"strided_indices"')) is None  # arange with a start
    # FlashAttention's draft-decode expand cu_seqlens_q: arange(0, X * s + 1, step=s) has X + 1 entries
    stepped = ast.parse("x = torch.arange(0, max_bs * self.topk * decode_length + 1, step=decode_length)")
    assert D.allocation_rows(stepped, 1) == "max_bs*self.topk+1"
    other = ast.parse("x = torch.arange(0, max_bs * self.topk * decode_length + 1, step=2)")
    assert D.allocation_rows(other, 1) is None  # a step other than the factor: length not read
    assert D._set_once(tree, "self.topk")
    moved = ast.parse(
        DICTS.replace(
            "        bs = forward_batch.batch_size", "        self.topk = 2\n        bs = forward_batch.batch_size"
        )
    )
    assert not D._set_once(moved, "self.topk")


# shaped after qwen_sparse_attn_backend.py: rows are the batch or, for speculative paged modes, the
# captured batch's token count
QSA = textwrap.dedent(
    """
    class QSA:
        def init_cuda_graph_state(self, max_bs, max_num_tokens):
            self._graph_seq_lens = torch.zeros(max_num_tokens)

        def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
            if in_capture:
                num_tokens = (
                    forward_batch.input_ids.shape[0]
                    if self._is_speculative_paged_mode(forward_batch.forward_mode)
                    else forward_batch.batch_size
                )
                self._capture_cuda_graph_metadata(bs=forward_batch.batch_size, num_tokens=num_tokens)

        def _capture_cuda_graph_metadata(self, *, bs, num_tokens):
            speculative_paged = True
            metadata_rows = num_tokens if speculative_paged else bs
            self._graph_seq_lens[:bs].copy_(x)
            m = Meta(seq=self._graph_seq_lens[:metadata_rows], cu=self._graph_seq_lens[: metadata_rows + 1])

    class Draft:
        def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
            step_batch = forward_batch
            backend._capture_cuda_graph_metadata(bs=step_batch.batch_size, num_tokens=step_batch.batch_size)
    """
)


def test_metadata_rows_are_the_batch_or_the_captured_token_count():
    tree = ast.parse(QSA)
    uses = D.backend_uses(tree, "_graph_seq_lens", 1, _line(QSA, "self._graph_seq_lens = "))
    assert sorted(u[1][0] for u in uses) == ["rows", "tokens", "tokens+1"]
    bad = ast.parse(QSA.replace("else forward_batch.batch_size", "else forward_batch.seq_lens.numel()"))
    with pytest.raises(D._Reject, match="num_tokens = forward_batch.seq_lens.numel()"):
        D.backend_uses(bad, "_graph_seq_lens", 1, _line(QSA, "self._graph_seq_lens = "))


def _committed(entry_id: str) -> dict:
    with open(INV, encoding="utf-8") as fh:
        return next(e for e in json.load(fh)["entries"] if e["id"] == entry_id)


@pytest.mark.parametrize(
    "entry_id, extent, facts",
    [
        (
            "sglang/srt/layers/attention/qwen_sparse_attn_backend.py::QwenSparseAttnBackend._graph_cu_seqlens_q",
            "maximum(backend_bs, backend_num_tokens) + 1",
            2,
        ),
        (
            "sglang/srt/layers/attention/flashattention_backend.py::FlashAttentionBackend.decode_cuda_graph_metadata#2",
            "backend_bs + 1",
            1,
        ),
        (
            "sglang/srt/layers/attention/trtllm_mha_backend.py::TRTLLMHAAttnBackend.decode_cuda_graph_metadata[]#2",
            "backend_bs + 1",
            1,
        ),
        (
            "sglang/srt/layers/attention/flashattention_backend.py::"
            "FlashAttentionBackend.target_verify_metadata_topk_expand",
            "backend_bs * speculative_num_draft_tokens",
            1,
        ),
    ],
)
def test_committed_backend_demands(entry_id, extent, facts):
    """The regenerated inventory carries these demands, each with its unchecked facts named (the
    graph batch, and for Qwen sparse the captured token count) and the runner's max_bs checked."""
    entry = _committed(entry_id)
    d0 = next(d for d in entry["demands"] if d["dim"] == 0)
    assert d0["family"] == "backend graph rows" and d0["extent"] == extent
    unchecked = [f for f in d0["facts"] if not f["checked"]]
    assert len(unchecked) == facts and all(f["fact"].startswith("backend_") for f in unchecked)
    assert any(f["checked"] and "init_cuda_graph_state(self.max_bs" in f["fact"] for f in d0["facts"])


# shaped after flashmla_backend.py: the graph method hands its helper the batch size of the forward
# batch it was given (``bs=forward_batch.batch_size``), not a local ``bs``
FLASHMLA = textwrap.dedent(
    """
    class Backend:
        def init_cuda_graph_state(self, max_bs, max_num_tokens):
            self.cuda_graph_num_splits = torch.empty(1 + max_bs, dtype=torch.int32)

        def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
            self._apply(bs=forward_batch.batch_size, seq_lens=forward_batch.seq_lens)

        def _apply(self, bs, seq_lens):
            self.cuda_graph_num_splits[: bs + 1].copy_(seq_lens)

        def forward_extend(self, forward_batch):
            fb = other_batch()
            self._apply(bs=fb.batch_size, seq_lens=fb.seq_lens)
    """
)


def test_a_helper_given_the_graph_methods_forward_batch_size_is_bound_to_the_graph_batch():
    line = _line(FLASHMLA, "self.cuda_graph_num_splits = ")
    good = ast.parse(FLASHMLA.split("    def forward_extend")[0])
    assert [u[1] for u in D.backend_uses(good, "cuda_graph_num_splits", 1, line)] == [["rows+1"]]
    # another call site hands it a batch that is not the graph method's: refused
    with pytest.raises(D._Reject, match="outside a graph method's batch"):
        D.backend_uses(ast.parse(FLASHMLA), "cuda_graph_num_splits", 1, line)
    # the graph method rebinds its forward batch first: refused
    rebound = FLASHMLA.split("    def forward_extend")[0].replace(
        "        self._apply(bs=", "        forward_batch = other()\n        self._apply(bs="
    )
    with pytest.raises(D._Reject, match="outside a graph method's batch"):
        D.backend_uses(ast.parse(rebound), "cuda_graph_num_splits", 1, line)


# shaped after trtllm_mha_backend.py and flashinfer_backend.py: the SWA write-location buffer is
# sliced by the graph batch's token count, read from the forward batch a CUDA-graph method was handed
SWA = textwrap.dedent(
    """
    class Backend:
        def init_cuda_graph_state(self, max_bs, max_num_tokens):
            self.cuda_graph_swa_out_cache_loc = torch.zeros(max_num_tokens, dtype=torch.int64)

        def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
            bs = forward_batch.batch_size
            if in_capture:
                num_tokens = forward_batch.positions.numel()
                self._build(bs, num_tokens)
            n = forward_batch.out_cache_loc.shape[0]
            self.cuda_graph_swa_out_cache_loc[n:].zero_()
            self.cuda_graph_swa_out_cache_loc[:n].copy_(forward_batch.out_cache_loc)

        def _build(self, bs, num_tokens):
            metadata.swa_out_cache_loc = self.cuda_graph_swa_out_cache_loc[:num_tokens]
    """
)


def test_a_stop_bound_to_the_graph_batchs_token_count_is_a_token_extent():
    line = _line(SWA, "self.cuda_graph_swa_out_cache_loc = ")
    uses = D.backend_uses(ast.parse(SWA), "cuda_graph_swa_out_cache_loc", 1, line)
    # [n:] never passes the end (whole); [:n] and the helper's [:num_tokens] are token counts
    assert sorted(str(u[1][0]) for u in uses) == ["None", "count", "count"]
    # a count read from something else than the graph batch's tokens: refused
    other = SWA.replace("n = forward_batch.out_cache_loc.shape[0]", "n = self.max_tokens")
    with pytest.raises(D._Reject, match="stop n"):
        D.backend_uses(ast.parse(other), "cuda_graph_swa_out_cache_loc", 1, line)
    # the helper also called with another count: refused
    twice = SWA + "\n    def forward_extend(self, forward_batch):\n        self._build(1, self.n)\n"
    with pytest.raises(D._Reject, match="stop num_tokens"):
        D.backend_uses(ast.parse(twice), "cuda_graph_swa_out_cache_loc", 1, line)
