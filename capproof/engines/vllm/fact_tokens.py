"""The fact "padded tokens <= max_num_batched_tokens", checked on every path of vLLM 0.33.0 that sets a
step's (padded) token count.

:mod:`.demand_requests` checks the V1 runner's own paths (the scheduler's input budget and the
capture sizes, AST; ``GPUModelRunner._determine_batch_execution_and_padding`` executed on symbolic
sizes; the dummy run's asserts, AST). This module adds the other paths that set a token count a
``[max_num_batched_tokens]`` buffer is sliced by, and gathers every path into one fact record
(:func:`token_facts`), each path with how it was checked:

- **V1 drafter padding** (:func:`drafter_padded_tokens`, executed): ``SpecDecodeBaseProposer.
  _determine_batch_execution_and_padding`` (``vllm/v1/spec_decode/llm_base_proposer.py:1773-1815``)
  run on symbolic sizes with vLLM's own ``CudagraphDispatcher.dispatch`` (a dispatcher of the same
  class, built from the same compilation config: the same padding table), every CUDA-graph mode,
  CUDA graphs on and off, DP on and off (the DP all-reduce a stand-in holding each rank's padded
  count, vLLM's ``_post_process_cudagraph_mode``/``_post_process_dp_padding`` run on it), the
  re-dispatch with the synced mode and its assert. Its value is at most the largest of the input
  count, the other rank's count and the table's capture sizes.
- **V1 drafter inputs** (:func:`drafter_input_tokens`, AST and executed): the first pass drafts over
  the target's tokens (``target_token_ids = self.input_ids.gpu[:num_scheduled_tokens]`` or
  ``[:total_num_tokens]``, ``gpu_model_runner.py:4889,4927``) plus ``net_num_new_slots_per_request``
  slots per request when the proposer needs extra input slots (``llm_base_proposer.py:872-874``);
  the scheduler takes ``max_num_new_slots_for_drafting`` per request out of its budget. Both slot
  counts are vLLM's own code, evaluated for every proposer class (its ``pass_hidden_states_to_model``
  read from its ``super().__init__`` call), parallel drafting on and off and
  ``num_speculative_tokens`` 1..32: they must agree. Later passes draft ``batch_size`` tokens (one
  per request): at most ``max_num_seqs``, which ``SchedulerConfig`` requires ``<=
  max_num_batched_tokens`` (AST: the ``raise``). Proposers that override ``set_inputs_first_pass``
  are listed as paths of their own (not checked here).
- **ubatching (DBO)** (AST): ``maybe_create_ubatch_slices`` pads the last microbatch out to the
  padded token count (``_pad_out_ubatch_slices(…, num_total_tokens=num_tokens_padded, …)``):
  microbatching splits the padded count, never raises it.
- **V2 runner** (:mod:`.fact_tokens_v2`): the capture sizes (every write in ``vllm/``, AST), the
  manager's candidates (``_init_candidates`` run on a symbolic capture size), the dispatch and DP
  sync (``dispatch_cg_and_sync_dp`` run on symbolic sizes), the runner's unpadded counts and the
  speculators' dispatches. :func:`v2_padded_tokens` runs vLLM's manager on a bounded domain of
  concrete configurations: a cross-check of that proof in the real tier, not a path of the fact.

A path not checked keeps the fact assumed there (``paths["not checked"]``); an entry whose demand
rests on such a path is not verified. :func:`token_facts` gathers the paths into one engine fact
per scope (the V1 runner, the V1 drafter, the V2 runner, attention builders and layers).
"""

from __future__ import annotations

import ast
import os
from types import SimpleNamespace

from ...symbolic import SymInt
from .demand import function_def, run_paths, source_text
from .demand_requests import DPAllReduced, DPRow, maximum_expression, path_leaves

__all__ = [
    "DRAFTER",
    "DRAFTER_NAMES",
    "drafter_padded_tokens",
    "drafter_input_tokens",
    "ubatch_padding",
    "v2_padded_tokens",
    "token_facts",
    "TOKENS_ASSUMPTION",
    "SLOTS_ASSUMPTION",
    "MODEL_LEN_ASSUMPTION",
    "model_len_fact",
]

DRAFTER = "vllm/v1/spec_decode/llm_base_proposer.py"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
SCHED_CONFIG = "vllm/config/scheduler.py"
SPEC_CONFIG = "vllm/config/speculative.py"
UBATCH = "vllm/v1/worker/ubatch_utils.py"
#: Symbolic sizes of :func:`drafter_padded_tokens` (all >= 1).
DRAFTER_NAMES = (
    "num_tokens_draft",
    "num_tokens_draft_other_rank",
    "capture_size",
    "capture_size_dp",
    "capture_size_other_rank",
    "max_cudagraph_capture_size",
)
#: 0/1 flags of :func:`drafter_padded_tokens`.
DRAFTER_FLAGS = ("dp", "use_cudagraphs", "key_full", "key_piecewise", "dp_pad")


