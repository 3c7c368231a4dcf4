""" "Padded requests <= max_num_reqs", checked on every path of vLLM's code that sets the count.

``spec/_families.py`` states the fact once, as a named assumption of every request-row family
obligation ("padded requests <= max_num_reqs (scheduler, dispatcher padding, dummy runs)"); with a
capacity of ``max_num_reqs`` it restates the claim. The same words name three different
quantities in vLLM 0.33.0, so :func:`request_facts` gives four facts, each with its own scope
(the inventory entries whose obligations read that quantity) and its own paths
(:mod:`capproof.facts`):

1. **V1 step request count** (``num_reqs_padded`` of ``gpu_model_runner.py``; scope: the V1
   runner, its input batch and block table): every path that sets the count
   (:func:`v1_step_paths`):

   - the padded batch descriptor, **executed**: ``CudagraphDispatcher._create_padded_batch_descriptor``
     on symbolic sizes, every path (:func:`.demand.padded_requests`), proved ``<= max_num_reqs``
     with Z3; and vLLM's own ``CudagraphDispatcher`` (``initialize_cudagraph_keys``,
     ``get_capture_descs``, ``dispatch`` for every token count up to one past the largest capture
     size) over a domain of configurations (:data:`DISPATCH_DOMAIN`: ``max_num_seqs``, speculative
     tokens, capture sizes, every CUDA-graph mode, LoRA on and off) (:func:`dispatcher_sweep`);
   - every ``BatchDescriptor(...)`` and ``replace(<descriptor>, num_reqs=...)`` of ``vllm/`` outside
     the V2 runner (AST): only the dispatcher's padded descriptor sets ``num_reqs``, the others
     leave it ``None`` (then the runner falls back to the unpadded count);
   - every binding of ``num_reqs_padded`` in the runner (assignment, keyword or positional
     argument; AST, :class:`.demand.RowBinding`): the dispatcher's count with the unpadded
     fallback, or the unpadded count; every ``batch_desc`` the runner reads comes from
     ``_determine_batch_execution_and_padding`` or the dispatcher (which return the dispatcher's
     descriptors, DP re-dispatch included);
   - the unpadded count (AST, :func:`.demand.unpadded_requests_bound`: the scheduler's asserts,
     ``schedule`` overrides, ``_update_states``, ``_dummy_run``'s ``min``s);
   - micro-batching (DBO), **executed**: vLLM's ``maybe_create_ubatch_slices`` over a domain of
     batches the engine micro-batches (:func:`ubatch_sweep`): every micro-batch's request slice lies
     within ``[0, num_reqs_padded]``.

2. **Attention-metadata request count** (``CommonAttentionMetadata.num_reqs``; scope: the attention
   backends): every construction of ``CommonAttentionMetadata`` (AST), and the chunked-local
   path **executed**: ``make_local_attention_virtual_batches`` gives one virtual request per chunk a
   request's tokens touch, more than ``max_num_reqs`` (:func:`local_attention_counterexample`):
   **refuted** (finding 9 in docs/findings.md).

3. **V1 drafting request count** (scope: ``vllm/v1/spec_decode/``, :func:`drafting_paths`): the
   metadata the runner hands a drafter (a copy of the step's, fact 1), the drafters' own dispatch
   (token counts only) and every ``batch_size``/``num_reqs`` they compute (AST).

4. **V2 request count** (``vllm/v1/worker/gpu/``): the paths of
   :func:`.demand_v2_requests.v2_requests_fact`, one per construction site; the PCP manager's
   local count **executed** (:func:`pcp_local_requests`): up to ``2 * max_num_reqs``, **refuted**
   (finding 10).
"""

from __future__ import annotations

import ast
import itertools
import os
from types import SimpleNamespace

from ...facts import fact_record, path_record
from ..tracing.accesses import compact_source as _src
from ..tracing.derive import function as _function
from .wheels import py_files

__all__ = [
    "ASSUMPTION",
    "DISPATCH_DOMAIN",
    "request_facts",
    "v1_step_paths",
    "dispatcher_sweep",
    "ubatch_sweep",
    "local_attention_counterexample",
    "attention_metadata_paths",
    "v2_paths",
]

#: The named assumption of ``spec/_families.py`` these facts discharge.
ASSUMPTION = "padded requests <= max_num_reqs (scheduler, dispatcher padding, dummy runs)"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
DISPATCHER = "vllm/v1/cudagraph_dispatcher.py"
UBATCH = "vllm/v1/worker/ubatch_utils.py"
#: Inventory files whose request rows are the V1 runner's step count.
V1_SCOPE = (RUNNER, "vllm/v1/worker/gpu_input_batch.py", "vllm/v1/worker/block_table.py")
ATTENTION_SCOPE = ("vllm/v1/attention/",)
SPEC_SCOPE = ("vllm/v1/spec_decode/",)
V2_SCOPE = ("vllm/v1/worker/gpu/",)

#: The configurations :func:`dispatcher_sweep` runs vLLM's dispatcher on.
DISPATCH_DOMAIN = {
    "max_num_seqs": (1, 2, 3, 5, 8, 13, 32, 256),
    "num_speculative_tokens": (0, 1, 2, 3, 4, 7),
    "capture_sizes": (
        (1,),
        (1, 2, 4, 8),
        (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64),
        (2, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128),  # rounded to multiples of 1 + K = 2
        (3, 6, 9, 12, 24, 48, 96, 192, 384, 512),  # rounded to multiples of 1 + K = 3
        (5, 7, 9, 17, 33),  # user sizes, not multiples of anything
    ),
    "lora": (False, True),
}


def _tree(root: str, rel: str):
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        return ast.parse(fh.read())


# ------------------------------------------------------------------------------------------------
# executed


