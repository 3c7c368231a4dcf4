"""Can a V2 dummy run take ``execute_model``'s zero-token return? (vLLM 0.33.0, run and read).

The V2 runner's ``execute_model`` returns at ``if batch_desc.num_tokens == 0:`` ("all DP ranks have
zero tokens", ``vllm/v1/worker/gpu/model_runner.py:1850-1853``) before it stores
``self.execute_model_state``. ``_dummy_run`` calls ``execute_model(dummy_run=True)`` and then reads
that state (``:936-943``); if a dummy run took the return, it would read whatever an earlier
``execute_model`` left there, or fail ``assert self.execute_model_state is not None`` when nothing
did. :func:`dummy_return_fact` decides whether a dummy run can take it, on every path, in three
parts (each a path of the fact):

1. **The dummy run's token count** (executed): ``_dummy_run``'s statements that bind
   ``num_reqs`` and ``num_tokens`` (its body up to the first statement naming
   ``num_tokens_per_request``, recompiled from the source with the asserts' messages dropped,
   :func:`count_prefix`) run on capproof ``SymInt`` sizes on every path, with no speculator and
   with each V2 speculator class's ``num_query_per_req``/``num_extra_query_per_req`` (read from
   ``vllm/v1/worker/gpu/spec_decode/``, :func:`speculators`; an attribute computed in ``__init__``
   is left free), uniform decode on and off, the caller's ``num_tokens`` free. Z3 decides whether
   a path that passes the engine's asserts can end with ``num_reqs >= 1`` and ``num_tokens < 1``.
   Hypotheses: ``max_num_seqs >= 1`` and ``max_num_batched_tokens >= max_num_seqs`` (both checked
   by ``SchedulerConfig``, ``vllm/config/scheduler.py``), ``decode_query_len >= 1``,
   ``num_query_per_req >= 1``, ``num_extra_query_per_req >= 0``.
2. **What reaches the dispatch** (ast, :func:`lemmas`, exact statements): ``_dummy_run`` stores
   ``num_tokens`` as the dummy output's ``total_num_scheduled_tokens`` and one entry per request of
   ``range(num_reqs)`` as its ``num_scheduled_tokens``, and passes that output with
   ``dummy_run=True``; ``execute_model`` takes ``max(...)`` of the entries (a dummy run without a
   request raises ``ValueError`` there, before the dispatch), sets ``num_toks`` to
   ``total_num_scheduled_tokens`` and changes it only under ``if batch_req_state is not None:``,
   which a dummy run never enters (``gather_batch_req_state`` returns ``None`` first under ``if
   dummy_run:``), and hands ``num_toks`` to ``dispatch_cg_and_sync_dp``. So the dispatch sees the
   count of part 1, with ``num_reqs >= 1``.
3. **The dispatch and the DP agreement** (executed, :func:`dispatch_sweep`): vLLM's own
   ``dispatch_cg_and_sync_dp`` with vLLM's ``CudaGraphManager`` (``_init_candidates`` on a
   stand-in configuration, graphs marked captured) over :data:`SWEEP`: every CUDA-graph mode,
   capture sizes, ``max_num_seqs``, decode query lengths, varlen decode, eager or not, one rank
   and two (the other rank's token count 0, 1, the same or past the largest size, its CUDA-graph
   mode and micro-batching vote; the all-reduce replaced by a stand-in that writes the other
   rank's column), micro-batching on and off: every token count from 1 to one past the largest
   capture size. A descriptor with ``num_tokens < 1`` is a violation.

The return can be taken on a dummy run exactly when part 1 gives a counterexample. On vLLM 0.33.0
it does: the standalone draft-model speculator (``StandaloneARSpeculator``,
``num_extra_query_per_req = 1``, ``num_query_per_req = 1``) sets ``num_tokens = min(num_tokens,
max_num_tokens - num_reqs)``, which is 0 when ``max_num_batched_tokens == max_num_seqs`` and the
caller asks for at least ``max_num_seqs`` tokens (``profile_run`` asks for
``max_num_batched_tokens``). :func:`profile_run_reproduction` runs vLLM's own ``_dummy_run`` and
``execute_model`` on the CPU for that case (docs/findings.md, finding 12).
"""

from __future__ import annotations

import ast
import itertools
import os
from functools import lru_cache
from types import SimpleNamespace

from ...facts import path_record
from .demand_slots import source_text