class _Table:
    """The dispatcher's padding table: each lookup a capture size (a symbolic size per call)."""

    def __init__(self, sizes):
        self.sizes = iter(sizes)

    def __getitem__(self, n):
        return next(self.sizes)


class _Keys:
    """The dispatcher's key sets: membership is a free flag."""

    def __init__(self, flag):
        self.flag = flag

    def __contains__(self, item):
        return self.flag == 1


def _dispatcher(mode, table, v):
    """A ``CudagraphDispatcher`` whose ``dispatch`` and ``_create_padded_batch_descriptor`` are
    vLLM's own, over the stand-in table and key sets."""
    from vllm.config import CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    d = SimpleNamespace(
        keys_initialized=True,
        cudagraph_mode=mode,
        compilation_config=SimpleNamespace(max_cudagraph_capture_size=v["max_cudagraph_capture_size"]),
        vllm_config=SimpleNamespace(scheduler_config=SimpleNamespace(max_num_seqs=1), lora_config=None),
        uniform_decode_query_len=1,
        _bs_to_padded_graph_size=table,
        cudagraph_keys={
            CUDAGraphMode.FULL: _Keys(v["key_full"]),
            CUDAGraphMode.PIECEWISE: _Keys(v["key_piecewise"]),
        },
        specialize_lora_count=False,
    )
    d._create_padded_batch_descriptor = lambda *a, **k: CudagraphDispatcher._create_padded_batch_descriptor(d, *a, **k)
    d.dispatch = lambda *a, **k: CudagraphDispatcher.dispatch(d, *a, **k)
    return d


def drafter_padded_tokens() -> tuple[str, list[str]]:
    """``(extent, notes)``: the padded token count ``SpecDecodeBaseProposer.
    _determine_batch_execution_and_padding`` returns, run on every path (module docstring), as the
    maximum of its paths' values over :data:`DRAFTER_NAMES`. Raises RuntimeError when a path fails
    otherwise than at an engine assert. Needs vLLM importable (:func:`.wheels.activate`)."""
    import z3
    from vllm.config import CUDAGraphMode
    from vllm.v1.spec_decode import llm_base_proposer as lbp
    from vllm.v1.worker import dp_utils

    v = {n: SymInt.var(n) for n in DRAFTER_NAMES + DRAFTER_FLAGS}
    assume = [z3.Int(n) >= 1 for n in DRAFTER_NAMES]
    assume += [z3.Or(z3.Int(f) == 0, z3.Int(f) == 1) for f in DRAFTER_FLAGS]
    modes = [CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL, CUDAGraphMode.FULL_AND_PIECEWISE]
    leaves: list = []
    notes: list[str] = []
    for mode in modes:

        def run(mode=mode):
            own = _dispatcher(mode, _Table((v["capture_size"], v["capture_size_dp"])), v)
            other = _dispatcher(mode, _Table((v["capture_size_other_rank"],)), v)

            def coordinate(num_tokens_unpadded, parallel_config, allow_microbatching, num_tokens_padded, **kw):
                if allow_microbatching:
                    raise TypeError("the drafter asked for microbatching")
                other_mode, desc = other.dispatch(v["num_tokens_draft_other_rank"])
                reduced = DPAllReduced(
                    {1: [num_tokens_padded, desc.num_tokens], 3: [kw["cudagraph_mode"], other_mode.value]}
                )
                saved = dp_utils.torch, dp_utils.__dict__.get("int")
                dp_utils.torch = SimpleNamespace(tensor=lambda data, **k: DPRow(data), int32=None)
                dp_utils.int = lambda x: x
                try:
                    synced = dp_utils._post_process_cudagraph_mode(reduced)
                    across = dp_utils._post_process_dp_padding(reduced, v["dp_pad"] == 1)
                finally:
                    dp_utils.torch = saved[0]
                    if saved[1] is None:
                        del dp_utils.int
                    else:
                        dp_utils.int = saved[1]
                return False, DPRow(SimpleNamespace(item=lambda x=x: x) for x in across), synced

            me = SimpleNamespace(
                cudagraph_dispatcher=own,
                vllm_config=SimpleNamespace(parallel_config=SimpleNamespace(data_parallel_size=1 + v["dp"])),
                dp_rank=0,
            )
            saved = lbp.coordinate_batch_across_dp, lbp.__dict__.get("int")
            lbp.coordinate_batch_across_dp = coordinate
            lbp.int = lambda x: x  # int() of the synced count: the count itself
            try:
                out = lbp.SpecDecodeBaseProposer._determine_batch_execution_and_padding(
                    me, v["num_tokens_draft"], use_cudagraphs=v["use_cudagraphs"] == 1
                )
            finally:
                lbp.coordinate_batch_across_dp = saved[0]
                if saved[1] is None:
                    del lbp.int
                else:
                    lbp.int = saved[1]
            return out[1]

        term, n = run_paths(run, assume, budget=2048)
        notes += [f"drafter, cudagraph mode {mode.name}: {x}" for x in n]
        for leaf in path_leaves(term):
            if not any(leaf.eq(x) for x in leaves):
                leaves.append(leaf)
    return maximum_expression(leaves), notes


