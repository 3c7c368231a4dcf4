"""The DFlash/DSpark query pass's token count ``num_reqs * num_query_per_req <= max_num_batched_tokens``,
checked on every path of vLLM 0.33.0 that sets ``num_reqs`` for it.

DFlash and DSpark draft all their tokens in one forward pass of ``num_query_per_req`` query rows per
request (``1 + K`` for DFlash and fill-in DSpark, ``K`` for anchor-sampling DSpark). The V2
speculator (``vllm/v1/worker/gpu/spec_decode/dflash/speculator.py:463-467``: ``num_query_tokens =
num_reqs * self.num_query_per_req`` with ``num_reqs = input_batch.num_reqs``, bounded by
``dp_sync_state.num_reqs`` on a DP dummy run) writes those rows into the runner's
``[max_num_batched_tokens]`` input buffers (``_prepare_dflash_inputs_kernel`` stores at
``req_idx * num_query_per_req + j``, masked by ``j < num_query_per_req`` only) and dispatches that
count (``:565``); the V1 proposer's own first pass (``vllm/v1/spec_decode/dflash.py:124-127``)
sizes its query rows the same way. vLLM caps admission for these methods: ``VllmConfig``
lowers ``scheduler_config.max_num_active_seqs`` to ``max_num_batched_tokens //
num_lookahead_tokens`` (``config/vllm.py:2378-2396``) and the scheduler admits into RUNNING only
below ``max_num_active_reqs`` (``v1/core/sched/scheduler.py:134-138,1072-1074``). The paths:

- **lookahead** (:func:`lookahead_path`, executed and AST): vLLM's ``VllmConfig.num_lookahead_tokens``
  run on stand-in configurations (DFlash; DSpark with and without ``sample_from_anchor``; K
  1..32) is at least the speculator's ``num_query_per_req`` (read from its ``__init__``).
- **admission** (:func:`admission_path`, AST): the override above; the one
  ``self.running.append`` of the scheduler sits in the ``while`` loop whose guard breaks at
  ``len(self.running) + ... >= self.max_num_active_reqs``; ``self.running`` is otherwise only
  filtered; a step's request count is ``len(req_ids)`` of the scheduled requests (V2
  ``model_runner.py`` ``prepare_inputs``) or the unpadded count the V1 runner hands its drafter
  (``gpu_model_runner.py`` ``.unpadded(num_tokens, num_reqs)``).
- **drafter capture** (:func:`capture_path`, executed on symbolic sizes): the DFlash manager
  (``FULL_DECODE_ONLY`` or ``NONE``, no varlen decode, ``decode_query_len = num_query_per_req``)
  makes only uniform-decode descriptors, each ``num_reqs * num_query_per_req <=
  max_cudagraph_capture_size`` (Z3 unsat on every path of ``_init_candidates``).
- **the target's dummy runs** (:func:`dummy_run_counterexample`, executed, concrete): vLLM's own
  ``GPUModelRunner._dummy_run`` (up to ``execute_model``), ``gather_batch_req_state`` and
  ``dispatch_cg_and_sync_dp`` over vLLM's ``CudaGraphManager`` with its ``_init_candidates``
  (capture sizes from vLLM's ``_set_cudagraph_sizes``), then ``dummy_num_reqs =
  batch_desc.num_reqs or num_reqs`` (``model_runner.py:1887``). After capture a dummy run that
  is not a uniform decode (the adaptive-verification profiling runs, ``model_runner.py:1141-1145``)
  dispatches to a FULL descriptor whose ``num_reqs = min(num_tokens, max_num_reqs)``
  (``cudagraph_utils.py:310-318`` varlen decode, ``:360-362`` FULL mixed): the dummy input batch
  then holds more requests than the admission cap, and without DP (``dp_sync_state`` is None)
  the drafter's query count exceeds ``max_num_batched_tokens``. A counterexample (finding 11 in
  ``docs/findings.md``).

Needs vLLM importable (:func:`.wheels.activate`) for the executed paths.
"""

