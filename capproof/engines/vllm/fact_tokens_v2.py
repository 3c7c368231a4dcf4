"""The fact "padded tokens <= max_num_batched_tokens" on the V2 runner's paths (vLLM 0.33.0,
``vllm/v1/worker/gpu/``), each path checked by running vLLM's own code on symbolic sizes or by
reading its source.

The V2 runner pads a step's token count in three steps, each checked here:

1. **Capture sizes** (:func:`capture_size_sites`, AST): every site of ``vllm/`` that writes
   ``cudagraph_capture_sizes`` or ``max_cudagraph_capture_size`` is judged. ``VllmConfig.
   _set_cudagraph_sizes`` (``vllm/config/vllm.py``) caps the largest size by ``max_num_tokens =
   scheduler_config.max_num_batched_tokens`` (``min(max_num_tokens, …)``) and builds every size
   from forms that are each at most that cap or ``max_num_tokens`` (a comprehension filtered by
   ``<= B``, ``range(…, B + 1, …)``, an ``append`` under ``if x <= B``), then writes the largest
   of them as ``max_cudagraph_capture_size``. ``adjust_cudagraph_sizes_for_spec_decode`` keeps
   only rounded sizes ``<= self.max_cudagraph_capture_size`` (it shrinks the list). Sites that
   write an engine argument before ``_set_cudagraph_sizes`` runs (``arg_utils.py``, a model's
   ``verify_and_update_config`` called earlier in ``VllmConfig.__post_init__``) are inputs it
   recomputes from; a site writing a constant empty list or 0 sets no size; a manager that builds
   its own sizes and raises when one exceeds ``max_num_batched_tokens`` is checked by its raise.
   Any other site is **not checked**.
2. **Candidates** (:func:`candidate_tokens`, executed): ``CudaGraphManager._init_candidates``
   (``cudagraph_utils.py``) run on one symbolic capture size ``s`` for every ``CUDAGraphMode``,
   with symbolic ``max_num_reqs``, ``decode_query_len``, ``max_cudagraph_capture_size`` and DBO
   thresholds, varlen decode, recoverSSM and DBO on and off, two LoRA cases. The loop body over
   ``(num_tokens, num_active_loras)`` reads no other capture size (checked in the source: the
   body names no ``capture_sizes``), so one symbolic size stands for each size of any list. Every
   descriptor it makes is proved ``<= max(s, max_cudagraph_capture_size)``. The run stops where
   the candidate table is filled (a ``range`` over token counts): the table's lists are those
   descriptors (``self._candidates.setdefault(key, []).extend(matching)`` with ``matching`` drawn
   from ``descs_by_mode``, checked in the source).
3. **Dispatch and DP sync** (:func:`dispatch_tokens`, executed): ``CudaGraphManager.dispatch``
   and ``dispatch_cg_and_sync_dp``/``sync_cudagraph_and_dp_padding`` (``dp_utils.py``) run on
   symbolic sizes for two DP ranks (the all-reduce a stand-in holding the other rank's column),
   DP coordination skipped or not, a reused DP sync (eager or not) or none, DBO allowed or not,
   every CUDA-graph mode of the other rank; candidates are descriptors with symbolic token counts
   ``<= C`` (``C`` the bound of step 2). The runner's ``num_tokens_after_padding = max(num_tokens,
   batch_desc.num_tokens)`` (``model_runner.py:1396``) and every entry of the returned sync's
   ``num_tokens_across_dp`` are proved ``<= max(num_tokens, num_tokens of the other rank, C)``.

With each rank's unpadded count at most ``max_num_batched_tokens`` (:func:`runner_counts`: the
scheduler's total, the adaptive-verification trim, the PCP dispatch count, the dummy run's
assert) and ``C <= max_num_batched_tokens`` (step 1), the padded count is at most
``max_num_batched_tokens`` on the V2 runner's step. The V2 speculators' own dispatches
(:func:`speculator_sites`) are listed with the count they pass; those not bound to a checked count
stay **not checked**.
"""

from __future__ import annotations

import ast
import os
from types import SimpleNamespace

from ...symbolic import SymInt
from ..tracing.accesses import parent_map
from .demand import function_def, run_paths, source_text

__all__ = [
    "CUDAGRAPH_UTILS",
    "DP_UTILS",
    "V2_RUNNER",
    "VLLM_CONFIG",
    "COMPILATION",
    "capture_size_sites",
    "judge_capture_size_write",
    "candidate_tokens",
    "dispatch_tokens",
    "runner_counts",
    "speculator_sites",
    "v2_token_paths",
]

CUDAGRAPH_UTILS = "vllm/v1/worker/gpu/cudagraph_utils.py"
DP_UTILS = "vllm/v1/worker/gpu/dp_utils.py"
V2_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
VLLM_CONFIG = "vllm/config/vllm.py"
COMPILATION = "vllm/config/compilation.py"
SPECULATORS = "vllm/v1/worker/gpu/spec_decode/"
SIZE_ATTRS = ("cudagraph_capture_sizes", "max_cudagraph_capture_size")
#: Names a capture-size write may be bounded by: the token budget itself.
BUDGET_NAMES = ("max_num_tokens", "scheduler_config.max_num_batched_tokens", "scheduler.max_num_batched_tokens")


def _path(site: str, sets: str, how: str, result: str, why: str = "") -> dict:
    from ...facts import path_record

    return path_record(site, sets, how, result, why[:400])


# ---------------------------------------------------------------------------------------------
# 1. Capture sizes (AST)


def _exceeds(assume: list, term, bound, rlimit: int | None = None) -> tuple:
    """Z3's answer to "can ``term`` exceed ``bound`` under ``assume``" (unsat: it cannot) and the
    solver, whose model shows the values where it is sat. ``rlimit``: Z3's deterministic resource
    budget (never a wall-clock timeout: the answer must not depend on the machine's load)."""
    import z3

    s = z3.Solver()
    if rlimit is not None:
        s.set("rlimit", rlimit)
    s.add(*assume)
    s.add(term > bound)
    return s.check(), s