def _tree(root: str, file: str):
    with open(os.path.join(root, file), encoding="utf-8") as fh:
        return ast.parse(fh.read())


def _proposer_classes(root: str) -> list[tuple[str, str, bool | None, bool]]:
    """``[(file, class, pass_hidden_states_to_model, overrides set_inputs_first_pass)]`` for every
    class of ``vllm/v1/spec_decode`` whose ``__init__`` calls ``super().__init__(…,
    pass_hidden_states_to_model=<constant>, …)`` (None when the value is not a constant)."""
    out = []
    base = os.path.join(root, "vllm/v1/spec_decode")
    for name in sorted(os.listdir(base)):
        if not name.endswith(".py"):
            continue
        rel = f"vllm/v1/spec_decode/{name}"
        for cls in ast.walk(_tree(root, rel)):
            if not isinstance(cls, ast.ClassDef):
                continue
            overrides = any(isinstance(f, ast.FunctionDef) and f.name == "set_inputs_first_pass" for f in cls.body)
            for call in ast.walk(cls):
                if not (isinstance(call, ast.Call) and source_text(call.func) == "super().__init__"):
                    continue
                kw = next((k for k in call.keywords if k.arg == "pass_hidden_states_to_model"), None)
                if kw is None:
                    continue
                value = kw.value.value if isinstance(kw.value, ast.Constant) else None
                out.append((rel, cls.name, value, overrides))
    return out


def _init_slots(root: str):
    """vLLM's two assignments of ``extra_slots_per_request`` and ``net_num_new_slots_per_request``
    from ``SpecDecodeBaseProposer.__init__`` as one compiled block, and their lines."""
    init = function_def(root, DRAFTER, "__init__", "SpecDecodeBaseProposer")
    want = ("self.extra_slots_per_request", "self.net_num_new_slots_per_request")
    stmts = [
        s
        for s in ast.walk(init)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and source_text(s.targets[0]) in want
    ]
    if sorted(source_text(s.targets[0]) for s in stmts) != sorted(want):
        raise RuntimeError(f"{DRAFTER}: slot assignments not found once each in SpecDecodeBaseProposer.__init__")
    stmts.sort(key=lambda s: s.lineno)
    code = compile(ast.Module(body=stmts, type_ignores=[]), DRAFTER, "exec")
    return code, [s.lineno for s in stmts]