def dispatcher_symbolic(root: str) -> dict:
    """The padded descriptor's request count, run on symbolic sizes on every path
    (:func:`.demand.padded_requests`) and proved ``<= max_num_reqs`` for every size (Z3)."""
    import z3

    from ...inventory import evaluate
    from ...symbolic import SymInt, to_z3_int
    from .demand import padded_requests

    extent, notes = padded_requests()
    names = ("max_num_reqs", "num_tokens_padded", "uniform_decode_query_len", "full_uniform_decode")
    value = evaluate(extent, **{n: SymInt.var(n) for n in names})
    s = z3.Solver()
    s.add(z3.Int("max_num_reqs") >= 1, z3.Int("num_tokens_padded") >= 1, z3.Int("uniform_decode_query_len") >= 1)
    s.add(z3.Or(z3.Int("full_uniform_decode") == 0, z3.Int("full_uniform_decode") == 1))
    s.add(to_z3_int(value) > z3.Int("max_num_reqs"))
    ok = s.check() == z3.unsat
    line = _line_of(root, DISPATCHER, "num_reqs = min(num_tokens_padded // uniform_decode_query_len, max_num_seqs)")
    return path_record(
        f"{DISPATCHER}:{line}",
        "BatchDescriptor.num_reqs of _create_padded_batch_descriptor (every path)",
        "executed",
        "checked" if ok else "not checked",
        f"run on symbolic sizes: num_reqs = {extent}; <= max_num_reqs proved (Z3 unsat)"
        if ok
        else f"run on symbolic sizes: num_reqs = {extent}; not proved <= max_num_reqs",
    )


def _line_of(root: str, rel: str, text: str) -> int:
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if text in line:
                return i
    return 0


def dispatcher_sweep(domain: dict | None = None) -> tuple[int, list[str]]:
    """vLLM's ``CudagraphDispatcher`` over ``domain`` (:data:`DISPATCH_DOMAIN`): for every
    configuration and CUDA-graph mode, its keys (``initialize_cudagraph_keys``), capture descriptors
    (``get_capture_descs``) and ``dispatch`` of every token count from 1 to one past the largest
    capture size, uniform decode on and off. Returns ``(configurations run, violations)``: each
    violation a line naming the configuration and the descriptor with ``num_reqs > max_num_seqs``.
    The configuration is a stand-in holding the fields the dispatcher reads (a real ``VllmConfig``
    needs a model); an engine assert on a configuration (e.g. a uniform-decode size that is not a
    multiple of ``1 + K``) stops that configuration and is not a violation."""
    from vllm.config import CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    domain = domain or DISPATCH_DOMAIN
    modes = [
        CUDAGraphMode.PIECEWISE,
        CUDAGraphMode.FULL,
        CUDAGraphMode.FULL_DECODE_ONLY,
        CUDAGraphMode.FULL_AND_PIECEWISE,
    ]
    runs, bad = 0, []
    for mns, k, sizes, lora, mode in itertools.product(
        domain["max_num_seqs"], domain["num_speculative_tokens"], domain["capture_sizes"], domain["lora"], modes
    ):
        cc = SimpleNamespace(
            cudagraph_mode=mode,
            cudagraph_capture_sizes=list(sizes),
            max_cudagraph_capture_size=max(sizes),
            compile_sizes=[],
            cudagraph_specialize_lora=True,
            requires_piecewise_compilation=lambda: False,
        )
        cc.cudagraph_mode = SimpleNamespace(requires_piecewise_compilation=lambda: False)
        cfg = SimpleNamespace(
            compilation_config=cc,
            num_speculative_tokens=k,
            scheduler_config=SimpleNamespace(max_num_seqs=mns),
            lora_config=SimpleNamespace(max_loras=2, specialize_active_lora=False) if lora else None,
        )
        d = CudagraphDispatcher(cfg)
        cc.cudagraph_mode = mode
        runs += 1
        try:
            d.initialize_cudagraph_keys(mode, uniform_decode_query_len=1 + k)
        except AssertionError:
            continue
        descs = [x for _, ds in d.get_capture_descs() for x in ds]
        for n in range(1, max(sizes) + 2):
            for uniform in (False, True):
                try:
                    descs.append(
                        d.dispatch(num_tokens=n, uniform_decode=uniform, has_lora=lora, num_active_loras=int(lora))[1]
                    )
                except AssertionError:
                    continue
        for x in descs:
            if x.num_reqs is not None and x.num_reqs > mns:
                bad.append(f"max_num_seqs={mns} K={k} sizes={list(sizes)} mode={mode.name} lora={lora}: {x}")
    return runs, bad


def ubatch_sweep(max_reqs: int = 5, max_tokens_per_req: int = 3) -> tuple[int, list[str]]:
    """vLLM's ``maybe_create_ubatch_slices`` on every batch of 1..``max_reqs`` requests with 1..
    ``max_tokens_per_req`` tokens each, 2 and 3 micro-batches, every padded request count from the
    batch's to ``max_reqs`` and padded token counts of the batch's and twice that. Returns ``(runs,
    violations)``: a micro-batch whose request slice leaves ``[0, num_reqs_padded]``. An engine assert
    stops that case (not a violation). A case the engine does not micro-batch is skipped by
    vLLM's own guard: ``is_last_ubatch_empty(own unpadded, own padded, n)`` (the DP all-reduce
    applies it to the smallest unpadded and largest padded count over the ranks,
    ``dp_utils._post_process_ubatch``, which excludes at least the cases the rank's own counts do;
    without DP the runner does not micro-batch)."""
    import numpy as np
    from vllm.v1.worker.ubatch_utils import is_last_ubatch_empty, maybe_create_ubatch_slices

    runs, bad = 0, []
    for n in range(1, max_reqs + 1):
        for tokens in itertools.product(range(1, max_tokens_per_req + 1), repeat=n):
            total = sum(tokens)
            for ub, padded_reqs, padded_tokens in itertools.product((2, 3), range(n, max_reqs + 1), (total, 2 * total)):
                if is_last_ubatch_empty(total, padded_tokens, ub):
                    continue
                runs += 1
                try:
                    _, slices = maybe_create_ubatch_slices(
                        True, np.array(tokens, dtype=np.int32), padded_tokens, padded_reqs, ub
                    )
                except AssertionError:
                    continue
                for s in slices or []:
                    r = s.request_slice
                    if r.start < 0 or r.stop > padded_reqs or r.stop - r.start > padded_reqs:
                        bad.append(f"tokens={list(tokens)} ubatches={ub} num_reqs_padded={padded_reqs}: {r}")
    return runs, bad


