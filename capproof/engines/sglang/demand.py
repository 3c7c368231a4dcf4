"""Demands derived from SGLang 0.5.23's own code (the ``demands`` of the SGLang inventory).

As for vLLM (:mod:`capproof.engines.vllm.demand`): where the code that computes an extent runs on
a CPU it is run here, in the real venv, on capproof SymInts, once per path through its branches
(:func:`capproof.engines.tracing.derive.all_paths`), and printed in the shape expression language
into the entry's ``demands``; what is read instead of run is checked in SGLang's source (AST) and
said so; a fact not checked on every path is recorded with ``checked: false`` (**assumed**, listed
in proofs/coverage.md with its paths). ``make verify`` never imports SGLang: the obligations
(``spec/sglang_0_5_23_derived.py``) evaluate the recorded expressions.

Derived in SGLang 0.5.23: **the batch rows of the EAGLE draft and draft-extend CUDA-graph runners'
static inputs** (:func:`derive_graph_rows`, :data:`GRAPH_FILES`). Every
access of such a buffer in its file is a slice ``[:n]`` (or a whole-buffer ``zero_``/``fill_``/
``copy_``, or ``is None``) whose stop is, by the assignments in the enclosing method (AST):

- a captured size: ``capture_one_shape(size)`` (``num_seqs = size``), called by
  ``DecodeCudaGraphRunner._capture_one_stream`` for ``bs`` in ``reversed(self.capture_bs)``;
- the padded batch ``bs = self._pad_to_bucket(x, self.capture_bs)`` of ``execute``, ``x`` the raw
  batch ``raw_bs = forward_batch.batch_size`` or, under DP gather (``require_mlp_tp_gather``), the
  largest batch over the DP ranks: SGLang's ``BaseCudaGraphRunner._pad_to_bucket`` **run** on a
  sorted capture list whose largest size is ``max_bs`` (the list's gaps ``capture_gap_i >= 1``
  are symbolic; a path past its assert contributes 0);
- the raw batch ``raw_bs`` (read after the padding call, so only on paths past its assert);
- the token counts ``num_tokens = num_seqs|bs * self.captured_req_width`` and ``raw_num_token =
  raw_bs * self.captured_req_width``, times ``self.speculative_num_steps`` where the code says so;
  ``captured_req_width`` is SGLang's ``resolve_num_tokens_per_req(phase=...)`` (``draft_decode``,
  ``draft_extend``), **run** on the published speculative arguments.

A dimension no access subscripts is taken whole (every access reads at most the allocation).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable

from ...symbolic import SymInt
from ..tracing.derive import all_paths, assigned, src, without_assert_messages

__all__ = [
    "derive_all",
    "derive_graph_rows",
    "derive_backend_rows",
    "padded_batch",
    "backend_tokens_fact",
    "flashinfer_swa_prefill_witness",
    "GRAPH_FILES",
    "CAPTURE_LIST_LEN",
]

#: Sizes of the symbolic capture list the padding is run on (the recorded extent), and the longest
#: list it is also run and checked on (``padded <= max_bs`` and ``raw <= padded`` on every path).
CAPTURE_LIST_LEN = 4
CHECKED_LENGTHS = 8
#: Names a derived expression may use beyond the tracer's (sizes >= 1; ``dp_gather`` a flag).
EXTRA_POSITIVE = ("raw_bs", "max_batch_size", "backend_bs", "backend_num_tokens", "padded_bs") + tuple(
    f"capture_gap_{i}" for i in range(CAPTURE_LIST_LEN - 1)
)

RUNNER = "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py"
EXTEND = "sglang/srt/speculative/eagle_draft_extend_cuda_graph_runner.py"
BASE = "sglang/srt/model_executor/runner/base_cuda_graph_runner.py"
DECODE = "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py"
#: file -> (runner class, the phase its captured_req_width is resolved for)
GRAPH_FILES = {
    RUNNER: ("EAGLEDraftCudaGraphRunner", "draft_decode"),
    EXTEND: ("EAGLEDraftExtendCudaGraphRunner", "draft_extend"),
}


def _positive() -> tuple[str, ...]:
    from .trace import POSITIVE

    return tuple(POSITIVE) + EXTRA_POSITIVE


def _expr(term) -> str:
    from ...inventory import to_expression

    return to_expression(term, _positive(), ("dp_gather",))


def _buckets(n: int, max_bs, gaps) -> list:
    """A sorted capture list of ``n`` distinct sizes ending at ``max_bs`` (gaps >= 1 between them)."""
    out = [max_bs]
    for g in gaps[: n - 1]:
        out.insert(0, out[0] - g)
    return out


def padded_batch() -> tuple[str, list[str]]:
    """``(extent, notes)``: the batch a replay pads to, SGLang's ``_pad_to_bucket`` run on every path
    for the size ``select(dp_gather == 1, max_batch_size, raw_bs)`` and a sorted capture list of
    :data:`CAPTURE_LIST_LEN` sizes ending at ``max_bs``; also run on lists of 1..:data:`CHECKED_LENGTHS`
    sizes, where Z3 checks that every path past the assert returns ``raw <= padded <= max_bs``
    (raises RuntimeError when it does not, or the exploration is incomplete)."""
    import z3
    from sglang.srt.model_executor.runner.base_cuda_graph_runner import BaseCudaGraphRunner

    from ...arith import select

    names = ("raw_bs", "max_batch_size", "max_bs") + tuple(f"capture_gap_{i}" for i in range(CHECKED_LENGTHS))
    sym = {n: SymInt.var(n) for n in names + ("dp_gather",)}
    assume = [z3.Int(n) >= 1 for n in names] + [z3.Or(z3.Int("dp_gather") == 0, z3.Int("dp_gather") == 1)]
    gaps = [sym[f"capture_gap_{i}"] for i in range(CHECKED_LENGTHS)]
    size = select(sym["dp_gather"] == 1, sym["max_batch_size"], sym["raw_bs"])
    pad = without_assert_messages(BaseCudaGraphRunner._pad_to_bucket)
    checked = []
    for n in range(1, CHECKED_LENGTHS + 1):
        value, _ = all_paths(lambda n=n: pad(size, _buckets(n, sym["max_bs"], gaps)), assume)
        s = z3.Solver()
        s.add(*assume)
        raw = z3.If(z3.Int("dp_gather") == 1, z3.Int("max_batch_size"), z3.Int("raw_bs"))
        ok = z3.Or(z3.And(value == 0, raw > z3.Int("max_bs")), z3.And(raw <= value, value <= z3.Int("max_bs")))
        s.add(z3.Not(ok))
        if s.check() != z3.unsat:
            raise RuntimeError(f"_pad_to_bucket on {n} captured sizes: raw <= padded <= max_bs not proved")
        checked.append(n)
    value, notes = all_paths(lambda: pad(size, _buckets(CAPTURE_LIST_LEN, sym["max_bs"], gaps)), assume)
    notes = notes + [
        f"run on sorted capture lists of 1..{CHECKED_LENGTHS} sizes: on every path past the assert "
        "raw <= padded <= max_bs (Z3); the extent is the run on "
        f"{CAPTURE_LIST_LEN} sizes (bisect_left returns an element of the list, whatever its length)"
    ]
    return _expr(value), notes


def captured_req_width(phase: str) -> str:
    """SGLang's ``resolve_num_tokens_per_req(phase=phase)`` (``speculative/spec_utils.py``) run on the
    published speculative arguments (:func:`capproof.engines.sglang.trace.published`)."""
    from sglang.srt.speculative.spec_utils import resolve_num_tokens_per_req

    from .trace import config_values, published

    v = config_values()
    with published(v, spec="EAGLE"):
        width = resolve_num_tokens_per_req(phase=phase)
    return _expr(width)


# ------------------------------------------------------------------------------------------------
# source facts (AST)


def _tree(root: str, file: str):
    with open(os.path.join(root, file), encoding="utf-8") as fh:
        return ast.parse(fh.read())


def _method(tree, cls: str, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    return None


def _assigns(fn, name: str) -> list:
    return [
        a
        for a in ast.walk(fn)
        if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in a.targets)
    ]


def capture_list_facts(root: str, file: str, cls: str, phase: str) -> dict:
    """Whether the runner's capture list is sorted with ``max_bs`` its largest size and its captured
    sizes come from it, checked in SGLang's source (AST), as a fact record."""
    checked, unchecked = [], []
    base = _tree(root, BASE)
    fn = next((n for n in base.body if isinstance(n, ast.FunctionDef) and n.name == "get_batch_sizes_to_capture"), None)
    sort = (
        [a.lineno for a in _assigns(fn, "capture_bs") if src(a.value) == "list(sorted(set(capture_bs)))"] if fn else []
    )
    last = fn is not None and src(fn.body[-1]) == "return(capture_bs,compile_bs)" if fn else False
    (checked if sort and last else unchecked).append(
        f"{BASE}:{','.join(map(str, sort)) or '?'} (get_batch_sizes_to_capture returns list(sorted(set(capture_bs))))"
    )
    tree = _tree(root, file)
    init = _method(tree, cls, "__init__")
    body = [src(s) for s in ast.walk(init) if isinstance(s, ast.Assign)] if init else []
    ok = (
        "self.capture_bs,_=get_batch_sizes_to_capture(model_runner)" in body
        and "self.max_bs=max(self.capture_bs)" in body
        and f"self.captured_req_width=resolve_num_tokens_per_req(phase='{phase}')" in body
    )
    (checked if ok else unchecked).append(
        f"{file}:{init.lineno if init else '?'} ({cls}.__init__: capture_bs from get_batch_sizes_to_capture, "
        f"max_bs = max(capture_bs), captured_req_width = resolve_num_tokens_per_req('{phase}'))"
    )
    dec = _tree(root, DECODE)
    cap = _method(dec, "DecodeCudaGraphRunner", "_capture_one_stream")
    loop_ok = False
    if cap is not None:
        rng = _assigns(cap, "capture_range")
        loops = [f for f in ast.walk(cap) if isinstance(f, ast.For) and src(f.iter) == "capture_range"]
        calls = [
            c
            for f in loops
            for c in ast.walk(f)
            if isinstance(c, ast.Call) and src(c.func) == "self.capture_one_shape" and c.args and src(c.args[0]) == "bs"
        ]
        loop_ok = (
            bool(rng)
            and all("reversed(self.capture_bs)" in src(a.value) for a in rng)
            and bool(loops)
            and all(isinstance(f.target, ast.Name) and f.target.id == "bs" for f in loops)
            and bool(calls)
        )
    (checked if loop_ok else unchecked).append(
        f"{DECODE}:{cap.lineno if cap else '?'} (_capture_one_stream: capture_one_shape(bs) for bs in "
        "reversed(self.capture_bs))"
    )
    return {
        "fact": "captured sizes are the sorted capture list, max_bs its largest",
        "checked": not unchecked,
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


FORWARD_BATCH = "sglang/srt/model_executor/forward_batch_info.py"
SPEC_INFO = "sglang/srt/speculative/spec_info.py"


def _spec_scale_checked() -> str:
    """Empty when SGLang's ``spec_scale_global_num_tokens`` (``speculative/spec_info.py``), **run** on
    symbolic per-rank counts and a symbolic ``num_tokens_per_req``, returns each count times the
    width (Z3); else the reason."""
    try:
        from types import SimpleNamespace

        import z3
        from sglang.srt.speculative.spec_info import spec_scale_global_num_tokens

        counts = [SymInt.var(f"dp_count_{i}") for i in range(3)]
        width = SymInt.var("dp_width")
        scaled, _ = spec_scale_global_num_tokens(
            SimpleNamespace(num_tokens_per_req=width, num_tokens_for_logprob_per_req=width), counts, counts
        )
        s = z3.Solver()
        s.add(z3.Or(*[z3.Int(f"dp_count_{i}") * z3.Int("dp_width") != v.term for i, v in enumerate(scaled)]))
        return "" if len(scaled) == len(counts) and s.check() == z3.unsat else "scaled counts differ"
    except Exception as exc:  # noqa: BLE001 - then not checked, with the reason
        return f"spec_scale_global_num_tokens did not run: {type(exc).__name__}: {exc}"[:200]


MODEL_RUNNER = "sglang/srt/model_executor/model_runner.py"
#: the forms ``ForwardBatch.init_mlp_sync_metadata`` gives the counts a graph runner's ``max`` reads
_INIT_SCALED = (
    "global_num_tokens,global_num_tokens_for_logprob=spec_scale_global_num_tokens(self.spec_info,"
    "global_num_tokens_source,global_num_tokens_for_logprob_source)"
)
_INIT_STORE = "self.global_num_tokens_cpu=global_num_tokens"
#: the one method allowed to call ``ForwardBatch.prepare_mlp_sync_batch`` (file, class, method)
_EAGER_SYNC = (MODEL_RUNNER, "ModelRunner", "_prepare_eager_forward_batch")


def _returns_after_execute(stmt) -> bool:
    """``stmt`` is an ``if`` whose body calls ``.execute(`` and ends in ``return``."""
    return (
        isinstance(stmt, ast.If)
        and bool(stmt.body)
        and isinstance(stmt.body[-1], ast.Return)
        and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "execute"
            for b in stmt.body
            for n in ast.walk(b)
        )
    )