def _assigned_anywhere(root: str, file: str, attr: str) -> list[int]:
    return [
        n.lineno
        for n in ast.walk(_tree(root, file))
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and f"self.{attr}" in [source_text(t) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    ]


def drafter_input_tokens(root: str) -> dict:
    """Fact record ``{"fact", "checked", "paths"}``: every token count the V1 drafter pads (first
    pass: the target's tokens plus its extra slots; later passes: one token per request) is at
    most ``max_num_batched_tokens`` (module docstring). Needs vLLM importable (the speculative
    config's slot count is run)."""
    from vllm.config.speculative import SpeculativeConfig

    checked: list[str] = []
    unchecked: list[str] = []
    code, lines = _init_slots(root)
    others = [
        ln
        for a in ("extra_slots_per_request", "net_num_new_slots_per_request")
        for ln in _assigned_anywhere(root, DRAFTER, a)
        if ln not in lines
    ]
    if others:
        unchecked.append(f"{DRAFTER}:{','.join(map(str, others))} (slot counts assigned again)")
    slots = SpeculativeConfig.max_num_new_slots_for_drafting.fget
    classes = _proposer_classes(root)
    if not classes:
        unchecked.append("vllm/v1/spec_decode (no proposer class found)")
    tried = 0
    for file, cls, hidden, overrides in classes:
        if overrides:
            unchecked.append(f"{file} {cls}.set_inputs_first_pass (its own first pass: token count not checked here)")
            continue
        if hidden is None:
            unchecked.append(f"{file} {cls} (pass_hidden_states_to_model not a constant)")
            continue
        bad = []
        for parallel in (False, True):
            for k in range(1, 33):
                for method in ("eagle3", "mtp", "draft_model", "dflash"):
                    cfg = SimpleNamespace(
                        num_speculative_tokens=k,
                        parallel_drafting=parallel,
                        use_dflash=lambda m=method: m == "dflash",
                        use_dspark=lambda: False,
                        uses_draft_model=lambda m=method: m == "draft_model",
                    )
                    # the draft-model proposer is the class that passes no hidden states
                    if (method == "draft_model") != (not hidden) or method == "dflash":
                        continue
                    me = SimpleNamespace(
                        parallel_drafting=parallel,
                        num_speculative_tokens=k,
                        pass_hidden_states_to_model=hidden,
                        method=method,
                    )
                    exec(code, {}, {"self": me})  # noqa: S102 - vLLM's own two assignments
                    tried += 1
                    scheduled = slots(cfg)
                    if me.net_num_new_slots_per_request > max(scheduled, 0):
                        bad.append(
                            f"{method} parallel={parallel} K={k}: {me.net_num_new_slots_per_request} > {scheduled}"
                        )
        (unchecked if bad else checked).append(
            f"{file} {cls} (pass_hidden_states_to_model={hidden}): net_num_new_slots_per_request <= "
            f"max_num_new_slots_for_drafting on every K in 1..32, parallel on/off"
            + (f"; fails: {bad[0]}" if bad else "")
        )
    checked.append(
        f"{DRAFTER}:{','.join(map(str, lines))} and {SPEC_CONFIG} max_num_new_slots_for_drafting (executed, {tried} cases)"
    )
    sched = _tree(root, SCHED_CONFIG)
    raises = [
        n.lineno
        for n in ast.walk(sched)
        if isinstance(n, ast.If)
        and source_text(n.test) == "self.max_num_batched_tokens<self.max_num_seqs"
        and any(isinstance(b, ast.Raise) for b in n.body)
    ]
    (checked if raises else unchecked).append(
        f"{SCHED_CONFIG}:{','.join(map(str, raises)) or '?'} (raise when max_num_batched_tokens < max_num_seqs: "
        "a later drafting pass's batch_size <= max_num_seqs <= max_num_batched_tokens)"
    )
    runner = _tree(root, RUNNER)
    targets = [
        n.lineno
        for n in ast.walk(runner)
        if isinstance(n, ast.Assign)
        and source_text(n.targets[0]) == "target_token_ids"
        and source_text(n.value)
        in (
            "self.input_ids.gpu[:num_scheduled_tokens]",
            "self.input_ids.gpu[:total_num_tokens]",
            "self.input_ids.gpu[token_indices]",
        )
    ]
    (checked if len(targets) >= 3 else unchecked).append(
        f"{RUNNER}:{','.join(map(str, targets)) or '?'} (the drafter's input: the target's own token rows)"
    )
    return {
        "fact": "num_tokens_draft <= max_num_batched_tokens (the drafter's input: target tokens plus reserved slots, "
        "or one per request)",
        "checked": not unchecked,
        "paths": {"checked (ast, executed)": checked, "not checked": unchecked},
    }


def ubatch_padding(root: str) -> dict:
    """Fact record: microbatching (DBO) splits the padded token count and never raises it
    (``maybe_create_ubatch_slices`` pads the last slice out to ``num_tokens_padded``; AST)."""
    fn = function_def(root, UBATCH, "maybe_create_ubatch_slices")
    pad = function_def(root, UBATCH, "_pad_out_ubatch_slices")
    ok = []
    if fn is not None and pad is not None:
        calls = [
            c
            for c in ast.walk(fn)
            if isinstance(c, ast.Call) and source_text(c.func) == "_pad_out_ubatch_slices" and len(c.args) >= 2
        ]
        ok = [c.lineno for c in calls if source_text(c.args[1]) == "num_tokens_padded"]
        stops = [
            s.lineno
            for s in ast.walk(pad)
            if isinstance(s, ast.Call)
            and source_text(s.func) == "slice"
            and len(s.args) == 2
            and source_text(s.args[1]) == "num_total_tokens"
        ]
        ok = ok if stops and len(ok) == len(calls) else []
    return {
        "fact": "ubatch token slices end at num_tokens_padded (microbatching splits the padded count)",
        "checked": bool(ok),
        "paths": {
            ("checked (ast)" if ok else "not checked"): [
                f"{UBATCH}:{','.join(map(str, ok)) or '?'} (_pad_out_ubatch_slices(…, num_tokens_padded, …): "
                "the last slice ends at the padded count)"
            ]
        },
    }


def vllm_capture_sizes(max_num_seqs: int, k: int, mnbt: int, user: list[int] | None = None) -> tuple[list[int], int]:
    """``(capture sizes, max_cudagraph_capture_size)`` as vLLM 0.33.0 computes them: its own
    ``VllmConfig._set_cudagraph_sizes`` and ``CompilationConfig.post_init_cudagraph_sizes`` on a
    duck-typed config (FULL_AND_PIECEWISE, no dynamic speculative decoding, balanced mode, non-SM100),
    then ``adjust_cudagraph_sizes_for_spec_decode`` for ``k`` draft tokens. ``user``: the sizes of
    ``--cudagraph-capture-sizes``. Needs vLLM importable; raises what vLLM raises (ValueError when no
    size survives the rounding)."""
    from unittest import mock

    import vllm.platforms as platforms
    from vllm.config.compilation import CompilationConfig, CUDAGraphMode
    from vllm.config.vllm import VllmConfig

    cc = SimpleNamespace(
        max_cudagraph_capture_size=None,
        cudagraph_capture_sizes=list(user) if user else None,
        compile_sizes=None,
        cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
    )
    cc.post_init_cudagraph_sizes = lambda: CompilationConfig.post_init_cudagraph_sizes(cc)
    this = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=cc,
        uniform_decode_query_len=1 + k,
        num_speculative_tokens=k,
        speculative_config=None,
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs, max_num_batched_tokens=mnbt),
        performance_mode="balanced",
    )
    with mock.patch.object(
        type(platforms.current_platform), "is_device_capability_family", lambda self, family, *a, **kw: False
    ):
        VllmConfig._set_cudagraph_sizes(this)
    if k:
        CompilationConfig.adjust_cudagraph_sizes_for_spec_decode(cc, 1 + k)
    return list(cc.cudagraph_capture_sizes or []), cc.max_cudagraph_capture_size or 0


