"""SGLang as an engine: launch-line sizing (fast), the static scan's SGLang rules (fast), check-config
through the real command line (fast), and the tracer against SGLang 0.5.23's own code (``real``)."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.engines.sglang.launch import LaunchFlagError, parse_launch_args
from capproof.engines.sglang.server_args import sizing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# written as SGLang's docs write them (DeepSeek-V3.2 with DP attention and two-batch overlap; Qwen3 serve)
DSV32_DP = [
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "deepseek-ai/DeepSeek-V3.2",
    "--tp",
    "8",
    "--dp",
    "8",
    "--enable-dp-attention",
    "--enable-two-batch-overlap",
    "--max-running-requests",
    "61",
    "--attention-backend",
    "triton",
    "--page-size",
    "64",
    "--trust-remote-code",
]


def check(*args):
    return CliRunner().invoke(main, ["check-config", *args])


def test_launch_line_keeps_switches_strings_and_sizes():
    cfg = parse_launch_args(DSV32_DP)
    assert cfg.values == {"tp": 8, "dp_size": 8, "max_running_requests": 61, "page_size": 64}
    assert {"--enable-dp-attention", "--enable-two-batch-overlap", "--trust-remote-code"} <= cfg.switches
    assert cfg.strings == {"--attention-backend": "triton"}
    cfg = parse_launch_args(["sglang", "serve", "--model-path", "Qwen/Qwen3-8B", "--cuda-graph-max-bs-decode", "160"])
    assert (cfg.model, cfg.values) == ("Qwen/Qwen3-8B", {"cuda_graph_max_bs": 160})


def test_unknown_argument_gets_a_did_you_mean():
    with pytest.raises(LaunchFlagError, match="did you mean --max-running-requests"):
        parse_launch_args(["sglang", "serve", "--max-runing-requests", "8"])
    result = check("--engine", "sglang", "--", "sglang", "serve", "--model-path", "m", "--enable-two-batch-overlp")
    assert result.exit_code == 4 and "did you mean --enable-two-batch-overlap" in result.output


@pytest.mark.parametrize(
    "values, switches, mul_base, pool",
    [
        (
            {"tp": 8, "dp_size": 8, "max_running_requests": 61},
            {"--enable-dp-attention", "--enable-two-batch-overlap"},
            2,
            7,
        ),
        ({"tp": 8, "dp_size": 2, "max_running_requests": 61}, {"--enable-dp-attention"}, 4, 30),
        ({"tp": 8, "max_running_requests": 61}, set(), 1, 61),
    ],
)
def test_sizing_follows_sglangs_derivations(values, switches, mul_base, pool):
    """mul_base: get_cuda_graph_batch_size_alignment (x2 TBO, x attn_tp_size = tp // dp under DP
    attention); the pool: resolve_max_num_reqs's per-worker share."""
    out = sizing(values, switches, {})
    assert out.pins["mul_base"] == mul_base and out.pins["req_pool_size"] == pool
    assert ("sglang_graph_bs_alignment" in out.features) == (mul_base > 1)


def test_sizing_states_what_the_line_leaves_to_memory():
    out = sizing({}, set(), {"--attention-backend": "flashmla"})
    assert "sglang_attention_backend_flashmla" in out.features
    assert {a[0] for a in out.assumptions} == {"req_pool_size", "max_bs"}
    assert all(values == () for _, values, _ in out.assumptions)


def test_check_config_finds_the_indptr_overflow_through_the_command_line():
    """61 requests over 8 DP workers = 7 per worker; TBO aligns captured batches to 2, so a batch of
    8 is captured and the Triton backend's 8-entry kv_indptr is sliced to 9."""
    result = check("--engine", "sglang==0.5.23", "--", *DSV32_DP)
    assert result.exit_code == 1, result.output
    assert (
        "sglang_graph_indptr_over_pool__TritonAttnBackend_kv_indptr: indptr_len <= kv_indptr[0] fails: "
        "indptr_len=9, kv_indptr[0]=8" in result.output
    )
    assert "rests on a default: req_pool_size in [7]" in result.output


def test_check_config_without_a_backend_does_not_apply_backend_buffers():
    argv = [a for a in DSV32_DP if a not in ("--attention-backend", "triton")]
    result = check("--engine", "sglang", "--", *argv)
    assert "TritonAttnBackend_kv_indptr" not in result.output.split("not checked for this deployment:")[0]
    assert "FAILS" not in result.output