def eager_only_sync(root: str) -> str:
    """Empty when ``ForwardBatch.prepare_mlp_sync_batch`` (whose decode-family branches reset
    ``batch_size`` from the gathered counts) is off every CUDA-graph runner's path, read in SGLang's
    source (AST): every call of ``.prepare_mlp_sync_batch(`` in ``sglang/srt`` (``hardware_backend/``
    left out) is ``ModelRunner._prepare_eager_forward_batch``'s or the scheduler DP adapter's call of
    its own method (``self.`` in a class defining it), and every call of
    ``_prepare_eager_forward_batch`` follows, in its statement list, an ``if`` that calls
    ``.execute(`` and returns (the graph branch). Else the first exception found."""
    srt = os.path.join(root, "sglang", "srt")
    eager_calls = []
    for dirpath, _, files in os.walk(srt):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir.startswith(os.path.join("sglang", "srt", "hardware_backend")):
            continue
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if "prepare_mlp_sync_batch" not in text and "_prepare_eager_forward_batch" not in text:
                continue
            rel = os.path.relpath(path, root)
            tree = ast.parse(text)
            for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
                own = {i.name for i in cls.body if isinstance(i, ast.FunctionDef)}
                for fn in [i for i in cls.body if isinstance(i, ast.FunctionDef)]:
                    for node in ast.walk(fn):
                        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                            continue
                        attr, recv = node.func.attr, src(node.func.value)
                        if attr == "prepare_mlp_sync_batch":
                            if recv == "self" and "prepare_mlp_sync_batch" in own and cls.name != "ForwardBatch":
                                continue
                            if (rel, cls.name, fn.name) != _EAGER_SYNC:
                                return f"{rel}:{node.lineno} {cls.name}.{fn.name} calls {recv}.prepare_mlp_sync_batch"
                        elif attr == "_prepare_eager_forward_batch":
                            eager_calls.append((rel, fn, node))
    if not eager_calls:
        return "no call of _prepare_eager_forward_batch found"
    for rel, fn, call in eager_calls:
        if not _after_graph_branch(fn, call):
            return f"{rel}:{call.lineno} {fn.name}: _prepare_eager_forward_batch not after a returning graph branch"
    return ""


def _after_graph_branch(fn, call) -> bool:
    """``call`` is (in) a statement preceded, in the same statement list, by an ``if`` that calls
    ``.execute(`` and returns."""
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            for i, stmt in enumerate(stmts):
                if isinstance(stmt, ast.stmt) and any(n is call for n in ast.walk(stmt)):
                    if any(_returns_after_execute(s) for s in stmts[:i]):
                        return True
    return False


