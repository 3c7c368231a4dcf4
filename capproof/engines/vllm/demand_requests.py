"""The token count of a step, derived from vLLM 0.33.0's own code, and the token rows it bounds.

The family fact "padded tokens <= max_num_batched_tokens (CUDA-graph and DP padding, dummy runs)"
is split here into the paths that set a step's token count, each checked on vLLM's code:

- **scheduled (unpadded) tokens** (:func:`scheduled_tokens_bound`, AST): ``Scheduler.schedule``
  starts ``input_budget`` at ``scheduler_config.max_num_batched_tokens``, takes every token it
  schedules (and the request's draft slots) out of it where it records them, gives back exactly what
  it takes back on a preemption, asserts ``input_budget >= 0`` and sums the recorded tokens into
  ``total_num_scheduled_tokens``; so the total is at most ``max_num_batched_tokens`` or the engine
  stopped (vLLM runs without ``-O``). Every ``schedule`` override of ``vllm/v1/core/sched`` calls it.
- **padded tokens** (:func:`padded_tokens`, executed): ``GPUModelRunner._determine_batch_execution_and_padding``
  (``gpu_model_runner.py:3684-3785``) run on every path on symbolic sizes, with vLLM's own
  ``CudagraphDispatcher.dispatch`` and ``_create_padded_batch_descriptor`` (every CUDA-graph mode),
  DP on and off. Stand-ins: the padding table (``_bs_to_padded_graph_size``, a capture size per
  call), the DP all-reduce (see below),
  the dispatcher's key sets (membership a free flag) and ``int()`` of the synced count (the value).
  DP: the other rank's count is padded by the same dispatch; the all-reduce is a stand-in tensor
  holding each rank's padded count and mode (as ``dp_utils._run_ar`` writes them), and vLLM's own
  ``_post_process_cudagraph_mode`` and ``_post_process_dp_padding`` run on it (two ranks: one
  other rank stands for any number, the extent being the maximum over the ranks' values).
  The table and the capture sizes rest on :func:`capture_size_bound` (AST): every table entry is a
  capture size or ``max_cudagraph_capture_size + 1`` only past the largest capture size, which the
  compilation config asserts is ``max_cudagraph_capture_size``; that maximum is ``min(max_num_batched_tokens, …)``
  or the largest user size, user sizes filtered to ``<= max_num_batched_tokens``; rounding for
  speculative decoding keeps only sizes ``<= max_cudagraph_capture_size``.
- **dummy, profile and capture runs** (AST): ``_dummy_run`` asserts ``num_tokens <= self.max_num_tokens``
  (``gpu_model_runner.py:5524``) and ``num_tokens_padded <= self.max_num_tokens`` (``:5715``),
  ``self.max_num_tokens = scheduler_config.max_num_batched_tokens`` (``:524``).

A fact checked on every path bounds its quantity in the extent (``select(q <= bound, q, 0)``: past
the bound the engine has stopped at its assert, or the configuration cannot arise), as
:mod:`.demand` does for requests. A fact not checked is recorded ``checked: false`` with the paths
not checked; the entries resting on it then are not verified.

:func:`derive_token_rows` gives a demand to each one-dimensional ``[max_num_batched_tokens]`` buffer
of ``gpu_model_runner.py`` whose every recorded access is a slice whose stop is bound (AST, through
assignments, parameters at every call site in the file, closures) to one of those counts, or a
whole-buffer operation; any other access (an index by a tensor, the buffer passed to a kernel)
leaves the entry without a derived demand.
"""

from __future__ import annotations

import ast
import os
from types import SimpleNamespace

from ...symbolic import SymInt
from .demand import RowBinding, expression, function_def, join_kinds, run_paths, source_text

__all__ = [
    "scheduled_tokens_bound",
    "capture_size_bound",
    "padded_tokens",
    "token_rows_accesses",
    "derive_token_rows",
    "TOKEN_FILES",
    "TOKEN_NAMES",
]

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
SCHED = "vllm/v1/core/sched/scheduler.py"
#: Files whose one-dimensional token buffers are linked here.
TOKEN_FILES = (RUNNER,)
#: Names a token extent uses (sizes >= 1, flags 0/1): the symbolic sizes of :func:`padded_tokens`.
TOKEN_NAMES = (
    "num_tokens",
    "num_tokens_other_rank",
    "capture_size",
    "capture_size_other_rank",
    "capture_size_dp",
    "max_cudagraph_capture_size",
    "num_tokens_dummy",
)
FLAGS = ("dp", "uniform_decode", "encoder_output", "key_full", "key_piecewise", "dp_pad")


def _scheduler_tree(root: str):
    fn = function_def(root, SCHED, "schedule", "Scheduler")
    if fn is None:
        raise RuntimeError(f"{SCHED}: Scheduler.schedule not found")
    return fn


def _bodies(fn):
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                yield stmts