__all__ = [
    "RUNNER",
    "SPEC_DIR",
    "SWEEP",
    "count_prefix",
    "speculators",
    "dummy_counts",
    "lemmas",
    "zero_returns",
    "dispatch_sweep",
    "dummy_return_fact",
    "profile_run_reproduction",
]

RUNNER = "vllm/v1/worker/gpu/model_runner.py"
DP_UTILS = "vllm/v1/worker/gpu/dp_utils.py"
SPEC_DIR = "vllm/v1/worker/gpu/spec_decode"
SCHEDULER_CONFIG = "vllm/config/scheduler.py"

#: The configurations :func:`dispatch_sweep` runs vLLM's dispatch on.
SWEEP = {
    "capture_sizes": ((1, 2, 4, 8), (3, 5, 7)),
    "max_num_seqs": (1, 3, 8),
    "decode_query_len": (1, 2),
    "varlen_decode": (False, True),
    "dp_max_num_seqs": (1, 8),
}

#: Statements of ``execute_model`` (top level, before the dispatch) the count at the dispatch rests on.
EXECUTE_STATEMENTS = (
    "num_toks=scheduler_output.total_num_scheduled_tokens",
    "max_query_len:int|None=max(scheduler_output.num_scheduled_tokens.values())",
    "batch_req_state,uniform_tok_count=self.gather_batch_req_state(scheduler_output,dummy_run)",
)
#: Statements of ``_dummy_run`` after the cut that build the dummy scheduler output.
DUMMY_STATEMENTS = (
    "num_tokens_per_request=[num_tokens//num_reqs+(i>=num_reqs-num_tokens%num_reqs)foriinrange(num_reqs)]",
    "num_scheduled_tokens={f'_dummy_req_{i}':nfori,ninenumerate(num_tokens_per_request)}",
    "dummy_scheduler_output.total_num_scheduled_tokens=num_tokens",
    "dummy_scheduler_output.num_scheduled_tokens=num_scheduled_tokens",
)


def _tree(root: str, rel: str):
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        return ast.parse(fh.read())


def _method(tree, name: str):
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def count_prefix(root: str):
    """``(counts, kept)``: ``counts(self, num_tokens, **flags) -> (num_tokens, num_reqs)``, the
    statements of ``_dummy_run`` before the first one naming ``num_tokens_per_request``, compiled
    from ``root``'s source with the asserts' messages dropped (an f-string message would format a
    symbolic size), and how many statements were kept. TypeError when ``_dummy_run`` is missing or
    rebinds ``num_tokens``/``num_reqs`` after the cut."""
    fn = _method(_tree(root, RUNNER), "_dummy_run")
    if fn is None:
        raise TypeError(f"{RUNNER}: no _dummy_run")
    cut = next(
        (
            i
            for i, st in enumerate(fn.body)
            if any(isinstance(n, ast.Name) and n.id == "num_tokens_per_request" for n in ast.walk(st))
        ),
        None,
    )
    if cut is None:
        raise TypeError("_dummy_run names no num_tokens_per_request")
    for st in fn.body[cut:]:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in ("num_tokens", "num_reqs"):
                raise TypeError(f"_dummy_run rebinds {n.id} at :{n.lineno}, after its counts")
    body = fn.body[:cut] + [ast.parse("return num_tokens, num_reqs").body[0]]
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, ast.Assert):
                n.msg = None
    node = ast.FunctionDef(
        name="_dummy_counts", args=fn.args, body=body, decorator_list=[], returns=None, type_params=[]
    )
    module = ast.Module(body=[node], type_ignores=[])
    ast.fix_missing_locations(module)
    scope: dict = {}
    exec(compile(module, os.path.join(root, RUNNER), "exec"), {}, scope)
    return scope["_dummy_counts"], cut