from __future__ import annotations

import ast
import os
from contextlib import nullcontext
from types import SimpleNamespace

from ...symbolic import SymInt
from .demand import run_paths, source_text

__all__ = [
    "DFLASH_V2",
    "DFLASH_V1",
    "QUERY_FACT",
    "DFLASH_ADMISSION",
    "lookahead_path",
    "admission_path",
    "capture_path",
    "dummy_run_counterexample",
    "query_paths",
]

DFLASH_V2 = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
DSPARK_V2 = "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py"
DFLASH_V1 = "vllm/v1/spec_decode/dflash.py"
DFLASH_CG = "vllm/v1/worker/gpu/spec_decode/dflash/cudagraph.py"
VLLM_CONFIG = "vllm/config/vllm.py"
SCHEDULER = "vllm/v1/core/sched/scheduler.py"
V2_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
V1_RUNNER = "vllm/v1/worker/gpu_model_runner.py"
CUDAGRAPH_UTILS = "vllm/v1/worker/gpu/cudagraph_utils.py"
#: The assumption of ``spec/vllm_0_33_buffers.py``'s DFlash query-row family (V1 proposer).
DFLASH_ADMISSION = "num_reqs <= max_num_active_seqs = max_num_batched_tokens // (1 + K) (DFlash override; admission)"
QUERY_FACT = "a DFlash/DSpark query pass's token count num_reqs * num_query_per_req <= max_num_batched_tokens"
SETS = "the DFlash/DSpark query pass's request count (num_reqs)"


def _path(site: str, how: str, result: str, why: str) -> dict:
    from ...facts import path_record

    return path_record(site, SETS, how, result, why[:400])


def _tree(root: str, rel: str):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return ast.parse(f.read())


def _assigns(tree, target: str) -> list[tuple[int, str]]:
    """``(line, value source)`` of every ``<target> = value`` in ``tree``."""
    return [
        (n.lineno, source_text(n.value))
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and any(source_text(t) == target for t in n.targets)
    ]


def speculator_query_rows(root: str) -> dict[str, list[str]]:
    """The ``self.num_query_per_req = ...`` values of the DFlash and DSpark V2 speculators (AST):
    ``{"dflash": [...], "dspark": [...]}``, sources as written."""
    return {
        "dflash": [v for _, v in _assigns(_tree(root, DFLASH_V2), "self.num_query_per_req")],
        "dspark": [v for _, v in _assigns(_tree(root, DSPARK_V2), "self.num_query_per_req")],
    }


def query_rows(method: str, k: int, sample_from_anchor: bool, sources: list[str]) -> int:
    """The largest ``num_query_per_req`` of the speculator sources ``sources`` for ``K = k``
    (``num_speculative_steps`` is ``num_speculative_tokens``, ``spec_decode/speculator.py:111``).
    Raises ValueError on a source that is not ``[1 + ]self.num_speculative_steps``."""
    values = []
    for src in sources:
        if src == "self.num_speculative_steps":
            values.append(k)
        elif src in ("1+self.num_speculative_steps", "self.num_speculative_steps+1"):
            values.append(k + 1)
        else:
            raise ValueError(f"{method}: num_query_per_req = {src} not read")
    if method == "dspark" and len(values) == 2:
        # ``if self.sample_from_anchor: K else: 1 + K`` (dspark/speculator.py:52-55)
        return values[0] if sample_from_anchor else values[1]
    return max(values)