def dp_gather_fact(root: str, file: str) -> dict:
    """Under DP gather the runner pads the largest batch over the DP ranks, ``max_batch_size =
    max(forward_batch.global_num_tokens_cpu) // captured_req_width``; this rank's raw batch
    ``forward_batch.batch_size`` is at most it when its own batch is among the gathered counts. The
    links read or run here, and the ones not checked:

    - checked (AST): the runner's ``max_batch_size`` is that quotient (:data:`_BINDINGS`);
    - checked (AST): ``ForwardBatch.init_mlp_sync_metadata`` (the batch's construction) sets
      ``global_num_tokens_cpu`` to the gathered source scaled by ``spec_scale_global_num_tokens``;
    - checked (executed): ``spec_scale_global_num_tokens`` scales every gathered count by the
      batch's ``num_tokens_per_req`` (run on symbolic counts);
    - checked (AST, :func:`eager_only_sync`): ``ForwardBatch.prepare_mlp_sync_batch``, which resets
      ``batch_size`` to this rank's entry of the counts, runs only on the eager path, so a graph
      runner reads the batch size and counts the construction gave (that reset is no link of this
      fact);
    - not checked: that the gathered source holds this rank's batch size at its slot and the batch
      keeps that size until the runner reads it (the scheduler's all-gather,
      ``managers/scheduler_components/dp_attn.py``: distributed, not run), that the batch's
      ``num_tokens_per_req`` is the runner's ``captured_req_width`` (``can_run_graph`` admits an
      unset width), and the counts ``init_mlp_sync_metadata`` leaves unscaled (DP spec/prefill
      coordination applied, or no ``spec_info``)."""
    checked, executed, unchecked = [], [], []
    try:
        init = _method(_tree(root, FORWARD_BATCH), "ForwardBatch", "init_mlp_sync_metadata")
    except (OSError, SyntaxError):
        init = None
    stmts = {src(n): n.lineno for n in ast.walk(init) if isinstance(n, ast.Assign)} if init else {}
    if _INIT_SCALED in stmts and _INIT_STORE in stmts:
        checked.append(
            f"{FORWARD_BATCH}:{stmts[_INIT_SCALED]},{stmts[_INIT_STORE]} init_mlp_sync_metadata: global_num_tokens_cpu "
            "is the gathered source times the batch's width"
        )
    else:
        unchecked.append(f"{FORWARD_BATCH} init_mlp_sync_metadata: the scaled counts not found as read")
    scale = _spec_scale_checked()
    (unchecked if scale else executed).append(
        f"{SPEC_INFO} spec_scale_global_num_tokens: every gathered count times num_tokens_per_req"
        + (f" ({scale})" if scale else "")
    )
    checked.append(
        f"{file} execute: max_batch_size = max(forward_batch.global_num_tokens_cpu) // captured_req_width "
        "(every binding, ast)"
    )
    eager = eager_only_sync(root)
    try:
        lines = sorted(
            n.lineno
            for n in ast.walk(_tree(root, MODEL_RUNNER))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == _EAGER_SYNC[2]
        )
    except (OSError, SyntaxError):
        lines = []
    (unchecked if eager else checked).append(
        f"{MODEL_RUNNER}{':' + ','.join(map(str, lines)) if lines else ''} _prepare_eager_forward_batch: the one "
        "caller of ForwardBatch.prepare_mlp_sync_batch, after ModelRunner's graph branch returns (its own-entry "
        "batch_size is off the graph path)" + (f" ({eager})" if eager else "")
    )
    unchecked += [
        "sglang/srt/managers/scheduler_components/dp_attn.py all_gather: the gathered counts hold this rank's "
        "batch size at its DP slot, and the batch keeps that size until the runner reads it (distributed "
        "exchange, not run)",
        f"{file} can_run_graph: the draft batch's num_tokens_per_req is captured_req_width (an unset width 0 "
        "is admitted)",
        f"{FORWARD_BATCH} init_mlp_sync_metadata: the counts left unscaled (DP spec/prefill coordination "
        "applied, or no spec_info)",
    ]
    return {
        "fact": "raw_bs <= max_batch_size (under DP gather: this rank's batch is among the gathered counts)",
        "checked": False,
        "paths": {
            "checked (ast)": checked,
            "checked (executed)": executed,
            "not checked": unchecked,
        },
    }


# ------------------------------------------------------------------------------------------------
# classifying accesses

#: stop -> kind in the two methods of a graph runner; checked against the method's assignments
_ROW_STOPS = {
    "capture_one_shape": {"num_seqs": "captured", "bs": "captured"},
    "execute": {"bs": "padded", "raw_bs": "raw"},
}
_TOKEN_STOPS = {
    "capture_one_shape": {"num_tokens": "captured"},
    "execute": {"num_tokens": "padded", "raw_num_token": "raw"},
}
#: the assignment each stop name must have (every one of them) in that method
_BINDINGS = {
    ("capture_one_shape", "num_seqs"): {"size"},
    ("capture_one_shape", "bs"): {"size"},
    ("capture_one_shape", "num_tokens"): {"num_seqs*self.captured_req_width", "bs*self.captured_req_width"},
    ("execute", "bs"): {
        "self._pad_to_bucket(int(max_batch_size),self.capture_bs)",
        "self._pad_to_bucket(raw_bs,self.capture_bs)",
    },
    ("execute", "raw_bs"): {"forward_batch.batch_size"},
    ("execute", "num_tokens"): {"bs*self.captured_req_width"},
    ("execute", "raw_num_token"): {"raw_bs*self.captured_req_width"},
    ("execute", "max_batch_size"): {
        "max_num_tokens//self.captured_req_widthifself.model_runner.spec_algorithm.is_eagle()orself.model_runner.spec_algorithm.is_standalone()elsemax_num_tokens",
        "max_num_tokens//self.captured_req_widthifself.model_runner.spec_algorithm.is_eagle()elsemax_num_tokens",
    },
}
WHOLE_METHODS = {"zero_", "fill_", "copy_"}


class _Reject(Exception):
    pass


def _enclosing(tree, line: int):
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.lineno <= line <= (fn.end_lineno or fn.lineno):
            if best is None or fn.lineno > best.lineno:
                best = fn
    return best


def _bound(fn, name: str, line: int) -> bool:
    """Every assignment of ``name`` in ``fn`` has the expected form and one comes before ``line``;
    a raw size is only used after the padding (so past its assert)."""
    want = _BINDINGS.get((fn.name, name))
    assigns = _assigns(fn, name)
    if not want or not assigns or any(src(a.value) not in want for a in assigns):
        return False
    if not any(a.lineno < line for a in assigns):
        return False
    if fn.name == "execute":
        pads = _assigns(fn, "bs")
        if (
            not pads
            or not all(src(a.value) in _BINDINGS[("execute", "bs")] for a in pads)
            or not any(a.lineno < line for a in pads)
        ):
            return False
        if name == "bs" and any(a.lineno > line for a in pads):
            return False
    return True


def _stop_kind(fn, stop: ast.AST, line: int) -> tuple[str, str, bool]:
    """``(unit, kind, steps)`` of a slice stop: unit ``rows``/``tokens``, kind ``captured``/``padded``/
    ``raw``, ``steps`` when multiplied by ``self.speculative_num_steps``."""
    steps = False
    if (
        isinstance(stop, ast.BinOp)
        and isinstance(stop.op, ast.Mult)
        and src(stop.right) == "self.speculative_num_steps"
    ):
        stop, steps = stop.left, True
    if not isinstance(stop, ast.Name) or fn is None or fn.name not in _ROW_STOPS:
        raise _Reject(f"stop {src(stop)}")
    name = stop.id
    for unit, table in (("rows", _ROW_STOPS), ("tokens", _TOKEN_STOPS)):
        kind = table[fn.name].get(name)
        if kind is not None:
            if not _bound(fn, name, line):
                raise _Reject(f"{name} not bound as expected in {fn.name}")
            if steps and unit != "tokens":
                raise _Reject("steps on rows")
            if (
                kind == "padded"
                and fn.name == "execute"
                and any(
                    src(a.value) == "self._pad_to_bucket(int(max_batch_size),self.capture_bs)"
                    for a in _assigns(fn, "bs")
                )
                and not _bound(fn, "max_batch_size", line)
            ):
                raise _Reject("max_batch_size not bound as expected")
            return unit, kind, steps
    raise _Reject(f"stop {name}")


def graph_uses(tree, attribute: str, ndims: int) -> list[tuple[int, list[tuple[str, str, bool] | None]]]:
    """Every use of the buffer in the runner's file (``buffers.X``/``self.buffers.X`` for a field of
    the static-input dataclass, ``self.X`` for the runner's own): ``[(line, [per-dim (unit, kind,
    steps) or None for whole])]``. Raises :class:`_Reject` for a use that is not a slice from 0 by a
    bound stop, a whole-buffer ``zero_``/``fill_``/``copy_`` or an ``is (not) None`` test."""
    field = attribute.split(".", 1)[1] if attribute.startswith("buffers.") else None
    name = field or attribute
    receivers = {"buffers", "self.buffers"} if field else {"self"}
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == name and src(node.value) in receivers):
            continue
        parent = parents.get(node)
        line = node.lineno
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice.elts if isinstance(parent.slice, ast.Tuple) else [parent.slice]
            if len(key) > ndims:
                raise _Reject(f"{line}: more indices than dimensions")
            dims: list = []
            for k in key:
                if not isinstance(k, ast.Slice) or k.lower is not None or k.step is not None:
                    raise _Reject(f"{line}: {src(k)} is not a slice from 0")
                dims.append(None if k.upper is None else _stop_kind(_enclosing(tree, line), k.upper, line))
            dims += [None] * (ndims - len(dims))
            out.append((line, dims))
        elif isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in WHOLE_METHODS:
            out.append((line, [None] * ndims))
        elif isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            continue
        else:
            raise _Reject(f"{line}: {type(parent).__name__} use")
    return out