def speculators(root: str) -> list[dict]:
    """Every class under :data:`SPEC_DIR` derived from ``BaseSpeculator`` (by name, through the
    directory's classes): ``{"cls", "site", "num_query_per_req", "num_extra_query_per_req"}``,
    each an int when the class (or the nearest base that sets it) binds it to an integer literal,
    None when a method computes it (left free). ``BaseSpeculator`` itself is included."""
    classes: dict[str, tuple[str, ast.ClassDef]] = {}
    for dirpath, dirs, files in os.walk(os.path.join(root, SPEC_DIR)):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                for node in ast.walk(_tree(root, rel)):
                    if isinstance(node, ast.ClassDef):
                        classes.setdefault(node.name, (rel, node))

    def own(node: ast.ClassDef, attr: str):
        """``(found, value)``: the class's own binding of ``attr``."""
        for st in node.body:
            target = (
                st.target if isinstance(st, ast.AnnAssign) else (st.targets[0] if isinstance(st, ast.Assign) else None)
            )
            if isinstance(target, ast.Name) and target.id == attr and st.value is not None:
                v = st.value
                return True, v.value if isinstance(v, ast.Constant) and type(v.value) is int else None
        for n in ast.walk(node):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(source_text(t) == f"self.{attr}" for t in targets):
                    return True, None
        return False, None

    def lookup(name: str, attr: str, seen=()):
        if name not in classes or name in seen:
            return False, None
        found, value = own(classes[name][1], attr)
        if found:
            return found, value
        for b in classes[name][1].bases:
            found, value = lookup(source_text(b).rsplit(".", 1)[-1], attr, (*seen, name))
            if found:
                return found, value
        return False, None

    def derived(name: str, seen=()) -> bool:
        if name == "BaseSpeculator":
            return True
        if name not in classes or name in seen:
            return False
        return any(derived(source_text(b).rsplit(".", 1)[-1], (*seen, name)) for b in classes[name][1].bases)

    out = []
    for name, (rel, node) in sorted(classes.items()):
        if not derived(name):
            continue
        q = lookup(name, "num_query_per_req")
        x = lookup(name, "num_extra_query_per_req")
        out.append(
            {
                "cls": name,
                "site": f"{rel}:{node.lineno}",
                "num_query_per_req": q[1] if q[0] else None,
                "num_extra_query_per_req": x[1] if x[0] else None,
            }
        )
    return out


def dummy_counts(root: str) -> dict:
    """Part 1 of the module docstring: ``{"proved", "paths", "kept", "counterexamples"}``;
    ``counterexamples`` lists, per speculator kind and uniform-decode flag that can end a path with
    a request and no token, ``{"speculator", "uniform_decode", "values"}`` (a Z3 model with the
    smallest ``max_num_tokens``). ``speculator`` None is the runner without one."""
    import z3

    from ...symbolic import SymInt, explore, to_z3_int

    counts, kept = count_prefix(root)
    names = ("num_tokens", "max_num_reqs", "max_num_tokens", "decode_query_len", "num_query_per_req", "extra")
    S = {n: SymInt.var(n) for n in names}
    Z = {n: z3.Int(n) for n in names}
    assume = [
        Z["max_num_reqs"] >= 1,
        Z["max_num_tokens"] >= Z["max_num_reqs"],
        Z["decode_query_len"] >= 1,
        Z["num_query_per_req"] >= 1,
        Z["extra"] >= 0,
    ]
    kinds: dict[tuple, list[str]] = {(None, None, None): ["(no speculator)"]}
    for sp in speculators(root):
        key = ("spec", sp["num_query_per_req"], sp["num_extra_query_per_req"])
        kinds.setdefault(key, []).append(sp["cls"])
    runs, found = 0, []
    for (kind, q, x), classes in sorted(kinds.items(), key=lambda kv: str(kv[0])):
        spec = None
        if kind is not None:
            spec = SimpleNamespace(
                num_query_per_req=S["num_query_per_req"] if q is None else q,
                num_extra_query_per_req=S["extra"] if x is None else x,
            )
        me = SimpleNamespace(
            max_num_reqs=S["max_num_reqs"],
            max_num_tokens=S["max_num_tokens"],
            decode_query_len=S["decode_query_len"],
            speculator=spec,
        )
        witnesses: list[dict] = []
        for uniform in (False, True):
            ex = explore(lambda me=me, u=uniform: counts(me, S["num_tokens"], uniform_decode=u), assume=assume)
            if not ex.complete:
                raise RuntimeError(f"_dummy_run's counts: {ex.unexplored} paths unexplored")
            for path in ex.paths:
                runs += 1
                if path.error is not None:
                    if isinstance(path.error, AssertionError):
                        continue  # the engine stops at its assert, before execute_model
                    raise RuntimeError(f"_dummy_run's counts: {type(path.error).__name__}: {path.error}"[:240])
                cond = [c if taken else z3.Not(c) for _, c, taken in path.decisions]
                tokens, reqs = (to_z3_int(v) for v in path.value)
                opt = z3.Optimize()
                opt.add(*assume, *cond, reqs >= 1, tokens < 1)
                # the smallest witness, preferably as profile_run calls it (num_tokens = max_num_tokens)
                # and with room for a draft token (a speculative config needs max_num_tokens >= 2)
                opt.add_soft(Z["num_tokens"] == Z["max_num_tokens"])
                opt.add_soft(Z["max_num_tokens"] >= 2)
                opt.minimize(Z["max_num_tokens"])
                if opt.check() == z3.sat:
                    m = opt.model()
                    values = {n: m.eval(Z[n], model_completion=True).as_long() for n in names}
                    values["num_tokens_after"] = m.eval(tokens, model_completion=True).as_long()
                    values["num_reqs_after"] = m.eval(reqs, model_completion=True).as_long()
                    witnesses.append({"speculator": classes, "uniform_decode": uniform, "values": values})
        if witnesses:  # one per speculator kind: profile_run's call if a path allows it, else the smallest
            found.append(
                min(
                    witnesses,
                    key=lambda w: (
                        w["values"]["num_tokens"] != w["values"]["max_num_tokens"],
                        w["values"]["max_num_tokens"],
                    ),
                )
            )
    return {"proved": not found, "paths": runs, "kept": kept, "counterexamples": found}


