"""The V2 runner's micro-batch request counts, run on symbolic sizes (vLLM 0.33.0).

Under dual-batch overlap the V2 runner splits a step's batch into micro-batches
(``vllm/v1/worker/gpu/ubatch_utils.py``): ``create_ubatch_slices`` clamps each slice that V1's
``maybe_create_ubatch_slices`` returns to ``[min(start, num_reqs - 1), min(stop,
num_reqs_after_padding))`` and ``_slice_input_batch`` gives the sub-batch ``num_reqs_after_padding
= req_stop - req_start`` and ``num_reqs = max(0, min(req_stop, input_batch.num_reqs) -
req_start)`` (the two paths ``ubatch_utils.py:<replace>`` of the V2 request-count fact).

:func:`ubatch_counts` runs vLLM's own ``create_ubatch_slices`` and the statements of
``_slice_input_batch`` that bind the two counts (recompiled from vLLM's source up to its first
buffer access, :func:`_count_prefix`) on capproof ``SymInt`` values, every path
(:func:`capproof.engines.tracing.derive.all_paths`), with the V1 splitter's slice free (any
``start >= 0``, any ``stop``), and proves with Z3 that both counts are at most ``max_num_reqs``
when the step's batch has ``1 <= num_reqs <= num_reqs_after_padding <= max_num_reqs``. The
hypotheses are read from vLLM's source (:func:`lemmas`, AST, exact statements):

- the V1 splitter's request start is ``searchsorted(cu_num_tokens, start_token, side="right") - 1``
  with ``cu_num_tokens[0] = 0`` (``np.zeros``, the cumulative sum written to ``[1:]``) and every
  ``start_token`` either 0 or a split point ``split_point * i`` (``split_point =
  int(num_tokens_padded) // num_ubatches``, no explicit split points from the V2 caller) or the
  total: a count of entries ``<= start_token`` minus one, at least 0; the padded last slice keeps
  the start;
- every micro-batched batch has a request: ``InputBatch.make_dummy`` asserts ``0 < num_reqs``, the
  step's ``execute_model`` takes ``max(...)`` of the scheduled tokens' values (raises on none), and
  the PCP manager pads an empty local segment list to one segment;
- the step batch's ``num_reqs_after_padding <= max_num_reqs`` is the V2 fact's own other paths
  (induction over the construction sites, as :mod:`.demand_v2_requests` does).

Without the second hypothesis the run gives the counterexample ``num_reqs = 0``: the slice starts
at ``-1`` and the sub-batch counts ``num_reqs_after_padding + 1`` requests.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from types import SimpleNamespace

from ..tracing.derive import src as _src

__all__ = ["ubatch_counts", "lemmas", "V2_UBATCH", "V1_UBATCH"]

V2_UBATCH = "vllm/v1/worker/gpu/ubatch_utils.py"
V1_UBATCH = "vllm/v1/worker/ubatch_utils.py"

#: Statements of V1's ``maybe_create_ubatch_slices`` / ``_pad_out_ubatch_slices`` the start bound rests on.
V1_START = (
    "split_point=int(num_tokens_padded)//num_ubatches",
    "token_split_points=[split_point*iforiinrange(1,num_ubatches)]",
    "cu_num_tokens=np.zeros(len(num_scheduled_tokens)+1,dtype=np.int32)",
    "np.cumsum(num_scheduled_tokens,dtype=np.int32,out=cu_num_tokens[1:])",
    "start_token=0",
    "all_points=token_split_points+[int(cu_num_tokens[-1])]",
    "req_start=int(np.searchsorted(cu_num_tokens,start_token,side='right')-1)",
    "start_token=end_token",
    "padded_last_request_slice=slice(last_slice.request_slice.start,num_reqs_padded)",
)
#: Statements that give every micro-batched batch a request (file, statement).
NONEMPTY = (
    ("vllm/v1/worker/gpu/input_batch.py", "assert0<num_reqs<=num_tokens"),
    (
        "vllm/v1/worker/gpu/model_runner.py",
        "max_query_len:int|None=max(scheduler_output.num_scheduled_tokens.values())",
    ),
    ("vllm/v1/worker/gpu/pcp_manager.py", "ifnotlocal_segments:"),
)


def _statements(root: str, rel: str) -> set[str]:
    with open(f"{root}/{rel}", encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.stmt):
            head = n
            if isinstance(n, (ast.If, ast.For, ast.While, ast.With)):
                out.add(_src(n).split("\n", 1)[0])
                continue
            out.add(_src(head))
    return out


def lemmas(root: str) -> tuple[list[str], list[str]]:
    """``(read, missing)``: the hypotheses' statements found in vLLM's source and those not found."""
    read, missing = [], []
    v1 = _statements(root, V1_UBATCH)
    for s in V1_START:
        (read if s in v1 else missing).append(f"{V1_UBATCH}: {s}")
    # the V2 caller passes no explicit split points (five positional arguments)
    v2 = _statements(root, V2_UBATCH)
    call = (
        "_,ubatch_slices=maybe_create_ubatch_slices(True,input_batch.num_scheduled_tokens,"
        "input_batch.num_tokens_after_padding,input_batch.num_reqs_after_padding,num_ubatches)"
    )
    (read if call in v2 else missing).append(f"{V2_UBATCH}: {call}")
    for rel, s in NONEMPTY:
        (read if s in _statements(root, rel) else missing).append(f"{rel}: {s}")
    return read, missing


def _count_prefix(fn):
    """``_slice_input_batch`` recompiled from vLLM's source, its body cut before the first
    statement that names a buffer parameter (``*_buf``), returning ``(num_reqs_padded,
    num_reqs)``; TypeError when the function's ``replace(...)`` does not pass exactly those names
    as ``num_reqs_after_padding`` and ``num_reqs`` or rebinds them after the cut."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    cut = next(
        i
        for i, st in enumerate(node.body)
        if any(isinstance(n, ast.Name) and n.id.endswith("_buf") for n in ast.walk(st))
    )
    rest = node.body[cut:]
    for st in rest:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in ("num_reqs", "num_reqs_padded"):
                raise TypeError(f"{n.id} rebound after the counts")
    rep = [n for st in rest for n in ast.walk(st) if isinstance(n, ast.Call) and _src(n.func) == "replace"]
    kws = {k.arg: _src(k.value) for r in rep for k in r.keywords}
    if kws.get("num_reqs") != "num_reqs" or kws.get("num_reqs_after_padding") != "num_reqs_padded":
        raise TypeError(f"replace passes {kws.get('num_reqs')}, {kws.get('num_reqs_after_padding')}")
    node.body = node.body[:cut] + [ast.parse("return num_reqs_padded, num_reqs").body[0]]
    node.decorator_list = []
    node.name = "_counts"
    ast.fix_missing_locations(tree)
    scope: dict = {}
    exec(compile(tree, inspect.getsourcefile(fn) or "<vllm>", "exec"), fn.__globals__, scope)
    return scope["_counts"], len(node.body) - 1