def local_attention_counterexample() -> dict | None:
    """vLLM's ``make_local_attention_virtual_batches`` on the CPU: one scheduled request
    (``max_num_reqs = 1``) of 5000 new tokens ending at 10000, attention chunk 8192, block 16. Returns
    the counterexample record when the metadata it builds has ``num_reqs > 1``, else None. Only
    ``async_tensor_h2d`` (pins memory: needs an accelerator) is replaced by ``torch.as_tensor``."""
    import torch
    import vllm.v1.attention.backends.utils as utils
    from vllm.v1.attention.backend import CommonAttentionMetadata

    qsl = torch.tensor([0, 5000], dtype=torch.int32)
    cm = CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl,
        seq_lens=torch.tensor([10000], dtype=torch.int32),
        num_reqs=1,
        num_actual_tokens=5000,
        max_query_len=5000,
        max_seq_len=10000,
        block_table_tensor=torch.arange(10000 // 16 + 1, dtype=torch.int32).view(1, -1),
        slot_mapping=torch.arange(5000),
    )
    saved = utils.async_tensor_h2d
    utils.async_tensor_h2d = lambda data, device=None, dtype=None, **kw: torch.as_tensor(data, dtype=dtype)
    try:
        local, _ = utils.make_local_attention_virtual_batches(8192, cm, 16)
    finally:
        utils.async_tensor_h2d = saved
    if local.num_reqs <= 1:
        return None
    return {
        "site": "vllm/v1/attention/backends/utils.py make_local_attention_virtual_batches (num_reqs=len(seq_lens_cpu))",
        "deployment": "a model with chunked local attention (attention_chunk_size, e.g. Llama 4), max_num_seqs=1, "
        "one request of 5000 new tokens ending at position 10000, chunk 8192",
        "values": {"max_num_reqs": 1, "num_reqs": int(local.num_reqs)},
        "reproduced": True,
        "finding": "docs/findings.md, finding 9 (chunked local attention: virtual requests vs FlashInfer's request rows)",
    }


# ------------------------------------------------------------------------------------------------
# read from the source


def _descriptor_sites(root: str) -> list[dict]:
    """Every ``BatchDescriptor(...)`` and ``replace(x, num_reqs=...)`` of ``vllm/`` outside the V2
    runner: ``num_reqs`` given only by the dispatcher's padded descriptor (checked by execution),
    ``None`` or absent elsewhere (the runner's fallback is then the unpadded count)."""
    out = []
    for rel, path in py_files(root):
        if rel.startswith("vllm/v1/worker/gpu/"):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        if "BatchDescriptor(" not in text and "num_reqs=" not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            f = _src(call.func).rsplit(".", 1)[-1]
            if f not in ("BatchDescriptor", "replace"):
                continue
            kw = next((k.value for k in call.keywords if k.arg == "num_reqs"), None)
            if f == "replace" and kw is None:
                continue
            if f == "replace" and not any(
                "desc" in _src(a).lower() or "batch" in _src(a).lower() for a in call.args[:1]
            ):
                continue  # a replace of something that is not a batch descriptor
            pos = call.args[1] if f == "BatchDescriptor" and len(call.args) > 1 else None
            value = kw if kw is not None else pos
            site = f"{rel}:{call.lineno}"
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                out.append(
                    path_record(
                        site,
                        f"{f}(num_reqs=None)",
                        "ast",
                        "checked",
                        "no request count: the runner falls back to the unpadded count",
                    )
                )
            elif rel == DISPATCHER and _src(value) == "num_reqs":
                out.append(
                    path_record(
                        site,
                        "BatchDescriptor(num_reqs=num_reqs) in _create_padded_batch_descriptor",
                        "ast",
                        "checked",
                        "the padded count, run on every path (executed paths)",
                    )
                )
            else:
                out.append(
                    path_record(
                        site,
                        f"{f}(num_reqs={_src(value)[:60]})",
                        "ast",
                        "not checked",
                        "a request count set outside the dispatcher: not read",
                    )
                )
    return out