def _top(fn) -> list[str]:
    return [source_text(st) for st in fn.body if not isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.Try))]


def lemmas(root: str) -> tuple[list[str], list[str]]:
    """Part 2 of the module docstring: ``(read, missing)``, each ``"<file>: <what>"``."""
    read, missing = [], []
    try:
        tree = _tree(root, RUNNER)
        sched = _tree(root, SCHEDULER_CONFIG)
    except (OSError, SyntaxError) as exc:
        return read, [f"not read: {exc}"[:160]]
    execute, gather, dummy = (_method(tree, n) for n in ("execute_model", "gather_batch_req_state", "_dummy_run"))
    if execute is None or gather is None or dummy is None:
        return read, [f"{RUNNER}: execute_model, gather_batch_req_state or _dummy_run not found"]

    def note(ok: bool, what: str) -> None:
        (read if ok else missing).append(f"{RUNNER}: {what}")

    dispatch = next(
        (
            st
            for st in execute.body
            if isinstance(st, ast.Assign)
            and isinstance(st.value, ast.Call)
            and source_text(st.value.func) == "dispatch_cg_and_sync_dp"
        ),
        None,
    )
    note(
        dispatch is not None and len(dispatch.value.args) > 2 and source_text(dispatch.value.args[2]) == "num_toks",
        "execute_model hands num_toks to dispatch_cg_and_sync_dp (third argument, top level)",
    )
    before = [source_text(st) for st in execute.body if dispatch is not None and st.lineno < dispatch.lineno]
    for s in EXECUTE_STATEMENTS:
        note(s in before, f"execute_model, before the dispatch: {s}")
    stores = [
        n
        for n in ast.walk(execute)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == "num_toks"
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        )
    ]
    guarded = {
        id(n)
        for st in execute.body
        if isinstance(st, ast.If) and source_text(st.test) == "batch_req_stateisnotNone" and not st.orelse
        for n in ast.walk(st)
    }
    others = [n for n in stores if source_text(n) != EXECUTE_STATEMENTS[0] and id(n) not in guarded]
    note(not others, "execute_model rebinds num_toks only under `if batch_req_state is not None:`")
    first = next((st for st in gather.body if isinstance(st, (ast.If, ast.Return))), None)
    note(
        isinstance(first, ast.If)
        and source_text(first.test) == "dummy_run"
        and isinstance(first.body[0], ast.Return)
        and isinstance(first.body[0].value, ast.Tuple)
        and source_text(first.body[0].value.elts[0]) == "None",
        "gather_batch_req_state returns (None, ...) first under `if dummy_run:`",
    )
    top = _top(dummy)
    for s in DUMMY_STATEMENTS:
        note(s in top, f"_dummy_run: {s}")
    runs = [n for n in ast.walk(dummy) if isinstance(n, ast.Call) and source_text(n.func) == "self.execute_model"]
    note(
        bool(runs)
        and all(
            n.args
            and source_text(n.args[0]) == "dummy_scheduler_output"
            and any(k.arg == "dummy_run" and source_text(k.value) == "True" for k in n.keywords)
            for n in runs
        ),
        "_dummy_run calls execute_model(dummy_scheduler_output, ..., dummy_run=True)",
    )
    checks = {source_text(n.test) for n in ast.walk(sched) if isinstance(n, ast.If)}
    (read if "self.max_num_batched_tokens<self.max_num_seqs" in checks else missing).append(
        f"{SCHEDULER_CONFIG}: if self.max_num_batched_tokens < self.max_num_seqs: (raises)"
    )
    return read, missing


