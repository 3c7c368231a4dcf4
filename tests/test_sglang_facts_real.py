"""SGLang 0.5.23's runner facts checked on its own code (``real``): the call sites of the attention
backends' CUDA-graph entry methods (capproof/engines/sglang/graph_calls.py) and the links of the
DP-gather fact (capproof/engines/sglang/demand.py), read from the extracted sources and run in the
real venv."""

from __future__ import annotations

import pytest
from test_sglang_engine import _sglang_root

pytestmark = pytest.mark.real


def test_flashattention_sites_left_are_the_tbo_prefill_and_multi_layer_eagle_ones():
    """Of the call sites that may reach ``FlashAttentionBackend``'s graph methods, the decode
    runner's replay through ``_capture_graph_size``/``_ragged_capture_slots`` (this call's arguments),
    the metadata glue graph's three (its instance only in ``self._metadata_glue``), the frozen-KV MTP
    runner's three (``bs * captured_req_width`` against ``max_bs * topk``), the NPU runner's (not
    run on a CUDA device), two-batch overlap's replay split (its splitter run) and the multi-layer
    EAGLE draft-extend runner's per-step capture (``get_forward_batch(bs)`` followed with that
    call's ``bs``) are checked; what is left unchecked lies in three files only."""
    from capproof.engines.sglang.graph_calls import backend_bs_sites
    from capproof.engines.sglang.trace import activate

    root = _sglang_root()
    activate(root)  # the view builders and resolve_num_tokens_per_req run
    sites = backend_bs_sites(root, "FlashAttentionBackend")
    checked, left = sites["checked"], sites["not checked"]
    for where in (
        "decode_cuda_graph_runner.py:1812",
        "metadata_glue_graph.py:108",
        "metadata_glue_graph.py:119",
        "metadata_glue_graph.py:131",
        "frozen_kv_mtp_worker_v2.py:348",
        "frozen_kv_mtp_worker_v2.py:378",
        "frozen_kv_mtp_cuda_graph_runner.py:334",
        "tbo_backend.py:132",
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py:462",
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py:468",
    ):
        assert any(where in s for s in checked), where
    assert any("npu_graph_runner.py:368" in s and "not run on a CUDA device" in s for s in checked)
    assert left and {s.split(":", 1)[0].rsplit("/", 1)[-1] for s in left} == {
        "tbo_backend.py",
        "prefill_cuda_graph_runner.py",
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py",
    }


def test_dp_gather_fact_checks_its_links_and_leaves_the_gather():
    """The DP-gather fact: SGLang's ``spec_scale_global_num_tokens`` run on symbolic counts, the
    counts ``init_mlp_sync_metadata`` stores read, and ``prepare_mlp_sync_batch`` (whose own-entry
    ``batch_size`` is no link) found off the CUDA-graph path; the scheduler's all-gather and the
    draft width left, so the fact stays assumed."""
    from capproof.engines.sglang.demand import EXTEND, RUNNER, dp_gather_fact, eager_only_sync
    from capproof.engines.sglang.trace import activate

    root = _sglang_root()
    activate(root)
    assert eager_only_sync(root) == ""
    for file in (RUNNER, EXTEND):
        fact = dp_gather_fact(root, file)
        paths = fact["paths"]
        assert not fact["checked"]
        assert any("spec_scale_global_num_tokens" in p for p in paths["checked (executed)"])
        assert any("init_mlp_sync_metadata" in p for p in paths["checked (ast)"])
        assert any("_prepare_eager_forward_batch" in p for p in paths["checked (ast)"])
        assert not any("own entry" in p for p in paths["checked (ast)"])
        assert any("all_gather" in p for p in paths["not checked"])
        assert any("can_run_graph" in p for p in paths["not checked"])


