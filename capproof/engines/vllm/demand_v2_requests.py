"""The V2 runner's request counts, checked on every path that sets them (vLLM's code, AST).

The V2 runner (``vllm/v1/worker/gpu/``) sizes a step's rows by request counts that come from
several places: the scheduler output (``len(scheduler_output.num_scheduled_tokens)``), its own
dummy runs (``_dummy_run``: profile, warm-up, DP dummy batches), the warm-up scheduler outputs
(``warmup.py``), CUDA-graph descriptors (``CudaGraphManager._init_candidates`` and ``dispatch``,
the speculators' managers), DP/micro-batch agreement (``dp_utils.py``) and the dummy batches of
capture (``InputBatch.make_dummy``). :func:`v2_requests_fact` checks, for each **site that
constructs a batch descriptor or a dummy batch** (every ``BatchExecutionDescriptor(...)``/
``SpeculatorBatchDescriptor(...)`` with a ``num_reqs`` argument, every ``replace(..., num_reqs=...)``
and every ``InputBatch.make_dummy(...)`` call under ``vllm/v1/worker/gpu/``), that the request
count it passes is at most ``max_num_reqs``, following the count through assignments and through
every call site of the enclosing function (the same reading as :mod:`.demand_slots`). Each site is
one path of the fact, listed checked or not; the fact is checked only when every path is.

What a count may be (each a leaf of the reading):

- ``min(..., b)`` with some argument bounded; ``a or b`` with both bounded (``None``/``0`` falls back);
- ``self.max_num_reqs`` of a class whose every assignment of it is ``...scheduler_config.max_num_seqs``;
- a descriptor's ``.num_reqs`` (a parameter annotated with a descriptor class, or a name bound to
  ``.dispatch(...)``/``dispatch_cg_and_sync_dp(...)``): bounded by this same fact, by induction on
  the order descriptors are made (every construction site is a path checked here);
- ``len(scheduler_output.num_scheduled_tokens)``: the scheduler's count (its asserts, the
  ``schedule`` overrides: :func:`.demand.unpadded_requests_bound`) or a dummy or warm-up scheduler
  output, whose every ``num_scheduled_tokens`` store under ``vllm/v1/worker/gpu/`` is checked as a
  path (a comprehension over ``range(n)``/``enumerate`` of one, or a literal of at most 2 entries,
  with ``n`` bounded, the 2-entry warm-up guarded by ``max_num_reqs < 2: return``);
- ``_dummy_run``'s ``num_reqs``: its ``min`` assignments, and ``num_tokens // self.decode_query_len``
  under ``uniform_decode`` when every ``_dummy_run(..., uniform_decode=True)`` call in
  ``vllm/v1/worker/`` passes ``getattr(self.model_runner, "uniform_decode_query_len", 1)`` and no
  file of ``vllm/v1/worker/gpu/`` names ``uniform_decode_query_len`` (so the count is
  ``max(1, q) // q = 1``);
- an integer literal ``0`` or ``1`` (``max_num_reqs >= 1``).

Anything else leaves its path "not checked" with the expression named.
"""

from __future__ import annotations

import ast

from ..tracing.derive import assigned
from .demand_slots import (
    GPU_DIR,
    STATES,
    SlotJudge,
    class_of,
    enclosing_function,
    parsed_files,
    slot_array_fact,
    slot_fact,
    slot_rows_uses,
    source_text,
)
from .fact_v2_dummy_tokens import dummy_return_fact, zero_returns
from .fact_v2_profile_state import profile_state_fact

__all__ = ["CountJudge", "v2_requests_fact", "derive_slot_rows"]

DESCRIPTORS = ("BatchExecutionDescriptor", "SpeculatorBatchDescriptor")