def zero_returns(root: str, store_line: int) -> tuple[list[int], list[int]]:
    """The ``return``/``yield`` statements of ``execute_model`` before ``store_line`` and outside
    ``if not dummy_run:``: ``(zero, other)``, ``zero`` those directly under ``if
    batch_desc.num_tokens == 0:`` (the return this module is about), ``other`` the rest (lines)."""
    execute = _method(_tree(root, RUNNER), "execute_model")
    if execute is None:
        return [], []
    real_only = {
        id(n)
        for i in ast.walk(execute)
        if isinstance(i, ast.If) and source_text(i.test) == "notdummy_run"
        for b in i.body
        for n in ast.walk(b)
    }
    under_zero = {
        id(n)
        for i in ast.walk(execute)
        if isinstance(i, ast.If) and source_text(i.test) == "batch_desc.num_tokens==0"
        for b in i.body
        for n in ast.walk(b)
    }
    zero, other = [], []
    for r in ast.walk(execute):
        if isinstance(r, (ast.Return, ast.Yield)) and r.lineno < store_line and id(r) not in real_only:
            (zero if id(r) in under_zero else other).append(r.lineno)
    return sorted(zero), sorted(other)


def _manager(mode, sizes, max_num_seqs: int, decode_query_len: int, varlen: bool):
    """vLLM's ``CudaGraphManager`` built without ``__init__`` (which asks for a device and the PP
    group): the fields ``_init_candidates`` and ``dispatch`` read, then vLLM's own
    ``_build_lora_dispatch_map`` and ``_init_candidates``; graphs marked captured."""
    from vllm.v1.worker.gpu.cudagraph_utils import CudaGraphManager

    m = object.__new__(CudaGraphManager)
    m.vllm_config = SimpleNamespace(
        speculative_config=None,
        parallel_config=SimpleNamespace(use_ubatching=False, data_parallel_size=1),
        cache_config=SimpleNamespace(use_kda_recoverssm=False),
    )
    m.compilation_config = SimpleNamespace(cudagraph_capture_sizes=list(sizes), max_cudagraph_capture_size=max(sizes))
    m.max_num_reqs = max_num_seqs
    m.cudagraph_mode = mode
    m.decode_query_len = decode_query_len
    m.varlen_decode = varlen
    m.ubatch_runner = None
    m.lora_capture_cases = [0]
    m._lora_dispatch_map, m._max_lora_case = m._build_lora_dispatch_map()
    m._candidates, m._capture_descs = {}, {}
    m._init_candidates()
    m._graphs_captured = True
    return m