def scheduled_tokens_bound(root: str) -> dict:
    """Fact record ``{"fact", "checked", "paths"}``: a scheduled step's ``total_num_scheduled_tokens``
    is at most ``max_num_batched_tokens``, checked by reading ``Scheduler.schedule`` (AST; see the
    module docstring for what is checked). Raises RuntimeError when the scheduler is not found."""
    fn = _scheduler_tree(root)
    checked: list[str] = []
    unchecked: list[str] = []
    inits = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and source_text(n.targets[0]) == "input_budget"
    ]
    init_ok = len(inits) == 1 and source_text(inits[0].value) == "self.scheduler_config.max_num_batched_tokens"
    (checked if init_ok else unchecked).append(
        f"{SCHED}:{','.join(str(n.lineno) for n in inits) or '?'} (input_budget = max_num_batched_tokens)"
    )
    # every record of scheduled tokens is followed, in its block, by taking them out of the budget
    takes: set[int] = set()
    for stmts in _bodies(fn):
        for i, s in enumerate(stmts):
            if (
                isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Subscript)
                and source_text(s.targets[0].value) == "num_scheduled_tokens"
            ):
                v = source_text(s.value)
                after = stmts[i + 1 : i + 4]
                ok = any(
                    isinstance(t, ast.AugAssign)
                    and isinstance(t.op, ast.Sub)
                    and source_text(t.target) == "input_budget"
                    and source_text(t.value) in (v, f"{v}+draft_slots")
                    and not any(
                        isinstance(u, (ast.Assign, ast.AugAssign)) and source_text(getattr(u, "target", u)) == v
                        for u in after[: after.index(t)]
                    )
                    for t in after
                )
                (checked if ok else unchecked).append(
                    f"{SCHED}:{s.lineno} (num_scheduled_tokens[...] = {v}"
                    + (", taken out of input_budget)" if ok else ": not taken out of input_budget)")
                )
                takes |= {
                    t.lineno for t in after if isinstance(t, ast.AugAssign) and source_text(t.target) == "input_budget"
                }
    # every other change of input_budget: a give-back of exactly what a preemption removed
    for n in ast.walk(fn):
        if isinstance(n, ast.AugAssign) and source_text(n.target) == "input_budget" and n.lineno not in takes:
            ok = isinstance(n.op, ast.Add) and source_text(n.value) in ("restored+draft_slots", "restored")
            pops = [
                a
                for a in ast.walk(fn)
                if isinstance(a, ast.Assign)
                and len(a.targets) == 1
                and source_text(a.targets[0]) == "restored"
                and source_text(a.value).startswith("num_scheduled_tokens.pop(")
            ]
            ok = ok and bool(pops) and all(0 < n.lineno - a.lineno <= 3 for a in pops)
            (checked if ok else unchecked).append(
                f"{SCHED}:{n.lineno} ("
                + ("gives back what num_scheduled_tokens.pop removed)" if ok else "another change of input_budget)")
            )
    others = [
        n.lineno
        for n in ast.walk(fn)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and source_text(n.func.value) == "num_scheduled_tokens"
        and n.func.attr not in ("pop", "values", "get", "items", "keys")
    ]
    if others:
        unchecked.append(f"{SCHED}:{','.join(map(str, others))} (num_scheduled_tokens changed otherwise)")
    total = [
        n.lineno
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and source_text(n.targets[0]) == "total_num_scheduled_tokens"
        and source_text(n.value) == "sum(num_scheduled_tokens.values())"
    ]
    final = [n.lineno for n in ast.walk(fn) if isinstance(n, ast.Assert) and source_text(n.test) == "input_budget>=0"]
    ok = bool(total) and bool(final) and min(final) > max(takes | {0})
    (checked if ok else unchecked).append(
        f"{SCHED}:{','.join(map(str, total)) or '?'} total_num_scheduled_tokens = sum(...), "
        f":{','.join(map(str, final)) or '?'} assert input_budget >= 0"
    )
    # draft slots taken with the tokens are a count (never negative): spec.max_num_new_slots_for_drafting or 0
    drafts = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and source_text(n.targets[0]) == "draft_slots"
    ]
    d_ok = len(drafts) == 1 and source_text(drafts[0].value) == (
        "spec.max_num_new_slots_for_drafting if spec is not None else 0".replace(" ", "")
    )
    spec_file = "vllm/config/speculative.py"
    slots = function_def(root, spec_file, "max_num_new_slots_for_drafting", "SpeculativeConfig")
    returns = sorted(
        {
            source_text(r.value)
            for r in ast.walk(slots or ast.Module(body=[], type_ignores=[]))
            if isinstance(r, ast.Return)
        }
    )
    d_ok = d_ok and set(returns) <= {"0", "1", "num_draft_tokens", "num_draft_tokens-1"}
    (checked if d_ok else unchecked).append(
        f"{SCHED}:{','.join(str(n.lineno) for n in drafts) or '?'} (draft_slots = "
        f"spec.max_num_new_slots_for_drafting or 0; {spec_file} returns {', '.join(returns)}: not negative "
        "for num_speculative_tokens >= 1)"
    )
    for path, calls in _schedule_overrides(root):
        (checked if calls else unchecked).append(
            f"{path} (schedule override " + ("calls super().schedule)" if calls else "does not call super().schedule)")
        )
    return {
        "fact": "num_tokens <= max_num_batched_tokens (scheduled tokens: the scheduler's input budget)",
        "checked": not unchecked,
        "engine_stops": "Python asserts (vLLM runs without -O)",
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


def _schedule_overrides(root: str) -> list[tuple[str, bool]]:
    """``[(file:line, calls super().schedule)]`` for every ``def schedule`` of ``vllm/v1/core/sched``
    outside ``scheduler.py`` and ``interface.py`` (AST)."""
    base = os.path.join(root, "vllm/v1/core/sched")
    out = []
    for f in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if not f.endswith(".py") or f in ("scheduler.py", "interface.py"):
            continue
        with open(os.path.join(base, f), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "schedule":
                calls = any(
                    isinstance(c, ast.Call) and source_text(c.func) == "super().schedule" for c in ast.walk(node)
                )
                out.append((f"vllm/v1/core/sched/{f}:{node.lineno}", calls))
    return out


def capture_size_bound(root: str) -> dict:
    """Fact record: every entry of the dispatcher's padding table is at most
    ``max_cudagraph_capture_size``, which is at most ``max_num_batched_tokens`` (AST of
    ``cudagraph_dispatcher.py``, ``config/vllm.py`` and ``config/compilation.py``)."""
    checked: list[str] = []
    unchecked: list[str] = []

    def tree(rel):
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            return ast.parse(fh.read())

    disp = "vllm/v1/cudagraph_dispatcher.py"
    fn = function_def(root, disp, "_compute_bs_to_padded_graph_size", "CudagraphDispatcher")
    loops = [
        n.lineno
        for n in ast.walk(fn or ast.Module(body=[], type_ignores=[]))
        if isinstance(n, ast.For)
        and source_text(n.iter) == "zip(capture_sizes+[max_size+1],[0]+capture_sizes)"
        and source_text(n.target) == "(end,start)"
    ]
    writes = sorted(
        {
            source_text(n.value)
            for n in ast.walk(fn or ast.Module(body=[], type_ignores=[]))
            if isinstance(n, ast.Assign) and source_text(n.targets[0]) == "self._bs_to_padded_graph_size[bs]"
        }
    )
    ok = bool(loops) and writes == ["end", "start"]
    (checked if ok else unchecked).append(
        f"{disp}:{','.join(map(str, loops)) or '?'} (table entries are start or end of consecutive capture "
        "sizes; max_cudagraph_capture_size + 1 only past the largest size)"
    )
    comp = "vllm/config/compilation.py"
    last = [
        n.lineno
        for n in ast.walk(tree(comp))
        if isinstance(n, ast.Assert)
        and source_text(n.test) == "self.cudagraph_capture_sizes[-1]==self.max_cudagraph_capture_size"
    ]
    (checked if last else unchecked).append(
        f"{comp}:{','.join(map(str, last)) or '?'} (assert largest capture size == max_cudagraph_capture_size)"
    )
    adj = function_def(root, comp, "adjust_cudagraph_sizes_for_spec_decode", "CompilationConfig")
    kept = [
        n.lineno
        for n in ast.walk(adj or ast.Module(body=[], type_ignores=[]))
        if isinstance(n, (ast.SetComp, ast.GeneratorExp, ast.ListComp))
        and any(
            source_text(c) == "round_up(size,multiple_of)<=self.max_cudagraph_capture_size"
            for g in n.generators
            for c in g.ifs
        )
    ]
    reset = [
        n.lineno
        for n in ast.walk(adj or ast.Module(body=[], type_ignores=[]))
        if isinstance(n, ast.Assign)
        and source_text(n.targets[0]) == "self.max_cudagraph_capture_size"
        and source_text(n.value) == "rounded_sizes[-1]"
    ]
    fallback = [
        n.lineno
        for n in ast.walk(adj or ast.Module(body=[], type_ignores=[]))
        if isinstance(n, ast.If) and "multiple_of<=self.max_cudagraph_capture_size" in source_text(n.test)
    ]
    (checked if kept and reset and fallback else unchecked).append(
        f"{comp}:{','.join(map(str, kept + fallback + reset)) or '?'} (speculative rounding keeps sizes <= "
        "max_cudagraph_capture_size, which becomes the largest kept)"
    )
    cfg = "vllm/config/vllm.py"
    sizes = function_def(root, cfg, "_set_cudagraph_sizes", "VllmConfig")
    src = [
        (n.lineno, source_text(n))
        for n in ast.walk(sizes or ast.Module(body=[], type_ignores=[]))
        if isinstance(n, ast.stmt)
    ]
    cap = [ln for ln, s in src if s == "max_cudagraph_capture_size=min(max_num_tokens,max_cudagraph_capture_size)"]
    mnt = [ln for ln, s in src if s == "max_num_tokens=self.scheduler_config.max_num_batched_tokens"]
    user = [ln for ln, s in src if s == "cudagraph_capture_sizes=[iforiindedup_sizesifi<=max_num_tokens]"]
    appended = [
        ln
        for ln, s in src
        if s.startswith("cudagraph_capture_sizes+=[sizeforsizeinuniform_decode_sizesifsize<=max_num_tokens]")
    ]
    final = [ln for ln, s in src if s == "self.compilation_config.max_cudagraph_capture_size=valid_max_size"]
    valid = [
        ln
        for ln, s in src
        if s.startswith("valid_max_size=(cudagraph_capture_sizes[-1]ifcudagraph_capture_sizeselse0)")
        or s.startswith("valid_max_size=cudagraph_capture_sizes[-1]ifcudagraph_capture_sizeselse0")
    ]
    ok = bool(cap and mnt and user and final and valid)
    (checked if ok else unchecked).append(
        f"{cfg}:{','.join(map(str, mnt + cap + user + appended + valid + final)) or '?'} (capture sizes <= "
        "max_num_batched_tokens; max_cudagraph_capture_size = the largest)"
    )
    # the grid's own sizes (range(8, ...), range(256, max + 1, 16), [1, 2, 4]) stay <= max_cudagraph_capture_size
    grid = [
        ln
        for ln, s in src
        if "range(256,max_cudagraph_capture_size+1,16)" in s or "range(8,min(max_cudagraph_capture_size+1,256),8)" in s
    ]
    (checked if len(grid) >= 2 else unchecked).append(
        f"{cfg}:{','.join(map(str, grid)) or '?'} (default grid <= max_cudagraph_capture_size)"
    )
    return {
        "fact": "capture_size <= max_cudagraph_capture_size <= max_num_batched_tokens (padding table, capture sizes)",
        "checked": not unchecked,
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


class DPRow(list):
    """One row of the DP all-reduced tensor (one value per rank): ``max``/``min``/``item``/``cpu``."""

    def max(self):
        from ...arith import maximum

        return SimpleNamespace(item=lambda: maximum(*self))

    def min(self):
        return SimpleNamespace(item=lambda: min(self))

    def cpu(self):
        return self


class DPAllReduced:
    """Stand-in for the ``[4, dp_size]`` tensor ``_run_ar`` all-reduces: ``t[row, :]`` is a :class:`DPRow`."""

    def __init__(self, rows: dict):
        self.rows = rows

    def __getitem__(self, key):
        row, cols = key
        if cols != slice(None):
            raise TypeError(f"all-reduced tensor read as [{key!r}]")
        return DPRow(self.rows[row])


class _Keys:
    """The dispatcher's key sets: membership is a free flag (``key_full``/``key_piecewise``)."""

    def __init__(self, flag):
        self.flag = flag

    def __contains__(self, item):
        return self.flag == 1


def padded_tokens() -> tuple[str, list[str]]:
    """The padded token count ``GPUModelRunner._determine_batch_execution_and_padding`` returns
    (``batch_descriptor.num_tokens``), run on every path (see the module docstring), as an extent
    over :data:`TOKEN_NAMES` and :data:`FLAGS`. Raises RuntimeError when a path fails otherwise than
    at an engine assert."""
    import z3
    from vllm.config import CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
    from vllm.v1.worker import dp_utils
    from vllm.v1.worker import gpu_model_runner as gmr

    v = {n: SymInt.var(n) for n in TOKEN_NAMES + FLAGS if n != "num_tokens_dummy"}
    assume = [z3.Int(n) >= 1 for n in TOKEN_NAMES if n != "num_tokens_dummy"]
    assume += [z3.Or(z3.Int(f) == 0, z3.Int(f) == 1) for f in FLAGS]
    modes = [CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL, CUDAGraphMode.FULL_AND_PIECEWISE]
    terms = []
    notes: list[str] = []
    for mode in modes:

        def run(mode=mode):
            calls = iter((v["capture_size"], v["capture_size_dp"]))
            other_calls = iter((v["capture_size_other_rank"],))

            class _Table:
                def __init__(self, sizes):
                    self.sizes = sizes

                def __getitem__(self, n):
                    return next(self.sizes)

            def dispatcher(table):
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
                d._create_padded_batch_descriptor = lambda *a, **k: CudagraphDispatcher._create_padded_batch_descriptor(
                    d, *a, **k
                )
                d.dispatch = lambda *a, **k: CudagraphDispatcher.dispatch(d, *a, **k)
                return d

            own = dispatcher(_Table(calls))
            other = dispatcher(_Table(other_calls))

            def coordinate(num_tokens_unpadded, parallel_config, allow_microbatching, num_tokens_padded, **kw):
                # the other rank pads its own count by the same dispatch (same configuration); the
                # all-reduced tensor holds each rank's padded count (row 1) and runtime mode (row 3),
                # as _run_ar writes them; vLLM's own post-processing then runs on it
                other_mode, desc = other.dispatch(num_tokens=v["num_tokens_other_rank"], uniform_decode=False)
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
                return False, [SimpleNamespace(item=lambda x=x: x) for x in across], synced

            me = SimpleNamespace(
                _is_uniform_decode=lambda **kw: v["uniform_decode"] == 1,
                uniform_decode_query_len=1,
                model_config=SimpleNamespace(is_encoder_decoder=v["encoder_output"] == 1),
                input_batch=SimpleNamespace(lora_id_to_lora_request={}),
                cudagraph_dispatcher=own,
                vllm_config=SimpleNamespace(
                    parallel_config=SimpleNamespace(data_parallel_size=1 + v["dp"]),
                    observability_config=SimpleNamespace(cudagraph_metrics=False),
                ),
                parallel_config=SimpleNamespace(data_parallel_rank=0),
            )
            saved = gmr.coordinate_batch_across_dp, gmr.__dict__.get("int")
            gmr.coordinate_batch_across_dp = coordinate
            gmr.int = lambda x: x  # int() of the synced count: the count itself
            try:
                out = gmr.GPUModelRunner._determine_batch_execution_and_padding(
                    me, v["num_tokens"], 1, None, 1, num_encoder_reqs=1
                )
            finally:
                gmr.coordinate_batch_across_dp = saved[0]
                if saved[1] is None:
                    del gmr.int
                else:
                    gmr.int = saved[1]
            return out[1].num_tokens

        term, n = run_paths(run, assume, budget=2048)
        terms.append((mode, term))
        notes += [f"cudagraph mode {mode.name}: {x}" for x in n]
    # the mode is a configuration: every mode's paths count. The recorded extent is the maximum
    # of the values the paths return (the If-tree's leaves): an upper bound of every path's value.
    leaves: list = []
    for _, t in terms:
        for leaf in path_leaves(t):
            if not any(leaf.eq(x) for x in leaves):
                leaves.append(leaf)
    # 0 (a path that stopped at an engine assert) is below every size (all >= 1): no access there
    return maximum_expression(leaves), notes


def maximum_expression(leaves: list) -> str:
    """``maximum(a, maximum(b, c))`` over the inventory expressions of the non-zero ``leaves``."""
    import z3

    names = [expression(leaf) for leaf in leaves if not (z3.is_int_value(leaf) and leaf.as_long() == 0)]
    value = names[-1]
    for name in reversed(names[:-1]):
        value = f"maximum({name}, {value})"
    return value


def path_leaves(term) -> list:
    """The values an ``If``-tree of path values can take (its leaves, conditions ignored)."""
    import z3

    out, todo = [], [term]
    while todo:
        t = todo.pop()
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            todo += [t.arg(1), t.arg(2)]
        elif not any(t.eq(x) for x in out):
            out.append(t)
    return out


# ---------------------------------------------------------------------------------------------
# Token rows of the runner's one-dimensional token buffers.


class _Tokens(RowBinding):
    """How a token-count name of ``gpu_model_runner.py`` is bound (AST): ``"unpadded"`` (the
    scheduler's ``total_num_scheduled_tokens``), ``"padded"`` (``batch_desc.num_tokens`` of a
    descriptor ``_determine_batch_execution_and_padding`` returned), ``"dummy"`` (a name of
    ``_dummy_run`` asserted ``<= self.max_num_tokens`` before the access and not reassigned
    between), ``"none"`` or None (not derived)."""

    def __init__(self, root: str, file: str):
        super().__init__(root, file)
        self.line = 0

    def kind(self, fn, expr, depth: int = 0):
        if depth > 6:
            return None
        src = source_text(expr)
        if isinstance(expr, ast.Constant) and expr.value is None:
            return "none"
        if src in ("scheduler_output.total_num_scheduled_tokens",):
            return "unpadded"
        if src in ("batch_desc.num_tokens", "batch_descriptor.num_tokens") and self._from_padding(fn, src):
            return "padded"
        if isinstance(expr, ast.IfExp):
            return join_kinds(self.kind(fn, expr.body, depth + 1), self.kind(fn, expr.orelse, depth + 1))
        if isinstance(expr, ast.Name):
            if fn.name == "_dummy_run" and self._asserted(fn, expr.id):
                return "dummy"
            return self.name(fn, expr.id, depth)
        return None

    def name(self, fn, name: str, depth: int):
        if fn.name == "_dummy_run" and name == "num_reqs":
            return None  # a request count: not a token count
        return super().name(fn, name, depth)

    def param(self, fn, name: str, depth: int):
        """As :meth:`RowBinding.param`, with each call site's line as the point an assert must precede."""
        index = [a.arg for a in fn.args.args].index(name) if name in [a.arg for a in fn.args.args] else None
        kinds = []
        saved = self.line
        for caller in self.functions:
            for call in ast.walk(caller):
                if not (isinstance(call, ast.Call) and source_text(call.func) == f"self.{fn.name}"):
                    continue
                arg = next((k.value for k in call.keywords if k.arg == name), None)
                if arg is None and index is not None and 0 < index <= len(call.args):
                    arg = call.args[index - 1]
                if arg is None:
                    kinds.append("none")
                    continue
                self.line = call.lineno
                k = self.kind(caller, arg, depth + 1)
                self.line = saved
                self.why.append(f"{self.file}:{call.lineno} {fn.name}({name}={source_text(arg)}) -> {k}")
                kinds.append(k)
        if not kinds:
            return None
        out = kinds[0]
        for k in kinds[1:]:
            out = join_kinds(out, k)
        return out

    def _from_padding(self, fn, src: str) -> bool:
        var = src.split(".")[0]
        sets = [
            a
            for a in ast.walk(fn)
            if isinstance(a, ast.Assign)
            and any(var in [source_text(x) for x in (t.elts if isinstance(t, ast.Tuple) else [t])] for t in a.targets)
        ]
        return bool(sets) and all(
            isinstance(a.value, ast.Call) and source_text(a.value.func) == "self._determine_batch_execution_and_padding"
            for a in sets
        )

    def _asserted(self, fn, name: str) -> bool:
        line = self.line
        asserts = [
            a.lineno
            for a in ast.walk(fn)
            if isinstance(a, ast.Assert) and source_text(a.test) == f"{name}<=self.max_num_tokens" and a.lineno < line
        ]
        if not asserts:
            return False
        later = [
            a.lineno
            for a in ast.walk(fn)
            if isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and name in [source_text(t) for t in (a.targets if isinstance(a, ast.Assign) else [a.target])]
            and max(asserts) < a.lineno < line
        ]
        loops = [
            n
            for n in ast.walk(fn)
            if isinstance(n, (ast.For, ast.While)) and n.lineno < max(asserts) and line <= (n.end_lineno or 0)
        ]
        return not later and not loops


def _max_num_tokens_ok(root: str) -> list[int]:
    """Lines of ``self.max_num_tokens = scheduler_config.max_num_batched_tokens`` in the runner's
    ``__init__``, when that is the only assignment of ``self.max_num_tokens`` in the file (else none)."""
    with open(os.path.join(root, RUNNER), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    every = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Assign, ast.AugAssign))
        and "self.max_num_tokens" in [source_text(t) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    ]
    init = function_def(root, RUNNER, "__init__", "GPUModelRunner")
    if len(every) != 1:
        return []  # set elsewhere too: the dummy run's assert is not against max_num_batched_tokens alone
    return [
        n.lineno
        for n in ast.walk(init or ast.Module(body=[], type_ignores=[]))
        if isinstance(n, ast.Assign)
        and source_text(n.targets[0]) == "self.max_num_tokens"
        and source_text(n.value) == "scheduler_config.max_num_batched_tokens"
    ]


SLICE_OPS = ("slice", "slice.np", "slice.cpu", "slice.gpu", "copy_to_gpu (slice)")


def token_rows_accesses(entry, root: str, files: dict, reasons: dict | None = None):
    """``(kinds, sites)`` when every recorded access of a ``[max_num_batched_tokens]`` buffer of
    :data:`TOKEN_FILES` is a slice (any start) whose stop is a bound token count, or a whole-buffer
    operation that touches at most the allocation; None otherwise (``reasons[id]`` says which access)."""
    from .demand import WHOLE_OPS

    if entry.file not in TOKEN_FILES or list(entry.shape) != ["max_num_batched_tokens"]:
        return None
    acc = [a for a in (entry.accesses or []) if isinstance(a, dict)]
    if not acc:
        return None
    rt = files.setdefault(entry.file, _Tokens(root, entry.file))
    kinds, sites = set(), []
    for a in acc:
        op, ext, line = a.get("op", ""), str(a.get("extent", "")), int(a.get("line") or 0)
        op = op.rsplit(" ", 1)[0] if op.endswith((" read", " write")) else op
        if ext == "whole" and (op in WHOLE_OPS or op in SLICE_OPS):
            sites.append(f"{entry.file}:{line} {op} (whole: at most the allocation)")
            continue
        if op not in SLICE_OPS or a.get("dim") != 0:
            return _reject(reasons, entry, a)
        stop = ext.rsplit(":", 1)[-1] if ":" in ext else ext
        try:
            expr = ast.parse(stop, mode="eval").body
        except SyntaxError:
            return _reject(reasons, entry, a)
        fn = rt.enclosing(line)
        rt.line = line
        k = rt.kind(fn, expr) if fn is not None else None
        if k not in ("unpadded", "padded", "dummy"):
            return _reject(reasons, entry, a)
        kinds.add(k)
        sites.append(f"{entry.file}:{line} {op} [:{stop}] in {fn.name} ({k})")
    if not kinds:
        return None
    return sorted(kinds), sites


def _reject(reasons, entry, access):
    if reasons is not None:
        reasons[entry.id] = f"{access.get('line')} {access.get('op')} {access.get('extent')!r}"
    return None


def token_extent(root: str) -> tuple[str, list[dict], list[str]]:
    """``(extent, facts, notes)``: the largest token count of a step on any path (scheduled,
    padded, dummy run), each quantity bounded in the extent by its fact when that fact is checked."""
    sched = scheduled_tokens_bound(root)
    sizes = capture_size_bound(root)
    mnt = _max_num_tokens_ok(root)
    dummy_asserts = [
        n.lineno
        for n in ast.walk(
            function_def(root, RUNNER, "_dummy_run", "GPUModelRunner") or ast.Module(body=[], type_ignores=[])
        )
        if isinstance(n, ast.Assert)
        and source_text(n.test) in ("num_tokens<=self.max_num_tokens", "num_tokens_padded<=self.max_num_tokens")
    ]
    dummy = {
        "fact": "num_tokens_dummy <= max_num_batched_tokens (dummy, profile and capture runs)",
        "checked": bool(mnt and dummy_asserts),
        "engine_stops": "Python asserts (vLLM runs without -O)",
        "paths": {
            ("checked (ast)" if mnt and dummy_asserts else "not checked"): [
                f"{RUNNER}:{','.join(map(str, dummy_asserts)) or '?'} (_dummy_run asserts <= self.max_num_tokens), "
                f":{','.join(map(str, mnt)) or '?'} (self.max_num_tokens = max_num_batched_tokens)"
            ]
        },
    }
    padded, notes = padded_tokens()
    subst = {}
    if sched["checked"]:
        for n in ("num_tokens", "num_tokens_other_rank"):
            subst[n] = f"select({n} <= max_num_batched_tokens, {n}, 0)"
    if sizes["checked"]:
        cap = "select(max_cudagraph_capture_size <= max_num_batched_tokens, max_cudagraph_capture_size, 0)"
        for n in ("capture_size", "capture_size_other_rank", "capture_size_dp"):
            subst[n] = f"select({n} <= max_cudagraph_capture_size, {n}, 0)"
        subst["max_cudagraph_capture_size"] = cap
    padded_b = padded
    if sizes["checked"]:
        # capture sizes first (bounded by max_cudagraph_capture_size), then that maximum itself
        padded_b = _substitute(padded_b, {k: v for k, v in subst.items() if k.startswith("capture_size")})
        subst = {k: v for k, v in subst.items() if not k.startswith("capture_size")}
    padded_b = _substitute(padded_b, subst)
    unpadded_b = _substitute("num_tokens", subst)
    dummy_b = (
        "select(num_tokens_dummy <= max_num_batched_tokens, num_tokens_dummy, 0)"
        if dummy["checked"]
        else "num_tokens_dummy"
    )
    extent = f"maximum({unpadded_b}, maximum({padded_b}, {dummy_b}))"
    return extent, [sched, sizes, dummy], notes


def _substitute(expr: str, subst: dict) -> str:
    """``expr`` with each name of ``subst`` replaced by its expression (whole names only)."""
    tree = ast.parse(expr, mode="eval")

    class T(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in subst:
                return ast.parse(subst[node.id], mode="eval").body
            return node

    return ast.unparse(T().visit(tree))


def derive_token_rows(entries: list, root: str, reasons: dict | None = None) -> list[str]:
    """Set the dimension-0 ``demands`` (family ``token rows``) of every ``[max_num_batched_tokens]``
    buffer of :data:`TOKEN_FILES` whose accesses :func:`token_rows_accesses` links; returns the ids."""
    extent = None
    files: dict = {}
    done = []
    for e in entries:
        if e.demands:
            continue
        found = token_rows_accesses(e, root, files, reasons)
        if found is None:
            continue
        if extent is None:
            extent, facts, notes = token_extent(root)
        kinds, sites = found
        e.demands = [
            {
                "dim": 0,
                "how": "executed",
                "family": "token rows",
                "extent": extent,
                "from": [
                    f"{RUNNER}:3684-3785 _determine_batch_execution_and_padding (executed, every path, every "
                    "CUDA-graph mode, DP on and off; padding table, DP all-reduce, key sets and int() stand-ins)",
                    "vllm/v1/cudagraph_dispatcher.py:133-152,230-310 dispatch, _create_padded_batch_descriptor (executed)",
                    *sites,
                ],
                "notes": notes,
                "facts": facts,
            }
        ]
        done.append(e.id)
    return done


def _view_accesses(entry, root: str) -> list[dict] | None:
    """The entry's accesses with two forms the access reader records as whole-buffer uses read
    again from the source line (AST): ``self.<attr>.numpy()[:n]`` (a slice of the buffer through
    its NumPy view: the slice) and ``self.<other>.copy_(self.<attr>, ...)`` (the buffer read whole as
    a copy's source: at most the allocation). None when no access is of those forms."""
    import copy as _copy

    with open(os.path.join(root, entry.file), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    name = entry.attribute.rsplit(".", 1)[-1]
    out, changed = [], False
    for a in entry.accesses or []:
        line = int(a.get("line") or 0)
        if a.get("op") == "numpy":
            subs = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Subscript)
                and n.lineno == line
                and source_text(n.value) == f"self.{name}.numpy()"
                and isinstance(n.slice, ast.Slice)
                and n.slice.lower is None
                and n.slice.step is None
                and n.slice.upper is not None
            ]
            if len(subs) == 1:
                out.append(dict(a, op="slice read (through .numpy())", dim=0, extent=ast.unparse(subs[0].slice.upper)))
                changed = True
                continue
        if str(a.get("op", "")).startswith("passed to self.") and str(a.get("op")).endswith(".copy_"):
            calls = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Call)
                and n.lineno == line
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "copy_"
                and n.args
                and source_text(n.args[0]) == f"self.{name}"
            ]
            if len(calls) == 1:
                out.append(dict(a, op="copy_", dim=None, extent="whole"))
                changed = True
                continue
        out.append(a)
    if not changed:
        return None
    view = _copy.copy(entry)
    view.accesses = [dict(x, op=x["op"].replace(" (through .numpy())", "")) for x in out]
    return view