class _Recorded(Exception):
    """Raised by the recording all-reduce once a rank's column is kept."""


def v2_padded_tokens(configs: int = 48, seed: int = 0) -> dict:
    """Fact record for the V2 runner's padded token count, from running vLLM's ``CudaGraphManager``
    (``_init_candidates``, ``dispatch``) and ``dispatch_cg_and_sync_dp`` (DP 1 and 2, DBO on and
    off) over ``configs`` configurations and every token count up to the budget (module docstring).
    Bounded: ``checked`` is False (a test, not a proof); ``counterexample`` holds the first
    configuration whose padded count exceeds ``max(num_tokens, max_cudagraph_capture_size)``."""
    import random

    import torch
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu import cudagraph_utils as cgu
    from vllm.v1.worker.gpu import dp_utils as v2dp

    rng = random.Random(seed)
    runs = 0
    bad = None
    modes = [
        CUDAGraphMode.PIECEWISE,
        CUDAGraphMode.FULL,
        CUDAGraphMode.FULL_DECODE_ONLY,
        CUDAGraphMode.FULL_AND_PIECEWISE,
    ]
    sizes_bad = []
    for i in range(configs):
        mnbt = rng.choice([8, 16, 32, 64, 100, 128, 257, 512])
        max_num_seqs = rng.randint(1, mnbt)
        q = rng.choice([1, 2, 3, 4])
        user = sorted(rng.sample(range(1, 2 * mnbt), rng.randint(1, 5))) if rng.getrandbits(1) else None
        try:
            sizes, max_cap = vllm_capture_sizes(max_num_seqs, q - 1, mnbt, user)
        except ValueError:
            continue  # vLLM refuses the configuration (no capture size survives the rounding)
        if sizes and (max(sizes) > mnbt or max_cap > mnbt or max(sizes) != max_cap):
            sizes_bad.append(dict(mnbt=mnbt, max_num_seqs=max_num_seqs, k=q - 1, user=user, sizes=sizes))
        if not sizes:
            continue
        mode = modes[i % len(modes)]
        varlen = bool(rng.getrandbits(1))
        dbo = bool(rng.getrandbits(1))
        parallel = SimpleNamespace(
            use_ubatching=dbo,
            num_ubatches=2,
            dbo_decode_token_threshold=rng.randint(1, mnbt),
            dbo_prefill_token_threshold=rng.randint(1, mnbt),
            data_parallel_size=2,
        )
        m = cgu.CudaGraphManager.__new__(cgu.CudaGraphManager)
        m.vllm_config = SimpleNamespace(
            speculative_config=None,
            parallel_config=parallel,
            cache_config=SimpleNamespace(use_kda_recoverssm=False),
            num_speculative_tokens=q - 1,
        )
        m.compilation_config = SimpleNamespace(cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=max_cap)
        m.max_num_reqs = max_num_seqs
        m.cudagraph_mode = mode
        m.decode_query_len = q
        m.varlen_decode = varlen
        m.ubatch_runner = object() if dbo else None
        m.lora_capture_cases = [0]
        m._lora_dispatch_map, m._max_lora_case = {}, 0
        m.graphs = {}
        m._candidates, m._capture_descs = {}, {}
        m._init_candidates()
        m._graphs_captured = True
        for n in range(1, mnbt + 1):
            for other in sorted({1, n, mnbt, rng.randint(1, mnbt)}):
                counts = (n, other)

                def call(rank, reduce, counts=counts):
                    mine = counts[rank]
                    uniform = q if mine % q == 0 and mine // q <= max_num_seqs else None
                    saved = v2dp.get_dp_group, v2dp.should_skip_dp_coordination
                    v2dp.get_dp_group = lambda: SimpleNamespace(cpu_all_reduce_=reduce)
                    v2dp.should_skip_dp_coordination = lambda: False
                    try:
                        return v2dp.dispatch_cg_and_sync_dp(
                            m,
                            min(mine, max_num_seqs),
                            mine,
                            uniform,
                            2,
                            rank,
                            parallel_config=parallel,
                            allow_ubatching=dbo,
                            uniform_decode=uniform == q,
                        )[0]
                    finally:
                        v2dp.get_dp_group, v2dp.should_skip_dp_coordination = saved

                # two DP ranks: each writes its own column; vLLM's cpu_all_reduce_ sums them, so the
                # reduced tensor holds both columns (first each rank's column is recorded, then
                # both ranks run on the reduced tensor)
                cols: dict = {}

                def record(t, rank, cols=cols):
                    cols[rank] = t.clone()
                    raise _Recorded

                for rank in (0, 1):
                    try:
                        call(rank, lambda t, r=rank: record(t, r))
                    except _Recorded:
                        pass

                def fill(t, cols=cols):
                    t.copy_(cols.get(0, torch.zeros_like(t)) + cols.get(1, torch.zeros_like(t)))

                for rank in (0, 1):
                    desc = call(rank, fill)
                    runs += 1
                    padded = max(counts[rank], desc.num_tokens)
                    if padded > max(n, other, max_cap) and bad is None:
                        bad = dict(
                            mnbt=mnbt, sizes=sizes, mode=mode.name, rank=rank, counts=counts, padded=desc.num_tokens
                        )
    return {
        "fact": "V2 padded tokens <= max(num_tokens, num_tokens of any DP rank, max_cudagraph_capture_size)",
        "checked": False,
        "counterexample": bad,
        "paths": {
            "checked (executed, bounded)": [
                f"vllm/v1/worker/gpu/cudagraph_utils.py _init_candidates, dispatch; vllm/v1/worker/gpu/dp_utils.py "
                f"dispatch_cg_and_sync_dp (DP 2, DBO on/off): {configs} configurations, {runs} dispatches"
                + (f"; exceeded: {bad}" if bad else ", none exceeded"),
                "vllm/config/vllm.py _set_cudagraph_sizes, vllm/config/compilation.py post_init_cudagraph_sizes, "
                "adjust_cudagraph_sizes_for_spec_decode (the capture sizes of those configurations, run): "
                + (
                    f"a size above max_num_batched_tokens: {sizes_bad[0]}"
                    if sizes_bad
                    else "every size <= max_num_batched_tokens"
                ),
            ],
            "not checked": [
                "vllm/v1/worker/gpu/model_runner.py:1396 num_tokens_after_padding (the bound holds on the bounded "
                "domain only: not a proof)"
            ],
        },
    }