def test_check_config_dense_eagle_line_proves_the_graph_kv_indices(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "architectures": ["Qwen3ForCausalLM"],
                "max_position_embeddings": 40960,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
            }
        )
    )
    result = check(
        "--engine",
        "sglang",
        "--model-config",
        str(config),
        "--",
        "sglang",
        "serve",
        "--model-path",
        "Qwen/Qwen3-8B",
        "--attention-backend",
        "triton",
        "--cuda-graph-max-bs-decode",
        "160",
    )
    # proved, but Triton's other index buffers have no verdict: undecided, never safe on these
    assert result.exit_code == 2, result.output
    assert "sglang_decode_graph_kv_indices 1" in result.output
    assert "index buffers of the attention backend triton this line runs are not verified" in result.output


def test_check_config_flashmla_line_applies_the_backends_derived_graph_rows():
    """A DeepSeek-V3 line on FlashMLA (as SGLang's DeepSeek docs write it) applies the FlashMLA
    graph-rows obligations whose batch reaches a helper as ``bs=forward_batch.batch_size``; both are
    proved (on the named graph-batch fact), and the FlashMLA index buffers left without a verdict
    drop from 5 to 3, next to the 12 of FlashInferMLAAttnBackend, whose ``__init__`` FlashMLA's
    runs (its parent class). A Triton line does not apply them."""
    line = ["python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8"]
    line += ["--trust-remote-code"]
    result = check("--engine", "sglang==0.5.23", "--", *line, "--attention-backend", "flashmla")
    assert result.exit_code == 2, result.output
    head = result.output.split("not checked for this deployment:")[0]
    assert "2 on a derived demand and an assumed (unchecked) fact about the engine" in head
    assert "15 index buffers of the attention backend flashmla this line runs are not verified" in head
    assert "FlashMLABackend.cuda_graph_num_splits" not in head.split("not safe because")[1].split("\n")[0]
    triton = check("--engine", "sglang==0.5.23", "--", *line, "--attention-backend", "triton")
    assert "FlashMLABackend_cuda_graph_num_splits" not in triton.output.split("not checked for this deployment:")[0]


def test_check_config_sglang_serve_flashinfer_applies_the_swa_write_locations():
    """``sglang serve`` on FlashInfer applies the obligation on FlashInfer's SWA write-location buffer
    (sliced by the graph batch's token count, sized ``captured_req_width * max_bs``): proved on the
    named facts, never counted as verified; FlashInfer's other 14 index buffers keep it undecided."""
    result = check(
        "--engine",
        "sglang",
        "--",
        "sglang",
        "serve",
        "--model-path",
        "Qwen/Qwen3-8B",
        "--attention-backend",
        "flashinfer",
    )
    assert result.exit_code == 2, result.output
    head = result.output.split("not checked for this deployment:")[0]
    assert "1 of 1 applied obligations proved" in head
    assert "0 verified, 0 on a demand modelled in spec/, 1 on an assumed fact about the engine" in head
    assert "14 index buffers of the attention backend flashinfer this line runs are not verified" in head


TOY = textwrap.dedent("""
    import torch

    class Buffers:
        @classmethod
        def create(cls, max_bs):
            input_ids = torch.zeros((max_bs,), dtype=torch.int64)
            scratch = torch.zeros((max_bs,), dtype=torch.int64)
            return cls(input_ids=input_ids)

    class Runner:
        def __init__(self, max_bs):
            seq_lens = torch.zeros((max_bs,), dtype=torch.int32)
            self.buffers = Holder(seq_lens=seq_lens, positions=torch.zeros((max_bs,), dtype=torch.int64))
    """)


def test_scan_sees_fields_of_returned_and_kept_buffer_objects(tmp_path):
    from capproof.engines.sglang.scan import scan

    pkg = tmp_path / "sglang" / "srt"
    pkg.mkdir(parents=True)
    (pkg / "toy.py").write_text(TOY)
    ids = {a.id: a.args for a in scan(str(tmp_path), ("sglang/srt",))}
    assert ids == {
        "sglang/srt/toy.py::Buffers.input_ids": ["max_bs"],
        "sglang/srt/toy.py::Runner.buffers.seq_lens": ["max_bs"],
        "sglang/srt/toy.py::Runner.buffers.positions": ["max_bs"],
    }


# ------------------------------------------------------------------------------------------------
# real tier: SGLang 0.5.23's own code