def dispatch_sweep(domain: dict | None = None) -> tuple[int, list[str]]:
    """Part 3 of the module docstring: vLLM's ``dispatch_cg_and_sync_dp`` over ``domain``
    (:data:`SWEEP`); ``(runs, violations)``, a violation a line naming the case whose descriptor has
    ``num_tokens < 1``. Needs vLLM importable (``wheels.activate``); restores what it replaces."""
    import torch
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu import dp_utils

    domain = domain or SWEEP
    modes = [
        CUDAGraphMode.NONE,
        CUDAGraphMode.PIECEWISE,
        CUDAGraphMode.FULL,
        CUDAGraphMode.FULL_DECODE_ONLY,
        CUDAGraphMode.FULL_AND_PIECEWISE,
    ]

    class Group:
        """The DP group's all-reduce: rank 1's column is the other rank's vote."""

        column: list[int] = []

        def cpu_all_reduce_(self, tensor) -> None:
            tensor[:, 1] = torch.tensor(self.column, dtype=tensor.dtype)

    group = Group()
    saved = dp_utils.get_dp_group, dp_utils.should_skip_dp_coordination
    dp_utils.get_dp_group = lambda: group
    dp_utils.should_skip_dp_coordination = lambda: False
    runs, bad = 0, []
    try:
        for mode, sizes, mns, q, varlen in itertools.product(
            modes, domain["capture_sizes"], domain["max_num_seqs"], domain["decode_query_len"], domain["varlen_decode"]
        ):
            m = _manager(mode, sizes, mns, q, varlen)
            top = max(sizes) + 1
            for n, eager, uniform in itertools.product(range(1, top + 1), (False, True), (None, q)):
                reqs = min(n, mns)
                desc, _ = dp_utils.dispatch_cg_and_sync_dp(
                    m, reqs, n, uniform, 1, 0, max_query_len=q if uniform else None, need_eager=eager
                )
                runs += 1
                if desc.num_tokens < 1:
                    bad.append(f"dp 1, {mode.name} sizes={list(sizes)} max_num_seqs={mns} q={q} n={n}: {desc}")
                if varlen or mns not in domain["dp_max_num_seqs"] or sizes != domain["capture_sizes"][0]:
                    continue  # the DP cases on fewer configurations
                for ub, other_n, other_cg, other_ub in itertools.product((False, True), (0, n, top), (0, 2), (0, 1)):
                    pc = SimpleNamespace(
                        use_ubatching=ub, num_ubatches=2, dbo_decode_token_threshold=1, dbo_prefill_token_threshold=2
                    )
                    group.column = [
                        other_n,
                        other_cg,
                        uniform or 0,
                        q if uniform else -1,
                        other_ub,
                        min(other_n, mns),
                        0,
                    ]
                    desc, _ = dp_utils.dispatch_cg_and_sync_dp(
                        m,
                        reqs,
                        n,
                        uniform,
                        2,
                        0,
                        max_query_len=q if uniform else None,
                        need_eager=eager,
                        parallel_config=pc,
                        allow_ubatching=ub,
                        uniform_decode=uniform is not None,
                    )
                    runs += 1
                    if desc.num_tokens < 1:
                        bad.append(
                            f"dp 2 (other rank {other_n} tokens, mode {other_cg}), {mode.name} sizes={list(sizes)} "
                            f"max_num_seqs={mns} n={n}: {desc}"
                        )
    finally:
        dp_utils.get_dp_group, dp_utils.should_skip_dp_coordination = saved
    return runs, bad


def _line(root: str, rel: str, text: str) -> int:
    """The first line of ``rel`` holding ``text``; 0 when none does or the file is missing."""
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if text in line:
                    return i
    except OSError:
        pass
    return 0


@lru_cache(maxsize=4)
def dummy_return_fact(root: str, sweep: bool = True) -> dict:
    """Whether a dummy run can take ``execute_model``'s zero-token return (module docstring):
    ``{"checked": bool, "paths": [path_record, ...], "why": str}``; ``checked`` when no dummy run
    can (every part checked), ``why`` the first part that does not hold. ``sweep``: run part 3 (needs
    vLLM importable; without it that path is not checked)."""
    paths = []
    try:
        run = dummy_counts(root)
    except (OSError, SyntaxError, TypeError, RuntimeError, ValueError) as exc:
        run = None
        paths.append(path_record(f"{RUNNER}:?", "_dummy_run's token count", "executed", "not checked", str(exc)[:200]))
    site = f"{RUNNER}:{_line(root, RUNNER, 'num_reqs = min(num_tokens, self.max_num_reqs)')}"
    if run is not None and run["proved"]:
        paths.append(
            path_record(
                site,
                "_dummy_run's num_tokens at execute_model (a dummy run with a request)",
                "executed",
                "checked",
                f"_dummy_run's {run['kept']} count statements run on symbolic sizes, {run['paths']} paths, every "
                "speculator kind: num_reqs >= 1 implies num_tokens >= 1 (Z3 unsat)",
            )
        )
    elif run is not None:
        c = run["counterexamples"][0]
        v = c["values"]
        paths.append(
            path_record(
                site,
                "_dummy_run's num_tokens at execute_model (a dummy run with a request)",
                "executed",
                "counterexample",
                f"{'/'.join(c['speculator'])} (uniform_decode={c['uniform_decode']}): num_tokens={v['num_tokens']} "
                f"with max_num_seqs={v['max_num_reqs']}, max_num_batched_tokens={v['max_num_tokens']} gives "
                f"{v['num_reqs_after']} requests and {v['num_tokens_after']} tokens (run on symbolic sizes, Z3 model)",
            )
        )
    read, missing = lemmas(root)
    paths.append(
        path_record(
            f"{RUNNER}:{_line(root, RUNNER, 'num_toks = scheduler_output.total_num_scheduled_tokens')}",
            "the token count execute_model hands to the dispatch on a dummy run",
            "ast",
            "not checked" if missing else "checked",
            (f"not found: {missing[0]}" if missing else f"{len(read)} statements read: the dummy's own count")[:300],
        )
    )
    dsite = f"{DP_UTILS}:{_line(root, DP_UTILS, 'def dispatch_cg_and_sync_dp(')}"
    if sweep:
        try:
            runs, bad = dispatch_sweep()
        except ImportError as exc:
            runs, bad = 0, [f"vLLM not importable: {exc}"]
        ok = runs > 0 and not bad
        paths.append(
            path_record(
                dsite,
                "batch_desc.num_tokens of a positive count (CUDA-graph dispatch, DP agreement)",
                "executed",
                "checked" if ok else ("counterexample" if runs else "not checked"),
                (
                    f"vLLM's dispatch_cg_and_sync_dp and CudaGraphManager run on {runs} cases (fact_v2_dummy_tokens.SWEEP):"
                    " never below 1"
                    if ok
                    else bad[0]
                )[:300],
            )
        )
    else:
        paths.append(
            path_record(dsite, "batch_desc.num_tokens of a positive count", "executed", "not checked", "sweep not run")
        )
    first = next((p for p in paths if p["result"] != "checked"), None)
    why = "" if first is None else f"{first['site']} {first['result']}: {first['why']}"
    return {"checked": first is None, "paths": paths, "why": why}