def _enclosing(node, parents, kinds):
    while node in parents:
        node = parents[node]
        if isinstance(node, kinds):
            return node
    return None


class _Bounds:
    """Which expressions of one function are bounded by the token budget (AST). ``seen`` holds the
    locals being judged (a recursion stack, never a cache)."""

    def __init__(self, fn, parents):
        self.fn = fn
        self.parents = parents
        self.seen: set[str] = set()
        self.inductive = False

    def writes(self, name: str) -> list:
        out = []
        for n in ast.walk(self.fn):
            if isinstance(n, ast.Assign) and any(source_text(t) == name for t in n.targets):
                out.append(("=", n.value, n))
            elif isinstance(n, ast.AugAssign) and source_text(n.target) == name:
                out.append(("+=", n.value, n))
            elif isinstance(n, ast.AnnAssign) and source_text(n.target) == name and n.value is not None:
                out.append(("=", n.value, n))
            elif (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and source_text(n.func.value) == name
                and n.func.attr in ("append", "extend", "insert")
            ):
                out.append((n.func.attr, n.args[-1] if n.args else None, n))
        return out

    def bound(self, expr) -> bool:
        """``expr`` (an int) is at most the budget."""
        text = source_text(expr)
        if text in BUDGET_NAMES:
            return True
        if isinstance(expr, ast.Constant) and expr.value == 0:
            return True
        if isinstance(expr, ast.Call) and source_text(expr.func) == "min":
            return any(self.bound(a) for a in expr.args)
        if isinstance(expr, ast.Call) and source_text(expr.func) == "max" and len(expr.args) == 1:
            return self.elements(expr.args[0])
        if isinstance(expr, ast.IfExp):
            return self.bound(expr.body) and self.bound(expr.orelse)
        if isinstance(expr, ast.Subscript) and source_text(expr.slice) == "-1":
            return self.elements(expr.value)
        if isinstance(expr, ast.Name):
            return self.local(expr.id, scalar=True, read=expr)
        if text == "self.max_cudagraph_capture_size" and self.fn.name == "adjust_cudagraph_sizes_for_spec_decode":
            # the current largest size: bounded by induction over the writes, all of which are judged
            self.inductive = True
            return True
        return self.guarded(expr, text)

    def guarded(self, node, text: str) -> bool:
        """``text`` is compared ``<=`` a bounded expression in an enclosing ``if`` of ``node``."""
        at = node
        while at in self.parents and at is not self.fn:
            parent = self.parents[at]
            if isinstance(parent, ast.If) and at in parent.body:
                if self.tests_at_most(parent.test, text):
                    return True
            at = parent
        return False

    def tests_at_most(self, test, text: str) -> bool:
        """``test`` holds a comparison ``<text> <= <a bounded expression>``."""
        return any(
            isinstance(cmp, ast.Compare)
            and len(cmp.ops) == 1
            and isinstance(cmp.ops[0], ast.LtE)
            and source_text(cmp.left) == text
            and self.bound(cmp.comparators[0])
            for cmp in ast.walk(test)
        )

    def elements(self, expr) -> bool:
        """Every element of ``expr`` (a list of ints) is at most the budget."""
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return all(self.bound(e) or self.guarded(expr, source_text(e)) for e in expr.elts)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            elt = source_text(expr.elt)
            for gen in expr.generators:
                if any(self.tests_at_most(cond, elt) for cond in gen.ifs):
                    return True
            return False
        if isinstance(expr, ast.Call):
            f = source_text(expr.func)
            if f in ("sorted", "list", "set", "tuple") and len(expr.args) == 1:
                return self.elements(expr.args[0])
            if f == "range" and len(expr.args) >= 2:
                stop = expr.args[1]
                # range(a, B + 1, …) or range(a, min(B + 1, c), …): every element < stop
                stops = stop.args if isinstance(stop, ast.Call) and source_text(stop.func) == "min" else [stop]
                return any(
                    isinstance(s, ast.BinOp)
                    and isinstance(s.op, ast.Add)
                    and source_text(s.right) == "1"
                    and self.bound(s.left)
                    for s in stops
                )
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.elements(expr.left) and self.elements(expr.right)
        if isinstance(expr, ast.Name):
            return self.local(expr.id, scalar=False)
        return False

    def params(self) -> set[str]:
        a = self.fn.args
        return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | {
            x.arg for x in (a.vararg, a.kwarg) if x is not None
        }

    def local(self, name: str, scalar: bool, read=None) -> bool:
        """Every value the local ``name`` can hold (at ``read``, for a scalar) is bounded: a
        parameter never is; a scalar read is bounded by a bounding write that dominates it with no
        other write between (:meth:`dominating_write`), else when every write of it is; a list is
        bounded when every write adds bounded elements (flow-insensitive)."""
        if name in self.params():
            return False
        if scalar and read is not None and self.dominating_write(name, read):
            return True
        key = f"{name}:{scalar}"
        if key in self.seen:
            return True  # a cycle through the same local adds no value its other writes do not
        self.seen.add(key)
        try:
            return self._all_writes(name, scalar)
        finally:
            self.seen.discard(key)

    def _all_writes(self, name: str, scalar: bool) -> bool:
        writes = self.writes(name)
        if not writes:
            return False
        for op, value, node in writes:
            if value is None:
                return False
            if scalar:
                ok = op == "=" and self.bound(value)
            elif op in ("=", "+=", "extend"):
                ok = self.elements(value)
            elif op in ("append", "insert"):
                ok = self.bound(value) or self.guarded(node, source_text(value))
            else:
                ok = False
            if not ok:
                return False
        return True

    def dominating_write(self, name: str, read) -> bool:
        """A statement ``name = <bounded>`` precedes ``read`` in a statement list that holds one of
        ``read``'s ancestors (so every path to ``read`` runs it), and no other write of ``name``
        lies between the two."""
        last = None
        at = read
        while at in self.parents and at is not self.fn:
            parent = self.parents[at]
            for field in ("body", "orelse", "finalbody"):
                stmts = getattr(parent, field, None)
                if isinstance(stmts, list) and any(x is at for x in stmts):
                    for stmt in stmts:
                        if stmt is at:
                            break
                        if (
                            isinstance(stmt, ast.Assign)
                            and [source_text(t) for t in stmt.targets] == [name]
                            and (last is None or stmt.lineno > last.lineno)
                        ):
                            last = stmt
            at = parent
        if last is None:
            return False
        between = [
            node for _, _, node in self.writes(name) if node is not last and last.lineno < node.lineno < read.lineno
        ]
        if between:
            return False
        key = f"{name}@{last.lineno}"
        if key in self.seen:
            return False
        self.seen.add(key)
        try:
            return self.bound(last.value)
        finally:
            self.seen.discard(key)