def _runner_bindings(root: str) -> list[dict]:
    """Every binding of ``num_reqs_padded`` in the runner (assignment, keyword, the fourth
    argument of ``maybe_create_ubatch_slices``), judged by :class:`.demand.RowBinding`; and every
    assignment of ``batch_desc`` (from ``_determine_batch_execution_and_padding``)."""
    from .demand import RowBinding

    rt = RowBinding(root, RUNNER)
    out = []
    for fn in rt.functions:
        for node in ast.walk(fn):
            targets = []
            if isinstance(node, ast.Assign) and any(_src(t) == "num_reqs_padded" for t in node.targets):
                targets.append(("num_reqs_padded = ", node.value))
            if isinstance(node, ast.Call):
                targets += [("num_reqs_padded=", k.value) for k in node.keywords if k.arg == "num_reqs_padded"]
                if _src(node.func).endswith("maybe_create_ubatch_slices") and len(node.args) >= 4:
                    targets.append(("maybe_create_ubatch_slices(num_reqs_padded) ", node.args[3]))
            for label, value in targets:
                if label == "num_reqs_padded = " and isinstance(value, ast.BoolOp):
                    continue  # `num_reqs_padded = num_reqs_padded or num_reqs`: judged at the call sites
                inner = rt.enclosing(node.lineno) or fn
                if inner is not fn:
                    continue  # judged in the innermost function
                rt.why.clear()
                kind = rt.kind(fn, value)
                ok = kind in ("padded", "unpadded", "none")
                out.append(
                    path_record(
                        f"{RUNNER}:{node.lineno}",
                        f"{label}{_src(value)[:70]}",
                        "ast",
                        "checked" if ok else "not checked",
                        f"bound to the {kind} count" if ok else "not bound to the dispatcher's or the unpadded count",
                    )
                )
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Tuple) and any(_src(e) == "batch_desc" for e in t.elts) for t in node.targets
            ):
                ok = isinstance(node.value, ast.Call) and _src(node.value.func) in (
                    "self._determine_batch_execution_and_padding",
                    "self.cudagraph_dispatcher.dispatch",
                )
                out.append(
                    path_record(
                        f"{RUNNER}:{node.lineno}",
                        f"batch_desc = {_src(node.value)[:60]}",
                        "ast",
                        "checked" if ok else "not checked",
                        "the dispatcher's descriptor (dispatch and the DP re-dispatch)" if ok else "another source",
                    )
                )
    det = next((f for f in rt.functions if f.name == "_determine_batch_execution_and_padding"), None)
    if det is not None:
        sets = [
            n
            for n in ast.walk(det)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Tuple) and any(_src(e) == "batch_descriptor" for e in t.elts) for t in n.targets)
        ]
        ok = bool(sets) and all(
            isinstance(n.value, ast.Call) and _src(n.value.func) == "dispatch_cudagraph" for n in sets
        )
        out.append(
            path_record(
                f"{RUNNER}:{','.join(str(n.lineno) for n in sets)}",
                "_determine_batch_execution_and_padding: batch_descriptor = dispatch_cudagraph(...) (own and DP count)",
                "ast",
                "checked" if ok else "not checked",
                "every descriptor it returns is the dispatcher's" if ok else "a descriptor from elsewhere",
            )
        )
    return out


def _ubatch_metadata(root: str) -> dict:
    """``split_attn_metadata``'s ``num_reqs = request_slice.stop - request_slice.start`` (AST)."""
    tree = _tree(root, UBATCH)
    lines = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and _src(n.targets[0]) == "num_requests"
        and _src(n.value) == "request_slice.stop-request_slice.start"
    ]
    return path_record(
        f"{UBATCH}:{','.join(map(str, lines)) or '?'}",
        "CommonAttentionMetadata(num_reqs=request_slice.stop - request_slice.start) of a micro-batch",
        "ast",
        "checked" if lines else "not checked",
        "a micro-batch's request slice, within [0, num_reqs_padded] (executed sweep)" if lines else "not found",
    )


def _unpadded(root: str) -> list[dict]:
    from .demand import unpadded_requests_bound

    fact = unpadded_requests_bound(root)
    out = []
    for key, result in (("checked (ast)", "checked"), ("not checked", "not checked")):
        for p in fact["paths"].get(key, []):
            site, _, what = p.partition(" (")
            out.append(path_record(site, "unpadded count: " + what.rstrip(")")[:100], "ast", result))
    return out


def v1_step_paths(root: str) -> list[dict]:
    """The paths of the V1 step request count (module docstring, fact 1)."""
    paths = [dispatcher_symbolic(root)]
    runs, bad = dispatcher_sweep()
    line = _line_of(root, DISPATCHER, "def dispatch(")
    paths.append(
        path_record(
            f"{DISPATCHER}:{line}",
            "CudagraphDispatcher keys, capture descriptors and dispatch (uniform decode with speculative tokens, "
            "LoRA, every CUDA-graph mode)",
            "executed",
            "counterexample" if bad else "checked",
            f"vLLM's dispatcher on {runs} configurations: "
            + ("; ".join(bad[:3]) if bad else "every descriptor's num_reqs <= max_num_seqs"),
        )
    )
    paths += _descriptor_sites(root)
    paths += _runner_bindings(root)
    paths += _unpadded(root)
    runs, bad = ubatch_sweep()
    paths.append(
        path_record(
            f"{UBATCH}:{_line_of(root, UBATCH, 'def maybe_create_ubatch_slices(')}",
            "micro-batch request slices (maybe_create_ubatch_slices, _pad_out_ubatch_slices)",
            "executed",
            "counterexample" if bad else "checked",
            f"vLLM's maybe_create_ubatch_slices on {runs} batches: "
            + ("; ".join(bad[:3]) if bad else "every request slice within [0, num_reqs_padded]"),
        )
    )
    paths.append(_ubatch_metadata(root))
    return paths


