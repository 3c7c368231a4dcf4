"""Differential tests: capproof's models vs the real vLLM 0.33.0 / SGLang 0.5.23 code (``make verify-real``).

Marked ``real`` (excluded from the default run). Each comparison names the config and both values.
Inputs: every counterexample capproof reports for spec/, and Hypothesis-drawn points of each
obligation's domain.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import os
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_model_values import model_default_capture_sizes

from capproof import Options, Verdict, arith
from capproof.domain import Range
from capproof.loader import load
from capproof.prover import prove_obligation
from models import moe_align as m_moe
from models.vllm import block_table as m_bt
from models.vllm import cudagraph as m_cg
from models.vllm import indexer_prefill as m_pf

pytestmark = pytest.mark.real
SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)


@pytest.fixture(scope="module")
def real():
    from capproof.engines.vllm import wheels as harness

    return harness


def same(what: str, config: dict, model, engine) -> None:
    assert model == engine, f"{what} differs at {config}: model={model!r}, vLLM/SGLang={engine!r}"


# -- one point of a configuration space: every model with a real counterpart --------------------------


def compare_block_tables(real, max_model_len, block_size, dcp=1, kernel_block_size=None):
    v = real.vllm()
    cfg = real.vllm_config(dcp=dcp)
    point = dict(max_model_len=max_model_len, block_size=block_size, dcp=dcp, kernel_block_size=kernel_block_size)
    n_mla = real.mla_spec(block_size).max_num_blocks_per_req(cfg, max_model_len)
    same(
        "MLAAttentionSpec.max_num_blocks_per_req",
        point,
        m_bt.max_num_blocks_per_req(max_model_len, block_size, dcp),
        n_mla,
    )
    same(
        "FullAttentionSpec.max_num_blocks_per_req",
        point,
        m_bt.max_num_blocks_per_req(max_model_len, block_size, dcp),
        real.full_attention_spec(block_size).max_num_blocks_per_req(cfg, max_model_len),
    )
    same(
        "UniformTypeKVCacheSpecs.max_num_blocks_per_req",
        point,
        m_bt.max_num_blocks_per_req(max_model_len, block_size, dcp),
        real.uniform_type_specs(block_size).max_num_blocks_per_req(cfg, max_model_len),
    )
    undivided = v.kv.FullAttentionSpec(
        block_size=block_size, num_kv_heads=1, head_size=64, dtype=None, dcp_sharded=False
    )
    same(
        "KVCacheSpec base max_num_blocks_per_req (dcp_sharded=False)",
        point,
        m_bt.max_num_blocks_per_req_base(max_model_len, block_size),
        undivided.max_num_blocks_per_req(cfg, max_model_len),
    )
    width = v.get_block_table_width(n_mla, block_size)
    same("get_block_table_width", point, m_bt.get_block_table_width(n_mla, block_size), width)
    same(
        "runner block-table width (path 1)", point, m_bt.runner_block_table_width(max_model_len, block_size, dcp), width
    )
    if kernel_block_size is not None and block_size % kernel_block_size == 0:
        same(
            "indexer block_table_width (path 3)",
            point,
            m_bt.indexer_block_table_width(max_model_len, block_size, dcp, kernel_block_size),
            width * (block_size // kernel_block_size),
        )


def _strategy(domain):
    if isinstance(domain, Range):
        return st.integers(domain.lo, min(domain.hi, domain.lo + 2**24))
    return st.sampled_from(domain.cases())


def _vllm_obligations():
    items, errors = load(["spec/vllm_block_table.py", "spec/vllm_dsa_indexer.py"])
    assert not errors, errors
    return [it for it in items if hasattr(it, "domain") and {"max_model_len"} <= set(it.domain)]


@pytest.mark.parametrize("ob", _vllm_obligations(), ids=lambda ob: ob.name)
def test_models_match_vllm_on_the_obligations_domain(real, ob):
    """Hypothesis draws points of the obligation's own domain; block-size defaults to DSA's 64."""
    keys = [k for k in ("max_model_len", "block_size", "dcp", "kernel_block_size") if k in ob.domain]

    @SETTINGS
    @given(st.fixed_dictionaries({k: _strategy(ob.domain[k]) for k in keys}))
    def run(point):
        point.setdefault("block_size", 64)
        compare_block_tables(real, **point)

    run()


@pytest.fixture(scope="module")
def counterexamples():
    out = []
    for ob in _vllm_obligations():
        result = prove_obligation(ob, Options())
        if result.verdict is Verdict.COUNTEREXAMPLE:
            out.append((ob.name, result.counterexample.params))
    assert out, "spec/ reports no counterexample to compare"
    return out


def test_models_match_vllm_on_every_reported_counterexample(real, counterexamples):
    for _name, params in counterexamples:
        point = {k: params[k] for k in ("max_model_len", "block_size", "dcp", "kernel_block_size") if k in params}
        point.setdefault("block_size", 64)
        compare_block_tables(real, **point)


@pytest.mark.parametrize(
    "L, bs, dcp, kbs, width",
    [
        (350000, 64, 1, 64, 5470),
        (200000, 64, 1, 64, 3126),
        (480000, 64, 4, 64, 1876),
        (1048576, 64, 2, 64, 8192),
        (163840, 64, 1, 64, 2560),
        (163840, 64, 8, 64, 320),
    ],
)
def test_corpus_configs_runner_width(real, L, bs, dcp, kbs, width):
    compare_block_tables(real, L, bs, dcp, kbs)
    assert m_bt.runner_block_table_width(L, bs, dcp) == width


@SETTINGS
@given(st.integers(-(2**62), 2**62), st.integers(-(2**40), 2**40).filter(bool))
def test_cdiv_round_up(a, b):
    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    same("cdiv", {"a": a, "b": b}, arith.cdiv(a, b), v.cdiv(a, b))
    same("round_up", {"x": a, "y": b}, arith.round_up(a, b), v.round_up(a, b))


@SETTINGS
@given(st.integers(0, 2**22), st.integers(1, 1024), st.sampled_from([None, 1, 16, 64, 128, 256, 0, -128]))
def test_get_block_table_width_any_alignment(n, bs, align):
    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    point = {"max_num_blocks": n, "block_size": bs, "token_alignment": align}
    try:
        engine = v.get_block_table_width(n, bs, token_alignment=align)
    except ValueError as exc:
        engine = f"ValueError: {exc}"
    try:
        model = m_bt.get_block_table_width(n, bs, align)
    except ValueError as exc:
        model = f"ValueError: {exc}"
    same("get_block_table_width", point, model, engine)


@SETTINGS
@given(st.integers(1, 2**21), st.integers(2, 12))
def test_get_max_prefill_buffer_size(L, factor):
    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    same(
        "get_max_prefill_buffer_size",
        {"max_model_len": L, "factor": factor},
        m_pf.get_max_prefill_buffer_size(L, factor),
        v.get_max_prefill_buffer_size(real.vllm_config(max_model_len=L, prefill_workspace_factor=factor)),
    )
    assert m_pf.get_max_prefill_buffer_size(163840, 5) == 6553600  # reference §5 example


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 20000), st.integers(0, 5000)), max_size=12),
    st.integers(1, 40000),
    st.sampled_from([4, 1000, 2**20, 64 * 2**20, 512 * 2**20]),
    st.integers(0, 3),
)
def test_split_indexer_prefill_chunks(reqs, workspace, max_logits_bytes, offset):
    import numpy as np

    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    seqs = [s for s, _ in reqs]
    queries = [q for _, q in reqs]
    engine = v.split_indexer_prefill_chunks(
        np.array(seqs, dtype=np.int64), np.array(queries, dtype=np.int64), workspace, max_logits_bytes, offset
    )
    engine = [((r.start, r.stop), (q.start, q.stop)) for r, q in engine]
    model = m_pf.split_indexer_prefill_chunks(seqs, queries, workspace, max_logits_bytes, offset)
    same(
        "_split_indexer_prefill_chunks",
        dict(seq_lens=seqs, query_lens=queries, workspace_size=workspace, max_logits_bytes=max_logits_bytes),
        model,
        engine,
    )


@SETTINGS
@given(st.lists(st.sampled_from([0, 1, 2, 3, 4, 7, 130]), min_size=1, max_size=24), st.integers(1, 7), st.data())
def test_uniform_decode_split_matches_split_decodes_and_prefills(query_lens, k, data):
    """models.vllm.indexer_buffers.uniform_decode_split (one walk, proved for every batch size by
    induction) vs vLLM 0.33.0 ``split_decodes_and_prefills(decode_threshold=1 + K,
    require_uniform=True)`` on a duck-typed CommonAttentionMetadata: num_decodes, and
    max_decode_len = max of the decodes' query lengths (the indexer's ``decode_lens_cpu.max()``)."""
    import torch

    from capproof.engines.vllm import wheels as real
    from models.vllm.indexer_buffers import uniform_decode_split

    real.activate()
    from vllm.v1.attention.backends.utils import split_decodes_and_prefills

    query_lens = [data.draw(st.integers(1, 4))] * data.draw(st.integers(0, 3)) + query_lens  # leading uniform decodes
    loc = torch.tensor([0, *itertools.accumulate(query_lens)], dtype=torch.int32)
    meta = SimpleNamespace(
        max_query_len=max(query_lens),
        num_reqs=len(query_lens),
        num_actual_tokens=int(loc[-1]),
        query_start_loc_cpu=loc,
        is_prefilling=None,
    )
    num_decodes, _, num_decode_tokens, _ = split_decodes_and_prefills(
        meta, decode_threshold=1 + k, require_uniform=True
    )
    engine = (num_decodes, max(query_lens[:num_decodes], default=0))
    model = uniform_decode_split(arith.Padded(tuple(query_lens), len(query_lens), 0, 0, 2**16), len(query_lens), k)
    same(
        "split_decodes_and_prefills(require_uniform=True)",
        dict(query_lens=query_lens, num_speculative_tokens=k),
        model,
        engine,
    )
    assert num_decode_tokens == sum(query_lens[:num_decodes])


capture_lists = st.lists(st.integers(1, 1024), min_size=1, max_size=40).map(lambda xs: sorted(set(xs)))


@SETTINGS
@given(capture_lists, st.integers(1, 17), st.integers(0, 64))
def test_adjust_cudagraph_sizes_for_spec_decode(sizes, q, slack):
    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    max_size = sizes[-1] + slack
    this = SimpleNamespace(cudagraph_capture_sizes=list(sizes), max_cudagraph_capture_size=max_size)
    try:
        v.CompilationConfig.adjust_cudagraph_sizes_for_spec_decode(this, q)
        engine = (this.cudagraph_capture_sizes, this.max_cudagraph_capture_size)
    except ValueError:
        engine = "ValueError"
    try:
        model = m_cg.adjust_cudagraph_sizes_for_spec_decode(sizes, max_size, q)
    except ValueError:
        model = "ValueError"
    same("adjust_cudagraph_sizes_for_spec_decode", dict(sizes=sizes, max=max_size, q=q), model, engine)
    assert m_cg.adjust_cudagraph_sizes_for_spec_decode([1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64], 64, 4)[0] == [
        4,
        8,
        16,
        24,
        32,
        40,
        48,
        56,
        64,
    ]  # reference §10 example


def vllm_default_capture_sizes(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size=512
):
    """vLLM 0.33.0's own ``VllmConfig._set_cudagraph_sizes`` (default path: no user sizes, no
    ``max_cudagraph_capture_size``, ``performance_mode`` balanced, no dynamic speculative decoding)
    and ``CompilationConfig.post_init_cudagraph_sizes`` on a duck-typed config: -> (the capture
    list, ``max_cudagraph_capture_size``). ``default_max_graph_size`` 1024 is the SM100 platform."""
    from unittest import mock

    from capproof.engines.vllm import wheels as real

    real.vllm()
    import vllm.platforms as platforms
    from vllm.config.compilation import CompilationConfig, CUDAGraphMode
    from vllm.config.vllm import VllmConfig

    cc = SimpleNamespace(
        max_cudagraph_capture_size=None,
        cudagraph_capture_sizes=None,
        compile_sizes=None,
        cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
    )
    cc.post_init_cudagraph_sizes = lambda: CompilationConfig.post_init_cudagraph_sizes(cc)
    this = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=cc,
        uniform_decode_query_len=1 + num_speculative_tokens,
        num_speculative_tokens=num_speculative_tokens,
        speculative_config=None,
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens),
        performance_mode="balanced",
    )
    sm100 = default_max_graph_size == 1024
    with mock.patch.object(
        type(platforms.current_platform),
        "is_device_capability_family",
        lambda self, family, *args, **kwargs: sm100 and family == 100,
    ):
        VllmConfig._set_cudagraph_sizes(this)
    return cc.cudagraph_capture_sizes, cc.max_cudagraph_capture_size


#: configurations where the capture list's clauses meet (caps 1-9, 15 and 255-257, request counts
#: next to a multiple of 8, max_num_seqs above the 512 ceiling, max_num_batched_tokens on and off the
#: stride, K = 0 and K > 0). vLLM's lists there are recorded in CAPTURE_FIXTURE for the
#: fast tier (tests/test_model_values.py, no vLLM needed); the test below checks the record is
#: vLLM's output. Regenerate: CAPPROOF_WRITE_CAPTURE_FIXTURE=1 with `-m real -k capture_fixture`.
CAPTURE_GRID = [
    (seqs, k, mnbt, 512)
    for seqs in (1, 2, 3, 4, 5, 7, 9, 64, 128, 129, 300, 600)
    for k in (0, 1, 3)
    for mnbt in (1, 2, 3, 4, 5, 7, 8, 9, 15, 255, 256, 257, 8192)
]
# request counts 88 = 87 + 1 and 88 = 89 - 1 at q = 3: the uniform size 264, an odd multiple of 8 past 256
CAPTURE_GRID += [(87, 2, 8192, 512), (89, 2, 8192, 512), (87, 2, 264, 512), (89, 2, 263, 512)]
CAPTURE_FIXTURE = os.path.join(os.path.dirname(__file__), "data", "vllm-0.33.0-default-capture-lists.json")


def test_capture_fixture_is_vllm_0_33s_output():
    import json

    record = {
        "source": "vllm==0.33.0 vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes (default path), "
        "run by tests/test_real_engine.py::vllm_default_capture_sizes",
        "lists": [
            dict(
                max_num_seqs=seqs,
                num_speculative_tokens=k,
                max_num_batched_tokens=mnbt,
                default_max_graph_size=default,
                sizes=vllm_default_capture_sizes(seqs, k, mnbt, default)[0],
            )
            for seqs, k, mnbt, default in CAPTURE_GRID
        ],
    }
    if os.environ.get("CAPPROOF_WRITE_CAPTURE_FIXTURE"):
        with open(CAPTURE_FIXTURE, "w") as fh:  # one list a line
            fh.write(
                json.dumps({"source": record["source"]})[:-1]
                + ', "lists": [\n'
                + ",\n".join(json.dumps(entry) for entry in record["lists"])
                + "\n]}\n"
            )
    with open(CAPTURE_FIXTURE) as fh:
        assert json.load(fh) == record


@SETTINGS
@given(
    st.integers(1, 1100),
    st.integers(0, 16),
    st.one_of(st.integers(1, 600), st.integers(1, 20000)),
    st.sampled_from([512, 1024]),
)
def test_default_capture_sizes_are_vllm_0_33s_list(max_num_seqs, k, mnbt, default):
    """models/vllm/cudagraph_sizes.py against vLLM 0.33.0's own code: the membership predicate
    admits exactly the elements of vLLM's list; vLLM's list is sorted, has no duplicate and ends at
    ``max_cudagraph_capture_size`` (what the predicates' users rely on: a size's padding is the
    smallest element ``>=`` it)."""
    engine, max_size = vllm_default_capture_sizes(max_num_seqs, k, mnbt, default)
    assert engine == sorted(set(engine)) and engine[-1] == max_size, engine
    same(
        "is_default_capture_size",
        dict(max_num_seqs=max_num_seqs, k=k, mnbt=mnbt, default=default),
        model_default_capture_sizes(max_num_seqs, k, mnbt, default),
        engine,
    )


@pytest.mark.parametrize("point", CAPTURE_GRID, ids=lambda p: "seqs%d-k%d-mnbt%d" % p[:3])
def test_default_capture_lists_at_the_clause_boundaries(point):
    engine, _ = vllm_default_capture_sizes(*point)
    same(
        "is_default_capture_size",
        dict(zip(("max_num_seqs", "k", "mnbt", "default"), point)),
        model_default_capture_sizes(*point),
        engine,
    )


@SETTINGS
@given(capture_lists)
def test_padded_graph_size_table(sizes):
    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    this = SimpleNamespace(
        compilation_config=SimpleNamespace(
            max_cudagraph_capture_size=sizes[-1], cudagraph_capture_sizes=list(sizes), compile_sizes=None
        ),
        cudagraph_mode=None,
    )
    v.CudagraphDispatcher._compute_bs_to_padded_graph_size(this)
    same(
        "_compute_bs_to_padded_graph_size",
        {"sizes": sizes},
        m_cg.bs_to_padded_graph_size(sizes, sizes[-1]),
        this._bs_to_padded_graph_size,
    )


@SETTINGS
@given(
    st.integers(1, 4096), st.integers(1, 9), st.integers(1, 512), st.sampled_from([16, 32, 64, 128, 256]), st.booleans()
)
def test_vllm_moe_align_capacity(tokens, topk, experts, block, pad):
    import torch

    from capproof.engines.vllm import wheels as real

    v = real.vllm()
    seen = {}

    def kernel(topk_ids, num_experts, block_size, sorted_ids, expert_ids, num_tokens_post_pad, *rest):
        seen.update(sorted_ids=sorted_ids.numel(), expert_ids=expert_ids.numel())

    original = v.moe_align.ops
    v.moe_align.ops = SimpleNamespace(moe_align_block_size=kernel)  # the compiled op is absent on CPU
    try:
        topk_ids = torch.zeros((tokens, topk), dtype=torch.int32)
        v.moe_align.moe_align_block_size(topk_ids, block, experts, pad_sorted_ids=pad)
    finally:
        v.moe_align.ops = original
    numel = tokens * topk
    cap = m_moe.vllm_sorted_ids_capacity(numel, experts, block, pad)
    point = dict(numel=numel, num_experts=experts, block_size=block, pad_sorted_ids=pad)
    same("vLLM moe_align sorted_ids capacity", point, cap, seen["sorted_ids"])
    same("vLLM moe_align expert_ids capacity", point, m_moe.expert_ids_capacity(cap, block), seen["expert_ids"])
    assert m_moe.moe_align_demand_bound(numel, experts, block) <= cap or pad


def _sglang_sizing_fragment():
    """The sizing statements of SGLang 0.5.23 ``moe_align_block_size``, compiled from the wheel's source.

    The module itself does not import on a CPU (it needs triton and, through sglang.srt.layers.moe,
    torchvision; reference §12), so the statements from ``if topk_ids.numel() < num_experts + 1`` to the
    int4 rounding are taken verbatim from the function's AST and executed.
    """
    from capproof.engines.vllm import wheels as real

    path = os.path.join(real.activate(), "sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "moe_align_block_size")
    body = fn.body
    start = next(i for i, n in enumerate(body) if isinstance(n, ast.If) and "num_experts + 1" in ast.unparse(n.test))
    stmts = body[start : start + 2]
    assert "// 4 * 4" in ast.unparse(stmts[1]), ast.unparse(stmts[1])
    return compile(ast.Module(body=stmts, type_ignores=[]), path, "exec")


@SETTINGS
@given(st.integers(1, 100000), st.integers(1, 1024), st.sampled_from([16, 32, 64, 128, 256]))
def test_sglang_moe_align_capacity(numel, experts, block):
    code = _sglang_sizing_fragment()
    scope = {"topk_ids": SimpleNamespace(numel=lambda: numel), "num_experts": experts, "block_size": block}
    exec(code, scope)  # noqa: S102 - the engine's own statements, from the pinned wheel
    same(
        "SGLang moe_align sorted_ids capacity",
        dict(numel=numel, num_experts=experts, block_size=block),
        m_moe.sglang_sorted_ids_capacity(numel, experts, block),
        scope["max_num_tokens_padded"],
    )


@SETTINGS
@given(
    st.one_of(
        st.integers(0, 10**7).map(str),
        st.tuples(st.integers(0, 9999), st.sampled_from("kmgtKMGT")).map(lambda t: f"{t[0]}{t[1]}"),
        st.tuples(st.integers(0, 999), st.integers(0, 99), st.sampled_from("kmgt")).map(
            lambda t: f"{t[0]}.{t[1]}{t[2]}"
        ),
    )
)
def test_check_config_parses_human_readable_ints_like_vllm(text):
    from capproof.engines.vllm import wheels as real
    from capproof.engines.vllm.serve import human_readable_int

    same(
        "human_readable_int",
        {"value": text},
        human_readable_int("--max-model-len", text),
        real.vllm().human_readable_int(text),
    )


def test_symbolic_ints_pass_through_vllm_and_uniform_type_needs_the_split(real):
    """SymInt through vLLM's own cdiv/max_num_blocks_per_req/get_block_table_width; the UniformType
    group's ``set`` of member values cannot hold symbolic ints (hence spec_real's member split)."""
    from capproof.errors import NotConcreteError
    from capproof.symbolic import SymInt

    L = SymInt.var("L")
    v = real.vllm()
    width = v.get_block_table_width(real.mla_spec(64).max_num_blocks_per_req(real.vllm_config(dcp=2), L), 64)
    assert isinstance(width, SymInt)
    with pytest.raises(NotConcreteError):
        real.uniform_type_specs(64).max_num_blocks_per_req(real.vllm_config(dcp=2), L)


def test_spec_real_proves_and_finds_the_a1_difference_through_real_code(real):
    items, errors = load(["spec_real"])
    assert not errors
    results = {ob.name: prove_obligation(ob, Options()) for ob in items}
    assert all(r.verdict.value == ob.expect for ob, r in zip(items, results.values())), {
        k: r.message for k, r in results.items()
    }
    cex = results["real_width_equals_pre_50302_indexer_width"].counterexample
    assert cex.values["W_bt"] - cex.values["W_buf"] == 1


def test_check_config_model_fields_are_vllms_aliases(real):
    """check-config reads config.json with vLLM 0.33.0's own CONFIG_FIELD_ALIASES (same keys, same order)."""
    from capproof.engines.checkconfig import MODEL_FIELDS

    real.fetch()
    path = os.path.join(real.cache_dir(), "src", "vllm", "transformers_utils", "config.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    node = next(
        n for n in tree.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "CONFIG_FIELD_ALIASES"
    )
    aliases = ast.literal_eval(node.value)
    assert MODEL_FIELDS["num_experts"] == aliases["num_experts"]
    assert MODEL_FIELDS["top_k"] == aliases["num_experts_per_token"]
    assert MODEL_FIELDS["num_kv_heads"] == aliases["total_num_kv_heads"]