def judge_capture_size_write(tree, node, parents) -> tuple[str, str]:
    """``(result, why)`` for one write of a capture-size attribute (``node``: an Assign, AugAssign or
    call of ``.append``/``.extend``/``.insert``) in ``tree``: ``checked`` when its value is an empty
    list or 0, or at most the token budget (:class:`_Bounds`), or guarded by a raise when it exceeds
    the budget; else ``not checked``."""
    fn = _enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
    value = node.value if isinstance(node, (ast.Assign, ast.AugAssign)) else (node.args[-1] if node.args else None)
    if value is None or fn is None:
        return "not checked", "not inside a function"
    text = source_text(value)
    if text in ("0", "[]"):
        return "checked", f"sets {text}: no capture size"
    target = source_text(node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", node.func))
    bounds = _Bounds(fn, parents)
    is_list = target.endswith("cudagraph_capture_sizes") or (
        isinstance(node, ast.Call) and node.func.attr in ("extend",)
    )
    ok = bounds.elements(value) if is_list else bounds.bound(value)
    if ok:
        how = (
            "at most the current max_cudagraph_capture_size, itself at most max_num_batched_tokens (every write "
            "of it is judged here)"
            if bounds.inductive
            else "every size <= max_num_batched_tokens"
        )
        return "checked", f"{target} = {text[:80]}: {how} (bounded in {fn.name})"
    # a size list checked by a raise in the same function: if max(X) > <budget>: raise
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.If)
            and isinstance(n.test, ast.Compare)
            and len(n.test.ops) == 1
            and isinstance(n.test.ops[0], ast.Gt)
            and source_text(n.test.comparators[0]) in BUDGET_NAMES
            and any(isinstance(b, ast.Raise) for b in n.body)
            and n.lineno < node.lineno
        ):
            left = source_text(n.test.left)
            if left in (f"max({text})", text) or (text.startswith("max(") and left == text):
                return (
                    "checked",
                    f"{target} = {text[:60]}: {fn.name} raises when {left} > {source_text(n.test.comparators[0])}",
                )
    return "not checked", f"{target} = {text[:80]}: no bound by max_num_batched_tokens found in {fn.name}"