def attention_metadata_paths(root: str) -> tuple[list[dict], list[dict]]:
    """``(paths, counterexamples)`` of the attention-metadata request count: every
    ``CommonAttentionMetadata(...)`` construction with ``num_reqs`` in ``vllm/`` outside the V2
    runner, judged: the runner's (``num_reqs_padded``, fact 1), a copy of another metadata's count,
    a micro-batch's (fact 1's sweep); the chunked-local path executed (a counterexample)."""
    paths, cex = [], []
    local = local_attention_counterexample()
    for rel, path in py_files(root):
        if rel.startswith("vllm/v1/worker/gpu/"):
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if "CommonAttentionMetadata(" not in text:
            continue
        tree = ast.parse(text)
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and _src(call.func).endswith("CommonAttentionMetadata")):
                continue
            arg = next((k.value for k in call.keywords if k.arg == "num_reqs"), None)
            if arg is None:
                continue
            v = _src(arg)
            site = f"{rel}:{call.lineno}"
            if rel == RUNNER and v == "num_reqs_padded":
                paths.append(path_record(site, f"num_reqs={v}", "ast", "checked", "the V1 step count (fact 1)"))
            elif rel == UBATCH and v == "num_requests":
                paths.append(path_record(site, f"num_reqs={v}", "ast", "checked", "a micro-batch's (fact 1, executed)"))
            elif _metadata_copy(tree, call, arg):
                paths.append(path_record(site, f"num_reqs={v}", "ast", "checked", "a copy of a metadata's count"))
            elif rel == "vllm/v1/attention/backend.py" and v == "num_actual_reqs":
                good, why = _unpadded_callers(root)
                paths.append(
                    path_record(
                        site,
                        f"num_reqs={v} (CommonAttentionMetadata.unpadded)",
                        "ast",
                        "checked" if good else "not checked",
                        why,
                    )
                )
            elif rel.endswith("attention/backends/utils.py") and "seq_lens" in v:
                paths.append(
                    path_record(
                        site,
                        f"num_reqs={v} (make_local_attention_virtual_batches)",
                        "executed",
                        "counterexample" if local else "checked",
                        "one virtual request per attention chunk a request's tokens touch: run on the CPU, "
                        + (f"num_reqs {local['values']['num_reqs']} > max_num_reqs 1" if local else "no excess found"),
                    )
                )
            else:
                paths.append(path_record(site, f"num_reqs={v[:60]}", "ast", "not checked", "not read"))
    if local:
        cex.append(local)
    return paths, cex


def _metadata_copy(tree, call, arg) -> bool:
    """``arg`` is ``<metadata>.num_reqs`` or a name every assignment of which, in the function
    around ``call``, is one (``num_reqs = common_attn_metadata.num_reqs``)."""

    def copy(node) -> bool:
        v = _src(node)
        return v.endswith("common_attn_metadata.num_reqs") or v in (
            "cad.num_reqs",
            "cm.num_reqs",
            "attn_metadata.num_reqs",
        )

    if copy(arg):
        return True
    if not isinstance(arg, ast.Name):
        return False
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= call.lineno <= (fn.end_lineno or 0):
            sets = [
                n
                for n in ast.walk(fn)
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets)
            ]
            params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            if sets and arg.id not in params and all(copy(n.value) for n in sets):
                return True
    return False


def _unpadded_callers(root: str) -> tuple[bool, str]:
    """Every ``.unpadded(tokens, reqs)`` call of ``vllm/`` is in the runner with ``reqs`` bound to
    the unpadded or padded step count (:class:`.demand.RowBinding`)."""
    from .demand import RowBinding

    sites, bad = [], []
    rt = RowBinding(root, RUNNER)
    for rel, path in py_files(root):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if ".unpadded(" not in text:
            continue
        for call in ast.walk(ast.parse(text)):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "unpadded":
                site = f"{rel}:{call.lineno}"
                fn = rt.enclosing(call.lineno) if rel == RUNNER else None
                kind = rt.kind(fn, call.args[1]) if fn is not None and len(call.args) > 1 else None
                (sites if kind in ("padded", "unpadded") else bad).append(site)
    if bad or not sites:
        return False, "callers not bound to the step count: " + ", ".join(bad or ["none found"])
    return True, "every caller passes the step count: " + ", ".join(sites)


PCP = "vllm/v1/worker/gpu/pcp_manager.py"


def pcp_local_requests() -> dict | None:
    """vLLM's ``PCPManager._get_rank_segments`` on the CPU (V2 runner, prefill context parallelism
    2): one prefilling request of 8 scheduled tokens in a batch of ``max_num_reqs = 1``. Each rank
    gets two chunks of every prefill (``_iter_rank_chunks``: chunks ``rank`` and ``2 * pcp - 1 -
    rank``), one local request per chunk, so the local batch's ``num_reqs = len(local_segments)``
    (``pcp_manager.py:506``) is 2. Returns the counterexample record, or None when it is not above
    1. The stand-in ``self`` holds the manager's sizes and binds its own methods."""
    import numpy as np
    from vllm.v1.worker.gpu.pcp_manager import PCPManager

    me = SimpleNamespace(pcp_world_size=2, dcp_world_size=1, shard_decode_requests=False)
    for name in ("replicated_requests", "_iter_rank_chunks"):
        setattr(me, name, getattr(PCPManager, name).__get__(me))
    me._reorder_segments = PCPManager._reorder_segments
    tokens, prefilling = np.array([8]), np.array([True])
    segments = PCPManager._get_rank_segments(me, 0, tokens, prefilling, np.array([0, 8]))
    if len(segments) <= 1:
        return None
    return {
        "site": f"{PCP}:506 (num_local_reqs = len(local_segments)), replace(num_reqs=num_local_reqs) at :688",
        "deployment": "V2 model runner (VLLM_USE_V2_MODEL_RUNNER=1), prefill context parallel size 2 (an MLA model: "
        "only MLA backends support PCP), max_num_seqs=1, one prefill of 8 tokens",
        "values": {"max_num_reqs": 1, "num_reqs": len(segments)},
        "reproduced": True,
        "finding": "docs/findings.md, finding 10 (the PCP local batch holds up to 2 * max_num_reqs requests; "
        "the manager sizes its own buffers for that, pcp_manager.py:98; whether a [max_num_reqs] buffer receives "
        "the local batch is not confirmed)",
    }


def _bounded_by_min(fn, name: str, bound: str) -> bool:
    """Every assignment of ``name`` in ``fn`` is ``min(...)`` with ``bound`` or ``name`` itself (an
    already bounded value) among its arguments, and there is one that names ``bound``."""
    sets = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and any(_src(t) == name for t in n.targets)]
    args = [
        [_src(a) for a in n.value.args] if isinstance(n.value, ast.Call) and _src(n.value.func) == "min" else None
        for n in sets
    ]
    return (
        bool(sets) and all(a is not None and (bound in a or name in a) for a in args) and any(bound in a for a in args)
    )