def derive_graph_rows(entries: list, root: str) -> list[str]:
    """Set the ``demands`` of every buffer of :data:`GRAPH_FILES` whose uses all classify
    (:func:`graph_uses`); returns the ids derived. Needs SGLang importable (the tracer's stand-ins)."""
    done = []
    padded, notes = padded_batch()
    for file, (cls, phase) in GRAPH_FILES.items():
        tree = _tree(root, file)
        width = captured_req_width(phase)
        capture = capture_list_facts(root, file, cls, phase)
        dp = dp_gather_fact(root, file)
        for e in entries:
            if e.file != file or not isinstance(e.shape, list) or e.demands:
                continue
            try:
                uses = graph_uses(tree, e.attribute, len(e.shape))
            except _Reject:
                continue
            if not uses:
                continue
            demands = []
            for d in range(len(e.shape)):
                kinds = {u[1][d] for u in uses if u[1][d] is not None}
                sites = [f"{file}:{ln}" for ln, dims in uses if dims[d] is not None]
                if not kinds:
                    demands.append(
                        {
                            "dim": d,
                            "how": "ast",
                            "family": "graph rows",
                            "extent": e.shape[d],
                            "from": [f"{file}: every use takes dimension {d} whole (ast)"],
                            "notes": [],
                            "facts": [],
                        }
                    )
                    continue
                units = {k[0] for k in kinds}
                if len(units) != 1:
                    break
                rows = []
                if any(k[1] in ("captured", "padded") for k in kinds):
                    rows.append(padded)
                if any(k[1] == "raw" for k in kinds):
                    # read after the padding call: only on paths past its assert
                    rows.append("select(select(dp_gather == 1, max_batch_size, raw_bs) <= max_bs, raw_bs, 0)")
                extent = rows[0] if len(rows) == 1 else f"maximum({rows[0]}, {rows[1]})"
                if units == {"tokens"}:
                    extent = f"({extent}) * {width}"
                    if any(k[2] for k in kinds):  # with and without the steps factor: the larger (steps >= 1)
                        extent = f"({extent}) * speculative_num_steps"
                demands.append(
                    {
                        "dim": d,
                        "how": "executed",
                        "family": "graph rows",
                        "extent": extent,
                        "from": [
                            f"{BASE}:166-180 BaseCudaGraphRunner._pad_to_bucket (executed, every path)",
                            "sglang/srt/speculative/spec_utils.py:83-110 resolve_num_tokens_per_req (executed)"
                            if units == {"tokens"}
                            else f"{file} {cls}.execute/capture_one_shape (ast: stops bound by their assignments)",
                            *sites[:12],
                        ],
                        "notes": notes,
                        "facts": [capture] + ([dp] if any(k[1] in ("padded", "raw") for k in kinds) else []),
                    }
                )
            else:
                e.demands = demands
                done.append(e.id)
    return done


# ------------------------------------------------------------------------------------------------
# attention backends' CUDA-graph metadata buffers

ATTENTION = "sglang/srt/layers/attention/"
#: a backend method whose ``bs`` is the graph batch the runner captures or replays
GRAPH_METHOD_WORDS = ("cuda_graph", "out_graph", "in_graph", "capture", "replay")
BACKEND_BS = {"bs", "forward_batch.batch_size"}


def _allocated_in_graph_state(tree, line: int) -> bool:
    """The allocation on ``line`` is in an ``init_cuda_graph_state(self, max_bs, ...)`` (so the
    shape's ``max_bs`` is the runner's: ``attn_backend.init_cuda_graph_state(self.max_bs, ...)``)."""
    fn = _enclosing(tree, line)
    return (
        fn is not None
        and fn.name == "init_cuda_graph_state"
        and [a.arg for a in fn.args.args][1:2] == ["max_bs"]
        and not _assigns(fn, "max_bs")
    )


def _backend_bs(fn, tree=None, depth: int = 0) -> bool:
    """``bs`` in ``fn`` is the graph batch: ``bs`` is ``fn``'s parameter (never reassigned) or every
    assignment of it is ``forward_batch.batch_size``, and ``fn`` is a CUDA-graph method
    (:data:`GRAPH_METHOD_WORDS`) or a helper every call of which in the file (``self.<fn>(...)``)
    is in such a method (two levels) and passes as ``bs`` that method's graph-bound ``bs``, or the
    ``forward_batch.batch_size`` of the forward batch such a method was handed (its own parameter,
    never reassigned: FlashMLA's ``init_forward_metadata_out_graph`` ->
    ``_apply_decode_target_verify_metadata(bs=forward_batch.batch_size, ...)``)."""
    if fn is None or depth > 2:
        return False
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    assigns = _assigns(fn, "bs")
    if "bs" in params:
        if assigns:
            return False
    elif not assigns or not all(src(a.value) == "forward_batch.batch_size" for a in assigns):
        return False
    if any(w in fn.name for w in GRAPH_METHOD_WORDS):
        return True
    if tree is None:
        return False
    if "bs" not in params:
        return _graph_forward_batch(fn, tree, depth)
    index = [a.arg for a in fn.args.args].index("bs") if "bs" in [a.arg for a in fn.args.args] else None
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and src(c.func) == f"self.{fn.name}"]
    if not calls:
        return False
    for c in calls:
        arg = next((k.value for k in c.keywords if k.arg == "bs"), None)
        if arg is None and index is not None and 0 < index <= len(c.args):
            arg = c.args[index - 1]
        caller = _enclosing(tree, c.lineno)
        if caller is None or caller is fn or arg is None:
            return False
        if src(arg) == "forward_batch.batch_size":
            # the caller's own forward batch (a parameter never reassigned) of a CUDA-graph method
            # or of a helper only such methods reach with theirs
            if "forward_batch" not in [a.arg for a in caller.args.args] or _assigns(caller, "forward_batch"):
                return False
            if not any(w in caller.name for w in GRAPH_METHOD_WORDS) and not _graph_forward_batch(
                caller, tree, depth + 1
            ):
                return False
            continue
        if src(arg) != "bs" or not _backend_bs(caller, tree, depth + 1):
            return False
    return True


def _graph_forward_batch(fn, tree, depth: int) -> bool:
    """``fn``'s ``forward_batch`` parameter (never reassigned) is a graph method's: every call
    ``self.<fn>(...)`` in the file passes the caller's own ``forward_batch`` (never reassigned) first,
    and the caller is a CUDA-graph method (:data:`GRAPH_METHOD_WORDS`) or such a helper (two
    levels). So ``bs = forward_batch.batch_size`` in ``fn`` is the graph batch."""
    if depth > 2:
        return False
    params = [a.arg for a in fn.args.args]
    if params[1:2] != ["forward_batch"] or _assigns(fn, "forward_batch"):
        return False
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and src(c.func) == f"self.{fn.name}"]
    if not calls:
        return False
    for c in calls:
        arg = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "forward_batch"), None)
        if arg is None or src(arg) != "forward_batch":
            return False
        caller = _enclosing(tree, c.lineno)
        if caller is None or caller is fn or _assigns(caller, "forward_batch"):
            return False
        if "forward_batch" not in [a.arg for a in caller.args.args]:
            return False
        if not any(w in caller.name for w in GRAPH_METHOD_WORDS) and not _graph_forward_batch(caller, tree, depth + 1):
            return False
    return True


def _graph_slice(tree, sub: ast.Subscript, ndims: int, line: int) -> list[str | None]:
    """Per-dimension kind of a subscript of a backend buffer: ``rows`` (``[:bs]``), ``tokens``
    (``[:metadata_rows]``, :func:`_metadata_rows`), with ``+1`` for ``[:x + 1]``, None for a
    dimension taken whole (``:`` or not subscripted). Only dimension 0 may have a stop, and only in a
    method whose ``bs`` is the graph batch (:func:`_backend_bs`). Raises :class:`_Reject` otherwise."""
    key = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    if len(key) > ndims:
        raise _Reject(f"{line}: more indices than dimensions")
    dims: list = []
    for i, k in enumerate(key):
        if isinstance(k, ast.Slice) and k.upper is None and k.step is None:
            dims.append(None)  # ``[:]`` or ``[start:]``: never past the allocation's end
            continue
        if not isinstance(k, ast.Slice) or k.lower is not None or k.step is not None:
            raise _Reject(f"{line}: {src(k)} is not a slice from 0")
        fn = _enclosing(tree, line)
        stop, plus = k.upper, False
        if isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Add) and src(stop.right) == "1":
            stop, plus = stop.left, True
        if i == 0 and isinstance(stop, ast.Name) and stop.id != "bs" and _token_count(fn, tree, stop.id):
            dims.append("count" + ("+1" if plus else ""))
            continue
        if i != 0 or not _backend_bs(fn, tree):
            raise _Reject(f"{line}: stop {src(k.upper)} outside a graph method's batch")
        if src(stop) == "bs":
            unit = "rows"
        elif isinstance(stop, ast.Name) and stop.id == METADATA_ROWS:
            unit = _metadata_rows(fn, tree, line)
        elif (
            isinstance(stop, ast.BinOp)
            and isinstance(stop.op, ast.Mult)
            and src(stop.left) == "bs"
            and isinstance(stop.right, ast.Attribute)
            and src(stop.right.value) == "self"
        ):
            unit = "scaled:" + src(stop.right)  # checked against the allocation by the caller
        else:
            raise _Reject(f"{line}: stop {src(k.upper)}")
        dims.append(unit + ("+1" if plus else ""))
    return dims + [None] * (ndims - len(dims))


#: What a CUDA-graph method's forward batch says its token count is: the captured (or replayed)
#: batch's tokens, at most ``captured_req_width * padded_bs`` (:func:`backend_tokens_fact`).
GRAPH_TOKEN_COUNTS = {
    "forward_batch.out_cache_loc.shape[0]",
    "forward_batch.positions.numel()",
    "forward_batch.input_ids.shape[0]",
}