def lookahead_path(root: str) -> dict:
    """Path record: vLLM's ``VllmConfig.num_lookahead_tokens`` (executed on stand-ins) is at least
    the speculator's ``num_query_per_req`` (AST) for DFlash, DSpark with and without
    ``sample_from_anchor``, K = 1..32."""
    from vllm.config.speculative import SpeculativeConfig
    from vllm.config.vllm import VllmConfig

    rows = speculator_query_rows(root)
    bad, tried = [], 0
    for method in ("dflash", "dspark"):
        for anchor in (True, False):
            for k in range(1, 33):
                spec = SimpleNamespace(
                    method=method,
                    draft_model_config=SimpleNamespace(hf_config=SimpleNamespace(sample_from_anchor=anchor)),
                )
                for name in ("use_dflash", "use_dspark", "use_eagle", "uses_draft_model"):
                    fn = getattr(SpeculativeConfig, name)
                    setattr(spec, name, lambda fn=fn, spec=spec: fn(spec))
                me = SimpleNamespace(speculative_config=spec, num_speculative_tokens=k)
                try:
                    lookahead = VllmConfig.num_lookahead_tokens.fget(me)
                    q = query_rows(method, k, anchor, rows[method])
                except (ValueError, AttributeError) as exc:
                    return _path(VLLM_CONFIG, "executed", "not checked", f"num_lookahead_tokens not run: {exc}")
                tried += 1
                if q > lookahead:
                    bad.append(f"{method} anchor={anchor} K={k}: num_query_per_req {q} > lookahead {lookahead}")
    return _path(
        f"{VLLM_CONFIG}:626-652",
        "executed",
        "not checked" if bad else "checked",
        (f"fails: {bad[0]}" if bad else f"{tried} cases")
        + f": VllmConfig.num_lookahead_tokens >= num_query_per_req ({DFLASH_V2}: {rows['dflash']}, "
        f"{DSPARK_V2}: {rows['dspark']})",
    )


def _override_lines(root: str) -> list[int]:
    """Lines of ``VllmConfig`` that lower ``max_num_active_seqs`` to ``max_num_batched_tokens //
    self.num_lookahead_tokens`` under ``use_dflash() or use_dspark()`` (AST), else ``[]``."""
    tree = _tree(root, VLLM_CONFIG)
    for n in ast.walk(tree):
        if not (
            isinstance(n, ast.If) and "use_dflash()" in source_text(n.test) and "use_dspark()" in source_text(n.test)
        ):
            continue
        draft = [a for a in ast.walk(n) if isinstance(a, ast.Assign) and source_text(a.targets[0]) == "max_draft_seqs"]
        sets = [
            a
            for a in ast.walk(n)
            if isinstance(a, ast.Assign)
            and source_text(a.targets[0]) == "self.scheduler_config.max_num_active_seqs"
            and source_text(a.value) == "max_draft_seqs"
        ]
        guards = [
            i
            for i in ast.walk(n)
            if isinstance(i, ast.If) and source_text(i.test) == "max_draft_seqs<max_num_active_seqs" and sets
        ]
        if (
            draft
            and source_text(draft[0].value) == "max_num_batched_tokens//self.num_lookahead_tokens"
            and sets
            and guards
        ):
            return [n.lineno, draft[0].lineno, sets[0].lineno]
    return []


def _admission_lines(root: str) -> tuple[list[int], list[str]]:
    """``(lines, problems)``: the scheduler's one ``self.running.append`` inside a ``while`` loop
    whose body breaks on ``num_running >= self.max_num_active_reqs`` before it, with ``num_running
    = len(self.running) + ...``; every other write of ``self.running`` a ``remove_all`` filter; and
    ``max_num_active_reqs`` set only from ``max_num_active_seqs`` (or ``max_num_seqs`` when unset)."""
    tree = _tree(root, SCHEDULER)
    problems, lines = [], []
    appends = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and source_text(n.func) in ("self.running.append", "self.running.extend", "self.running.insert")
    ]
    loops = [w for w in ast.walk(tree) if isinstance(w, ast.While)]
    for a in appends:
        owner = [w for w in loops if any(x is a for x in ast.walk(w))]
        if not owner:
            problems.append(f"{SCHEDULER}:{a.lineno} self.running grows outside a loop")
            continue
        loop = owner[-1]
        guard = [
            (i.lineno, c.lineno)
            for i in loop.body
            if isinstance(i, ast.If)
            and source_text(i.test) == "num_running>=self.max_num_active_reqs"
            and any(isinstance(b, ast.Break) for b in i.body)
            for c in loop.body
            if isinstance(c, ast.Assign)
            and source_text(c.targets[0]) == "num_running"
            and source_text(c.value).startswith("len(self.running)+")
            and c.lineno < i.lineno
        ]
        if not guard or a.lineno < guard[0][0]:
            problems.append(f"{SCHEDULER}:{a.lineno} self.running grows without the admission guard before it")
        else:
            lines += [guard[0][1], guard[0][0], a.lineno]
    if len(appends) != 1:
        problems.append(f"{SCHEDULER}: {len(appends)} sites grow self.running")
    for ln, v in _assigns(tree, "self.running"):
        if not v.startswith("remove_all(self.running,") and v != "[]":
            problems.append(f"{SCHEDULER}:{ln} self.running = {v[:60]}")
    cap = _assigns(tree, "self.max_num_active_reqs")
    if len(cap) != 1 or "self.scheduler_config.max_num_active_seqs" not in cap[0][1]:
        problems.append(f"{SCHEDULER}: max_num_active_reqs set as {cap}")
    else:
        lines.append(cap[0][0])
    return lines, problems