#: The family assumption of ``spec/_families.py`` these facts discharge where they are checked.
TOKENS_ASSUMPTION = "padded tokens <= max_num_batched_tokens (CUDA-graph and DP padding, dummy runs)"
#: The assumption of the drafter's first-pass buffers (``spec/vllm_0_33_buffers.py``, ``spec_slots``).
SLOTS_ASSUMPTION = "scheduled tokens + draft slots of every request <= max_num_batched_tokens (scheduler budget)"


def _path(site: str, sets: str, how: str, result: str, why: str = "") -> dict:
    """One path of a fact (:func:`capproof.facts.path_record`)."""
    from ...facts import path_record

    return path_record(site, sets, how, result, why)


def _paths_of(record: dict, sets: str) -> list[dict]:
    """The path records of one of this module's (or :mod:`.demand_requests`') fact records."""
    out = []
    for how, items in record["paths"].items():
        kind = "executed" if "executed" in how and "ast" not in how else "ast"
        if how.startswith("checked (executed, bounded)"):
            result, why = "not checked", "run on a bounded domain only (a test, not a proof)"
        elif how.startswith("checked"):
            result, why = "checked", how
        else:
            result, why = "not checked", "not checked"
        for item in items:
            site, _, rest = item.partition(" ")
            out.append(_path(site, sets, kind, result, f"{why}: {rest}"[:400]))
    return out