class CountJudge(SlotJudge):
    """``scalar`` here judges "a request count <= max_num_reqs" (see the module docstring)."""

    def __init__(self, root: str, scheduler_checked: bool, induction: bool = True, own_state: bool = False):
        super().__init__(root, arrays_ok=False)
        self.root = root
        self.scheduler_checked = scheduler_checked
        # the dummy sampler run's chain taken as if ``_dummy_run`` read the state its own
        # ``execute_model`` stored (an early return not excluded): only to tell which other paths
        # hold given that count, never a check of its own
        self.own_state = own_state
        # links of a chain read on the way that rest on another checked fact (say why a path holds)
        self.notes: list[str] = []
        # descriptor and InputBatch counts are bounded by induction over their construction
        # sites: sound only while collecting those sites or once every one of them is checked
        self.induction = induction
        self.why: list[str] = []
        worker = parsed_files(root, "vllm/v1/worker")
        self.uniform_ok = self._uniform_dummy_ok(worker)

    def _uniform_dummy_ok(self, worker) -> bool:
        for rel, tree, _p in worker:
            if rel.startswith(GPU_DIR + "/") and "uniform_decode_query_len" in ast.unparse(tree):
                return False
        for rel, tree, parents in worker:
            for call in ast.walk(tree):
                if not (isinstance(call, ast.Call) and source_text(call.func).endswith("._dummy_run")):
                    continue
                if source_text(call.func) == "self._dummy_run" and not rel.startswith(GPU_DIR + "/"):
                    continue  # another runner's own method (the V1 runner), not the V2 one
                kw = {k.arg: k.value for k in call.keywords}
                if None in kw and not self._profile_batches_ok(worker, parents, call, kw[None]):
                    return False
                u = kw.get("uniform_decode")
                if u is None or (isinstance(u, ast.Constant) and u.value is False):
                    continue
                first = call.args[0] if call.args else kw.get("num_tokens")
                fn = enclosing_function(parents, call)
                sets = [
                    a.value
                    for a in ast.walk(fn)
                    if isinstance(a, ast.Assign)
                    and first is not None
                    and any(isinstance(t, ast.Name) and t.id == source_text(first) for t in a.targets)
                ]
                if not (
                    len(sets) == 1
                    and source_text(sets[0]).replace("'", '"')
                    == 'getattr(self.model_runner,"uniform_decode_query_len",1)'
                ):
                    return False
        return True

    @staticmethod
    def _profile_batches_ok(worker, parents, call, star) -> bool:
        """``self._dummy_run(**batch)`` with ``batch`` a loop variable over
        ``*.batches_to_profile(...)``, whose every ``yield`` is a dict literal without a
        ``uniform_decode`` key (so the call runs without it)."""
        fn = enclosing_function(parents, call)
        loops = [
            lp
            for lp in ast.walk(fn)
            if isinstance(lp, ast.For)
            and source_text(lp.target) == source_text(star)
            and source_text(lp.iter).split("(")[0].endswith(".batches_to_profile")
        ]
        if not loops:
            return False
        yields = [
            y
            for _rel, tree, _p in worker
            for d in ast.walk(tree)
            if isinstance(d, ast.FunctionDef) and d.name == "batches_to_profile"
            for y in ast.walk(d)
            if isinstance(y, ast.Yield)
        ]
        return bool(yields) and all(
            isinstance(y.value, ast.Dict)
            and all(isinstance(k, ast.Constant) and k.value != "uniform_decode" for k in y.value.keys)
            for y in yields
        )

    def _max_num_reqs_attr(self, parents, fn) -> bool:
        cls = class_of(parents, fn)
        if cls is None:
            return False
        seen = False
        for _rel, tree, _p in self.files:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name in self.family(cls):
                    for a in ast.walk(node):
                        if isinstance(a, (ast.Assign, ast.AnnAssign)) and any(
                            source_text(t) == "self.max_num_reqs"
                            for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
                        ):
                            if a.value is None or not source_text(a.value).endswith("scheduler_config.max_num_seqs"):
                                return False
                            seen = True
        return seen

    def _descriptor(self, parents, fn, recv) -> bool:
        if isinstance(recv, ast.Name):
            for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
                if (
                    a.arg == recv.id
                    and a.annotation is not None
                    and any(d in source_text(a.annotation) for d in DESCRIPTORS)
                ):
                    return True
            for a in ast.walk(fn):
                if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call):
                    f = source_text(a.value.func)
                    names = [n.id for t in a.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                    if recv.id in names and (f.endswith(".dispatch") or f.endswith("dispatch_cg_and_sync_dp")):
                        return True
            for a in ast.walk(fn):
                if isinstance(a, (ast.For, ast.comprehension)) and source_text(a.target) == recv.id:
                    if "_capture_descs" in source_text(a.iter) or "descs" in source_text(a.iter):
                        return True
        return False

    def scalar(self, rel, parents, fn, expr, depth: int = 0) -> bool:
        if depth > 10 or fn is None:
            return False
        s = source_text(expr)
        if isinstance(expr, ast.Constant) and type(expr.value) is int and expr.value in (0, 1):
            return True
        if isinstance(expr, ast.Constant) and expr.value is None:
            return True  # a descriptor without request padding: the caller falls back (`or`)
        if isinstance(expr, ast.Call) and source_text(expr.func) == "min":
            target = parents.get(expr)
            if isinstance(target, ast.Assign) and any(
                isinstance(t, ast.Name) and any(source_text(a) == t.id for a in expr.args) for t in target.targets
            ):
                return True  # x = min(x, ...): no larger than x's other bindings, judged on their own
            return any(self.scalar(rel, parents, fn, a, depth + 1) for a in expr.args)
        if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):
            return all(self.scalar(rel, parents, fn, v, depth + 1) for v in expr.values)
        if s == "self.max_num_reqs":
            return self._max_num_reqs_attr(parents, fn)
        if s.endswith("scheduler_config.max_num_seqs"):
            return True
        if (
            self.induction
            and isinstance(expr, ast.Attribute)
            and expr.attr in ("num_reqs", "num_reqs_after_padding")
            and self._input_batch(parents, fn, expr.value)
        ):
            return True  # by induction over the InputBatch construction sites (each a path)
        if s == "len(req_ids)" and self._scheduled_req_ids(rel, parents, fn):
            return True
        if (
            self.induction
            and isinstance(expr, ast.Attribute)
            and expr.attr == "num_reqs"
            and self._descriptor(parents, fn, expr.value)
        ):
            return True  # by induction over the descriptor construction sites (each a path)
        if s == "len(scheduler_output.num_scheduled_tokens)":
            return self.scheduler_checked
        if s == "hidden_states.shape[0]" and fn.name == "_dummy_sampler_run" and rel == f"{GPU_DIR}/model_runner.py":
            why = dummy_sampler_rows(self)
            if why is None:
                return True
            self.why.append(f"{rel}:{getattr(expr, 'lineno', '?')} {why}")
            return False
        if isinstance(expr, ast.Name):
            if fn.name == "_dummy_run" and expr.id == "num_reqs" and rel == f"{GPU_DIR}/model_runner.py":
                return self._dummy_num_reqs(rel, parents, fn, depth)
            if self._guarded(fn, expr):
                return True
            return self._name(rel, parents, fn, expr.id, depth, self.scalar)
        self.why.append(f"{rel}:{getattr(expr, 'lineno', '?')} {s[:70]}")
        return False

    def _guarded(self, fn, name: ast.Name) -> bool:
        """``name`` is used after ``if ... or name > self.max_num_reqs ...: continue`` in a loop
        that encloses the use (the engine skips the construction), or after
        ``if name > <x>.max_num_reqs: raise`` in the same function (the engine stops)."""
        line = getattr(name, "lineno", 0)
        for node in ast.walk(fn):
            if not isinstance(node, ast.If) or node.lineno >= line or not node.body:
                continue
            tests = (
                node.test.values
                if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or)
                else [node.test]
            )
            hit = any(
                isinstance(t, ast.Compare)
                and len(t.ops) == 1
                and isinstance(t.ops[0], ast.Gt)
                and source_text(t.left) == name.id
                and source_text(t.comparators[0]).endswith(".max_num_reqs")
                for t in tests
            )
            if not hit:
                continue
            if isinstance(node.body[0], ast.Raise) and len(tests) == 1:
                return True
            if isinstance(node.body[0], ast.Continue):
                loop = next(
                    (
                        lp
                        for lp in ast.walk(fn)
                        if isinstance(lp, (ast.For, ast.While))
                        and node in ast.walk(lp)
                        and lp.lineno < line <= (lp.end_lineno or 0)
                    ),
                    None,
                )
                if loop is not None:
                    return True
        return False

    def _input_batch(self, parents, fn, recv) -> bool:
        """``recv`` is a V2 ``InputBatch``: a parameter annotated with it, ``self.input_batch``-like
        fields annotated with it, or a name bound to ``InputBatch.make_dummy``/``prepare_inputs``."""
        if isinstance(recv, ast.Name):
            for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
                if a.arg == recv.id and a.annotation is not None and "InputBatch" in source_text(a.annotation):
                    return "BatchReqState" not in source_text(a.annotation)
            for a in ast.walk(fn):
                if isinstance(a, ast.Assign) and any(source_text(t) == recv.id for t in a.targets):
                    v = source_text(a.value)
                    if not (v.startswith("InputBatch.make_dummy(") or v.startswith("self.prepare_inputs(")):
                        return False
            return any(
                isinstance(a, ast.Assign) and any(source_text(t) == recv.id for t in a.targets) for a in ast.walk(fn)
            )
        return False

    def _scheduled_req_ids(self, rel, parents, fn) -> bool:
        """``len(req_ids)`` in ``prepare_inputs``: ``req_ids = batch_req_state.req_ids``, every
        ``BatchReqState(req_ids=...)`` passes ``sort_batch_req_ids(num_tokens_per_req, ...)`` with
        ``num_tokens_per_req = scheduler_output.num_scheduled_tokens``, and ``sort_batch_req_ids``
        returns ``sorted(num_tokens_per_req, ...)`` (the scheduled requests, reordered)."""
        sets = [
            source_text(a.value)
            for a in ast.walk(fn)
            if isinstance(a, ast.Assign) and any(source_text(t) == "req_ids" for t in a.targets)
        ]
        if sets != ["batch_req_state.req_ids"] or not self.scheduler_checked:
            return False
        ok = False
        for _rel, tree, _p in self.files:
            for n in ast.walk(tree):
                if isinstance(n, ast.FunctionDef) and n.name == "sort_batch_req_ids":
                    rets = [
                        source_text(r.value) for r in ast.walk(n) if isinstance(r, ast.Return) and r.value is not None
                    ]
                    first = n.args.args[0].arg if n.args.args else None
                    if not rets or not all(r.startswith(f"sorted({first},") or r == f"sorted({first})" for r in rets):
                        return False
                if isinstance(n, ast.Call) and source_text(n.func) == "BatchReqState":
                    kw = {k.arg: k.value for k in n.keywords}
                    v = kw.get("req_ids")
                    caller = enclosing_function(_p, n)
                    if v is None or caller is None:
                        return False
                    vs = [
                        a.value
                        for a in ast.walk(caller)
                        if isinstance(a, ast.Assign) and any(source_text(t) == source_text(v) for t in a.targets)
                    ]
                    if len(vs) != 1 or not source_text(vs[0]).startswith("sort_batch_req_ids(num_tokens_per_req,"):
                        return False
                    nt = [
                        source_text(a.value)
                        for a in ast.walk(caller)
                        if isinstance(a, ast.Assign) and any(source_text(t) == "num_tokens_per_req" for t in a.targets)
                    ]
                    if nt != ["scheduler_output.num_scheduled_tokens"]:
                        return False
                    ok = True
        return ok

    def _dummy_num_reqs(self, rel, parents, fn, depth) -> bool:
        for a in ast.walk(fn):
            if isinstance(a, ast.Assign) and any(source_text(t) == "num_reqs" for t in a.targets):
                v = a.value
                if source_text(v) == "num_tokens//self.decode_query_len":
                    if not self.uniform_ok:
                        self.why.append(f"{rel}:{a.lineno} uniform_decode num_reqs: a caller passes another count")
                        return False
                    continue
                if isinstance(v, ast.Call) and source_text(v.func) == "min":
                    if (
                        any(source_text(x) == "num_reqs" or self.scalar(rel, parents, fn, x, depth + 1) for x in v.args)
                        and any(source_text(x) != "num_reqs" for x in v.args)
                        or any(self.scalar(rel, parents, fn, x, depth + 1) for x in v.args)
                    ):
                        continue
                self.why.append(f"{rel}:{a.lineno} _dummy_run num_reqs = {source_text(v)}")
                return False
        return True