def test_check_config_flag_table_matches_the_wheel(real):
    """capproof/engines/vllm/flags.py for 0.33.0 is what real/extract_vllm_flags.py reads from the wheel."""
    import subprocess
    import sys
    import tempfile

    from capproof.engines.vllm import flags

    real.fetch()
    wheels = os.path.join(real.cache_dir(), "wheels")
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(wheels):
            if name.startswith(f"vllm-{flags.VLLM_VERSION}-"):
                os.symlink(os.path.join(wheels, name), os.path.join(tmp, name))
        out = subprocess.run(
            [sys.executable, "real/extract_vllm_flags.py", tmp], capture_output=True, text=True, check=True
        ).stdout
    ns: dict = {}
    exec(out, ns)
    assert ns["VLLM_SERVE_FLAGS"] == flags.VLLM_SERVE_FLAGS
    assert ns["BATCH_DEFAULTS"][flags.VLLM_VERSION] == flags.BATCH_DEFAULTS[flags.VLLM_VERSION]
    assert ns["CACHE_DTYPES"][flags.VLLM_VERSION] == flags.CACHE_DTYPES[flags.VLLM_VERSION]


@pytest.mark.parametrize("config", [(40, 2, 8192, 512), (256, 3, 8192, 1024), (5, 1, 8192, 512), (256, 2, 8192, 512)])
def test_dispatched_capture_list_and_the_28207_padding_on_vllm(config):
    """spec/vllm_0_33_today.py's deployments: the default list and its rounding are vLLM
    0.33.0's, and on the unrounded list of 40 requests at K = 2 the dispatcher's own table pads 5
    requests x 3 tokens = 15 to 16 (the counterexample of
    ``cudagraph_uniform_decode_padding_unrounded_before_28207``; the assert at cudagraph_dispatcher.py:141)."""
    from capproof.engines.vllm import wheels as real
    from spec.vllm_0_33_today import dispatched_capture_list

    v = real.vllm()
    sizes, max_size = vllm_default_capture_sizes(*config)
    q = 1 + config[1]
    default, rounded, rounded_max = dispatched_capture_list(*config)
    assert default == sizes and max_size == sizes[-1]
    cc = SimpleNamespace(cudagraph_capture_sizes=list(sizes), max_cudagraph_capture_size=max_size)
    v.CompilationConfig.adjust_cudagraph_sizes_for_spec_decode(cc, q)
    assert (cc.cudagraph_capture_sizes, cc.max_cudagraph_capture_size) == (rounded, rounded_max)
    this = SimpleNamespace(
        compilation_config=SimpleNamespace(
            max_cudagraph_capture_size=max_size, cudagraph_capture_sizes=list(sizes), compile_sizes=None
        ),
        cudagraph_mode=None,
    )
    v.CudagraphDispatcher._compute_bs_to_padded_graph_size(this)
    if config == (40, 2, 8192, 512):
        assert this._bs_to_padded_graph_size[5 * q] == 16 and 16 % q != 0