def token_facts(root: str) -> list[dict]:
    """The engine facts (one per scope) behind the family assumption :data:`TOKENS_ASSUMPTION`,
    each with every path that sets the token count its scope's buffers are sliced by:

    - ``vllm/v1/worker/gpu_model_runner.py``: the V1 runner's step (scheduler budget, capture sizes,
      ``_determine_batch_execution_and_padding`` executed, dummy-run asserts, microbatching);
    - ``vllm/v1/spec_decode/``: the V1 drafter's passes (its input counts and padding) on top of
      the runner's;
    - ``vllm/v1/worker/gpu/``: the V2 runner's padding (:mod:`.fact_tokens_v2`: capture sizes,
      candidates, dispatch and DP sync, its unpadded counts, the speculators' dispatches);
    - ``vllm/v1/attention/``, ``vllm/model_executor/``: every runner and drafter that builds their
      metadata or runs their layers (all of the above).

    Needs vLLM importable (:func:`.wheels.activate`). Raises RuntimeError when a run fails."""
    from .demand_requests import token_extent

    _, runner_records, _ = token_extent(root)
    sets = "the step's token count (num_tokens_padded)"
    budget_paths = _paths_of(runner_records[0], "the scheduler's budget: scheduled tokens plus reserved drafting slots")
    runner_paths = [p for r in runner_records for p in _paths_of(r, sets)]
    runner_paths.append(
        _path(
            f"{RUNNER}:3684-3785",
            sets,
            "executed",
            "checked",
            "GPUModelRunner._determine_batch_execution_and_padding run on symbolic sizes on every path "
            "(demand_requests.padded_tokens): at most the scheduled count, another DP rank's or a capture size",
        )
    )
    runner_paths += _paths_of(ubatch_padding(root), "microbatch token slices")
    extent, notes = drafter_padded_tokens()
    from .fact_tokens_dflash import DFLASH_ADMISSION, DFLASH_V1, DFLASH_V2, query_paths

    dflash_paths, dflash_cex = query_paths(root, vllm_capture_sizes)
    v1_dflash = [p for p in dflash_paths if p["site"].startswith(DFLASH_V1)]
    v2_dflash = [p for p in dflash_paths if not p["site"].startswith(DFLASH_V1)]
    # DFlash's own first pass (its query rows) is judged by :mod:`.fact_tokens_dflash`
    drafter_inputs = [
        p
        for p in _paths_of(drafter_input_tokens(root), "the drafter's token count before padding")
        if not (p["site"] == DFLASH_V1 and p["result"] != "checked")
    ] + v1_dflash
    drafter_paths = list(drafter_inputs)
    drafter_paths.append(
        _path(
            f"{DRAFTER}:1773-1815",
            "the drafter's padded token count",
            "executed",
            "checked",
            f"_determine_batch_execution_and_padding on every path (modes, CUDA graphs on/off, DP on/off): {extent}; "
            + "; ".join(notes),
        )
    )
    from .fact_tokens_v2 import v2_token_paths

    v2_paths = [p for p in budget_paths + v2_token_paths(root) if not p["site"].startswith(DFLASH_V2)] + v2_dflash
    counterexamples: list[dict] = list(dflash_cex)

    from ...facts import fact_record

    def fact(what, scope, paths, cex=()):
        return fact_record(what, [TOKENS_ASSUMPTION], scope, paths, cex)

    return [
        model_len_fact(root),
        fact(
            "V1 runner: a step's padded token count <= max_num_batched_tokens",
            [RUNNER],
            runner_paths,
        ),
        fact(
            "V1 drafter: every drafting pass's padded token count <= max_num_batched_tokens",
            ["vllm/v1/spec_decode/"],
            runner_paths + drafter_paths,
        ),
        fact_record(
            "V1 drafter first pass: the target's scheduled tokens plus each request's drafting slots "
            "(net_num_new_slots_per_request) <= max_num_batched_tokens",
            [SLOTS_ASSUMPTION],
            ["vllm/v1/spec_decode/"],
            budget_paths + drafter_inputs,
        ),
        fact_record(
            "V1 DFlash first pass: num_reqs <= max_num_batched_tokens // (1 + K) (the admission cap)",
            [DFLASH_ADMISSION],
            ["vllm/v1/spec_decode/"],
            [p for p in dflash_paths if p["site"].startswith((DFLASH_V1, "vllm/config/"))],
        ),
        fact(
            "V2 runner: a step's padded token count <= max_num_batched_tokens",
            ["vllm/v1/worker/gpu/"],
            v2_paths,
            counterexamples,
        ),
        fact(
            "attention metadata and model layers: the token count of any runner or drafter <= max_num_batched_tokens",
            ["vllm/v1/attention/", "vllm/model_executor/"],
            runner_paths + drafter_paths + v2_paths,
            counterexamples,
        ),
    ]


#: The assumption of the per-request token columns (``spec/_families.py`` ``TOKEN_COLUMNS``).
MODEL_LEN_ASSUMPTION = (
    "a request's tokens end within max_model_len (scheduler caps num_new_tokens; sampled tokens asserted)"
)
INPUT_BATCH = "vllm/v1/worker/gpu_input_batch.py"
INPUT_PROCESSOR = "vllm/v1/engine/input_processor.py"