def admission_path(root: str) -> list[dict]:
    """Path records of a real step (AST, module docstring): the admission cap, and the request count
    each runner hands the drafter (V2: ``num_reqs = len(req_ids)`` of ``prepare_inputs``; V1: the
    unpadded metadata)."""
    over = _override_lines(root)
    adm, problems = _admission_lines(root)
    if not over:
        problems.append(f"{VLLM_CONFIG}: the DFlash/DSpark max_num_active_seqs override not found")
    v2 = [ln for ln, v in _assigns(_tree(root, V2_RUNNER), "num_reqs") if v == "len(req_ids)"]
    v1_tree = _tree(root, V1_RUNNER)
    v1 = [
        ln
        for ln, v in _assigns(v1_tree, "spec_decode_common_attn_metadata")
        if v == "spec_decode_common_attn_metadata.unpadded(num_tokens,num_reqs)"
    ]
    v1_rows = [
        ln
        for ln, v in _assigns(_tree(root, DFLASH_V1), "num_query_per_req")
        if v in ("1+self.num_speculative_tokens", "self.num_speculative_tokens+1")
    ]
    if not v1_rows:
        v1 = []
    cap = (
        f"{VLLM_CONFIG}:{','.join(map(str, over))} (max_num_active_seqs <= max_num_batched_tokens // "
        f"num_lookahead_tokens) and {SCHEDULER}:{','.join(map(str, adm))} (admission into RUNNING stops at "
        "max_num_active_reqs)"
    )
    out = []
    ok = not problems
    out.append(
        _path(
            f"{DFLASH_V2}:463",
            "ast",
            "checked" if ok and v2 else "not checked",
            (f"{problems[0]}; " if problems else "")
            + f"a real V2 step: input_batch.num_reqs = len(req_ids) ({V2_RUNNER}:{','.join(map(str, v2)) or '?'}), "
            f"the scheduled requests, at most the running ones; {cap}",
        )
    )
    out.append(
        _path(
            f"{DFLASH_V1}:124-127",
            "ast",
            "checked" if ok and v1 else "not checked",
            (f"{problems[0]}; " if problems else "")
            + f"DFlashProposer.set_inputs_first_pass: num_query_per_req = 1 + K ({DFLASH_V1}:{','.join(map(str, v1_rows)) or '?'}, "
            "DFlash's num_lookahead_tokens), batch_size = cad.batch_size(), the unpadded step count "
            f"({V1_RUNNER}:{','.join(map(str, v1)) or '?'}: .unpadded(num_tokens, num_reqs)); only propose calls it, "
            f"the proposer's dummy_run takes min(num_tokens, max_query_tokens); {cap}",
        )
    )
    return out