@contextlib.contextmanager
def _sglang_allocation_sizing(state):
    """(A context: the stand-ins are in ``sys.modules`` while it lasts, the functions import at call time.) SGLang 0.5.23 ``sglang/srt/mem_cache/allocation_sizing.py``, compiled from the wheel's source with
    its bags read from ``state`` (``page``, ``dcp``, ``steps``, ``topk``, ``draft``). The package does not
    import on a CPU (``sglang/__init__`` needs orjson and more), so ``sglang.srt.runtime_context`` and
    ``SpeculativeAlgorithm`` are stood in for: EAGLE's flags (``has_draft_kv``: not NGRAM; not UNO)."""
    import sys
    import types

    from capproof.engines.vllm import wheels as real

    path = os.path.join(real.activate(), "sglang/srt/mem_cache/allocation_sizing.py")
    rc = types.ModuleType("sglang.srt.runtime_context")
    rc.get_schedule = lambda: SimpleNamespace(page_size=state["page"])
    rc.get_parallel = lambda: SimpleNamespace(attn_dcp_size=state["dcp"])
    rc.get_spec = lambda: SimpleNamespace(
        speculative_algorithm="EAGLE", speculative_num_steps=state["steps"], speculative_eagle_topk=state["topk"]
    )
    rc.max_speculative_num_draft_tokens = lambda: state["draft"]

    class SpeculativeAlgorithm:  # EAGLE (sglang/srt/speculative/spec_info.py)
        @staticmethod
        def from_string(name):
            return SpeculativeAlgorithm()

        def is_uno(self):
            return False

        def has_draft_kv(self):
            return True

    si = types.ModuleType("sglang.srt.speculative.spec_info")
    si.SpeculativeAlgorithm = SpeculativeAlgorithm
    stubs = {"sglang.srt.runtime_context": rc, "sglang.srt.speculative.spec_info": si}
    # the parent packages too: importing the real ``sglang`` runs its __init__
    stubs.update(
        {
            name: sys.modules.get(name) or types.ModuleType(name)
            for name in ("sglang", "sglang.srt", "sglang.srt.speculative")
        }
    )
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        scope = {"__name__": "sglang_allocation_sizing"}
        exec(compile(open(path, encoding="utf-8").read(), path, "exec"), scope)  # noqa: S102 - the pinned wheel's code
        yield scope
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _sglang_alloc_point(scope, state):
    """(alloc len per decode, req_to_token extra context, nxt at kv_committed_len 5 with 0 and with 40 allocated)."""
    reserve = scope["get_alloc_reserve_per_decode"]()
    reqs = [SimpleNamespace(kv=SimpleNamespace(kv_committed_len=5, kv_allocated_len=a)) for a in (0, 40)]
    _, nxt, _ = scope["page_aligned_decode_alloc_lens"](reqs, reserve=reserve, page_size=state["page"] * state["dcp"])
    return (scope["get_alloc_len_per_decode"](), scope["get_req_to_token_extra_context_len"](), *nxt)