def _config_keywords(tree):
    """Calls that build or copy a compilation config with a capture-size keyword
    (``CompilationConfig(cudagraph_capture_sizes=…)``, ``replace(cc, max_cudagraph_capture_size=…)``)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and (source_text(node.func).endswith("CompilationConfig") or source_text(node.func).endswith("replace"))
            and any(k.arg in SIZE_ATTRS for k in node.keywords)
        ):
            yield node


def _size_writes(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr in SIZE_ATTRS for t in targets):
                yield node
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "insert")
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in SIZE_ATTRS
        ):
            yield node


def _post_init_order(root: str) -> tuple[int, int] | None:
    """Lines of ``self.try_verify_and_update_config()`` and ``self._set_cudagraph_sizes()`` in
    ``VllmConfig.__post_init__`` (the second may sit in a nested block), or None."""
    fn = function_def(root, VLLM_CONFIG, "__post_init__", "VllmConfig")
    if fn is None:
        return None
    lines = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and source_text(n.func) in (
            "self.try_verify_and_update_config",
            "self._set_cudagraph_sizes",
        ):
            lines.setdefault(source_text(n.func), n.lineno)
    if len(lines) != 2:
        return None
    # without the call (no static graph mode), the same if's else turns CUDA graphs off
    parents = parent_map(fn)
    call = next(
        n for n in ast.walk(fn) if isinstance(n, ast.Call) and source_text(n.func) == "self._set_cudagraph_sizes"
    )
    guard = _enclosing(call, parents, (ast.If,))
    if guard is None or [source_text(s) for s in guard.orelse] != [
        "self.compilation_config.cudagraph_mode=CUDAGraphMode.NONE"
    ]:
        return None
    return lines["self.try_verify_and_update_config"], lines["self._set_cudagraph_sizes"]


_OFF = " (or, without static graph mode, the else branch sets cudagraph_mode NONE: no candidate is made)"


def _input_site(root: str, rel: str, tree, node, parents) -> str | None:
    """Why a write is an input ``_set_cudagraph_sizes`` recomputes from (it runs later), or None."""
    order = _post_init_order(root)
    if order is None or order[0] >= order[1]:
        return None
    fn = _enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
    if rel == "vllm/engine/arg_utils.py" and fn is not None and fn.name == "create_engine_config":
        builds = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Call) and source_text(n.func) == "VllmConfig" and n.lineno > node.lineno
        ]
        if builds:
            return (
                f"an engine argument written before VllmConfig(...) (line {builds[0].lineno}); its __post_init__ "
                f"calls _set_cudagraph_sizes ({VLLM_CONFIG}:{order[1]}), which recomputes both from it{_OFF}"
            )
    if fn is not None and fn.name == "verify_and_update_config":
        guard = _enclosing(node, parents, (ast.If,))
        test = source_text(guard.test) if guard is not None else ""
        if "cudagraph_capture_sizesisNone" in test and "max_cudagraph_capture_sizeisNone" in test:
            return (
                f"a model's verify_and_update_config, called by try_verify_and_update_config ({VLLM_CONFIG}:"
                f"{order[0]}) before _set_cudagraph_sizes ({VLLM_CONFIG}:{order[1]}), which recomputes both from it{_OFF}"
            )
    return None


def capture_size_sites(root: str) -> list[dict]:
    """One path record per write of ``cudagraph_capture_sizes``/``max_cudagraph_capture_size``
    in ``vllm/`` (AST; module docstring, step 1), and one (not checked) per compilation config built
    or copied with such a keyword."""
    from .wheels import py_files

    out = []
    for rel, path in py_files(root):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if "cudagraph_capture_size" not in text:
            continue
        tree = ast.parse(text)
        parents = parent_map(tree)
        for node in sorted(_size_writes(tree), key=lambda n: n.lineno):
            why = _input_site(root, rel, tree, node, parents)
            result = "checked" if why else None
            if why is None:
                result, why = judge_capture_size_write(tree, node, parents)
            out.append(_path(f"{rel}:{node.lineno}", "a CUDA-graph capture size (V1 and V2)", "ast", result, why))
        for node in _config_keywords(tree):
            out.append(
                _path(
                    f"{rel}:{node.lineno}",
                    "a CUDA-graph capture size (V1 and V2)",
                    "ast",
                    "not checked",
                    f"a compilation config built with a capture-size keyword ({source_text(node.func)}): not read",
                )
            )
    return out


# ---------------------------------------------------------------------------------------------
# 2. Candidates (executed on one symbolic capture size)


class _StopAtTable(Exception):
    """Raised where ``_init_candidates`` starts filling its token-count table (a ``range``)."""


def capture_descriptors(cgu, manager) -> list:
    """The CUDA-graph capture descriptors vLLM's own ``CudaGraphManager._init_candidates`` builds
    for ``manager`` (vllm/v1/worker/gpu/cudagraph_utils.py), run up to where it fills its lookup
    table from them (``groupby``, which a symbolic size cannot drive). ``cgu`` is that module."""

    def stop(*a, **k):
        raise _StopAtTable

    saved = cgu.groupby
    cgu.groupby = stop
    try:
        manager._init_candidates()
    except _StopAtTable:
        pass
    finally:
        cgu.groupby = saved
    return [d for descs in manager._capture_descs.values() for d in descs]


CANDIDATE_NAMES = (
    "capture_size",
    "max_cudagraph_capture_size",
    "max_num_reqs",
    "decode_query_len",
    "num_ubatches",
    "dbo_decode_token_threshold",
    "dbo_prefill_token_threshold",
)
CANDIDATE_FLAGS = ("varlen_decode", "use_ubatching", "use_kda_recoverssm")


def _loop_body_reads_other_sizes(root: str) -> str | None:
    """Why the candidate loop over ``product(capture_sizes, …)`` is not per-size, or None when its
    body names no ``capture_sizes``, the table is filled from ``descs_by_mode`` only, and no other
    code of the file writes the table (its constructor sets it to ``{}``)."""
    fn = function_def(root, CUDAGRAPH_UTILS, "_init_candidates", "CudaGraphManager")
    if fn is None:
        return "CudaGraphManager._init_candidates not found"
    loops = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and source_text(n.iter.func) == "product"
    ]
    if len(loops) != 1 or source_text(loops[0].iter.args[0]) != "capture_sizes":
        return "the loop over product(capture_sizes, …) not found once"
    if any(isinstance(x, ast.Name) and x.id == "capture_sizes" for b in loops[0].body for x in ast.walk(b)):
        return "the candidate loop body reads capture_sizes"
    stmts = {source_text(n) for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.Expr))}
    for want in (
        "mode_descs=tuple(reversed(descs_by_mode.get(mode,[])))",
        "lora_descs=[dfordinmode_descsifd.num_active_loras==num_active_loras]",
        "matching=list(group)",
        "self._candidates.setdefault(key,[]).extend(matching)",
    ):
        if want not in stmts:
            return f"the candidate table's fill not found as {want}"
    tree = _tree(root, CUDAGRAPH_UTILS)
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(source_text(t) == "self._candidates" for t in targets) and not (
                isinstance(n, ast.AnnAssign) and source_text(n.value) == "{}"
            ):
                return f"{CUDAGRAPH_UTILS}:{n.lineno} writes the candidate table"
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            holder = source_text(n.func.value)
            if holder == "self._candidates" and n.func.attr != "setdefault":
                return f"{CUDAGRAPH_UTILS}:{n.lineno} changes the candidate table ({n.func.attr})"
            if holder.startswith("self._candidates.setdefault(") and source_text(n) != (
                "self._candidates.setdefault(key,[]).extend(matching)"
            ):
                return f"{CUDAGRAPH_UTILS}:{n.lineno} changes the candidate table"
    return None


def candidate_tokens(root: str) -> dict:
    """Path record: every descriptor ``CudaGraphManager._init_candidates`` makes has ``num_tokens
    <= max(capture size, max_cudagraph_capture_size)`` (module docstring, step 2), proved by Z3 on
    every path of every mode. Needs vLLM importable. Raises RuntimeError when a run fails."""
    import z3
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu import cudagraph_utils as cgu

    problem = _loop_body_reads_other_sizes(root)
    if problem:
        return _path(CUDAGRAPH_UTILS, "V2 capture descriptors' token counts", "executed", "not checked", problem)
    v = {n: SymInt.var(n) for n in CANDIDATE_NAMES + CANDIDATE_FLAGS}
    assume = [z3.Int(n) >= 1 for n in CANDIDATE_NAMES]
    assume += [z3.Or(z3.Int(f) == 0, z3.Int(f) == 1) for f in CANDIDATE_FLAGS]
    cap, mcs = z3.Int("capture_size"), z3.Int("max_cudagraph_capture_size")
    bound = z3.If(cap >= mcs, cap, mcs)
    runs = []
    for mode in CUDAGraphMode:
        for dbo in (False, True):

            def run(mode=mode, dbo=dbo):
                m = cgu.CudaGraphManager.__new__(cgu.CudaGraphManager)
                m.vllm_config = SimpleNamespace(
                    speculative_config=None,
                    parallel_config=SimpleNamespace(
                        num_ubatches=v["num_ubatches"],
                        use_ubatching=v["use_ubatching"] == 1,
                        dbo_decode_token_threshold=v["dbo_decode_token_threshold"],
                        dbo_prefill_token_threshold=v["dbo_prefill_token_threshold"],
                    ),
                    cache_config=SimpleNamespace(use_kda_recoverssm=v["use_kda_recoverssm"] == 1),
                    num_speculative_tokens=0,
                )
                m.compilation_config = SimpleNamespace(
                    cudagraph_capture_sizes=[v["capture_size"]],
                    max_cudagraph_capture_size=v["max_cudagraph_capture_size"],
                )
                m.max_num_reqs = v["max_num_reqs"]
                m.cudagraph_mode = mode
                m.decode_query_len = v["decode_query_len"]
                m.varlen_decode = v["varlen_decode"] == 1
                m.ubatch_runner = object() if dbo else None
                m.lora_capture_cases = [0, 1]
                m._candidates, m._capture_descs = {}, {}

                worst = 0
                for d in capture_descriptors(cgu, m):
                    worst = d.num_tokens if d.num_tokens > worst else worst
                return worst

            term, notes = run_paths(run, assume, budget=4096)
            verdict, s = _exceeds(assume, term, bound)
            if verdict != z3.unsat:
                return _path(
                    CUDAGRAPH_UTILS,
                    "V2 capture descriptors' token counts",
                    "executed",
                    "counterexample" if verdict == z3.sat else "not checked",
                    f"_init_candidates, mode {mode.name}, DBO {dbo}: a descriptor above max(capture size, "
                    f"max_cudagraph_capture_size) ({verdict}: {s.model() if verdict == z3.sat else ''})",
                )
            runs.append(f"{mode.name}{'+DBO' if dbo else ''}")
    return _path(
        f"{CUDAGRAPH_UTILS}:256-395",
        "V2 capture descriptors' token counts",
        "executed",
        "checked",
        "CudaGraphManager._init_candidates run on one symbolic capture size s (the loop body reads no other "
        "size) on every path of " + ", ".join(runs) + " (varlen decode, recoverSSM, DBO thresholds, "
        "max_num_reqs, decode_query_len symbolic): every descriptor's num_tokens <= max(s, "
        "max_cudagraph_capture_size), Z3 unsat; the candidate table holds only these descriptors",
    )


# ---------------------------------------------------------------------------------------------
# 3. Dispatch and DP sync (executed on symbolic sizes)


class _Row(list):
    """One row of the ``[7, dp_size]`` tensor ``sync_cudagraph_and_dp_padding`` all-reduces."""

    def __eq__(self, other):  # noqa: D105 - elementwise, as a tensor
        return [x == other for x in self]

    def __ne__(self, other):  # noqa: D105
        return [x != other for x in self]

    __hash__ = None

    def min(self):
        return min(self)

    def max(self):
        return max(self)

    def __setitem__(self, key, value):
        if isinstance(key, slice) and not isinstance(value, list):
            for i in range(len(self)):
                list.__setitem__(self, i, value)
        else:
            list.__setitem__(self, key, value)


class _Column(list):
    def clone(self):
        return _Column(self)


class _Table:
    """The all-reduced tensor: ``t[i]`` a :class:`_Row` (shared), ``t[:, r, None]`` rank ``r``'s
    column, ``t[:] = column`` every rank's column set to it."""

    def __init__(self, rows: int, cols: int):
        self.rows = [_Row([0] * cols) for _ in range(rows)]

    def __getitem__(self, key):
        if isinstance(key, tuple):
            _, col, _ = key
            return _Column(r[col] for r in self.rows)
        return self.rows[key]

    def __setitem__(self, key, value):
        if key != slice(None) or not isinstance(value, _Column):
            raise TypeError(f"all-reduced tensor written as [{key!r}]")
        for r, x in zip(self.rows, value):
            for i in range(len(r)):
                list.__setitem__(r, i, x)