def derive_request_rows_views(entries: list, root: str) -> list[str]:
    """:func:`.demand.derive_request_rows` for the ``[max_num_reqs]`` buffers of
    :data:`.demand.ROW_FILES` it left underived because an access is a ``.numpy()[:n]`` slice or a
    ``copy_`` source (:func:`_view_accesses`); the rest of the link is that function's."""
    from .demand import ROW_FILES, derive_request_rows

    done = []
    for e in entries:
        if e.demands or e.file not in ROW_FILES or list(e.shape) != ["max_num_reqs"]:
            continue
        view = _view_accesses(e, root)
        if view is None or not derive_request_rows([view], root):
            continue
        d = dict(view.demands[0])
        d["from"] = [*d["from"], "accesses through .numpy()[:n] and as a copy_ source read from the source line (ast)"]
        d["via"] = "views"
        e.demands = [d]
        done.append(e.id)
    return done


def derive_more(entries: list, root: str) -> list[str]:
    """Every derivation of this module over ``entries`` (after :func:`.demand.derive_all`'s own);
    one problem line per family not derived (its entries keep no derived demand)."""
    problems = []
    try:
        derive_token_rows(entries, root)
    except Exception as exc:  # noqa: BLE001 - one line: the token-row family is not derived
        problems.append(f"token rows not derived: {type(exc).__name__}: {exc}"[:300])
    try:
        derive_request_rows_views(entries, root)
    except Exception as exc:  # noqa: BLE001 - one line: these request rows are not derived
        problems.append(f"request rows through views not derived: {type(exc).__name__}: {exc}"[:300])
    try:
        from .demand_drafter_rows import derive_drafter_rows

        derive_drafter_rows(entries, root)
    except Exception as exc:  # noqa: BLE001 - one line: the drafters' request rows are not derived
        problems.append(f"drafter request rows not derived: {type(exc).__name__}: {exc}"[:300])
    try:
        from .demand_v2_requests import derive_slot_rows

        facts: list = []
        reasons: dict = {}
        try:
            from .fact_slots import shard_paths

            executed = shard_paths(root)
        except Exception as exc:  # noqa: BLE001 - one line: the sharded slot arrays stay not checked
            executed = None
            problems.append(f"batch sharder not run: {type(exc).__name__}: {exc}"[:300])
        derive_slot_rows(entries, root, reasons=reasons, facts=facts, executed=executed)
        for f in facts:
            if not f["checked"]:
                bad = f["paths"]["not checked"]
                problems.append(f"assumed (not checked on {len(bad)} paths, e.g. {bad[0][:120]}): {f['fact']}"[:300])
        blocked = sum(1 for r in reasons.values() if "not a slot" in r or "not checked" in r)
        if blocked:
            problems.append(
                f"V2 request-slot rows: {blocked} [max_num_reqs] buffers left without a demand "
                "(a slot or a fact not checked)"
            )
    except Exception as exc:  # noqa: BLE001 - one line: the V2 slot rows are not derived
        problems.append(f"V2 request-slot rows not derived: {type(exc).__name__}: {exc}"[:300])
    return problems