def test_sglang_alloc_sizes_recorded_in_spec_are_sglangs():
    """spec/sglang_req_to_token.py's SGLANG_0_5_23_ALLOC (obligation
    ``dsa_alloc_sizes_at_small_pages_are_sglang_0_5_23s``) recomputed from the wheel, at DCP 1 and, for
    page 1, at DCP 2 (alloc page 2: the same values as page 2, DCP 1)."""
    from capproof.loader import load_file

    items = load_file(
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec/sglang_req_to_token.py")
    )
    recorded = next(
        it for it in items if it.name == "dsa_alloc_sizes_at_small_pages_are_sglang_0_5_23s"
    ).func.__globals__["SGLANG_0_5_23_ALLOC"]
    state = {}
    with _sglang_allocation_sizing(state) as scope:
        for (page, steps, topk, draft), values in recorded.items():
            state.update(page=page, dcp=1, steps=steps, topk=topk, draft=draft)
            same("SGLang allocation_sizing", dict(state), values, _sglang_alloc_point(scope, state))
            if page == 2:
                state.update(page=1, dcp=2)
                same(
                    "SGLang allocation_sizing (page 1 x DCP 2)", dict(state), values, _sglang_alloc_point(scope, state)
                )


@SETTINGS
@given(st.integers(1, 128), st.sampled_from([1, 2, 4]), st.integers(1, 8), st.integers(1, 8), st.integers(2, 65))
def test_sglang_alloc_sizes_match_the_model(page, dcp, steps, topk, draft):
    from models.sglang import dsa_page_table as m_dsa

    state = dict(page=page, dcp=dcp, steps=steps, topk=topk, draft=draft)
    with _sglang_allocation_sizing(state) as scope:
        engine = _sglang_alloc_point(scope, state)
    p = page * dcp
    model = (
        m_dsa.get_alloc_len_per_decode(draft, steps, topk, p),
        m_dsa.get_req_to_token_extra_context_len(draft, steps, topk, p),
        m_dsa.decode_alloc_end(5, 0, draft, steps, topk, p),
        m_dsa.decode_alloc_end(5, 40, draft, steps, topk, p),
    )
    same("SGLang allocation_sizing", state, model, engine)