def dict_of_list_keys(root: str, rel: str, line: int) -> str | None:
    """Why the dict stored as a scheduler output's ``num_scheduled_tokens`` at ``rel:line`` holds at
    most ``max_num_seqs`` entries, or None (AST): the stored name is created empty (``{}``) in its
    function, its only stores are ``d[L[i]] = ...`` with one list ``L`` (an index past the list
    raises ``IndexError`` first), no ``update``/``setdefault``/``|=``; ``L`` is bound in an enclosing
    function to ``[... for i in range(n)]`` with every assignment of ``n`` a ``min`` with
    ``*.scheduler_config.max_num_seqs`` (the V2 runner's ``max_num_reqs``)."""
    tree = _tree(root, rel)
    fns = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    site = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno == line and isinstance(n.value, ast.Name)),
        None,
    )
    if site is None:
        return None
    name = site.value.id
    inner = [f for f in fns if f.lineno <= line <= (f.end_lineno or 0)]
    if not inner:
        return None
    fn = max(inner, key=lambda f: f.lineno)
    made = [
        n
        for n in ast.walk(fn)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and any(_src(t) == name for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
    ]
    if len(made) != 1 or not (isinstance(made[0].value, ast.Dict) and not made[0].value.keys):
        return None
    lists = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.AugAssign) and _src(n.target) == name:
            return None
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name:
            if n.attr not in ("values", "keys", "items", "get"):
                return None
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name:
            if isinstance(n.ctx, ast.Store):
                if not (isinstance(n.slice, ast.Subscript) and isinstance(n.slice.value, ast.Name)):
                    return None
                lists.add(n.slice.value.id)
            elif isinstance(n.ctx, ast.Del):
                continue
    if len(lists) != 1:
        return None
    (lst,) = lists
    if any(isinstance(n, ast.Assign) and any(_src(t) == lst for t in n.targets) for n in ast.walk(fn)):
        return None
    outer = [f for f in fns if f is not fn and f.lineno < fn.lineno and (fn.end_lineno or 0) <= (f.end_lineno or 0)]
    if not outer:
        return None
    g = max(outer, key=lambda f: f.lineno)
    made = [n for n in ast.walk(g) if isinstance(n, ast.Assign) and any(_src(t) == lst for t in n.targets)]
    if len(made) != 1 or not isinstance(made[0].value, ast.ListComp):
        return None
    gen = made[0].value.generators
    if len(gen) != 1 or gen[0].ifs or not (isinstance(gen[0].iter, ast.Call) and _src(gen[0].iter.func) == "range"):
        return None
    if len(gen[0].iter.args) != 1 or not isinstance(gen[0].iter.args[0], ast.Name):
        return None
    n = gen[0].iter.args[0].id
    if not _bounded_by_min(g, n, "model_runner.scheduler_config.max_num_seqs"):
        return None
    return (
        f"keys are elements of {lst} ({rel}:{made[0].lineno}, [... for i in range({n})], {n} = min(max_num_seqs, ...)); "
        f"{name} created empty, stored only as {name}[{lst}[...]]"
    )


UBATCH_V2 = "vllm/v1/worker/gpu/ubatch_utils.py"
SHARD = "vllm/v1/worker/gpu/sample/batch_shard.py"
#: The statements of ``BatchSharder.shard_sampler_inputs`` that bound the shard's count by its input's slot array.
SHARD_COUNT = (
    "req_owner_np=input_batch.idx_mapping_np%tp_size",
    "local_req_indices_np=np.flatnonzero(req_owner_np==tp_rank)",
    "num_local_reqs=local_req_indices_np.shape[0]",
)


def _shard_reading(root: str) -> str | None:
    """Where the reading of the batch shard's count stops (AST), or None when its statements differ."""
    fn = _function(root, SHARD, "shard_sampler_inputs", "BatchSharder")
    have = {_src(n) for n in ast.walk(fn)} if fn is not None else set()
    if not all(s in have for s in SHARD_COUNT):
        return None
    return (
        "num_local_reqs = np.flatnonzero(input_batch.idx_mapping_np % tp_size == tp_rank).shape[0] "
        "<= len(input_batch.idx_mapping_np) (read); not read: that the slot array's length is the input "
        "batch's count (every idx_mapping_np= of the V2 runner), so not checked"
    )


def _ubatch_judgement(root: str) -> tuple[str, str] | None:
    """``(result, why)`` of the V2 micro-batch counts (:mod:`.fact_v2_ubatch`), None when the
    module does not run here."""
    from .fact_v2_ubatch import lemmas, ubatch_counts

    read, missing = lemmas(root)
    try:
        run = ubatch_counts(root)
    except (ImportError, RuntimeError, TypeError, StopIteration) as exc:
        return "not checked", f"micro-batch counts not run: {exc}"[:200]
    padded, unpadded = run["empty"]
    if not run["proved"]:
        return (
            "not checked",
            "create_ubatch_slices + _slice_input_batch run on symbolic sizes: not proved <= max_num_reqs",
        )
    if missing:
        return "not checked", f"proved given hypotheses not found in the source: {'; '.join(missing)}"[:400]
    return (
        "checked",
        "vLLM's create_ubatch_slices and _slice_input_batch's count statements run on symbolic sizes, every path "
        "(slice start >= 0, 1 <= num_reqs <= num_reqs_after_padding <= max_num_reqs): both counts <= max_num_reqs "
        f"(Z3 unsat); hypotheses read ({len(read)} statements, fact_v2_ubatch.lemmas); a batch without a request "
        f"would give {padded} rows for 2",
    )