def _fn(tree, name: str, cls: str | None = None):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (cls is None or node.name == cls):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                    return item
    return None


def _assigned(fn, name: str) -> list:
    """The values assigned to the plain name ``name`` in ``fn`` (tuple targets give ``(index, value)``)."""
    out = []
    for a in ast.walk(fn):
        if not isinstance(a, ast.Assign):
            continue
        for t in a.targets:
            if isinstance(t, ast.Name) and t.id == name:
                out.append((None, a.value))
            elif isinstance(t, ast.Tuple):
                for i, e in enumerate(t.elts):
                    if isinstance(e, ast.Name) and e.id == name:
                        out.append((i, a.value))
    return out


def dummy_sampler_rows(counts: "CountJudge") -> str | None:
    """None when ``hidden_states.shape[0]`` in the V2 ``_dummy_sampler_run`` is ``<= max_num_reqs``
    by this chain read in the source, else the first link that does not hold:

    1. every ``self._dummy_sampler_run(x)`` passes a name ``x`` bound only as the second value of
       ``self._dummy_run(...)``;
    2. ``_dummy_run`` returns ``(None, None)`` or ``(hidden_states, sample_hidden_states)``, with
       ``sample_hidden_states = hidden_states[input_batch.logits_indices]`` and
       ``input_batch = self.execute_model_state.input_batch`` (one row per logits index);
    3. ``ExecuteModelState(...)`` is made only in ``execute_model``, which has no ``return`` before
       it outside ``if not dummy_run:`` other than under ``if batch_desc.num_tokens == 0:`` when
       :func:`.fact_v2_dummy_tokens.dummy_return_fact` shows no dummy run takes that one (else a
       dummy run may leave the state an earlier step stored, and ``_dummy_run`` reads that step's
       batch), from its ``input_batch``, which
       the dummy branch (the ``else`` of ``if not dummy_run``) sets only to ``InputBatch.make_dummy(...)``
       or ``self.pcp_manager.prepare_inputs_for_capture_or_profile(input_batch)``, and nothing
       after that branch rebinds it, ``dummy_run`` or a ``.logits_indices``; ``_dummy_run`` calls
       ``execute_model`` with ``dummy_run=True``;
    4. ``prepare_inputs_for_capture_or_profile`` returns a ``replace`` of its batch that does not
       pass ``logits_indices``;
    5. ``make_dummy`` returns ``logits_indices = query_start_loc[1:] - 1`` with
       ``query_start_loc = input_buffers.query_start_loc[: num_reqs + 1]``, and every
       ``InputBuffers`` allocates ``self.query_start_loc`` with ``max_num_reqs + 1`` entries; the dummy
       branch passes ``self.input_buffers``, which the runner assigns once, ``InputBuffers(max_num_reqs=
       self.max_num_reqs, ...)``: a slice of that buffer has at most ``max_num_reqs + 1`` entries,
       so at most ``max_num_reqs`` indices.
    """
    files = {rel: (tree, parents) for rel, tree, parents in counts.files}
    mr = files.get(f"{GPU_DIR}/model_runner.py")
    ib = files.get(f"{GPU_DIR}/input_batch.py")
    pcp = files.get(f"{GPU_DIR}/pcp_manager.py")
    if mr is None or ib is None:
        return "model_runner.py or input_batch.py not found"
    tree, parents = mr
    # 1
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and source_text(c.func) == "self._dummy_sampler_run"]
    if not calls:
        return "no call of _dummy_sampler_run"
    for c in calls:
        caller = enclosing_function(parents, c)
        if len(c.args) != 1 or c.keywords or not isinstance(c.args[0], ast.Name) or caller is None:
            return f"_dummy_sampler_run call at :{c.lineno} is not of one name"
        sets = _assigned(caller, c.args[0].id)
        if not sets or not all(
            i == 1 and isinstance(v, ast.Call) and source_text(v.func) == "self._dummy_run" for i, v in sets
        ):
            return f"{c.args[0].id} (:{c.lineno}) is not only the second value of self._dummy_run(...)"
    # 2
    dummy = _fn(tree, "_dummy_run")
    if dummy is None:
        return "_dummy_run not found"
    for r in (n for n in ast.walk(dummy) if isinstance(n, ast.Return)):
        v = r.value
        if not (isinstance(v, ast.Tuple) and len(v.elts) == 2):
            return f"_dummy_run return at :{r.lineno} is not a pair"
        second = v.elts[1]
        if isinstance(second, ast.Constant) and second.value is None:
            continue
        if source_text(second) != "sample_hidden_states":
            return f"_dummy_run return at :{r.lineno} returns {source_text(second)}"
    if [source_text(v) for _i, v in _assigned(dummy, "sample_hidden_states")] != [
        "hidden_states[input_batch.logits_indices]"
    ]:
        return "sample_hidden_states is not hidden_states[input_batch.logits_indices]"
    if [source_text(v) for _i, v in _assigned(dummy, "input_batch")] != ["self.execute_model_state.input_batch"]:
        return "_dummy_run's input_batch is not self.execute_model_state.input_batch"
    runs = [c for c in ast.walk(dummy) if isinstance(c, ast.Call) and source_text(c.func) == "self.execute_model"]
    if not runs or not all(
        any(k.arg == "dummy_run" and isinstance(k.value, ast.Constant) and k.value.value is True for k in c.keywords)
        for c in runs
    ):
        return "_dummy_run does not call execute_model(dummy_run=True)"
    # 3
    makers = [
        (rel, c)
        for rel, (t, p) in files.items()
        for c in ast.walk(t)
        if isinstance(c, ast.Call) and source_text(c.func) == "ExecuteModelState"
    ]
    execute = _fn(tree, "execute_model")
    if execute is None or not makers:
        return "execute_model or ExecuteModelState(...) not found"
    for rel, c in makers:
        kw = {k.arg: k.value for k in c.keywords}
        if rel != f"{GPU_DIR}/model_runner.py" or enclosing_function(parents, c) is not execute:
            return f"ExecuteModelState made outside execute_model ({rel}:{c.lineno})"
        if source_text(kw.get("input_batch", ast.Constant(None))) != "input_batch":
            return f"ExecuteModelState at :{c.lineno} is not made from input_batch"
    branch = next(
        (
            n
            for n in ast.walk(execute)
            if isinstance(n, ast.If)
            and source_text(n.test) == "notdummy_run"
            and n.orelse
            and any(
                isinstance(a, ast.Assign) and source_text(a.targets[0]) == "input_batch"
                for b in n.body
                for a in ast.walk(b)
            )
        ),
        None,
    )
    if branch is None:
        return "execute_model has no `if not dummy_run: ... else: ...` setting input_batch"
    # a return a dummy run can take before the state is stored leaves an earlier step's state
    store = min(c.lineno for rel, c in makers)
    real_only = {
        id(n)
        for i in ast.walk(execute)
        if isinstance(i, ast.If) and source_text(i.test) == "notdummy_run"
        for b in i.body
        for n in ast.walk(b)
    }
    early = [
        r
        for r in ast.walk(execute)
        if isinstance(r, (ast.Return, ast.Yield)) and r.lineno < store and id(r) not in real_only
    ]
    if early and not counts.own_state:
        # the zero-token return is excluded when no dummy run can take it (fact_v2_dummy_tokens)
        zero, _other = zero_returns(counts.root, store)
        taken = [r for r in early if r.lineno not in zero]
        fact = None
        if not taken:
            fact = dummy_return_fact(counts.root)
            if not fact["checked"]:
                # a dummy run may take the zero-token return: it then reads the state that was
                # pending when it started, None on every path to the dummy sampler run, and
                # stops at its assert before any dummy batch is made (fact_v2_profile_state)
                state = profile_state_fact(counts.root)
                taken = [] if state["checked"] else early
                if state["checked"]:
                    counts.notes.append(
                        f"execute_model's zero-token return (:{', :'.join(str(r.lineno) for r in early)}) is taken by a "
                        f"dummy run ({fact['why'][:120]}); no state is pending when a profile run starts "
                        f"({'; '.join(state['paths'])[:400]}), so _dummy_run's assert stops it before "
                        "_dummy_sampler_run"
                    )
                else:
                    fact = {**fact, "why": f"{fact['why']}; {state['why']}"}
        if taken:
            because = f" ({fact['why']})" if fact is not None else ""
            return (
                f"execute_model returns at :{taken[0].lineno} before storing ExecuteModelState (:{store}) on a path a "
                f"dummy run can take{because}: _dummy_run may then read the state an earlier step stored (its batch, "
                "its logits)"
            )
    for a in ast.walk(execute):
        for t in assigned(a):
            if source_text(t) == "dummy_run" or source_text(t).endswith(".logits_indices"):
                return f"execute_model rebinds {source_text(t)} at :{a.lineno}"
    in_else = {id(a) for b in branch.orelse for a in ast.walk(b)}
    in_body = {id(a) for b in branch.body for a in ast.walk(b)}
    for a in ast.walk(execute):
        if not (isinstance(a, ast.Assign) and any(source_text(t) == "input_batch" for t in a.targets)):
            continue
        v = source_text(a.value)
        if id(a) in in_body and a.lineno < branch.end_lineno:
            continue  # the real-step branch
        if id(a) in in_else and (
            v.startswith("InputBatch.make_dummy(")
            or v == "self.pcp_manager.prepare_inputs_for_capture_or_profile(input_batch)"
        ):
            continue
        return f"execute_model sets input_batch = {v[:60]} at :{a.lineno}"
    # 4
    if pcp is not None:
        prep = _fn(pcp[0], "prepare_inputs_for_capture_or_profile")
        if prep is None:
            return "prepare_inputs_for_capture_or_profile not found"
        for a in ast.walk(prep):
            if isinstance(a, ast.Call) and source_text(a.func) == "replace":
                if any(k.arg == "logits_indices" or k.arg is None for k in a.keywords):
                    return "the PCP capture/profile batch replaces logits_indices"
        rets = [r for r in ast.walk(prep) if isinstance(r, ast.Return)]
        sets = _assigned(prep, "input_batch")
        if (
            not rets
            or not all(source_text(r.value) == "input_batch" for r in rets)
            or not all(isinstance(v, ast.Call) and source_text(v.func) == "replace" for _i, v in sets)
        ):
            return "prepare_inputs_for_capture_or_profile returns something else"
    # 5
    itree = ib[0]
    make = _fn(itree, "make_dummy", "InputBatch")
    if make is None:
        return "InputBatch.make_dummy not found"
    if [source_text(v) for _i, v in _assigned(make, "logits_indices")] != ["query_start_loc[1:]-1"]:
        return "make_dummy's logits_indices is not query_start_loc[1:] - 1"
    if [source_text(v) for _i, v in _assigned(make, "query_start_loc")] != [
        "input_buffers.query_start_loc[:num_reqs+1]"
    ]:
        return "make_dummy's query_start_loc is not input_buffers.query_start_loc[: num_reqs + 1]"
    init = _fn(itree, "__init__", "InputBuffers")
    allocs = (
        [
            a.value
            for a in ast.walk(init)
            if isinstance(a, ast.Assign) and any(source_text(t) == "self.query_start_loc" for t in a.targets)
        ]
        if init is not None
        else []
    )
    if len(allocs) != 1 or not (
        isinstance(allocs[0], ast.Call)
        and source_text(allocs[0].func) == "torch.zeros"
        and allocs[0].args
        and source_text(allocs[0].args[0]) == "max_num_reqs+1"
    ):
        return "InputBuffers.query_start_loc is not torch.zeros(max_num_reqs + 1, ...)"
    if "max_num_reqs" not in [a.arg for a in init.args.args]:
        return "InputBuffers takes no max_num_reqs"
    # the dummy branch's make_dummy takes the runner's own buffers, allocated once with its max_num_reqs
    for c in (n for b in branch.orelse for n in ast.walk(b)):
        if isinstance(c, ast.Call) and source_text(c.func) == "InputBatch.make_dummy":
            buf = (
                c.args[2] if len(c.args) > 2 else next((k.value for k in c.keywords if k.arg == "input_buffers"), None)
            )
            if buf is None or source_text(buf) != "self.input_buffers":
                return f"make_dummy at :{c.lineno} is not given self.input_buffers"
    builds = [
        a
        for a in ast.walk(tree)
        if isinstance(a, (ast.Assign, ast.AnnAssign))
        and any(
            source_text(t) == "self.input_buffers" for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
        )
    ]
    if len(builds) != 1 or not (
        isinstance(builds[0].value, ast.Call) and source_text(builds[0].value.func) == "InputBuffers"
    ):
        return "the runner's self.input_buffers is not one InputBuffers(...)"
    kw = {k.arg: k.value for k in builds[0].value.keywords}
    fn = enclosing_function(parents, builds[0])
    if (
        "max_num_reqs" not in kw
        or fn is None
        or not counts.scalar(f"{GPU_DIR}/model_runner.py", parents, fn, kw["max_num_reqs"])
    ):
        return f"InputBuffers at :{builds[0].lineno} is not given a bounded max_num_reqs"
    return None