def _token_count(fn, tree, name: str, depth: int = 0) -> bool:
    """``name`` in ``fn`` is the token count of the forward batch a CUDA-graph method was handed:
    every assignment of it in ``fn`` is one of :data:`GRAPH_TOKEN_COUNTS` and ``fn``'s
    ``forward_batch`` is its own parameter (never reassigned) of a CUDA-graph method
    (:data:`GRAPH_METHOD_WORDS`) or of a helper only such methods reach with theirs
    (:func:`_graph_forward_batch`); or ``name`` is ``fn``'s parameter (never reassigned) and every
    call ``self.<fn>(...)`` in the file passes, at its position or by keyword, a local of the caller
    that is such a count (two levels: TRT-LLM MHA's ``_build_cuda_graph_metadata(bs, num_tokens,
    ...)`` from ``init_forward_metadata_out_graph``'s ``num_tokens = forward_batch.positions.numel()``)."""
    if fn is None or depth > 2:
        return False
    params = [a.arg for a in fn.args.args]
    assigns = _assigns(fn, name)
    if assigns:
        if name in params or not all(src(a.value) in GRAPH_TOKEN_COUNTS for a in assigns):
            return False
        if "forward_batch" not in params or _assigns(fn, "forward_batch"):
            return False
        return any(w in fn.name for w in GRAPH_METHOD_WORDS) or _graph_forward_batch(fn, tree, depth)
    if name not in params or name in [a.arg for a in fn.args.kwonlyargs]:
        return False
    index = params.index(name)
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and src(c.func) == f"self.{fn.name}"]
    if not calls:
        return False
    for c in calls:
        arg = next((kw.value for kw in c.keywords if kw.arg == name), None)
        if arg is None and 0 < index <= len(c.args):
            arg = c.args[index - 1]
        caller = _enclosing(tree, c.lineno)
        if not isinstance(arg, ast.Name) or caller is None or caller is fn:
            return False
        if not _token_count(caller, tree, arg.id, depth + 1):
            return False
    return True


#: torch factories whose first argument (or its first element) is dimension 0's size.
SIZE_FIRST = {"torch.zeros", "torch.empty", "torch.ones", "torch.full"}


def allocation_rows(tree, line: int) -> str | None:
    """The source (no spaces) of dimension 0's size in the allocation call on ``line``:
    ``torch.zeros|empty|ones|full(size, ...)`` (``size`` or its first element) or
    ``torch.arange(0, n)``/``torch.arange(n)`` without a step, ``X+1`` for ``torch.arange(0, X * s + 1,
    step=s)``; None for anything else."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno == line):
            continue
        name = src(node.func)
        if name in SIZE_FIRST and node.args:
            first = node.args[0]
            if isinstance(first, (ast.Tuple, ast.List)):
                return src(first.elts[0]) if first.elts else None
            return src(first)
        step = next((k.value for k in node.keywords if k.arg == "step"), None)
        if name == "torch.arange" and step is None:
            if len(node.args) == 1:
                return src(node.args[0])
            if len(node.args) == 2 and src(node.args[0]) == "0":
                return src(node.args[1])
        if name == "torch.arange" and len(node.args) == 2 and src(node.args[0]) == "0":
            # ``arange(0, X * s + 1, step=s)`` has X + 1 entries (s >= 1: a step of 0 raises)
            end = node.args[1]
            if (
                isinstance(end, ast.BinOp)
                and isinstance(end.op, ast.Add)
                and src(end.right) == "1"
                and isinstance(end.left, ast.BinOp)
                and isinstance(end.left.op, ast.Mult)
                and src(end.left.right) == src(step)
            ):
                return src(end.left.left) + "+1"
    return None


def _set_once(tree, attribute: str) -> bool:
    """``self.<attribute>`` is assigned only in ``__init__`` methods of the file (so a graph method
    reads the value the allocation in ``init_cuda_graph_state`` used)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name != "__init__":
            for a in ast.walk(node):
                if any(src(t) == attribute for t in assigned(a)):
                    return False
    return True