def v2_paths(root: str) -> list[dict]:
    """The V2 runner's paths (:func:`.demand_v2_requests.v2_requests_fact`), one per site; the PCP
    manager's local request count is run on the CPU (:func:`pcp_local_requests`)."""
    from .demand_v2_requests import v2_requests_fact

    fact = v2_requests_fact(root)
    pcp = pcp_local_requests()
    ubatch = _ubatch_judgement(root)
    out = []
    shard = None
    # the dummy sampler run's count (its chain refused: _dummy_run may read an earlier step's
    # state); the paths that hold once it is taken as the dummy's own hold unless that count
    # exceeds, and carry it as ``given`` (fact_v2_reach follows that count, not theirs)
    dummy = next((p for p in fact["paths"].get("not checked", []) if "before storing ExecuteModelState" in p), None)
    own = v2_requests_fact(root, own_state=True) if dummy else None
    own_ok = {p.split(" (refused: ")[0] for p in own["paths"].get("checked (ast)", [])} if own else set()
    given = dummy.split(" ", 1)[0] if dummy else ""
    for key, result in (("checked (ast)", "checked"), ("not checked", "not checked")):
        for p in fact["paths"].get(key, []):
            p = p.removeprefix("scheduler: ")
            site, _, what = p.partition(" ")
            why = ""
            if "(refused: " in what:
                what, _, why = what.partition(" (refused: ")
                why = why.rstrip(")")
            if pcp and site == f"{PCP}:688" and "num_reqs=num_local_reqs" in what:
                out.append(
                    path_record(
                        site,
                        what[:120],
                        "executed",
                        "counterexample",
                        f"PCPManager._get_rank_segments run on the CPU: {pcp['values']['num_reqs']} local requests "
                        f"from a batch of max_num_reqs {pcp['values']['max_num_reqs']} (two chunks of a prefill per rank)",
                    )
                )
                continue
            if result == "not checked" and site.startswith(f"{UBATCH_V2}:") and ubatch is not None:
                out.append(path_record(site, what[:120], "executed", ubatch[0], ubatch[1][:400]))
                continue
            if result == "not checked" and what.startswith("num_scheduled_tokens = "):
                rel, _, line = site.rpartition(":")
                bound = dict_of_list_keys(root, rel, int(line)) if line.isdigit() else None
                if bound:
                    out.append(path_record(site, what[:120], "ast", "checked", bound[:200]))
                    continue
            if result == "not checked" and site.startswith(f"{SHARD}:"):
                if shard is None:
                    from .fact_v2_shard import shard_count

                    good = [q.split(" ", 1)[0] for q in fact["paths"].get("checked (ast)", [])]
                    shard = shard_count(root, good)
                    if shard[0] != "checked" and own:
                        good_own = [q.split(" ", 1)[0] for q in own["paths"].get("checked (ast)", [])]
                        if shard_count(root, good_own)[0] == "checked":
                            shard = ("given", shard[1])
                if shard[0] == "checked":
                    result, why = shard
                else:
                    why = (_shard_reading(root) or why) + f" ({shard[1]})"
                rec = path_record(site, what[:120], "ast", result, why[:600])
                if shard[0] == "given":
                    rec["given"] = given
                out.append(rec)
                continue
            rec = path_record(site, what[:120], "ast", result, why[:300])
            if result == "not checked" and given and site != given and f"{site} {what}" in own_ok:
                rec["given"] = given  # holds given the dummy sampler run's count
            out.append(rec)
    return out


_METADATA_NAMES = ("common_attn_metadata", "cad", "cm", "spec_decode_common_attn_metadata")