class _All:
    def __init__(self, value: bool):
        self.value = value

    def __bool__(self):
        return bool(self.value)

    def item(self):
        return self.value


def _torch_stand_in():
    return SimpleNamespace(
        zeros=lambda rows, cols, **k: _Table(rows, cols),
        int32=None,
        all=lambda xs: _All(all(xs)),
        full_like=lambda row, value: _Row([value] * len(row)),
    )


DISPATCH_NAMES = (
    "num_tokens",
    "num_tokens_other_rank",
    "candidate_bound",
    "candidate_tokens_0",
    "candidate_tokens_1",
    "candidate_tokens_2",
    "candidate_ubatches",
    "uniform_token_count",
    "uniform_token_count_other_rank",
    "max_query_len",
    "max_query_len_other_rank",
    "num_ubatches",
    "dbo_threshold",
)
#: Counts that are at least 1 where they are set (a maximum or a per-request count of a batch).
DISPATCH_POSITIVE = ("uniform_token_count", "max_query_len", "num_ubatches", "candidate_ubatches")
DISPATCH_FLAGS = (
    "key_present",
    "graphs_captured",
    "ubatching_other_rank",
    "uniform",
    "use_ubatching",
)


class _Candidates:
    """The candidate table: membership a free flag; each lookup one descriptor with a fresh
    symbolic token count ``candidate_tokens_i`` (at most ``candidate_bound``) and micro-batch
    count. Whether ``dispatch`` returns it or falls back is decided by vLLM's ``_is_compatible``
    on those symbolic fields: both outcomes are explored."""

    def __init__(self, v, desc_cls):
        self.v = v
        self.desc_cls = desc_cls
        self.calls = 0

    def __contains__(self, key):
        return self.v["key_present"] == 1

    def __getitem__(self, key):
        from vllm.config.compilation import CUDAGraphMode

        i = self.calls
        self.calls += 1
        v = self.v
        return [
            self.desc_cls(
                cg_mode=CUDAGraphMode.FULL,
                num_tokens=v[f"candidate_tokens_{i}"],
                num_reqs=None,
                num_ubatches=v["candidate_ubatches"],
            )
        ]