def capture_path(root: str) -> dict:
    """Path record: the DFlash manager's descriptors (``FULL_DECODE_ONLY``, no varlen decode,
    ``decode_query_len = num_query_per_req``) have ``num_reqs * num_query_per_req <=
    max_cudagraph_capture_size``: vLLM's ``_init_candidates`` run on symbolic sizes on every path
    (Z3). The manager's construction is read in the source."""
    import z3
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu import cudagraph_utils as cgu

    from .fact_tokens_v2 import capture_descriptors

    tree = _tree(root, DFLASH_V2)
    made = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and source_text(n.func) == "DFlashCudaGraphManager"
        and any(k.arg == "decode_query_len" and source_text(k.value) == "self.num_query_per_req" for k in n.keywords)
        and not any(k.arg == "varlen_decode" for k in n.keywords)
    ]
    init = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "init_cudagraph_manager"]
    modes = {
        source_text(n.value)
        for f in init
        for n in ast.walk(f)
        if isinstance(n, ast.Assign) and source_text(n.targets[0]) == "cudagraph_mode"
    }
    cg = _tree(root, DFLASH_CG)
    overrides = [
        f.name
        for c in ast.walk(cg)
        if isinstance(c, ast.ClassDef) and c.name == "DFlashCudaGraphManager"
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name in ("_init_candidates", "dispatch", "__init__")
    ]
    if (
        not made
        or len(init) != 1
        or not modes
        or not modes <= {"CUDAGraphMode.FULL_DECODE_ONLY", "CUDAGraphMode.NONE"}
        or overrides
    ):
        return _path(
            DFLASH_CG,
            "ast",
            "not checked",
            f"the DFlash manager's construction not read (made {len(made)}, modes {sorted(modes)}, overrides {overrides})",
        )
    names = ("capture_size", "max_cudagraph_capture_size", "max_num_reqs", "q")
    v = {n: SymInt.var(n) for n in names}
    assume = [z3.Int(n) >= 1 for n in names]

    def run():
        m = cgu.CudaGraphManager.__new__(cgu.CudaGraphManager)
        m.vllm_config = SimpleNamespace(
            speculative_config=None,
            parallel_config=SimpleNamespace(
                num_ubatches=1, use_ubatching=False, dbo_decode_token_threshold=0, dbo_prefill_token_threshold=0
            ),
            cache_config=SimpleNamespace(use_kda_recoverssm=False),
            num_speculative_tokens=0,
        )
        m.compilation_config = SimpleNamespace(
            cudagraph_capture_sizes=[v["capture_size"]], max_cudagraph_capture_size=v["max_cudagraph_capture_size"]
        )
        m.max_num_reqs = v["max_num_reqs"]
        m.cudagraph_mode = CUDAGraphMode.FULL_DECODE_ONLY
        m.decode_query_len = v["q"]
        m.varlen_decode = False
        m.ubatch_runner = None
        m.lora_capture_cases = [0]
        m._candidates, m._capture_descs = {}, {}

        worst = 0
        for d in capture_descriptors(cgu, m):
            if d.num_reqs is None:
                return 1 << 40  # a descriptor without a request count: not bounded here
            rows = d.num_reqs * v["q"]
            worst = rows if rows > worst else worst
        return worst

    term, notes = run_paths(run, assume, budget=4096)
    s = z3.Solver()
    s.set("rlimit", 500_000_000)  # deterministic: never a wall-clock timeout (load must not change the answer)
    s.add(*assume, term > z3.Int("max_cudagraph_capture_size"))
    verdict = s.check()
    return _path(
        f"{DFLASH_CG}:79-120",
        "executed",
        "checked" if verdict == z3.unsat else "not checked",
        "the DFlash manager (FULL_DECODE_ONLY or NONE, decode_query_len = num_query_per_req, no varlen decode, "
        f"{DFLASH_V2}:143-167): _init_candidates on a symbolic capture size, every path: num_reqs * "
        f"num_query_per_req <= max_cudagraph_capture_size ({verdict}); capture's num_reqs is desc.num_reqs",
    )


class _Stop(Exception):
    """Raised by the stand-in ``execute_model``: the dummy scheduler output is built."""