def _scheduled_outputs(counts: CountJudge) -> tuple[list[str], list[str]]:
    """Every store into ``<x>.num_scheduled_tokens`` under the V2 runner: its entry count bounded."""
    ok, bad = [], []
    for rel, tree, parents in counts.files:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            if not any(isinstance(t, ast.Attribute) and t.attr == "num_scheduled_tokens" for t in node.targets):
                continue
            fn = enclosing_function(parents, node)
            v = node.value
            where = f"{rel}:{node.lineno} num_scheduled_tokens = {source_text(v)[:60]}"
            if isinstance(v, ast.Name) and fn is not None:
                sets = [
                    a.value
                    for a in ast.walk(fn)
                    if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == v.id for t in a.targets)
                ]
                v = sets[0] if len(sets) == 1 else v
            good = False
            if isinstance(v, ast.Dict):
                good = len(v.keys) <= 2 and _two_guard(fn)
            elif isinstance(v, ast.DictComp) and len(v.generators) == 1:
                it = v.generators[0].iter
                good = _count_of(counts, rel, parents, fn, it)
            (ok if good else bad).append(where)
    return ok, bad


def _two_guard(fn) -> bool:
    """``fn`` returns early when ``max_num_reqs < 2`` (a 2-request warm-up)."""
    return fn is not None and any(
        isinstance(n, ast.If) and "max_num_reqs<2" in source_text(n.test) and isinstance(n.body[0], ast.Return)
        for n in ast.walk(fn)
    )