def profile_run_reproduction(max_num_seqs: int = 4, max_num_batched_tokens: int = 4) -> dict:
    """vLLM's own ``GPUModelRunner._dummy_run`` and ``execute_model`` on the CPU, as
    ``profile_run`` calls them (``_dummy_run(max_num_tokens, skip_attn=True, is_profile=True)``),
    with vLLM's ``StandaloneARSpeculator`` (built without ``__init__``: only its class attributes
    are read), one DP rank, no CUDA-graph manager (the profile run is eager), vLLM's no-op KV
    connector and no state stored before. The runner is built without ``__init__`` (it needs a
    device and a model): the fields the two methods read up to the state read; the EC connector's
    ``no_forward`` is a stand-in. Returns ``{"raised", "line", "reached_dispatch_return"}``:
    the exception's type and the vLLM line it was raised at, and whether ``execute_model`` took its
    zero-token return. Needs vLLM importable."""
    import sys

    from vllm.v1.worker.gpu.kv_connector import NO_OP_KV_CONNECTOR
    from vllm.v1.worker.gpu.model_runner import GPUModelRunner
    from vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator import StandaloneARSpeculator

    r = object.__new__(GPUModelRunner)
    r.max_num_reqs, r.max_num_tokens = max_num_seqs, max_num_batched_tokens
    r.decode_query_len = 2
    r.speculator = object.__new__(StandaloneARSpeculator)
    r.is_first_pp_rank = r.is_last_pp_rank = True
    r.kv_connector = NO_OP_KV_CONNECTOR
    r.ec_connector = SimpleNamespace(no_forward=lambda so: SimpleNamespace(ec_connector_output=None))
    r.lora_config = None
    r.execute_model_state = None
    r.cudagraph_manager = None
    r.parallel_config = SimpleNamespace(data_parallel_size=1, data_parallel_rank=0)
    r.ubatch_runner = None
    r.is_encoder_decoder = False
    r.pcp_manager = None
    r.eplb = SimpleNamespace(step=lambda **k: None)
    r.step_timing = SimpleNamespace(forward_end=lambda: None)
    returned: list[int] = []
    runner_file = sys.modules[GPUModelRunner.__module__].__file__

    def tracer(frame, event, arg):
        if frame.f_code.co_name == "execute_model" and frame.f_code.co_filename == runner_file:
            if event == "return":
                returned.append(frame.f_lineno)
            return tracer
        return None

    raised, line = None, 0
    sys.settrace(tracer)
    try:
        r._dummy_run(r.max_num_tokens, skip_attn=True, is_profile=True)
    except Exception as exc:  # the engine's own failure is the result
        raised = type(exc).__name__
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == runner_file:
                line = tb.tb_lineno
            tb = tb.tb_next
    finally:
        sys.settrace(None)
    root = runner_file[: -len(RUNNER)] if runner_file.endswith(RUNNER) else ""
    zero, _ = zero_returns(root, 10**9) if root else ([], [])
    return {
        "raised": raised,
        "line": line,
        "reached_dispatch_return": any(x in zero for x in returned),
    }