def drafting_paths(root: str) -> list[dict]:
    """The V1 drafters' request count (``vllm/v1/spec_decode/``), read from the source:

    - the metadata the runner hands a drafter: every assignment of
      ``spec_decode_common_attn_metadata`` in the runner is ``None``, ``cm`` (every ``cm`` a
      ``copy(cm_base)``, every ``cm_base`` a ``CommonAttentionMetadata(num_reqs=num_reqs_padded)``:
      the step count, fact 1) or ``.unpadded(num_tokens, num_reqs)`` of it; every
      ``self.propose_draft_token_ids(...)`` call passes ``spec_decode_common_attn_metadata`` and every
      ``self.drafter.propose(...)`` there passes its own parameter ``common_attn_metadata``;
    - the drafters' own CUDA-graph dispatch: every ``batch_desc.<field>`` read in ``spec_decode/`` is
      ``num_tokens`` (the drafters take no request count from a descriptor);
    - every assignment of ``batch_size`` or ``num_reqs`` in ``spec_decode/``: a metadata's
      ``batch_size()``/``num_reqs`` (the runner's, or a copy: fact 2's paths in ``spec_decode/``) or the
      persistent batch's ``num_reqs`` (unpadded, fact 1) is checked; anything else is not."""
    from .demand import RowBinding

    out = []
    rt = RowBinding(root, RUNNER)
    build = next((f for f in rt.functions if f.name == "_build_attention_metadata"), None)
    if build is None:
        return [path_record(f"{RUNNER}:?", "_build_attention_metadata", "ast", "not checked", "not found")]

    def sets(fn, name):
        return [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        ]

    cm_ok = all(_src(n.value) == "copy(cm_base)" for n in sets(build, "cm")) and sets(build, "cm")
    base_ok = sets(build, "cm_base") and all(
        isinstance(n.value, ast.Call)
        and _src(n.value.func).endswith("CommonAttentionMetadata")
        and any(k.arg == "num_reqs" and _src(k.value) == "num_reqs_padded" for k in n.value.keywords)
        for n in sets(build, "cm_base")
    )
    for n in sets(build, "spec_decode_common_attn_metadata"):
        v = n.value
        if isinstance(v, ast.Constant) and v.value is None:
            ok, why = True, "no metadata"
        elif _src(v) == "cm":
            ok, why = bool(cm_ok and base_ok), "a copy of cm_base, CommonAttentionMetadata(num_reqs=num_reqs_padded)"
        elif isinstance(v, ast.Call) and _src(v.func).endswith(".unpadded") and len(v.args) > 1:
            kind = rt.kind(build, v.args[1])
            ok, why = kind in ("padded", "unpadded"), f"unpadded(..., {_src(v.args[1])}): the {kind} count"
        else:
            ok, why = False, "another metadata"
        out.append(
            path_record(
                f"{RUNNER}:{n.lineno}",
                f"spec_decode_common_attn_metadata = {_src(v)[:60]}",
                "ast",
                "checked" if ok else "not checked",
                why,
            )
        )
    prop = next((f for f in rt.functions if f.name == "propose_draft_token_ids"), None)
    for fn in rt.functions:
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            f = _src(call.func)
            if f == "self.propose_draft_token_ids":
                arg = next((k.value for k in call.keywords if k.arg == "common_attn_metadata"), None)
                if arg is None and len(call.args) >= 8:
                    arg = call.args[7]
                ok = arg is not None and _src(arg) == "spec_decode_common_attn_metadata"
                out.append(
                    path_record(
                        f"{RUNNER}:{call.lineno}",
                        f"propose_draft_token_ids(common_attn_metadata={_src(arg) if arg is not None else '?'})",
                        "ast",
                        "checked" if ok else "not checked",
                        "the metadata built for the step" if ok else "another metadata",
                    )
                )
            elif f == "self.drafter.propose" and fn is prop:
                arg = next((k.value for k in call.keywords if k.arg == "common_attn_metadata"), None)
                if arg is None:
                    continue
                ok = _src(arg) == "common_attn_metadata" and not sets(prop, "common_attn_metadata")
                out.append(
                    path_record(
                        f"{RUNNER}:{call.lineno}",
                        f"drafter.propose(common_attn_metadata={_src(arg)[:40]})",
                        "ast",
                        "checked" if ok else "not checked",
                        "the parameter, never rebound" if ok else "another metadata",
                    )
                )
    for rel, path in py_files(root, "vllm/v1/spec_decode"):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "batch_desc":
                ok = node.attr == "num_tokens"
                out.append(
                    path_record(
                        f"{rel}:{node.lineno}",
                        f"batch_desc.{node.attr}",
                        "ast",
                        "checked" if ok else "not checked",
                        "a token count only" if ok else "a descriptor field other than num_tokens",
                    )
                )
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            t = node.targets[0]
            if not (isinstance(t, ast.Name) and t.id in ("batch_size", "num_reqs")):
                continue
            v = _src(node.value)
            base = v.removesuffix(".batch_size()").removesuffix(".num_reqs")
            if base != v and base in _METADATA_NAMES:
                ok, why = True, "a metadata's count (the runner's step count or a copy)"
            elif v in ("gpu_input_batch.num_reqs", "input_batch.num_reqs", "self.input_batch.num_reqs"):
                ok, why = True, "the persistent batch's count (unpadded, fact 1)"
            else:
                ok, why = False, "not read"
            out.append(
                path_record(
                    f"{rel}:{node.lineno}", f"{t.id} = {v[:60]}", "ast", "checked" if ok else "not checked", why
                )
            )
    seen, unique = set(), []
    for p in out:  # a call in a closure is met from the enclosing function too
        if (p["site"], p["sets"]) not in seen:
            seen.add((p["site"], p["sets"]))
            unique.append(p)
    return unique


def request_facts(root: str, entries: list[dict] | None = None) -> list[dict]:
    """The three request-count facts (module docstring) over the sources under ``root`` (vLLM
    importable: the tracer activated it). ``entries`` (inventory entries: ``id``, ``file``,
    ``owner``, ``attribute``): the V2 fact is split per entry by what each batch can meet
    (:func:`.fact_v2_reach.split_by_reach`); without them, per file."""
    from ...facts import status
    from .fact_attention import attention_facts
    from .fact_v2_reach import split_by_reach

    att, cex = attention_metadata_paths(root)
    local = [p for p in att if "make_local_attention_virtual_batches" in p["sets"]]
    v2 = fact_record(
        "V2 request count (descriptors, dummy batches, scheduler outputs) <= max_num_reqs",
        [ASSUMPTION],
        V2_SCOPE,
        v2_paths(root),
        [c for c in [pcp_local_requests()] if c],
    )
    if len(local) == 1:
        attention = attention_facts(
            root,
            [p for p in att if p is not local[0]],
            local[0],
            cex[0] if cex else None,
            status(v2),
            (v2["counterexamples"] or [None])[0],
            ASSUMPTION,
        )
    else:  # the chunked-local construction was not found: one fact over the whole directory
        attention = [
            fact_record(
                "attention-metadata request count CommonAttentionMetadata.num_reqs <= max_num_reqs",
                [ASSUMPTION],
                ATTENTION_SCOPE,
                att + [path_record("vllm/v1/attention/", "the chunked-local construction", "ast", "not checked")],
                cex,
            )
        ]
    return [
        fact_record(
            "V1 step request count num_reqs_padded <= max_num_reqs (dispatcher padding, DP, dummy runs, "
            "capture, micro-batches)",
            [ASSUMPTION],
            V1_SCOPE,
            v1_step_paths(root),
        ),
        *attention,
        fact_record(
            "V1 drafting request count (the metadata the runner hands a drafter, the drafters' own counts) "
            "<= max_num_reqs",
            [ASSUMPTION],
            SPEC_SCOPE,
            drafting_paths(root),
        ),
        *split_by_reach(root, v2, entries),
    ]