def test_an_import_sglang_guards_gets_no_stand_in(tmp_path):
    """Only the body of a ``try`` whose handlers catch ImportError/ModuleNotFoundError is guarded (as in
    SGLang 0.5.23's ``aiter_backend.py:47-72``); an import outside it, or under another handler, is not."""
    from capproof.engines.sglang.stand_ins import guarded

    src = tmp_path / "mod.py"
    src.write_text(
        textwrap.dedent(
            """\
            import triton
            try:
                from aiter import (
                    mla_decode_fwd,
                )
            except ImportError:
                print("aiter is AMD specific")
            try:
                import flashinfer
            except (ValueError, ModuleNotFoundError):
                pass
            try:
                import sgl_kernel
            except RuntimeError:
                pass
            """
        )
    )
    assert [guarded(str(src), line) for line in range(1, 16)] == [
        False,
        False,
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
    ]


def _sglang_root():
    from capproof.engines.vllm import wheels

    try:
        wheels.fetch_version("sglang", "0.5.23", download=False)
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    return wheels.source_root("sglang", "0.5.23")


@pytest.mark.real
@pytest.mark.parametrize(
    "name",
    [
        "ReqToTokenPool",
        "PagedTokenToKVPoolAllocator",
        "DecodeInputBuffers",
        "moe_align_block_size",
        "TritonAttnBackend",
        "FlashMLABackend",
        "FlashAttentionBackend[EAGLE]",
        "TritonLoRABackend",
        "FlashInferAttnBackend",
        "FlashInferMLAAttnBackend",
        "TokenToKVPoolAllocator",
        "MambaSlotAllocator",
        "DecodeInputBuffers[switches]",
        "PrefillInputBuffers",
        "AiterAttnBackend",
    ],
)
def test_traced_shapes_equal_sglangs_real_tensors(name):
    """Each harness traced on symbolic values, then run with the real-tier ints and the real torch:
    every traced shape evaluated at those ints equals the real tensor's shape."""
    pytest.importorskip("torch")
    from capproof import inventory as inv
    from capproof.engines.sglang import scan as sc
    from capproof.engines.sglang import trace as tr
    from capproof.engines.tracing import run as _run
    from capproof.symbolic import tracing

    root = _sglang_root()
    allocations = sc.scan(root)
    entries, _, _ = tr.trace_all("0.5.23", root, allocations, [name])
    assert entries, f"{name} traced nothing"
    ints = tr.config_values(symbolic=False)
    sites = {(a.file, a.line): a for a in allocations}
    tr.prepare(name)
    with tracing(), tr.recording(root, "real") as rec:
        tr.HARNESSES[name](ints, "cpu")
    real = {}
    for r in rec.records:
        a = _run.matches(r, sites)
        if a is not None and a.id not in real:
            real[a.id] = list(r.shape)
    compared = 0
    for e in entries:
        if e.id in real:
            assert [inv.evaluate(x, **{n: ints[n] for n in inv.expression_names(x)}) for x in e.shape] == real[e.id], (
                e.id
            )
            compared += 1
    assert compared, f"{name}: no traced entry was allocated by the real run"


@pytest.mark.real
def test_published_namespaces_fall_back_to_sglangs_declared_switches():
    """A namespace the harnesses publish answers a switch it does not give with SGLang 0.5.23's
    declared default, never a field config resolution may rewrite, and raises on anything else."""
    pytest.importorskip("torch")
    from capproof.engines.sglang import trace as tr

    tr.activate(_sglang_root())
    switches = tr.declared_switches()
    assert switches["parallel"]["disable_attn_tp_gather"] is False
    assert switches["exec.overlap"]["enable_two_batch_overlap"] is False
    # resolvable (rewritten at launch by SGLang's resolution hooks): not a default to trust
    assert "moe_dense_tp_size" not in switches["parallel"]
    assert "dp_size" not in switches["parallel"]
    # integer defaults may size a buffer: left out
    assert all(not isinstance(x, int) or isinstance(x, bool) for ns in switches.values() for x in ns.values())
    bags, parallel, _ = tr.server(tr.config_values(symbolic=False))
    assert bags["exec"].overlap.enable_two_batch_overlap is False
    assert bags["exec"].kernel.triton_attention_num_kv_splits == 8  # given by the harness
    with pytest.raises(AttributeError, match="no field 'nnodes'"):
        getattr(parallel, "nnodes")  # noqa: B009 - an int default: not published


@pytest.mark.real
def test_backend_files_are_what_sglangs_registry_imports():
    """check-config's table of the file each ``--attention-backend`` name runs (``BACKEND_FILES``)
    against SGLang 0.5.23's ``attention_registry.py``: every listed file is a module the name's
    registered function imports, and flashinfer's MLA file is imported under ``use_mla_backend``."""
    import ast

    from capproof.engines.sglang.deployment import BACKEND_FILES

    path = os.path.join(_sglang_root(), "sglang", "srt", "layers", "attention", "attention_registry.py")
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    imports = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for d in fn.decorator_list:
            if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "register_attention_backend":
                imports[d.args[0].value] = {
                    n.module.rsplit(".", 1)[-1] + ".py"
                    for n in ast.walk(fn)
                    if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("sglang.srt.layers.attention.")
                }
    for name, files in BACKEND_FILES.items():
        assert set(files) <= imports[name], (name, files, imports.get(name))
    assert BACKEND_FILES["flashinfer"] == ("flashinfer_backend.py", "flashinfer_mla_backend.py")