def ubatch_counts(root: str) -> dict:
    """Run the micro-batch counts on symbolic sizes (module docstring). Returns ``{"proved": bool,
    "counts": {name: Z3 term}, "notes": [...], "empty": (padded, unpadded)}``: ``proved`` when Z3
    shows both counts ``<= max_num_reqs`` under the hypotheses; ``empty`` is the same code run on
    a batch without a request (``num_reqs = 0``, ``num_reqs_after_padding = max_num_reqs = 2``,
    the splitter's slice ``0:2``), which the second hypothesis excludes."""
    import z3
    from vllm.v1.worker.gpu import ubatch_utils as U
    from vllm.v1.worker.ubatch_utils import UBatchSlice

    from ...symbolic import SymInt
    from ..tracing.derive import all_paths

    names = ("max_num_reqs", "num_reqs", "num_reqs_after_padding", "slice_start", "slice_stop", "tok_start", "tok_stop")
    mnr, n, npad, s0, s1, t0, t1 = (SymInt.var(x) for x in names)
    Z = {x: z3.Int(x) for x in names}
    assume = [
        Z["max_num_reqs"] >= 1,
        Z["num_reqs"] >= 1,
        Z["num_reqs"] <= Z["num_reqs_after_padding"],
        Z["num_reqs_after_padding"] <= Z["max_num_reqs"],
        Z["slice_start"] >= 0,
        Z["tok_start"] >= 0,
        Z["tok_stop"] >= Z["tok_start"],
    ]
    counts_fn, kept = _count_prefix(U._slice_input_batch)
    saved = U.maybe_create_ubatch_slices

    def run_on(batch, start, stop, tstart, tstop, i):
        def splitter(should_ubatch, num_scheduled_tokens, num_tokens_padded, num_reqs_padded, num_ubatches):
            # V1's splitter, free: a slice with a start >= 0 (lemmas); the V2 clamp treats every
            # slice of the list alike, so one stands for all
            return None, [UBatchSlice(slice(start, stop), slice(tstart, tstop))]

        U.maybe_create_ubatch_slices = splitter
        try:
            (s,) = U.create_ubatch_slices(batch, 2)
            return counts_fn(batch, s, None, None)[i]
        finally:
            U.maybe_create_ubatch_slices = saved

    batch = SimpleNamespace(
        num_reqs=n, num_reqs_after_padding=npad, num_scheduled_tokens=None, num_tokens=t1, num_tokens_after_padding=t1
    )
    out, notes = {}, []
    for i, label in enumerate(("num_reqs_after_padding", "num_reqs")):
        value, note = all_paths(lambda i=i: run_on(batch, s0, s1, t0, t1, i), assume)
        out[label] = value
        notes += [f"{label}: {x}" for x in note]
    solver = z3.Solver()
    solver.add(*assume)
    solver.add(z3.Or(*[v > Z["max_num_reqs"] for v in out.values()]))
    proved = solver.check() == z3.unsat
    empty_batch = SimpleNamespace(
        num_reqs=0, num_reqs_after_padding=2, num_scheduled_tokens=None, num_tokens=1, num_tokens_after_padding=1
    )
    empty = tuple(run_on(empty_batch, 0, 2, 0, 1, i) for i in (0, 1))
    return {
        "proved": proved,
        "counts": out,
        "notes": notes + [f"_slice_input_batch: the {kept} statements before its first buffer access"],
        "empty": empty,
    }