def dummy_query_rows(
    sizes: list[int], mcs: int, max_num_seqs: int, mnbt: int, k: int, q: int, mode, varlen: bool
) -> dict | None:
    """Run the target's post-capture dummy runs (one per capture size, not uniform decode, no DP)
    through vLLM's code (module docstring) and return the first whose drafter query count
    ``dummy_num_reqs * q`` exceeds ``mnbt``: ``{"capture_size", "num_reqs", "num_tokens",
    "desc_num_reqs", "query_tokens"}``; None when none does. ``k``: draft tokens (the runner's
    ``decode_query_len`` is ``k + 1``), ``q``: the speculator's ``num_query_per_req``; ``sizes``,
    ``mcs``: the capture sizes and their largest, as vLLM computes them for the deployment
    (:func:`.fact_tokens.vllm_capture_sizes`)."""
    from vllm.v1.worker.gpu import cudagraph_utils as cgu
    from vllm.v1.worker.gpu import dp_utils
    from vllm.v1.worker.gpu import model_runner as mr

    m = cgu.CudaGraphManager.__new__(cgu.CudaGraphManager)
    m.vllm_config = SimpleNamespace(
        speculative_config=None,
        parallel_config=SimpleNamespace(
            num_ubatches=1,
            use_ubatching=False,
            dbo_decode_token_threshold=0,
            dbo_prefill_token_threshold=0,
            data_parallel_size=1,
        ),
        cache_config=SimpleNamespace(use_kda_recoverssm=False),
        num_speculative_tokens=k,
    )
    m.compilation_config = SimpleNamespace(cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=mcs)
    m.max_num_reqs, m.cudagraph_mode, m.decode_query_len = max_num_seqs, mode, k + 1
    m.varlen_decode, m.ubatch_runner, m.lora_capture_cases = varlen, None, [0]
    m._candidates, m._capture_descs = {}, {}
    m._init_candidates()
    m._graphs_captured = True  # the profiling runs follow capture (model_runner.py:1113-1145)
    m._resolve_effective_loras = lambda n: n  # no LoRA
    for s in sizes:
        seen = {}

        def execute_model(so, seen=seen, **kw):
            seen["so"] = so
            raise _Stop

        me = SimpleNamespace(
            max_num_reqs=max_num_seqs,
            decode_query_len=k + 1,
            max_num_tokens=mnbt,
            speculator=SimpleNamespace(num_query_per_req=q, num_extra_query_per_req=0),
            kv_connector=SimpleNamespace(set_disabled=lambda b: None),
            is_first_pp_rank=True,
            lora_config=None,
            maybe_dummy_run_with_lora=lambda *a, **kw: nullcontext(),
            execute_model=execute_model,
        )
        try:
            mr.GPUModelRunner._dummy_run(me, s, context_len=0)
        except _Stop:
            pass
        so = seen["so"]
        num_reqs, num_toks = len(so.num_scheduled_tokens), so.total_num_scheduled_tokens
        _, uniform = mr.GPUModelRunner.gather_batch_req_state(me, so, True)
        desc, _ = dp_utils.dispatch_cg_and_sync_dp(
            m, num_reqs, num_toks, uniform, 1, 0, max_query_len=max(so.num_scheduled_tokens.values()), need_eager=False
        )
        dummy_num_reqs = desc.num_reqs or num_reqs  # model_runner.py:1887
        if dummy_num_reqs * q > mnbt:
            return {
                "capture_size": s,
                "num_reqs": num_reqs,
                "num_tokens": num_toks,
                "desc_num_reqs": dummy_num_reqs,
                "desc_mode": desc.cg_mode.name,
                "query_tokens": dummy_num_reqs * q,
            }
    return None


#: Deployments :func:`dummy_run_counterexample` runs: (max_num_seqs, max_num_batched_tokens, K).
DEPLOYMENTS = ((256, 1024, 8), (8, 16, 1), (4, 8, 1), (2, 4, 1), (4, 8, 3), (2, 4, 3))