@pytest.mark.real
def test_triton_indptr_finding_reproduces_on_cpu():
    """docs/findings.md §8 through SGLang 0.5.23's own code on the CPU: with two-batch overlap
    (capture alignment 2) and a request pool of 7, ``get_batch_sizes_to_capture`` adds a captured
    batch of 8 (``ceil_align(7, 2)``); ``TritonAttnBackend``'s constructor gives ``kv_indptr`` 8
    entries (pool + 1); capturing that batch, ``_fill_kv_indptr_and_indices`` takes
    ``kv_indptr[: bs + 1]`` (8 entries, not 9) and writes ``cumsum(seq_lens)`` (8 values) into
    its last 7: torch refuses (a RuntimeError at capture, before any kernel), where a batch of 7 passes."""
    pytest.importorskip("torch")
    import types

    import torch

    from capproof.engines.sglang import trace as tr
    from capproof.engines.tracing.interpret import Config
    from capproof.symbolic import tracing

    root = _sglang_root()
    tr.activate(root)
    from sglang.srt import runtime_context as rc
    from sglang.srt.layers.attention.triton_backend import TritonAttnBackend
    from sglang.srt.model_executor.runner.base_cuda_graph_runner import get_batch_sizes_to_capture

    ints = tr.config_values(symbolic=False, req_pool_size=7, max_bs=8)
    with tr.published(ints):
        ex = rc._CONTEXT.config_bag("exec")
        ex.overlap = Config(enable_two_batch_overlap=True)  # --enable-two-batch-overlap
        ex.graph.cuda_graph_config = Config(decode=Config(bs=[1, 2, 4, 8, 16, 24, 32]))
        ex.graph.torch_compile_max_bs = 32
        runner = Config(req_to_token_pool=Config(size=7), server_args=types.SimpleNamespace(dllm_algorithm=None))
        # no DP attention: require_gathered_buffer() is False (its MoE/DP flags are not modelled)
        capture_bs, _ = get_batch_sizes_to_capture(runner, gathered_buffer_required=False)
    assert max(capture_bs) == 8 and capture_bs == [2, 4, 8]

    tr.prepare("TritonAttnBackend")
    with tracing(), tr.recording(root, "real"):
        built = tr.HARNESSES["TritonAttnBackend"](ints, "cpu")
    backend = built[0][0] if isinstance(built, list) else built[0]
    assert tuple(backend.kv_indptr.shape) == (8,)

    fake = types.SimpleNamespace(
        kv_indptr=backend.kv_indptr,
        kv_index_translator=types.SimpleNamespace(pack_read_stream=lambda *a, **k: None),
    )
    fill = TritonAttnBackend._fill_kv_indptr_and_indices
    ok = fill(fake, None, 7, torch.ones(7, dtype=torch.int32), torch.zeros(7, dtype=torch.int64), None)
    assert ok.shape[0] == 8
    with pytest.raises(RuntimeError, match="size"):
        fill(fake, None, 8, torch.ones(8, dtype=torch.int32), torch.zeros(8, dtype=torch.int64), None)