def _count_of(counts: CountJudge, rel, parents, fn, it) -> bool:
    """The number of items ``it`` yields is bounded: ``range(n)``, ``enumerate(x)``/``zip`` of
    such, a list comprehension over one, or a name bound to one (AST)."""
    if isinstance(it, ast.Call) and source_text(it.func) == "range" and len(it.args) == 1:
        return counts.scalar(rel, parents, fn, it.args[0])
    if isinstance(it, ast.Call) and source_text(it.func) in ("enumerate", "zip") and it.args:
        return any(_count_of(counts, rel, parents, fn, a) for a in it.args)
    if isinstance(it, ast.ListComp) and len(it.generators) == 1:
        return _count_of(counts, rel, parents, fn, it.generators[0].iter)
    if isinstance(it, ast.Name) and fn is not None:
        sets = [
            a.value
            for a in ast.walk(fn)
            if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == it.id for t in a.targets)
        ]
        return bool(sets) and all(_count_of(counts, rel, parents, fn, s) for s in sets)
    return False


def v2_requests_fact(root: str, scheduler_fact: dict | None = None, own_state: bool = False) -> dict:
    """The fact "every V2 request count (descriptor, dummy batch) is <= max_num_reqs" as
    ``{"fact", "checked", "paths"}``, one path per construction site (module docstring).
    ``own_state``: judge the dummy sampler run as if ``_dummy_run`` read its own state
    (:class:`CountJudge`), to tell which paths hold given that one count."""
    if scheduler_fact is None:
        from .demand import unpadded_requests_bound

        try:
            scheduler_fact = unpadded_requests_bound(root)
        except (OSError, SyntaxError) as exc:  # a tree without the scheduler: not checked
            scheduler_fact = {"checked": False, "paths": {"not checked": [f"scheduler not read: {exc}"[:120]]}}
    counts = CountJudge(root, bool(scheduler_fact.get("checked")), own_state=own_state)
    checked, unchecked = [], []
    for rel, tree, parents in counts.files:
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            f = source_text(call.func)
            fn = enclosing_function(parents, call)
            arg = None

            def padding(label: str) -> None:
                """The call's num_reqs_after_padding, when given, is one more path of the fact."""
                pad = next((k.value for k in call.keywords if k.arg == "num_reqs_after_padding"), None)
                if pad is None:
                    return
                counts.why.clear()
                good = fn is not None and counts.scalar(rel, parents, fn, pad)
                site = f"{rel}:{call.lineno} {label}(num_reqs_after_padding={source_text(pad)[:50]})"
                (checked if good else unchecked).append(
                    site + ("" if good or not counts.why else f" (refused: {counts.why[-1]})")
                )

            if f == "replace":
                padding("replace")
            if f.rsplit(".", 1)[-1] in DESCRIPTORS or f == "replace":
                arg = next((k.value for k in call.keywords if k.arg == "num_reqs"), None)
                if arg is None:
                    continue
                what = f"{f.rsplit('.', 1)[-1]}(num_reqs={source_text(arg)[:50]})"
            elif f in ("InputBatch", "cls") and any(k.arg == "num_reqs" for k in call.keywords):
                arg = next(k.value for k in call.keywords if k.arg == "num_reqs")
                what = f"InputBatch(num_reqs={source_text(arg)[:50]})"
                padding("InputBatch")
            elif f.endswith("make_dummy") and (call.args or call.keywords):
                arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "num_reqs"), None)
                what = f"make_dummy({source_text(arg)[:50] if arg is not None else '?'})"
            else:
                continue
            if (
                f == "replace"
                and fn is not None
                and "batch" in source_text(call.args[0] if call.args else call).lower()
            ):
                what = "replace(batch, num_reqs=...) " + what
            counts.why.clear()
            noted = len(counts.notes)
            good = arg is not None and fn is not None and counts.scalar(rel, parents, fn, arg)
            site = f"{rel}:{call.lineno} {what}"
            if good:
                checked.append(site + (f" ({counts.notes[-1]})" if len(counts.notes) > noted else ""))
            else:
                unchecked.append(site + (f" (refused: {counts.why[-1]})" if counts.why else ""))
    ok, bad = _scheduled_outputs(counts)
    checked += ok
    unchecked += bad
    sched_paths = scheduler_fact.get("paths", {})
    checked += [f"scheduler: {p}" for p in sched_paths.get("checked (ast)", [])]
    unchecked += [f"scheduler: {p}" for p in sched_paths.get("not checked", [])]
    return {
        "fact": "every V2 request count (descriptors, dummy batches, scheduler outputs) is <= max_num_reqs",
        "checked": not unchecked,
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


def derive_slot_rows(
    entries: list,
    root: str,
    requests_fact: dict | None = None,
    reasons: dict | None = None,
    facts: list | None = None,
    executed: dict | None = None,
) -> list[str]:
    """Set the dimension-0 ``demands`` (extent ``max_num_reqs``) of every one-dimensional
    ``[max_num_reqs]`` buffer of the V2 runner whose every use is slot-indexed or whole
    (:func:`slot_rows_uses`) **and** whose facts (:func:`slot_fact`, and :func:`slot_array_fact`
    when a use indexes by a slot array) are checked; an entry whose use needs a fact not checked
    gets no demand and its reason names the fact. ``executed``: the slot-array stores judged by
    running the engine's code (:func:`.fact_slots.shard_paths`). Returns the ids derived."""
    fact = slot_fact(root)
    requests = requests_fact if requests_fact is not None else v2_requests_fact(root)
    arrays = slot_array_fact(root, requests, executed)
    slots = SlotJudge(root, arrays_ok=True)
    sched = not any(p.startswith("scheduler:") for p in requests.get("paths", {}).get("not checked", []))
    slots.counts = CountJudge(root, sched, induction=bool(requests.get("checked")))
    if facts is not None:
        facts += [fact, requests, arrays]
    done = []
    for e in entries:
        if e.demands:
            continue
        sites = slot_rows_uses(e, root, slots, reasons)
        if sites is None:
            continue
        needed = [fact] + ([arrays] if any("(a slot array)" in s for s in sites) else [])
        missing = [f["fact"] for f in needed if not f["checked"]]
        if missing:
            if reasons is not None:
                reasons[e.id] = "rests on a fact not checked: " + "; ".join(missing)
            continue
        e.demands = [
            {
                "dim": 0,
                "how": "ast",
                "family": "request rows",
                "extent": "max_num_reqs",
                "from": [
                    f"{STATES} RequestState slots (free_indices = list(range(max_num_reqs)))",
                    *sites,
                ],
                "notes": [],
                "facts": needed,
                # every use judged above, one "<file>:<line>" per use (foreign_uses.check_foreign_uses
                # takes these as checked and judges any other use it finds in another file)
                "judged_uses": [s.split(" ", 1)[0] for s in sites],
            }
        ]
        done.append(e.id)
    return done