def dispatch_tokens() -> dict:
    """Path record: the V2 runner's padded count ``max(num_tokens, batch_desc.num_tokens)`` and every
    entry of the DP sync's ``num_tokens_across_dp`` are at most ``max(num_tokens,
    num_tokens_other_rank, candidate_bound)`` on every path of vLLM's ``dispatch_cg_and_sync_dp``
    (module docstring, step 3). Needs vLLM importable. Raises RuntimeError when a run fails."""
    import z3
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu import cudagraph_utils as cgu
    from vllm.v1.worker.gpu import dp_utils as v2dp

    v = {n: SymInt.var(n) for n in DISPATCH_NAMES + DISPATCH_FLAGS}
    z = {n: z3.Int(n) for n in DISPATCH_NAMES + DISPATCH_FLAGS}
    assume = [z[n] >= 0 for n in DISPATCH_NAMES]
    assume += [z3.Or(z[f] == 0, z[f] == 1) for f in DISPATCH_FLAGS]
    assume += [z[f"candidate_tokens_{i}"] <= z["candidate_bound"] for i in range(3)]
    assume += [z[n] >= 1 for n in DISPATCH_POSITIVE]
    top = z3.If(z["num_tokens"] >= z["num_tokens_other_rank"], z["num_tokens"], z["num_tokens_other_rank"])
    bound = z3.If(top >= z["candidate_bound"], top, z["candidate_bound"])
    runs = 0
    # a reused sync returns before any collective; coordination skipped copies this rank's column
    # over the other's; else the other rank's mode is one a V2 descriptor carries
    configs = [(CUDAGraphMode.NONE, False, reuse, False) for reuse in (False, True)]
    configs += [(CUDAGraphMode.NONE, True, None, dbo) for dbo in (False, True)]
    configs += [
        (mode, False, None, False) for mode in (CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL)
    ]
    # with DBO allowed, the micro-batch branch reads no mode; where its thresholds fail the code
    # after it is the same as without DBO (which runs every mode above)
    configs.append((CUDAGraphMode.FULL, False, None, True))
    for other_mode, skip, reuse, allow_ubatching in configs:

        def run(other_mode=other_mode, skip=skip, reuse=reuse, allow_ubatching=allow_ubatching):
            m = cgu.CudaGraphManager.__new__(cgu.CudaGraphManager)
            m._candidates = _Candidates(v, cgu.BatchExecutionDescriptor)
            m._graphs_captured = v["graphs_captured"] == 1
            m._lora_dispatch_map, m._max_lora_case = {}, 0
            parallel = SimpleNamespace(
                use_ubatching=v["use_ubatching"] == 1,
                num_ubatches=v["num_ubatches"],
                dbo_decode_token_threshold=v["dbo_threshold"],
                dbo_prefill_token_threshold=v["dbo_threshold"],
            )
            other = [
                v["num_tokens_other_rank"],
                other_mode.value,
                v["uniform_token_count_other_rank"],
                v["max_query_len_other_rank"],
                v["ubatching_other_rank"],
                1,  # the other rank's request count: read into num_reqs fields only
                0,  # its skip-drafts vote: read into skip_drafts only
            ]

            def all_reduce(t):
                for row, x in zip(t.rows, other):
                    list.__setitem__(row, 1, x)

            sync = None
            if reuse is not None:
                sync = v2dp.DPSyncState(
                    num_tokens_across_dp=_Row([v["num_tokens"], v["num_tokens_other_rank"]]),
                    uniform_token_count=None,
                    eager=reuse,
                    num_reqs=1,
                )
            saved = (v2dp.torch, v2dp.get_dp_group, v2dp.should_skip_dp_coordination, v2dp.__dict__.get("int"))
            v2dp.torch = _torch_stand_in()
            v2dp.get_dp_group = lambda: SimpleNamespace(cpu_all_reduce_=all_reduce)
            v2dp.should_skip_dp_coordination = lambda: skip
            v2dp.int = lambda x: x  # int() of a count: the count itself
            try:
                desc, state = v2dp.dispatch_cg_and_sync_dp(
                    m,
                    1,  # request counts reach no token count (num_reqs fields only)
                    v["num_tokens"],
                    v["uniform_token_count"] if v["uniform"] == 1 else None,
                    2,
                    0,
                    max_query_len=v["max_query_len"],
                    parallel_config=parallel,
                    allow_ubatching=allow_ubatching,
                    uniform_decode=v["uniform"] == 1,
                    dp_sync_state=sync,
                )
            finally:
                v2dp.torch, v2dp.get_dp_group, v2dp.should_skip_dp_coordination = saved[:3]
                if saved[3] is None:
                    del v2dp.int
                else:
                    v2dp.int = saved[3]
            # model_runner.py:1396: num_tokens_after_padding = max(num_tokens, batch_desc.num_tokens)
            worst = max(v["num_tokens"], desc.num_tokens)
            if state is not None:
                for x in state.num_tokens_across_dp:
                    worst = x if x > worst else worst
            return worst

        term, notes = run_paths(run, assume, budget=4096)
        verdict, s = _exceeds(assume, term, bound)
        runs += 1
        if verdict != z3.unsat:
            return _path(
                DP_UTILS,
                "the V2 runner's padded token count",
                "executed",
                "counterexample" if verdict == z3.sat else "not checked",
                f"dispatch_cg_and_sync_dp (other rank {other_mode.name}, skip {skip}, reused sync "
                f"{reuse}, DBO {allow_ubatching}): above max(num_tokens of the ranks, candidate bound) "
                f"({verdict}: {s.model() if verdict == z3.sat else ''})"[:400],
            )
    return _path(
        f"{DP_UTILS}:48-328",
        "the V2 runner's padded token count",
        "executed",
        "checked",
        f"CudaGraphManager.dispatch, dispatch_cg_and_sync_dp and sync_cudagraph_and_dp_padding run on symbolic "
        f"sizes ({runs} configurations: the other DP rank's mode, coordination skipped or not, a reused sync "
        "eager/not/none, DBO allowed or not; candidates of symbolic size <= C): max(num_tokens, "
        "batch_desc.num_tokens) (model_runner.py:1396) and every num_tokens_across_dp entry <= "
        "max(num_tokens, the other rank's num_tokens, C), Z3 unsat",
    )