@pytest.mark.real
def test_flashinfer_swa_write_locations_finding_reproduces_on_cpu():
    """docs/findings.md §9 through SGLang 0.5.23's own code on the CPU: ``FlashInferAttnBackend``'s
    constructor and ``init_cuda_graph_state(max_bs=8, max_num_tokens=8)`` (the decode runner's call at
    width 1) give ``cuda_graph_swa_out_cache_loc`` 8 entries; its ``init_forward_metadata_out_graph``
    on a full prefill graph's extend batch of 64 tokens binds an 8-row view as the batch's SWA write
    locations at capture and raises at replay (size mismatch), where 8 tokens replay. The token-count
    fact of FlashInfer's entry is recorded refuted on the prefill runner's capture, its decode-runner
    paths still not checked."""
    pytest.importorskip("torch")
    from capproof.engines.sglang import trace as tr
    from capproof.engines.sglang.demand import backend_tokens_fact, flashinfer_swa_prefill_witness
    from capproof.engines.sglang.facts import engine_facts
    from capproof.facts import status
    from capproof.symbolic import tracing

    root = _sglang_root()
    tr.activate(root)
    ints = tr.config_values(symbolic=False, max_bs=8, captured_req_width=1)
    tr.prepare("FlashInferAttnBackend")
    with tracing(), tr.recording(root, "real"):
        built = tr.HARNESSES["FlashInferAttnBackend"](ints, "cpu")
    backend = built[0][0] if isinstance(built, list) else built[0]
    assert tuple(backend.cuda_graph_swa_out_cache_loc.shape) == (8,)

    witness = flashinfer_swa_prefill_witness(max_num_tokens=8, num_tokens=64)
    assert witness["capture_rows"] == 8  # 8 write locations bound for 64 tokens
    assert "size of tensor a (8) must match the size of tensor b (64)" in witness["replay_error"]
    assert witness["small_replay_ok"]
    fits = flashinfer_swa_prefill_witness(max_num_tokens=64, num_tokens=64)
    assert fits["capture_rows"] == 64 and fits["replay_error"] == ""

    import types

    (rec,) = engine_facts(
        [
            types.SimpleNamespace(
                file=FLASHINFER_FILE, demands=[{"dim": 0, "facts": [backend_tokens_fact("FlashInferAttnBackend")]}]
            )
        ]
    )
    assert status(rec) == "refuted"
    assert [c["site"] for c in rec["counterexamples"]] == [
        "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py:1786"
    ]
    other = backend_tokens_fact("QwenSparseAttnBackend")
    assert list(other["paths"]) == ["not checked"]


@pytest.mark.real
def test_qsa_full_prefill_capture_finding_reproduces_on_cpu():
    """docs/findings.md §13 through SGLang 0.5.23's own code on the CPU:
    ``QwenSparseAttnBackend._capture_cuda_graph_metadata`` on the full prefill graph's EXTEND capture
    batch of 16 request slots, its graph buffers of 4 rows (the decode runner's ``max_bs *
    captured_req_width``), raises a size mismatch; a batch of 4 binds 4-row metadata. The
    ``backend_bs`` fact of a QSA buffer lists that site as a counterexample, not as checked."""
    pytest.importorskip("torch")
    from capproof.engines.sglang import trace as tr
    from capproof.engines.sglang.demand import prefill_capture_counterexample, qsa_prefill_capture_witness

    tr.activate(_sglang_root())
    over = qsa_prefill_capture_witness(max_num_tokens=4, req_slots=16)
    assert "size of tensor a (4) must match the size of tensor b (16)" in over["error"]
    fits = qsa_prefill_capture_witness(max_num_tokens=4, req_slots=4)
    assert fits == {"error": "", "rows": 4}
    site = "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py:1786 capture_one_shape -> x: y"
    other = "sglang/srt/layers/attention/tbo_backend.py:80 init_forward_metadata_out_graph -> z"
    left, refuted = prefill_capture_counterexample("QwenSparseAttnBackend", [site, other])
    assert left == [other] and len(refuted) == 1 and "RuntimeError" in refuted[0]
    assert prefill_capture_counterexample("FlashAttentionBackend", [site]) == ([site], [])


FLASHINFER_FILE = "sglang/srt/layers/attention/flashinfer_backend.py"


@pytest.mark.real
def test_auto_speculative_params_are_sglangs_own():
    """capproof's table of SGLang 0.5.23's ``_auto_choose_speculative_params`` against the wheel's
    function itself (read from its source and run with a stand-in ``server_args``), for every
    architecture it names, one it does not, and STANDALONE."""
    import ast
    import types

    from capproof.engines.sglang.server_args import AUTO_SPECULATIVE_DEFAULT, speculative_params

    path = os.path.join(_sglang_root(), "sglang", "srt", "arg_groups", "speculative_hook.py")
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_auto_choose_speculative_params")
    named = {c.value for c in ast.walk(fn) if isinstance(c, ast.Constant) and str(c.value).endswith("ForCausalLM")}
    namespace = {"resolving_view": lambda args: args, "ServerArgs": object}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), namespace)
    sglang_choice = namespace["_auto_choose_speculative_params"]
    keys = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
    for algorithm in ("EAGLE", "EAGLE3", "STANDALONE"):
        for arch in sorted(named) + ["SomeOtherForCausalLM"]:
            theirs = sglang_choice(types.SimpleNamespace(speculative_algorithm=algorithm), arch)
            ours, _ = speculative_params(algorithm, {}, set(), arch)
            assert tuple(ours[k] for k in keys) == tuple(theirs), (algorithm, arch)
    assert AUTO_SPECULATIVE_DEFAULT == sglang_choice(types.SimpleNamespace(speculative_algorithm="EAGLE"), "X")
