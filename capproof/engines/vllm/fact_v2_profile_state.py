"""The state the V2 runner's profile run reads when its dummy batch has no token (vLLM's code, AST).

``GPUModelRunner._dummy_sampler_run`` (``vllm/v1/worker/gpu/model_runner.py``) sizes its dummy
batch (``InputBatch.make_dummy(num_reqs, ...)``, whose slot arrays are ``arange(num_reqs)``) and
the slots it hands ``sampler.add_request`` by the rows of the hidden states ``_dummy_run`` returns:
the logits indices of ``self.execute_model_state.input_batch``. When a dummy run's
``execute_model`` takes its zero-token return (``if batch_desc.num_tokens == 0``, reached by
finding 12's deployment), no new state is stored, and ``_dummy_run`` reads the state that was
there when it started. :func:`profile_state_fact` checks, in the source, that this state is
``None`` on every path that reaches ``_dummy_sampler_run``, so ``_dummy_run``'s
``assert self.execute_model_state is not None`` stops the run before the dummy batch is made
(what finding 12 reproduces by running vLLM's code on the CPU):

1. ``_dummy_run`` asserts ``self.execute_model_state is not None`` before it reads the state;
   the runner's ``__init__`` sets it ``None``; every other store of ``.execute_model_state``
   under ``vllm/v1/worker/gpu/`` is ``None`` or ``ExecuteModelState(...)`` in ``execute_model``.
2. ``._dummy_sampler_run(`` is called in ``profile_run`` of the V2 runner, or outside
   ``vllm/v1/worker/gpu/`` only under ``if not self.use_v2_model_runner`` (the V1 runner's) or
   on ``self`` in a module that imports nothing from the V2 runner's module (another class's).
3. ``.profile_run(`` is called only from functions named ``determine_available_memory`` or
   ``warming_up_model``; ``.warming_up_model(`` only from ``determine_available_memory`` or
   ``compile_or_warm_up_model``.
4. Under ``vllm/``, ``determine_available_memory`` and ``compile_or_warm_up_model`` are named
   (an attribute or a string, as ``collective_rpc`` takes it) only in a function of the same
   name (the executors' and workers' delegation) or in ``EngineCore._initialize_kv_caches``
   (``vllm/v1/engine/core.py``), which only ``EngineCore.__init__`` calls; neither of them
   names ``execute_model``, ``sample_tokens`` or ``_dummy_run`` before the last of those calls.
   Elsewhere (elastic EP's ``warm_and_capture``, while serving) such a name is accepted only in a
   statement preceded, in the same block, by a ``._dummy_run(`` call with no step between.
5. ``_dummy_run`` sets ``self.execute_model_state = None`` after reading it, and returns earlier
   only under ``if not self.is_last_pp_rank`` (``profile_run`` samples only under
   ``if self.is_last_pp_rank``): after a ``_dummy_run`` no state is pending where sampling runs.

So a profile run happens while the engine core is constructed, before its first step, with no
state pending. Not seen: a call through an RPC made from outside ``vllm/`` (a user's own
``collective_rpc("profile_run")`` between a step's ``execute_model`` and ``sample_tokens``).
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

from .demand_slots import GPU_DIR, class_of, enclosing_function, parsed_files, source_text

__all__ = ["profile_state_fact"]

RUNNER = f"{GPU_DIR}/model_runner.py"
CORE = "vllm/v1/engine/core.py"
PROFILERS = {"profile_run": {"determine_available_memory", "warming_up_model"}}
WARMERS = {"warming_up_model": {"determine_available_memory", "compile_or_warm_up_model"}}
ENTRIES = ("determine_available_memory", "compile_or_warm_up_model")
STEPS = ("execute_model", "sample_tokens", "_dummy_run")


def _method(tree, name: str, cls: str | None = None):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (cls is None or node.name == cls):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                    return item
    return None


def _names(node, name: str) -> bool:
    """Whether ``node`` is the attribute ``.name``, the name ``name`` or the string ``"name"``."""
    return (
        (isinstance(node, ast.Attribute) and node.attr == name)
        or (isinstance(node, ast.Name) and node.id == name)
        or (isinstance(node, ast.Constant) and node.value == name)
    )


def _state_links(files: dict) -> str | None:
    """Link 1 (see the module docstring): None when it holds, else what breaks it."""
    if RUNNER not in files:
        return f"{RUNNER} not found"
    tree, parents = files[RUNNER]
    dummy = _method(tree, "_dummy_run")
    owner = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and dummy in c.body), None)
    init = _method(tree, "__init__", owner.name) if owner is not None else None
    if dummy is None or init is None:
        return "_dummy_run or __init__ of the V2 runner not found"
    reads = [
        n.lineno
        for n in ast.walk(dummy)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Load)
        and source_text(n.value) == "self.execute_model_state"
    ]
    asserts = [
        a.lineno
        for a in dummy.body
        if isinstance(a, ast.Assert) and source_text(a.test) == "self.execute_model_stateisnotNone"
    ]
    if not reads or not asserts or min(asserts) > min(reads):
        return "_dummy_run reads self.execute_model_state without asserting it first"
    if not any(
        isinstance(a, (ast.Assign, ast.AnnAssign))
        and [source_text(t) for t in (a.targets if isinstance(a, ast.Assign) else [a.target])]
        == ["self.execute_model_state"]
        and a.value is not None
        and source_text(a.value) == "None"
        for a in init.body
    ):
        return "the V2 runner's __init__ does not set self.execute_model_state = None"
    for rel, (t, p) in files.items():
        if not rel.startswith(GPU_DIR + "/"):
            continue
        for a in ast.walk(t):
            if not isinstance(a, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                continue
            targets = a.targets if isinstance(a, ast.Assign) else [a.target]
            if not any(isinstance(x, ast.Attribute) and x.attr == "execute_model_state" for x in targets):
                continue
            fn = enclosing_function(p, a)
            value = source_text(a.value) if a.value is not None else ""
            if isinstance(a, ast.AugAssign) or rel != RUNNER:
                return f"{rel}:{a.lineno} stores execute_model_state"
            if value == "None" or (
                value.startswith("ExecuteModelState(") and fn is not None and fn.name == "execute_model"
            ):
                continue
            return f"{rel}:{a.lineno} stores {value[:60]} into execute_model_state"
    return None


def _callers(files: dict, rel_ok, name: str, allowed: set[str]) -> str | None:
    """None when every call of ``.name(`` under the files (``rel_ok(rel)``) is in a function named
    in ``allowed``, else the first call that is not."""
    for rel, (t, p) in files.items():
        if not rel_ok(rel):
            continue
        for c in ast.walk(t):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == name:
                fn = enclosing_function(p, c)
                if fn is None or fn.name not in allowed:
                    return f"{rel}:{c.lineno} calls {name} in {fn.name if fn else 'module code'}"
    return None


def _imports_v2_runner(tree) -> bool:
    """Whether the module imports anything from ``vllm.v1.worker.gpu.model_runner`` (a class of it
    may then derive from the V2 runner)."""
    return any(
        isinstance(n, ast.ImportFrom)
        and (n.module or "").startswith("vllm.v1.worker.gpu.model_runner")
        or isinstance(n, ast.Import)
        and any(a.name.startswith("vllm.v1.worker.gpu.model_runner") for a in n.names)
        for n in ast.walk(tree)
    )


def _under_v1_only(parents, node) -> bool:
    """``node`` sits in the body of an ``if`` whose test is ``not self.use_v2_model_runner ...``."""
    child, cur = node, parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.If) and child in cur.body and "notself.use_v2_model_runner" in source_text(cur.test):
            return True
        child, cur = cur, parents.get(cur)
    return False


def _statement(parents, node):
    """``(body, index)`` of the statement holding ``node`` in its enclosing statement list."""
    child, cur = node, parents.get(node)
    while cur is not None:
        for field in ("body", "orelse", "finalbody"):
            body = getattr(cur, field, None)
            if isinstance(body, list) and child in body:
                return body, body.index(child)
        child, cur = cur, parents.get(cur)
    return None, -1


def _after_dummy_run(parents, node) -> bool:
    """``node`` is in a statement preceded, in the same statement list, by one that calls
    ``._dummy_run(`` (which leaves ``execute_model_state`` ``None``: link 5), with no statement
    between them naming a step (``execute_model``, ``sample_tokens``)."""
    body, i = _statement(parents, node)
    if body is None:
        return False
    for j in range(i - 1, -1, -1):
        stmt = body[j]
        if any(_names(n, s) for n in ast.walk(stmt) for s in ("execute_model", "sample_tokens")):
            return False
        if any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "_dummy_run"
            for c in ast.walk(stmt)
        ):
            return True
    return False


def _dummy_run_clears(tree) -> str | None:
    """Link 5: None when ``_dummy_run`` of the V2 runner sets ``self.execute_model_state = None``
    in its top-level body after reading it, with every earlier ``return`` under
    ``if not self.is_last_pp_rank`` (such a rank never samples: ``profile_run`` calls
    ``_dummy_sampler_run`` only under ``if self.is_last_pp_rank``)."""
    dummy, profile = _method(tree, "_dummy_run"), _method(tree, "profile_run")
    if dummy is None or profile is None:
        return "_dummy_run or profile_run not found"
    clear = [
        a.lineno
        for a in dummy.body
        if isinstance(a, ast.Assign)
        and [source_text(t) for t in a.targets] == ["self.execute_model_state"]
        and source_text(a.value) == "None"
    ]
    if not clear:
        return "_dummy_run does not set self.execute_model_state = None in its body"
    parents = {c: n for n in ast.walk(dummy) for c in ast.iter_child_nodes(n)}
    for r in ast.walk(dummy):
        if isinstance(r, ast.Return) and r.lineno < clear[0]:
            guard = parents.get(r)
            if not (isinstance(guard, ast.If) and source_text(guard.test) == "notself.is_last_pp_rank"):
                return f"_dummy_run returns at :{r.lineno} before clearing its state"
    pparents = {c: n for n in ast.walk(profile) for c in ast.iter_child_nodes(n)}
    for c in ast.walk(profile):
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "_dummy_sampler_run":
            cur = pparents.get(c)
            while cur is not None and not (isinstance(cur, ast.If) and source_text(cur.test) == "self.is_last_pp_rank"):
                cur = pparents.get(cur)
            if cur is None:
                return f"profile_run calls _dummy_sampler_run at :{c.lineno} outside `if self.is_last_pp_rank`"
    return None


def _entry_links(files: dict) -> tuple[str | None, list[str]]:
    """Link 4: None when it holds, else what breaks it; with the sites read."""
    sites = []
    for rel, (t, p) in files.items():
        for n in ast.walk(t):
            hit = next((e for e in ENTRIES if _names(n, e)), None)
            if hit is None or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            fn = enclosing_function(p, n)
            if fn is not None and fn.name == hit:
                continue  # delegation: an executor's or worker's method of the same name
            if rel == CORE and fn is not None and fn.name == "_initialize_kv_caches":
                sites.append(f"{rel}:{n.lineno} {hit} in _initialize_kv_caches")
                continue
            if fn is not None and _after_dummy_run(p, n):
                sites.append(f"{rel}:{n.lineno} {hit} in {fn.name}, after a _dummy_run in the same block")
                continue
            return f"{rel}:{getattr(n, 'lineno', '?')} names {hit} in {fn.name if fn else 'module code'}", sites
    if CORE not in files:
        return f"{CORE} not found", sites
    tree, parents = files[CORE]
    init_kv = [
        c
        for rel, (t, p) in files.items()
        for c in ast.walk(t)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "_initialize_kv_caches"
    ]
    core_calls = [c for c in init_kv if c in set(ast.walk(tree))]
    if len(core_calls) != len(init_kv) or not init_kv:
        return "_initialize_kv_caches is called outside vllm/v1/engine/core.py (or not at all)", sites
    for c in core_calls:
        fn = enclosing_function(parents, c)
        cls = class_of(parents, fn) if fn is not None else None
        if fn is None or fn.name != "__init__" or cls != "EngineCore":
            return f"{CORE}:{c.lineno} calls _initialize_kv_caches outside EngineCore.__init__", sites
        before = [n for n in ast.walk(fn) if getattr(n, "lineno", 10**9) < c.lineno]
        step = next((n for n in before for s in STEPS if _names(n, s)), None)
        if step is not None:
            return f"{CORE}:{step.lineno} EngineCore.__init__ runs a step before _initialize_kv_caches", sites
        sites.append(f"{CORE}:{c.lineno} EngineCore.__init__ calls _initialize_kv_caches (no step before it)")
    kv = _method(tree, "_initialize_kv_caches")
    if kv is None:
        return "_initialize_kv_caches not found", sites
    last = max(
        (n.lineno for n in ast.walk(kv) if any(_names(n, e) for e in ENTRIES) and hasattr(n, "lineno")), default=0
    )
    step = next((n for n in ast.walk(kv) if getattr(n, "lineno", 10**9) < last for s in STEPS if _names(n, s)), None)
    if step is not None:
        return f"{CORE}:{step.lineno} _initialize_kv_caches runs a step before profiling or warm-up", sites
    return None, sites


#: Every name the links read; a file that contains none of them cannot break one.
WORDS = (
    "execute_model_state",
    "_dummy_sampler_run",
    "profile_run",
    "warming_up_model",
    *ENTRIES,
    "_initialize_kv_caches",
)


def _files(root: str) -> dict:
    """``{rel: (tree, parents)}`` of the V2 runner's files and of every other ``.py`` file under
    ``vllm/`` whose text names one of :data:`WORDS` (read as text first: parsing all of vLLM is slow)."""
    out = {rel: (t, p) for rel, t, p in parsed_files(root, GPU_DIR)}
    for dirpath, dirs, names in os.walk(os.path.join(root, "vllm")):
        dirs.sort()
        for f in sorted(names):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if not f.endswith(".py") or rel in out:
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                if not any(w in text for w in WORDS):
                    continue
                tree = ast.parse(text)
            except (OSError, SyntaxError, UnicodeDecodeError):
                continue
            out[rel] = (tree, {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)})
    return out


@lru_cache(maxsize=4)
def profile_state_fact(root: str) -> dict:
    """Whether ``self.execute_model_state`` is ``None`` whenever a V2 profile run starts (see the
    module docstring), read in vLLM's source under ``root``: ``{"checked": bool, "why": str,
    "paths": [str]}`` (``why`` names the first link that does not hold; ``paths`` the sites
    read; cached per root: do not mutate it). Never raises on a missing file: a link not found is
    a link that does not hold."""
    files = _files(root)
    paths: list[str] = []

    def out(why: str | None) -> dict:
        return {"checked": why is None, "why": why or "", "paths": paths}

    why = _state_links(files) or _dummy_run_clears(files[RUNNER][0])
    if why is not None:
        return out(why)
    paths.append(f"{RUNNER} _dummy_run asserts execute_model_state; __init__ sets it None; stores checked")
    tree, parents = files[RUNNER]
    for rel, (t, p) in files.items():
        for c in ast.walk(t):
            if not (
                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "_dummy_sampler_run"
            ):
                continue
            fn = enclosing_function(p, c)
            if rel == RUNNER and fn is not None and fn.name == "profile_run":
                paths.append(f"{rel}:{c.lineno} _dummy_sampler_run in profile_run")
            elif rel != RUNNER and _under_v1_only(p, c):
                paths.append(f"{rel}:{c.lineno} _dummy_sampler_run of the V1 runner (not self.use_v2_model_runner)")
            elif rel != RUNNER and source_text(c.func.value) == "self" and not _imports_v2_runner(t):
                paths.append(f"{rel}:{c.lineno} self._dummy_sampler_run of a class not derived from the V2 runner")
            else:
                return out(f"{rel}:{c.lineno} calls _dummy_sampler_run outside profile_run")
    for name, allowed in (*PROFILERS.items(), *WARMERS.items()):
        why = _callers(files, lambda rel: True, name, allowed)
        if why is not None:
            return out(why)
        paths.append(f"{name} called only from {', '.join(sorted(allowed))}")
    why, sites = _entry_links(files)
    paths += sites
    return out(why)