# ---------------------------------------------------------------------------------------------
# The runner's unpadded counts, its padding statement and the speculators' dispatches (AST)


def _tree(root: str, rel: str):
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        return ast.parse(fh.read())


def runner_counts(root: str) -> list[dict]:
    """Path records of the V2 runner's token counts (AST): the padding statement of
    ``prepare_inputs``, the count ``execute_model`` dispatches (the scheduler's total, the
    adaptive-verification trim, PCP's rank-local count) and the dummy run's assert."""
    out = []
    sets = "the V2 runner's token count"
    fn = function_def(root, V2_RUNNER, "prepare_inputs", "GPUModelRunner")
    pads = [
        n
        for n in (ast.walk(fn) if fn is not None else [])
        if isinstance(n, ast.Assign)
        and source_text(n) == "num_tokens_after_padding=max(num_tokens,batch_desc.num_tokens)"
    ]
    others = [
        n
        for n in ast.walk(_tree(root, V2_RUNNER))
        if isinstance(n, ast.Assign)
        and any(source_text(t) == "num_tokens_after_padding" for t in n.targets)
        and n.lineno not in [x.lineno for x in pads]
    ]
    out.append(
        _path(
            f"{V2_RUNNER}:{pads[0].lineno if pads else '?'}",
            sets,
            "ast",
            "checked" if pads and not others else "not checked",
            "num_tokens_after_padding = max(num_tokens, batch_desc.num_tokens), batch_desc from "
            "dispatch_cg_and_sync_dp (run on symbolic sizes: dispatch path)"
            + (f"; also assigned at {[n.lineno for n in others]}" if others else ""),
        )
    )
    ex = function_def(root, V2_RUNNER, "execute_model", "GPUModelRunner")
    gather = function_def(root, V2_RUNNER, "gather_batch_req_state", "GPUModelRunner")
    sources = sorted(
        {
            source_text(n.value)
            for f in (ex, gather)
            if f is not None
            for n in ast.walk(f)
            if isinstance(n, ast.Assign) and [source_text(t) for t in n.targets] in (["num_toks"],)
        }
    )
    known = {
        "scheduler_output.total_num_scheduled_tokens": "the scheduler's total (its token budget, "
        "vllm/v1/core/sched/scheduler.py: checked with the V1 runner's fact)",
        "batch_req_state.num_tokens": "gather_batch_req_state's num_toks (the other forms here)",
    }
    for text in sources:
        if text in known:
            out.append(_path(f"{V2_RUNNER}:num_toks", sets, "ast", "checked", f"num_toks = {text}: {known[text]}"))
        elif text.startswith("self.adaptive_verification.get_num_tokens("):
            out.append(_adaptive_trim(root))
        elif text.startswith("self.pcp_manager.get_num_tokens_for_dispatch("):
            out.append(_pcp_count(root))
        else:
            out.append(_path(f"{V2_RUNNER}:num_toks", sets, "ast", "not checked", f"num_toks = {text[:120]}: not read"))
    out.append(_dummy_assert(root))
    return out


def _adaptive_trim(root: str) -> dict:
    """``AdaptiveVerificationManager.get_num_tokens`` returns the non-draft tokens plus ``draft_budget``,
    an ``argmax`` over an array of at most ``max_draft_budget + 1`` entries, ``max_draft_budget <=
    scheduled_drafts.sum()``: at most the scheduled total (AST, the statements' forms)."""
    rel = "vllm/v1/worker/gpu/spec_decode/adaptive_verification.py"
    fn = function_def(root, rel, "get_num_tokens", "AdaptiveVerificationManager")
    want = [
        "num_non_draft_tokens=scheduled_tokens-scheduled_drafts",
        "max_draft_budget=min(int(scheduled_drafts.sum()),max(0,self._max_total_logits-num_reqs*self.num_bonus_tokens))",
        "scores=scores[:max_draft_budget]",
        "num_tokens_to_estimated_accepted_tokens=np.concatenate(([num_sampling_requests],num_sampling_requests+np.cumsum(scores)))",
        "draft_budget=int(np.argmax(num_tokens_to_estimated_accepted_tokens/costs))",
    ]
    stmts = {source_text(n) for n in ast.walk(fn) if isinstance(n, ast.Assign)} if fn is not None else set()
    returns = [source_text(n.value) for n in ast.walk(fn) if isinstance(n, ast.Return)] if fn is not None else []
    missing = [w for w in want if w not in stmts]
    ok = not missing and returns == ["sum(num_non_draft_tokens_per_req.values())+draft_budget"]
    # the per-request non-draft counts are num_non_draft_tokens zipped with the request ids
    ok = ok and any("num_non_draft_tokens_per_req={" in s and "zip(req_ids,num_non_draft_tokens" in s for s in stmts)
    return _path(
        f"{rel}:{fn.lineno if fn is not None else '?'}",
        "the V2 runner's token count with adaptive verification",
        "ast",
        "checked" if ok else "not checked",
        "get_num_tokens returns sum(scheduled - drafts) + argmax over 1 + len(scores[:max_draft_budget]) "
        "entries, max_draft_budget <= sum(drafts): at most the scheduled total"
        + (f" (not found: {missing[0][:80]})" if missing else ""),
    )