def test_two_batch_overlap_replay_split_keeps_children_within_the_parent():
    """SGLang's ``TboAttnBackend._dispatch_children_from_replay_view`` run on a symbolic parent batch
    in every forward mode: each child backend gets a batch between 0 and the parent's, and the
    wrapper gives every child its own ``max_bs``."""
    import ast

    from capproof.engines.sglang.graph_calls import children_get_max_bs, splitter_checked
    from capproof.engines.sglang.trace import activate

    root = _sglang_root()
    activate(root)
    assert splitter_checked("_dispatch_children_from_replay_view") == ""
    with open(f"{root}/sglang/srt/layers/attention/tbo_backend.py", encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    (cls,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "TboAttnBackend"]
    assert children_get_max_bs(cls) == ""


def test_flashattention_capture_only_slices_leave_three_capture_sites():
    """``FlashAttentionBackend`` slices its decode metadata (``decode_cuda_graph_metadata
    ["cache_seqlens"][:bs]``) only when the out-of-graph entry runs with ``in_capture=True`` on a
    decode or idle batch (walked in SGLang's source, its ``ForwardMode`` run). Every replay site,
    every in-graph site and the prefill runner's replay drop out of that buffer's fact; left are the
    capture calls whose batch's mode is not read: two-batch overlap's children, the full prefill
    graph's capture and the multi-layer EAGLE one-graph capture."""
    import os

    from capproof.engines.sglang.graph_calls import backend_bs_sites, reach_drop
    from capproof.engines.sglang.trace import activate

    root = _sglang_root()
    activate(root)
    rel = os.path.join(root, "sglang/srt/layers/attention/flashattention_backend.py")
    text = open(rel, encoding="utf-8").read().splitlines()
    # the lines subscripting self.decode_cuda_graph_metadata["cache_seqlens"] by [:bs]
    lines = [i for i, ln in enumerate(text, 1) if 'self.decode_cuda_graph_metadata["cache_seqlens"][:bs]' in ln]
    lines += [
        i
        for i, ln in enumerate(text, 1)
        if ln.strip().endswith("= self.decode_cuda_graph_metadata[") and text[i].strip() == '"cache_seqlens"'
    ]
    assert lines
    drop, note = reach_drop(root, "FlashAttentionBackend", lines)
    assert drop is not None, note
    sites = backend_bs_sites(root, "FlashAttentionBackend", drop=drop)
    dropped = [s for s in sites["checked"] if "cannot reach the buffer's slices" in s]
    for where in (
        "prefill_cuda_graph_runner.py:1293",
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py:530",
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py:819",
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py:1066",
        "tbo_backend.py:151",
    ):
        assert any(where in s for s in dropped), where
    left = sorted(s.split(" ", 1)[0].rsplit("/", 1)[-1] for s in sites["not checked"])
    assert left == [
        "multi_layer_eagle_draft_extend_cuda_graph_runner.py:1057",
        "prefill_cuda_graph_runner.py:1786",
        "tbo_backend.py:80",
    ]


def test_two_batch_overlap_children_are_within_their_parent_when_the_split_is():
    """SGLang's ``TboForwardBatchPreparer.prepare_raw`` run on a symbolic parent batch and split index
    in every forward mode, two-chunk split on and off: each child's ``batch_size`` (``filter_batch``:
    ``end_seq_index - start_seq_index``) is within the parent's when the split index is (the
    two-chunk child takes one request more). The split index itself is not judged: the
    capture-time and the scheduler's stores are named, so two-batch overlap's child sites
    (``tbo_backend.py:80``, ``:151``) stay unchecked with the split as their reason."""
    from capproof.engines.sglang.graph_calls import (
        _index,
        backend_bs_sites,
        tbo_children_checked,
        tbo_split_checked,
    )
    from capproof.engines.sglang.trace import activate

    root = _sglang_root()
    activate(root)
    assert tbo_children_checked() == ""
    split = tbo_split_checked(_index(root))
    assert split == "split index not checked at two_batch_overlap.py:354, dp_attn.py:658"
    left = backend_bs_sites(root, "FlashAttentionBackend")["not checked"]
    tbo = [s for s in left if s.startswith("sglang/srt/layers/attention/tbo_backend.py")]
    assert [s.split(" ", 1)[0].rsplit("/", 1)[-1] for s in tbo] == ["tbo_backend.py:80", "tbo_backend.py:151"]
    assert all("forward_batch_child <- forward_batch.tbo_children: split index not checked at" in s for s in tbo)


@pytest.mark.real
def test_the_full_prefill_graph_capture_is_read_as_an_extend_capture():
    """SGLang 0.5.23's full prefill graph capture (``prefill_cuda_graph_runner.py:1786``) gets the
    context ``(in_capture=True, EXTEND)``: its batch is ``capture_prepare``'s
    ``ForwardBatch(forward_mode=ForwardMode.EXTEND)`` handed back by
    ``ModelRunner.prepare_dummy_forward_batch``; the multi-layer EAGLE one-graph capture
    (``r.get_forward_batch(bs)``, another object's method) keeps every mode."""
    import ast

    from capproof.engines.sglang.graph_calls import _tracer, site_context

    root = _sglang_root()
    tracer = _tracer(root)
    got = {}
    for rel, line in (
        ("sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py", 1786),
        ("sglang/srt/speculative/multi_layer_eagle_draft_extend_cuda_graph_runner.py", 1057),
    ):
        call = next(
            n
            for n in ast.walk(tracer.ix.tree(rel))
            if isinstance(n, ast.Call) and n.lineno == line and getattr(n.func, "attr", "").startswith("init_forward")
        )
        got[line] = site_context(tracer, rel, call, call.func.attr)
    assert got[1786] == ("init_forward_metadata_out_graph", True, {"EXTEND"})
    assert got[1057] == ("init_forward_metadata_out_graph", True, None)