def dummy_run_counterexample(root: str, capture_sizes) -> tuple[dict, list[dict]]:
    """``(path, counterexamples)``: the target's post-capture dummy runs (module docstring) on the
    deployments of :data:`DEPLOYMENTS`, DSpark (anchor sampling, ``q = K``) and DFlash (``q = K +
    1``), target ``cudagraph_mode`` FULL and FULL_AND_PIECEWISE (the default), with the varlen
    decode graphs adaptive verification turns on (``model_runner.py:772``; the profiling runs
    exist only with it, ``:1139``). A found case is a counterexample
    (reproduced through vLLM's code on the CPU). ``capture_sizes(max_num_seqs, k, mnbt)``: vLLM's
    ``(sizes, largest)`` for a deployment (:func:`.fact_tokens.vllm_capture_sizes`)."""
    from vllm.config.compilation import CUDAGraphMode

    rows = speculator_query_rows(root)
    found: list[dict] = []
    tried = 0
    for mnr, mnbt, k in DEPLOYMENTS:
        for method, anchor in (("dspark", True), ("dflash", False)):
            q = query_rows(method, k, anchor, rows[method])
            if mnbt <= q:  # config/vllm.py:2370-2376 raises
                continue
            # the profiling runs exist only with adaptive verification, which turns varlen decode on
            for mode, varlen in ((CUDAGraphMode.FULL, True), (CUDAGraphMode.FULL_AND_PIECEWISE, True)):
                tried += 1
                hit = dummy_query_rows(*capture_sizes(mnr, k, mnbt), mnr, mnbt, k, q, mode, varlen)
                if hit:
                    flags = (
                        f'--speculative-config \'{{"method": "{method}", "num_speculative_tokens": {k}, '
                        f'"enable_adaptive_verification": true}}\' --max-num-seqs {mnr} '
                        f"--max-num-batched-tokens {mnbt}"
                        + (f" -cc.cudagraph_mode={mode.name}" if mode != CUDAGraphMode.FULL_AND_PIECEWISE else "")
                        + " (V2 model runner, data_parallel_size 1)"
                    )
                    found.append(
                        {
                            "site": f"{DFLASH_V2}:463-467",
                            "deployment": flags,
                            "values": dict(
                                hit, max_num_seqs=mnr, max_num_batched_tokens=mnbt, K=k, num_query_per_req=q
                            ),
                            "reproduced": True,
                            "finding": "docs/findings.md, finding 11",
                        }
                    )
    if found:
        c = found[0]["values"]
        why = (
            f"{len(found)} of {tried} deployments: a post-capture dummy run of {c['capture_size']} tokens "
            f"({c['num_reqs']} requests) dispatches to a {c['desc_mode']} descriptor of {c['desc_num_reqs']} "
            f"requests; the drafter's query pass is {c['query_tokens']} rows > max_num_batched_tokens "
            f"{c['max_num_batched_tokens']} ({V2_RUNNER}:862-875,1887; {CUDAGRAPH_UTILS}:310-318,360-362)"
        )
        return _path(f"{V2_RUNNER}:1141-1145", "executed", "counterexample", why), found
    return (
        _path(
            f"{V2_RUNNER}:1141-1145",
            "executed",
            "not checked",
            f"run on {tried} bounded deployments only (a test, not a proof): no dummy run exceeded",
        ),
        [],
    )


def query_paths(root: str, capture_sizes) -> tuple[list[dict], list[dict]]:
    """``(paths, counterexamples)`` of :data:`QUERY_FACT` (module docstring), in order: lookahead,
    a real step (V2, V1), the drafter's capture, the target's dummy runs (``capture_sizes``: as for
    :func:`dummy_run_counterexample`). Needs vLLM importable;
    raises what a run raises."""
    paths = [lookahead_path(root)] + admission_path(root) + [capture_path(root)]
    dummy, cex = dummy_run_counterexample(root, capture_sizes)
    return paths + [dummy], cex