def _pcp_count(root: str) -> dict:
    """``PCPManager.get_num_tokens_for_dispatch``: the largest rank's sum of chunk lengths
    ``_iter_rank_chunks`` yields; a request's chunks on one rank are distinct chunks of its query
    (``(rank, 2 * pcp - 1 - rank)``, lengths ``min(chunk_size, query_len - offset)``), so a rank
    holds at most the request's tokens. Run on symbolic sizes per request (executed)."""
    import z3
    from vllm.v1.worker.gpu import pcp_manager as pm

    rel = "vllm/v1/worker/gpu/pcp_manager.py"
    names = ("query_len", "pcp_world_size", "rank")
    flags = ("replicated", "shard_decode_requests")
    v = {n: SymInt.var(n) for n in names + flags}
    q, p, r = (z3.Int(n) for n in names)
    assume = [q >= 0, p >= 1, r >= 0, r < p] + [z3.Or(z3.Int(f) == 0, z3.Int(f) == 1) for f in flags]

    def run():
        me = SimpleNamespace(
            pcp_world_size=v["pcp_world_size"],
            shard_decode_requests=v["shard_decode_requests"] == 1,
            replicated_requests=lambda n, p: [v["replicated"] == 1],
        )
        saved = pm.__dict__.get("int")
        pm.int = lambda x: x
        try:
            total = 0
            for _, _, length in pm.PCPManager._iter_rank_chunks(me, v["rank"], [v["query_len"]], [True]):
                total = total + length
        finally:
            if saved is None:
                del pm.int
            else:
                pm.int = saved
        return total

    try:
        term, _ = run_paths(run, assume, budget=512)
    except RuntimeError as exc:
        return _path(rel, "PCP's rank-local token count", "executed", "not checked", f"run failed: {exc}")
    verdict, _ = _exceeds(assume, term, q, rlimit=200_000_000)
    fn = function_def(root, rel, "get_num_tokens_for_dispatch", "PCPManager")
    body = source_text(fn.body[-1]) if fn is not None else ""
    shape = body == (
        "returnmax((sum((chunk_lenfor_,_,chunk_leninself._iter_rank_chunks(rank,num_scheduled_tokens,"
        "is_prefilling)))forrankinrange(self.pcp_world_size)))"
    )
    return _path(
        f"{rel}:{fn.lineno if fn is not None else '?'}",
        "PCP's rank-local token count",
        "executed",
        "checked" if verdict == z3.unsat and shape else "not checked",
        f"_iter_rank_chunks run on one request of symbolic length on a symbolic rank (replicated, sharded "
        f"decode on/off): the rank's chunk lengths sum to at most the request's ({verdict}); "
        "get_num_tokens_for_dispatch is the largest rank's sum over requests"
        + ("" if shape else " (its return statement not found in that form)"),
    )


def _dummy_assert(root: str) -> dict:
    fn = function_def(root, V2_RUNNER, "_dummy_run", "GPUModelRunner")
    asserts = [
        a.lineno
        for a in (ast.walk(fn) if fn is not None else [])
        if isinstance(a, ast.Assert) and source_text(a.test) == "num_tokens<=self.max_num_tokens"
    ]
    writes = [
        a
        for a in (ast.walk(fn) if fn is not None else [])
        if isinstance(a, ast.Assign)
        and source_text(a.targets[0]) == "dummy_scheduler_output.total_num_scheduled_tokens"
    ]
    later = [
        a.lineno
        for a in (ast.walk(fn) if fn is not None else [])
        if isinstance(a, (ast.Assign, ast.AugAssign))
        and "num_tokens" in [source_text(t) for t in (a.targets if isinstance(a, ast.Assign) else [a.target])]
        and asserts
        and a.lineno > asserts[0]
        and writes
        and a.lineno < writes[0].lineno
    ]
    init = function_def(root, V2_RUNNER, "__init__", "GPUModelRunner")
    budget = any(
        isinstance(n, ast.Assign)
        and [source_text(t) for t in n.targets] == ["self.max_num_tokens"]
        and source_text(n.value) == "self.scheduler_config.max_num_batched_tokens"
        for n in (ast.walk(init) if init is not None else [])
    )
    ok = bool(asserts and writes and not later and budget and source_text(writes[0].value) == "num_tokens")
    return _path(
        f"{V2_RUNNER}:{asserts[0] if asserts else '?'}",
        "the V2 dummy run's token count",
        "ast",
        "checked" if ok else "not checked",
        "_dummy_run asserts num_tokens <= self.max_num_tokens (= scheduler_config.max_num_batched_tokens) before "
        "the dummy scheduler output's total, not reassigned in between",
    )


def speculator_sites(root: str) -> list[dict]:
    """One path per ``dispatch_cg_and_sync_dp`` call of the V2 speculators: ``checked`` when the
    count it passes is the target's padded count (``input_batch.num_tokens_after_padding``), else
    ``not checked`` (the speculator's own count, not read here)."""
    out = []
    base = os.path.join(root, SPECULATORS)
    for dirpath, dirs, files in os.walk(base):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
            tree = _tree(root, rel)
            for c in ast.walk(tree):
                if isinstance(c, ast.Call) and source_text(c.func) == "dispatch_cg_and_sync_dp" and len(c.args) >= 3:
                    count = source_text(c.args[2])
                    ok = count == "input_batch.num_tokens_after_padding"
                    out.append(
                        _path(
                            f"{rel}:{c.lineno}",
                            "a V2 speculator's padded token count",
                            "ast",
                            "checked" if ok else "not checked",
                            f"dispatch_cg_and_sync_dp({count}, …) over the speculator's own manager: "
                            + (
                                "the target's padded count (checked), padded by the same dispatch"
                                if ok
                                else "the speculator's own count, not read here"
                            ),
                        )
                    )
    return out


def v2_token_paths(root: str) -> list[dict]:
    """Every path of the V2 runner's token fact (module docstring), in order: capture sizes,
    candidates, dispatch and DP sync, the runner's counts, the speculators."""
    return (
        capture_size_sites(root)
        + [candidate_tokens(root), dispatch_tokens()]
        + runner_counts(root)
        + speculator_sites(root)
    )