def _owner_class(tree, line: int) -> str | None:
    """The name of the class whose body holds ``line`` (innermost)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno > best.lineno:
                best = node
    return best.name if best else None


def backend_uses(tree, attribute: str, ndims: int, line0: int = 0) -> list[tuple[int, list[str | None]]]:
    """Every use of ``self.<attribute>`` in the backend's file: ``[(line, [per-dim "rows"/"indptr"
    or None for whole])]``. Raises :class:`_Reject` for any use other than a slice ``[:bs]`` /
    ``[:bs + 1]`` in a CUDA-graph method (:func:`_backend_bs`), a whole-buffer
    ``zero_``/``fill_``/``copy_`` or an ``is (not) None`` test."""
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == attribute and src(node.value) == "self"):
            continue
        parent = parents.get(node)
        line = node.lineno
        if isinstance(node.ctx, ast.Store):
            stmt = parent
            while stmt is not None and not isinstance(stmt, ast.stmt):
                stmt = parents.get(stmt)
            if stmt is not None and stmt.lineno <= line0 <= (stmt.end_lineno or stmt.lineno):
                continue  # the allocation itself
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
                continue  # "no buffer yet": nothing to index
            raise _Reject(f"{line}: reassigned")
        if isinstance(parent, ast.Subscript) and parent.value is node:
            out.append((line, _graph_slice(tree, parent, ndims, line)))
        elif isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in WHOLE_METHODS:
            out.append((line, [None] * ndims))
        elif isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            continue
        else:
            raise _Reject(f"{line}: {type(parent).__name__} use")
    return out


#: The local a backend's capture method slices its per-row buffers by (Qwen sparse attention:
#: ``metadata_rows = num_tokens if speculative_paged else bs``).
METADATA_ROWS = "metadata_rows"
#: What a call may pass as a capture method's ``num_tokens``: the captured forward batch's token count
#: (``forward_batch.input_ids.shape[0]``, the runner's ``input_ids[:bs * captured_req_width]``) or its
#: batch size.
TOKEN_COUNTS = {"forward_batch.input_ids.shape[0]": "tokens", "forward_batch.batch_size": "rows"}


def _metadata_rows(fn, tree, line: int) -> str:
    """The unit of ``metadata_rows`` in ``fn`` (``rows``: the graph batch ``bs``; ``tokens``: the
    captured batch's token count), read from the source (AST). Every assignment of it in ``fn`` is
    before ``line`` and is ``bs`` or ``num_tokens`` or a conditional of the two; ``num_tokens`` is a
    parameter of ``fn`` never reassigned, and every call of ``fn`` in the file (``<x>.<fn>(...)``)
    passes as ``num_tokens`` the same expression as its ``bs``, or a local of the caller whose every
    assignment picks among :data:`TOKEN_COUNTS`. Raises :class:`_Reject` otherwise."""
    assigns = _assigns(fn, METADATA_ROWS)
    if not assigns or not all(a.lineno < line for a in assigns):
        raise _Reject(f"{line}: {METADATA_ROWS} not assigned before its use in {fn.name}")
    names: set[str] = set()
    for a in assigns:
        v = a.value
        branches = [v.body, v.orelse] if isinstance(v, ast.IfExp) else [v]
        if not all(isinstance(b, ast.Name) and b.id in ("bs", "num_tokens") for b in branches):
            raise _Reject(f"{line}: {METADATA_ROWS} = {src(v)}")
        names |= {b.id for b in branches}
    if "num_tokens" not in names:
        return "rows"
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    if "num_tokens" not in params or _assigns(fn, "num_tokens"):
        raise _Reject(f"{line}: num_tokens is not {fn.name}'s own parameter")
    calls = [
        c
        for c in ast.walk(tree)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == fn.name
    ]
    if not calls:
        raise _Reject(f"{line}: {fn.name} has no call in the file")
    unit = "rows"
    for c in calls:
        kw = {k.arg: k.value for k in c.keywords}
        if "num_tokens" not in kw or "bs" not in kw:
            raise _Reject(f"{c.lineno}: {fn.name} called without num_tokens=/bs= keywords")
        arg = kw["num_tokens"]
        if src(arg) == src(kw["bs"]):
            continue
        caller = _enclosing(tree, c.lineno)
        if not isinstance(arg, ast.Name) or caller is None:
            raise _Reject(f"{c.lineno}: num_tokens={src(arg)}")
        values = _assigns(caller, arg.id)
        if not values:
            raise _Reject(f"{c.lineno}: num_tokens={src(arg)} not assigned in {caller.name}")
        for a in values:
            v = a.value
            branches = [v.body, v.orelse] if isinstance(v, ast.IfExp) else [v]
            for b in branches:
                kind = TOKEN_COUNTS.get(src(b))
                if kind is None:
                    raise _Reject(f"{a.lineno}: num_tokens = {src(b)}")
                if kind == "tokens":
                    unit = "tokens"
    return unit


PREFILL = "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py"
FLASHINFER = "sglang/srt/layers/attention/flashinfer_backend.py"


def flashinfer_swa_prefill_witness(max_num_tokens: int = 8, num_tokens: int = 64) -> dict:
    """SGLang 0.5.23's ``FlashInferAttnBackend.init_forward_metadata_out_graph`` **run** (real torch, CPU)
    on a full prefill CUDA graph's batch (``ForwardMode.EXTEND``, ``num_tokens`` new tokens, two
    requests) with a sliding-window KV pool, its SWA write-location buffer
    ``cuda_graph_swa_out_cache_loc`` of ``max_num_tokens`` entries (what the decode runner's
    ``init_cuda_graph_state(max_bs, max_bs * captured_req_width)`` allocates; the prefill runner never
    calls it) and stand-ins for the FlashInfer planners (``indices_updater_prefill.update``, the capture
    metadata) and the KV index translator (``write_ids``: one location per token). The method
    slices the buffer ``[:n]`` with ``n = forward_batch.out_cache_loc.shape[0]``
    (``flashinfer_backend.py:907-920``), with no bound check (FlashAttention's twin asserts
    ``assert_buffer_fits``, ``flashattention_backend.py:615-622``).

    Returns ``{"capture_rows", "replay_error", "small_replay_ok"}``: the rows of the view the capture
    binds as the batch's SWA write locations, the replay refill's exception text ("" if none), and
    whether a batch of ``max_num_tokens`` tokens replays. Needs SGLang importable (raises
    ImportError otherwise)."""
    import types

    import torch
    from sglang.srt.layers.attention.flashinfer_backend import FlashInferAttnBackend
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    class Planner:
        def update(self, *args, **kwargs):
            return None

    def backend():
        return types.SimpleNamespace(
            indices_updater_prefill=Planner(),
            indices_updater_decode=Planner(),
            _prepare_cuda_graph_metadata=lambda *args, **kwargs: None,
            full_cg_prefill_wrappers=[],
            prefill_backend="fa2",
            dispatch_reason=None,
            flashinfer_kv_cache_dtype=torch.bfloat16,
            use_sliding_window_kv_pool=True,
            cuda_graph_swa_out_cache_loc=torch.zeros(max_num_tokens, dtype=torch.int64),
            kv_index_translator=types.SimpleNamespace(
                write_ids=lambda fb, kind: torch.arange(fb.out_cache_loc.shape[0], dtype=torch.int64)
            ),
            forward_metadata=types.SimpleNamespace(),
        )

    def batch(n: int):
        half = n // 2
        return types.SimpleNamespace(
            batch_size=2,
            req_pool_indices=torch.arange(2),
            seq_lens=torch.tensor([half, n - half]),
            seq_lens_cpu=torch.tensor([half, n - half]),
            seq_lens_sum=n,
            encoder_lens=None,
            forward_mode=ForwardMode.EXTEND,
            spec_info=None,
            positions=torch.arange(n),
            extend_prefix_lens=torch.zeros(2, dtype=torch.int64),
            kv_loc_plan=None,
            out_cache_loc=torch.arange(n),
        )

    method = FlashInferAttnBackend.init_forward_metadata_out_graph
    captured = backend()
    method(captured, batch(num_tokens), in_capture=True)
    try:
        method(backend(), batch(num_tokens), in_capture=False)
        error = ""
    except RuntimeError as exc:
        error = str(exc)
    small = backend()
    method(small, batch(max_num_tokens), in_capture=False)
    return {
        "capture_rows": int(captured.forward_metadata.swa_out_cache_loc.shape[0]),
        "replay_error": error,
        "small_replay_ok": bool(
            small.cuda_graph_swa_out_cache_loc[:max_num_tokens].equal(torch.arange(max_num_tokens))
        ),
    }


QSA = "sglang/srt/layers/attention/qwen_sparse_attn_backend.py"


#: QwenSparseAttnBackend's graph buffers the capture slices by its metadata rows
#: (``qwen_sparse_attn_backend.py:855-905``, ``max_num_tokens`` rows, the cu_seqlens ones one more)
QSA_GRAPH_ROWS = (
    "_graph_seq_lens",
    "_graph_row_req_pool_indices",
    "_graph_prefix_lengths",
    "_graph_token_to_batch",
    "_graph_dummy_token_slot_table",
    "_graph_dummy_out_cache_loc",
    "_graph_write_locs",
    "_graph_compressed_page_table",
    "_graph_compressed_lengths",
    "_graph_logical_positions",
    "_graph_state_slots",
    "_graph_ring_group_locs",
    "_graph_fa2_valid_counts",
    "_graph_fa2_cu_seqlens_k",
    "_graph_cu_seqlens_q",
)


def qsa_prefill_capture_witness(max_num_tokens: int = 4, req_slots: int = 16) -> dict:
    """SGLang 0.5.23's ``QwenSparseAttnBackend._capture_cuda_graph_metadata`` **run** (real torch,
    CPU) as ``init_forward_metadata_out_graph(forward_batch, in_capture=True)`` calls it
    (``qwen_sparse_attn_backend.py:800-818``) for the full prefill CUDA graph's capture batch
    (``prefill_cuda_graph_runner.py:1786``: ``ForwardMode.EXTEND``, ``batch_size`` the runner's
    ``_capture_req_slots`` = ``min(full_prefill_max_req or chunked_prefill_size // 512,
    req_to_token_pool.size)``, ``cuda_graph_setup.py:581-589``), its graph buffers
    (``_graph_seq_lens`` ...) of ``max_num_tokens`` rows, what the decode runner's
    ``init_cuda_graph_state(max_bs, max_bs * captured_req_width)`` allocates
    (``qwen_sparse_attn_backend.py:835-870``; the prefill runner never calls it). ``self`` is a
    namespace holding those buffers (:data:`QSA_GRAPH_ROWS`) and the class's own mode helpers; the
    KV pool is a stand-in with its two QSA constants (they do not size these buffers).

    Returns ``{"error", "rows"}``: the exception text ("" if none) and the rows of the metadata the
    capture binds (None on an error); a size mismatch on
    ``self._graph_seq_lens[:bs].copy_(...)`` (``qwen_sparse_attn_backend.py:959``) is the capture
    batch exceeding the buffers. Needs SGLang importable (raises ImportError otherwise)."""
    import types

    import torch
    from sglang.srt.layers.attention.qwen_sparse_attn_backend import QwenSparseAttnBackend
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    ns = types.SimpleNamespace(
        token_to_kv_pool=types.SimpleNamespace(qsa_compress_ratio=4, qsa_block_topk=8),
        req_to_token=object(),
        _cuda_graph_metadata={},
        _can_defer_block_expansion=lambda mode: False,
        _is_speculative_paged_mode=QwenSparseAttnBackend._is_speculative_paged_mode,
    )
    ns._require_chain_speculation = lambda fm, si: QwenSparseAttnBackend._require_chain_speculation(ns, fm, si)
    for name in QSA_GRAPH_ROWS:
        plus = 1 if name in ("_graph_fa2_cu_seqlens_k", "_graph_cu_seqlens_q") else 0
        setattr(ns, name, torch.zeros(max_num_tokens + plus, dtype=torch.int32))
    try:
        QwenSparseAttnBackend._capture_cuda_graph_metadata(
            ns,
            bs=req_slots,
            num_tokens=req_slots,
            req_pool_indices=torch.arange(req_slots),
            seq_lens=torch.ones(req_slots, dtype=torch.int64),
            forward_mode=ForwardMode.EXTEND,
            spec_info=None,
        )
    except RuntimeError as exc:
        return {"error": str(exc), "rows": None}
    return {"error": "", "rows": int(ns.forward_metadata.sequence_lengths.shape[0])}


#: backend class -> its run of the full prefill graph's capture (``prefill_cuda_graph_runner.py:1786``)
#: on a batch of more requests than the decode runner's graph buffers hold: a counterexample to
#: ``backend_bs <= padded_bs`` on that path when it raises a size mismatch (docs/findings.md)
PREFILL_CAPTURE_WITNESSES = {"QwenSparseAttnBackend": qsa_prefill_capture_witness}


def prefill_capture_counterexample(cls: str, unchecked: list) -> tuple[list, list]:
    """``(still unchecked, counterexamples)``: the full prefill graph's capture site of ``unchecked``
    moved to the counterexamples when ``cls``'s witness (:data:`PREFILL_CAPTURE_WITNESSES`) runs and
    raises the size mismatch."""
    site = f"{PREFILL}:1786 capture_one_shape -> "
    hit = [u for u in unchecked if u.startswith(site)]
    run = PREFILL_CAPTURE_WITNESSES.get(cls)
    if not hit or run is None:
        return unchecked, []
    try:
        error = run()["error"]
    except Exception:  # noqa: BLE001 - SGLang not importable: the site stays not checked
        return unchecked, []
    if "must match the size" not in error:
        return unchecked, []
    return [u for u in unchecked if u not in hit], [
        f"{PREFILL}:1786 capture_one_shape -> init_forward_metadata_out_graph(in_capture=True): an EXTEND "
        f"batch of 16 request slots vs graph buffers of 4 rows (decode max_bs * captured_req_width): "
        f"RuntimeError at {QSA}:959 ({error[:80]})"
    ]


def backend_tokens_fact(cls: str | None = None) -> dict:
    """A capture method's token count is the captured batch's: not checked at the decode runner (it
    builds the forward batch it captures with in another file). For ``FlashInferAttnBackend`` the full
    prefill graph's capture (``prefill_cuda_graph_runner.py:1786``, a bucket of prefill tokens, not
    ``max_bs * captured_req_width``) is a counterexample, run by :func:`flashinfer_swa_prefill_witness`
    (docs/findings.md, finding 14) when SGLang imports; otherwise that path is listed not checked."""
    paths: dict = {
        "not checked": [
            f"{DECODE}: capture_one_shape(bs) builds the forward batch with input_ids = buffers.input_ids[:num_tokens], "
            "num_tokens = bs * captured_req_width -> attn_backend.init_forward_metadata_out_graph(forward_batch, "
            "in_capture=True)",
            f"{DECODE}:424-429 max_num_token = max_bs * captured_req_width when capture_num_tokens is None "
            "(ragged verify, max(capture_num_tokens), is not this capacity)",
        ]
    }
    if cls == "FlashInferAttnBackend":
        site = f"{PREFILL}:1786 capture_one_shape(num_tokens) -> init_forward_metadata_out_graph(in_capture=True)"
        try:
            w = flashinfer_swa_prefill_witness()
            refuted = w["capture_rows"] < 64 and "size" in w["replay_error"] and w["small_replay_ok"]
        except Exception as exc:  # noqa: BLE001 - then the path is listed, not checked
            refuted, w = False, {"error": f"{type(exc).__name__}: {exc}"[:120]}
        if refuted:
            paths[
                "counterexample (executed: FlashInferAttnBackend.init_forward_metadata_out_graph run, finding 14)"
            ] = [
                f"{PREFILL}:1786 64 prefill tokens vs 8 entries (max_bs * captured_req_width): capture binds "
                f"{w['capture_rows']} write locations, replay raises RuntimeError; {site.split(' ', 1)[1]}, "
                f"{FLASHINFER}:907-920"
            ]
        else:
            paths["not checked"].append(f"{site} ({w.get('error', 'witness not reproduced')})")
    return {
        "fact": "backend_num_tokens <= captured_req_width * padded_bs (a backend capture method's token count is "
        "the captured batch's input_ids, the runner's input_ids[:bs * captured_req_width])",
        "checked": False,
        "paths": paths,
    }


def dict_item_key(tree, attribute: str, line: int) -> str | None:
    """The string key under which the allocation on ``line`` is kept in the dict ``self.<base>``
    (``base``: ``attribute`` without the inventory's ``#n``/``[]`` suffixes): a value of the dict
    literal assigned to ``self.<base>``, or ``self.<base>["key"] = <allocation>``; None otherwise."""
    base = attribute.split("#", 1)[0].removesuffix("[]")
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno == line):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Dict) and node in parent.values:
            k = parent.keys[parent.values.index(node)]
            stmt = parents.get(parent)
            if (
                isinstance(stmt, ast.Assign)
                and [src(t) for t in stmt.targets] == [f"self.{base}"]
                and isinstance(k, ast.Constant)
                and isinstance(k.value, str)
            ):
                return k.value
        if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
            t = parent.targets[0]
            if (
                isinstance(t, ast.Subscript)
                and src(t.value) == f"self.{base}"
                and isinstance(t.slice, ast.Constant)
                and isinstance(t.slice.value, str)
            ):
                return t.slice.value
    return None


#: Keys under which a backend keeps per-batch metadata objects in the same dict as its buffers
#: (``self.decode_cuda_graph_metadata[bs] = metadata``): an int, never a buffer's string key.
METADATA_KEYS = {"bs", "forward_batch.batch_size"}


def dict_item_uses(tree, attribute: str, key: str, ndims: int, line0: int) -> list[tuple[int, list[str | None]]]:
    """Every use of the buffer kept as ``self.<base>[key]`` in the backend's file (as
    :func:`backend_uses`): a subscript of ``self.<base>["key"]`` classified by :func:`_graph_slice`, a
    whole-buffer ``zero_``/``fill_``/``copy_``. Other string keys are other buffers; a key in
    :data:`METADATA_KEYS` is a metadata object. Raises :class:`_Reject` for any other use of the dict
    (passed whole, iterated, ``.get``, another key expression, an alias of the item, the dict rebuilt
    with this key elsewhere than the allocation on ``line0``)."""
    base = attribute.split("#", 1)[0].removesuffix("[]")
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == base and src(node.value) == "self"):
            continue
        parent = parents.get(node)
        line = node.lineno
        if isinstance(node.ctx, ast.Store):
            stmt = parents.get(node)
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Dict):
                keys = [k.value for k in value.keys if isinstance(k, ast.Constant)]
                if len(keys) != len(value.keys):
                    raise _Reject(f"{line}: dict with a computed key")
                if key in keys and not (stmt.lineno <= line0 <= (stmt.end_lineno or stmt.lineno)):
                    raise _Reject(f"{line}: {key!r} rebound")
                continue
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            raise _Reject(f"{line}: reassigned")
        if isinstance(parent, ast.Subscript) and parent.value is node:
            k = parent.slice
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                if k.value != key:
                    continue
            elif src(k) in METADATA_KEYS:
                continue
            else:
                raise _Reject(f"{line}: key {src(k)}")
            outer = parents.get(parent)
            if isinstance(parent.ctx, ast.Store):
                if isinstance(outer, ast.Assign) and outer.lineno <= line0 <= (outer.end_lineno or outer.lineno):
                    continue  # the allocation itself
                raise _Reject(f"{line}: {key!r} rebound")
            if isinstance(outer, ast.Subscript) and outer.value is parent:
                out.append((line, _graph_slice(tree, outer, ndims, line)))
            elif isinstance(outer, ast.Attribute) and outer.value is parent and outer.attr in WHOLE_METHODS:
                out.append((line, [None] * ndims))
            else:
                raise _Reject(f"{line}: {type(outer).__name__} use of [{key!r}]")
        elif isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            continue
        elif isinstance(parent, ast.Call) and node in parent.args:
            out.extend(_key_helper_uses(tree, parent, parent.args.index(node), key, ndims))
        else:
            raise _Reject(f"{line}: {type(parent).__name__} use")
    return out


def _key_helper_uses(tree, call: ast.Call, position: int, key: str, ndims: int) -> list:
    """The uses of ``self.<dict>[key]`` inside ``self.<helper>(..., self.<dict>, "k", ..., bs)``
    (TRT-LLM MHA's ``_bind_swa_page_table(metadata, source, key, bs)``): the helper (one ``def`` of
    that name in the file) reads its dict parameter only as ``param.get(k)``/``param[k]`` for a
    parameter ``k`` the call gives as a string constant, into one local whose uses are subscripts
    (:func:`_graph_slice`, the helper's ``bs`` checked by :func:`_backend_bs`) or ``is (not) None``.
    Another constant key reads another buffer: no use. Raises :class:`_Reject` otherwise."""
    line = call.lineno
    name = src(call.func)
    defs = [
        f
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and name.startswith("self.") and f.name == name.removeprefix("self.")
    ]
    if len(defs) != 1 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        raise _Reject(f"{line}: {name} receives the dict")
    fn = defs[0]
    params = [a.arg for a in fn.args.args][1:]
    if len(params) != len(call.args):
        raise _Reject(f"{line}: {name} receives the dict")
    param = params[position]
    parents = {c: p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    local = None
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        parent = parents.get(node)
        read = None
        if isinstance(parent, ast.Attribute) and parent.attr == "get":
            callnode = parents.get(parent)
            if isinstance(callnode, ast.Call) and len(callnode.args) == 1 and not callnode.keywords:
                read, holder = callnode.args[0], callnode
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            read, holder = parent.slice, parent
        if not isinstance(read, ast.Name) or read.id not in params or isinstance(node.ctx, ast.Store):
            raise _Reject(f"{node.lineno}: {fn.name} uses {param} otherwise")
        given = call.args[params.index(read.id)]
        if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
            raise _Reject(f"{line}: {name} called with a key that is not a string constant")
        if given.value != key:
            return []  # another buffer of the dict
        stmt = parents.get(holder)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise _Reject(f"{node.lineno}: {fn.name} does not keep {param}[{read.id}] in one local")
        local = stmt.targets[0].id
    if local is None or len(_assigns(fn, local)) != 1:
        raise _Reject(f"{line}: {fn.name} reads no item of {param}")
    out = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == local) or isinstance(node.ctx, ast.Store):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            out.append((node.lineno, _graph_slice(tree, parent, ndims, node.lineno)))
        elif isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            continue
        else:
            raise _Reject(f"{node.lineno}: {type(parent).__name__} use of {local} in {fn.name}")
    return out


def backend_bs_fact(root: str | None = None, cls: str | None = None, lines=None) -> dict:
    """The runner hands backend class ``cls`` the graph batch: checked at every call site of the
    backend's CUDA-graph entry methods that may reach it (:func:`capproof.engines.sglang.graph_calls.backend_bs_sites`:
    each call's forward batch followed back, AST, view builders run, to an element of the runner's
    capture list); ``checked`` only when every site is. With ``lines`` (the lines of the backend's
    file that slice the buffer by the batch), a site whose forward mode and capture phase reach none
    of them is checked on that ground (:func:`capproof.engines.sglang.graph_calls.reach_drop`).
    Without ``root``/``cls`` (or when the walk fails) the fact is recorded unchecked with the two
    runner chains it rests on."""
    fact = "backend_bs <= padded_bs (a backend graph method's bs is the batch the runner captures or replays)"
    if root is not None and cls is not None:
        key = "checked (ast; build_replay_fb_view, build_inner_fb_view and round_up_grid run)"
        try:
            from .graph_calls import backend_bs_sites, reach_drop

            drop = reach_drop(root, cls, lines)[0] if lines else None
            sites = backend_bs_sites(root, cls, drop=drop)
        except Exception as exc:  # noqa: BLE001 - then unchecked, with the reason
            sites = {"checked": [], "not checked": [f"call sites not walked: {type(exc).__name__}: {exc}"[:200]]}
        reach = [c for c in sites["checked"] if "cannot reach the buffer's slices" in c]
        unchecked, refuted = prefill_capture_counterexample(cls, list(sites["not checked"]))
        paths = {key: [c for c in sites["checked"] if c not in reach], "not checked": unchecked}
        if reach:
            paths["checked (ast, ForwardMode run: the call's forward mode and in_capture reach no slice)"] = reach
        if refuted:
            paths["counterexample (executed: QwenSparseAttnBackend._capture_cuda_graph_metadata run, finding 13)"] = (
                refuted
            )
        return {"fact": fact, "checked": not sites["not checked"] and bool(sites["checked"]), "paths": paths}
    return {
        "fact": fact,
        "checked": False,
        "paths": {
            "not checked": [
                f"{DECODE}:1359 capture_one_shape(bs) -> capture_prepare -> attn_backend.init_forward_metadata_out_graph "
                "(forward batch of bs requests)",
                f"{DECODE}:1728-1790 _init_replay_attn_metadata(raw_bs, bs) -> the backend's replay metadata (fb view "
                "batch_size = bs)",
            ]
        },
    }


def graph_state_fact(root: str) -> dict:
    """The decode runner gives every backend its own ``max_bs`` (AST)."""
    tree = _tree(root, DECODE)
    lines = [
        c.lineno
        for c in ast.walk(tree)
        if isinstance(c, ast.Call)
        and src(c.func) == "self.attn_backend.init_cuda_graph_state"
        and c.args
        and src(c.args[0]) == "self.max_bs"
    ]
    return {
        "fact": "the backend's max_bs is the runner's (init_cuda_graph_state(self.max_bs, ...))",
        "checked": bool(lines),
        "paths": {("checked (ast)" if lines else "not checked"): [f"{DECODE}:{','.join(map(str, lines)) or '?'}"]},
    }


def derive_backend_rows(entries: list, root: str) -> list[str]:
    """Set the ``demands`` of attention-backend buffers allocated in ``init_cuda_graph_state`` whose
    every use in their file is a slice ``[:bs]``/``[:bs + 1]`` in a CUDA-graph method or a
    whole-buffer operation (:func:`backend_uses`): dimension 0's extent is ``backend_bs`` (+ 1), with
    the assumed fact that it is at most the runner's padded batch (run: :func:`padded_batch`); where a
    stop is ``metadata_rows`` (the batch or the captured token count, :func:`_metadata_rows`), the
    larger of ``backend_bs`` and ``backend_num_tokens``, the latter with the assumed fact
    :func:`backend_tokens_fact`."""
    padded, notes = padded_batch()
    state = graph_state_fact(root)
    tokens_facts: dict = {}
    bs_facts: dict = {}
    trees: dict = {}
    done = []
    for e in entries:
        if not e.file.startswith(ATTENTION) or e.demands or not isinstance(e.shape, list) or not e.shape:
            continue
        if "max_bs" not in str(e.shape[0]):
            continue
        tree = trees.setdefault(e.file, _tree(root, e.file))
        if not _allocated_in_graph_state(tree, e.line):
            continue
        key = dict_item_key(tree, e.attribute, e.line)
        if key is None and not e.attribute.isidentifier():
            continue  # a list's item (``x[]``): its uses go through indices, not read here
        try:
            if key is not None:
                uses = dict_item_uses(tree, e.attribute, key, len(e.shape), e.line)
            else:
                uses = backend_uses(tree, e.attribute, len(e.shape), e.line)
        except _Reject:
            continue
        kinds = {u[1][0] for u in uses if u[1][0] is not None}
        if not kinds or any(dims[d] is not None for _, dims in uses for d in range(1, len(e.shape))):
            continue
        units = {k.removesuffix("+1") for k in kinds}
        if "count" in units:
            # a stop read from the forward batch's token count bounds a buffer sized in tokens only;
            # on a buffer of max_bs rows it needs the mode's width (FlashInfer-MLA's decode
            # kv_len_arr[:num_tokens] is width 1 because its draft backend refuses topk > 1): not derived
            if not re.search(r"\b(captured_req_width|max_num_tokens)\b", str(e.shape[0])):
                continue
            units = {"tokens" if u == "count" else u for u in units}
            kinds = {k.replace("count", "tokens") for k in kinds}
        scaled = sorted(u for u in units if u.startswith("scaled:"))
        if scaled:
            # ``[:bs * self.F (+ 1)]`` of a buffer allocated ``max_bs * self.F (+ 1)`` rows, ``self.F`` set
            # only in ``__init__``: the allocation's own size at the graph batch (its traced shape with
            # ``max_bs`` -> ``backend_bs``)
            factor = scaled[0].removeprefix("scaled:")
            size = allocation_rows(tree, e.line)
            plus = {k.endswith("+1") for k in kinds}
            if (
                len(units) != 1
                or len(plus) != 1
                or size != f"max_bs*{factor}" + ("+1" if plus == {True} else "")
                or not _set_once(tree, factor)
            ):
                continue
            extent = re.sub(r"\bmax_bs\b", "backend_bs", str(e.shape[0]))
        else:
            # a token-count stop (``metadata_rows``) is the batch or the token count: the larger of both
            base = "maximum(backend_bs, backend_num_tokens)" if "tokens" in units else "backend_bs"
            extent = f"{base} + 1" if any(k.endswith("+1") for k in kinds) else base
        sites = [f"{e.file}:{ln}" for ln, dims in uses if dims[0] is not None]
        cls = _owner_class(tree, e.line)
        # the fact per class and set of slicing lines: a call site that cannot reach those lines
        # (its forward mode, its capture phase) is no path of this buffer's fact
        sliced = tuple(sorted({ln for ln, dims in uses if dims[0] is not None}))
        if (cls, sliced) not in bs_facts:
            bs_facts[(cls, sliced)] = backend_bs_fact(root, cls, sliced)
        bs_fact = bs_facts[(cls, sliced)]
        if bs_fact["checked"]:
            # every call site gives the backend an element of the capture list: the demand is the
            # padded batch itself (no assumption left)
            extent = re.sub(r"\bbackend_bs\b", f"({padded})", extent)
        if "tokens" in units and cls not in tokens_facts:
            tokens_facts[cls] = backend_tokens_fact(cls)
        facts = [bs_fact] + ([tokens_facts[cls]] if "tokens" in units else []) + [state]
        demands = [
            {
                "dim": 0,
                "how": "ast",
                "family": "backend graph rows",
                "extent": extent,
                "binds": {"padded_bs": padded},
                "from": [
                    f"{e.file}:{e.line} allocated in init_cuda_graph_state(max_bs, ...) (ast)",
                    *sites[:12],
                    f"{BASE}:166-180 BaseCudaGraphRunner._pad_to_bucket (executed, every path: padded_bs)",
                ],
                "notes": notes,
                "facts": facts,
            }
        ]
        for d in range(1, len(e.shape)):
            demands.append(
                {
                    "dim": d,
                    "how": "ast",
                    "family": "backend graph rows",
                    "extent": e.shape[d],
                    "from": [f"{e.file}: every use takes dimension {d} whole (ast)"],
                    "notes": [],
                    "facts": [],
                }
            )
        e.demands = demands
        done.append(e.id)
    return done


#: entry id -> derivation (``root -> demands``); the families below apply to many entries
DERIVATIONS: dict[str, Callable[[str], list[dict]]] = {}


def derive_all(entries: list, root: str) -> list[str]:
    """Set ``demands`` of the entries SGLang's derivations cover (the tracer activated SGLang's
    sources); one problem line per family that failed (its entries keep no derived demand)."""
    problems = []
    for name, derive in (("graph rows", derive_graph_rows), ("backend graph rows", derive_backend_rows)):
        try:
            derive(entries, root)
        except Exception as exc:  # noqa: BLE001 - one line: the family is not derived
            problems.append(f"{name} not derived: {type(exc).__name__}: {exc}"[:300])
    return problems