def _run_extractor(script: str) -> dict:
    """Run a real/ extractor in a fresh interpreter (it stubs GPU-only modules) and read its table."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, check=True, cwd=root)
    namespace: dict = {}
    exec(compile(out.stdout, script, "exec"), namespace)  # noqa: S102 - the generated table
    return namespace


def test_default_block_size_table_is_what_vllms_backends_prefer(real):
    """capproof/engines/vllm/block_defaults.py is what vLLM 0.33.0's own backend selection code gives."""
    from capproof.engines.vllm import block_defaults

    real.fetch()
    table = _run_extractor("real/extract_vllm_block_sizes.py")
    assert table["PREFERRED_BLOCK_SIZES"] == block_defaults.PREFERRED_BLOCK_SIZES
    assert table["DEFAULT_BLOCK_SIZE"] == block_defaults.DEFAULT_BLOCK_SIZE


def test_sglang_default_attention_backends_are_sglangs(real):
    """capproof/engines/sglang/attention_defaults.py is what SGLang 0.5.23's get_default_attn_backend returns."""
    from capproof.engines.sglang import attention_defaults

    real.fetch()
    table = _run_extractor("real/extract_sglang_attention_backends.py")
    assert table["DEFAULT_ATTENTION_BACKENDS"] == attention_defaults.DEFAULT_ATTENTION_BACKENDS


def test_check_config_mla_model_types_are_vllms(real):
    """MLA_MODEL_TYPES is the model_type tuple of vLLM 0.33.0's is_deepseek_mla."""
    from capproof.engines.checkconfig import MLA_MODEL_TYPES

    real.fetch()
    path = os.path.join(real.cache_dir(), "src", "vllm", "transformers_utils", "model_arch_config_convertor.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "is_deepseek_mla")
    tuples = [ast.literal_eval(n) for n in ast.walk(fn) if isinstance(n, ast.Tuple) and len(n.elts) > 5]
    assert set(tuples[0]) == MLA_MODEL_TYPES