def model_len_fact(root: str) -> dict:
    """The engine fact behind :data:`MODEL_LEN_ASSUMPTION` for the V1 runner and input batch: every
    site that writes a request's tokens into ``token_ids_cpu``/``is_token_ids`` (columns
    ``max_model_len``), with the end it writes to. AST only:

    - the prompt (``gpu_input_batch.py``, ``[:num_prompt_tokens]``): checked when
      ``InputProcessor._validate_prompt_len`` raises for a decoder prompt longer than
      ``model_config.max_model_len``;
    - sampled tokens (``gpu_model_runner.py``): checked when an ``assert end_idx <= self.max_model_len``
      precedes the write in the same function;
    - a resumed request's output tokens, draft tokens, the async-PP append, and the row moves of
      ``swap_states``/``condense``: **not checked** (their ends rest on the scheduler's per-token stop
      check and its cap of ``num_new_tokens``, which are not read here).

    Raises nothing on a missing site: the path is then recorded not checked."""
    from ...facts import fact_record

    paths = []
    sets = "the end column of a request's tokens in token_ids_cpu / is_token_ids"
    fn = function_def(root, INPUT_PROCESSOR, "_validate_prompt_len", "InputProcessor")
    ok = fn is not None and any(
        isinstance(n, ast.If)
        and source_text(n.test) == "prompt_len>max_prompt_len"
        and any(isinstance(b, ast.Raise) for b in ast.walk(n))
        for n in ast.walk(fn)
    )
    ok = ok and any(
        isinstance(n, ast.Assign)
        and source_text(n.targets[0]) == "max_prompt_len"
        and "model_config.max_model_len" in source_text(n.value)
        for n in ast.walk(fn)
    )
    prompt_lines = [
        n.lineno
        for n in ast.walk(_tree(root, INPUT_BATCH))
        if isinstance(n, ast.Assign)
        and source_text(n.targets[0]).startswith("self.token_ids_cpu[req_index,:num_prompt_tokens]")
    ]
    paths.append(
        _path(
            f"{INPUT_BATCH}:{','.join(map(str, prompt_lines)) or '?'}",
            sets,
            "ast",
            "checked" if ok and prompt_lines else "not checked",
            f"prompt tokens [:num_prompt_tokens]; {INPUT_PROCESSOR} _validate_prompt_len raises when a decoder "
            "prompt is longer than model_config.max_model_len" + ("" if ok else " (not found)"),
        )
    )
    runner = _tree(root, RUNNER)
    asserted = []
    for f in ast.walk(runner):
        if not isinstance(f, ast.FunctionDef):
            continue
        asserts = [
            a.lineno
            for a in ast.walk(f)
            if isinstance(a, ast.Assert) and source_text(a.test) == "end_idx<=self.max_model_len"
        ]
        writes = [
            a.lineno
            for a in ast.walk(f)
            if isinstance(a, ast.Assign)
            and source_text(a.targets[0]) == "self.input_batch.token_ids_cpu[req_idx,start_idx:end_idx]"
        ]
        if asserts and writes and min(asserts) < min(writes):
            asserted += writes
    paths.append(
        _path(
            f"{RUNNER}:{','.join(map(str, asserted)) or '?'}",
            sets,
            "ast",
            "checked" if asserted else "not checked",
            "sampled tokens [start_idx:end_idx] after assert end_idx <= self.max_model_len (vLLM runs without -O)",
        )
    )
    batch = _tree(root, INPUT_BATCH)

    def lines(tree, target: str) -> str:
        found = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and source_text(n.targets[0]).replace(" ", "") == target
        ]
        return ",".join(map(str, found)) or "?"

    for file, tree, target, what in (
        (INPUT_BATCH, batch, "self.token_ids_cpu[req_index,start_idx:end_idx]", "a resumed request's output tokens"),
        (INPUT_BATCH, batch, "self.token_ids_cpu[req_index,start_index:end_token_index]", "draft tokens"),
        (
            RUNNER,
            runner,
            "self.input_batch.token_ids_cpu[req_index,start_token_index:end_token_index]",
            "the async-PP append",
        ),
        (INPUT_BATCH, batch, "self.token_ids_cpu[i1,:max_active_token_count]", "swap_states' row move"),
        (INPUT_BATCH, batch, "self.token_ids_cpu[empty_index,:num_tokens]", "condense's row move"),
    ):
        paths.append(
            _path(
                f"{file}:{lines(tree, target)}",
                sets,
                "ast",
                "not checked",
                f"{what}: rests on the scheduler's cap of num_new_tokens (scheduler.py:852-857) and its per-token "
                "stop check (core/sched/utils.py check_stop), not read here",
            )
        )
    return fact_record(
        "V1 input batch: a request's token columns end within max_model_len",
        [MODEL_LEN_ASSUMPTION],
        [INPUT_BATCH, RUNNER],
        paths,
    )
