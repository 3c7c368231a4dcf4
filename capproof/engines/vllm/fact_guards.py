"""Builder guards of vLLM's decode-graph staging buffers, checked on every access as engine facts.

The family obligations ``decode_rows``/``decode_offsets`` (``spec/_families.py``) and FlashMLA's
tile-scheduler rows rest on a guard fact: "the writer runs only when padded_bs <=
decode_cudagraph_max_bs" (the allocation's own size, or that + 1), "the copy is guarded: assert n
<= cg_buf_tile_scheduler_metadata.size(0)". Stated on the capacity, each restates its claim. Here
each becomes a fact over vLLM's code, one per inventory entry (scope: the entry id), with one path
per access of the buffer in its builder's file:

- **Mamba and Bailing linear attention** (``mamba_attn.py``, ``linear_attn.py``): the chain that
  :mod:`.demand_backends` already checks (the guard, ``padded_bs = num_reqs``,
  ``split_decodes_and_prefills`` run on every path); each guarded slice it lists is a path.
- **GDN and PLE short convolution** (``gdn_attn.py``, ``short_conv_attn.py``), :func:`staging_paths`
  (AST): every use of ``self.<buffer>`` is a slice ``[..:stop]`` inside an ``if`` whose condition
  (a conjunction, or a ``self._stage_*(...)`` helper whose ``return`` is one, its parameters bound
  to the call's arguments) has a conjunct ``x <= self.decode_cudagraph_max_bs`` with ``stop`` ``x``
  (``x`` or ``x + 1`` for a buffer of ``decode_cudagraph_max_bs + 1`` rows), ``x`` not rebound in
  the guarded block; the allocation's first dimension is ``self.decode_cudagraph_max_bs`` (``+ 1``),
  stored only in ``__init__`` and never after the allocation. Two other stops are judged:

  - ``batch_size = m.num_reqs`` in GDN's ``build`` under ``_stage_decode`` (no prefills, no spec
    decodes, ``num_decodes <= decode_cudagraph_max_bs``): GDN's own classification of the non-spec
    batch (the ``if spec_sequence_masks is None:`` block of ``build``, recompiled from vLLM's source
    and run with vLLM's ``split_decodes_and_prefills`` and real CPU tensors,
    :func:`gdn_decode_count_sweep`) gives ``num_prefills == 0 => num_decodes == num_reqs`` on every
    batch of :data:`GDN_SWEEP` (bounded: a test of the code over that domain, not a proof for every
    size; ``executed``);
  - ``batch_size = m.<buffer>.shape[0]`` in ``update_block_table``: the metadata's field is, when the
    same guard held in ``build``, a slice of the same attribute (``ast``), so its rows are at most the
    allocation's.

  ``batch_size = m.num_reqs`` under a spec-decode guard is **not checked**: the guard bounds the
  spec decodes, and ``m.num_reqs`` also counts trailing zero-length (padded) requests, which the
  guard does not bound; it holds when the runner's padded request count is at most
  ``decode_cudagraph_max_bs`` (not read here). ``num_decode_rows = state_indices_d.numel()`` (PLE
  short conv) is the Mamba base's staged rows, sized by the base's ``decode_cudagraph_max_bs``,
  which the PLE builder stores again: not checked.
- **FlashMLA** (``mla/flashmla.py``), :func:`assert_guard_paths` (AST): every write ``buf[:n]`` follows,
  in the same block, ``assert n <= self.<buf>.size(0)`` with ``n`` not rebound between them (vLLM runs
  without ``-O``: past the bound the engine stops at the assert).

Each fact names the assumptions of ``spec/`` it discharges (:data:`ROWS`, :data:`OFFSETS`,
:data:`FLASHMLA`). Errors: none raised by :func:`guard_facts` for a missing file or class (its
paths are "not checked", with the reason).
"""

from __future__ import annotations

import ast
import itertools
import os
import re

from ...facts import fact_record, path_record
from ..tracing.accesses import compact_source as _src
from ..tracing.accesses import parent_map

__all__ = [
    "ROWS",
    "OFFSETS",
    "FLASHMLA",
    "GDN",
    "SHORT_CONV",
    "FLASH_MLA_FILE",
    "GDN_SWEEP",
    "staging_paths",
    "assert_guard_paths",
    "gdn_decode_count_sweep",
    "GDN_DECODE",
    "derive_gdn_decode",
    "guard_facts",
]

#: The named assumptions (``spec/_families.py``, ``spec/vllm_0_33_buffers.py``) these facts discharge.
ROWS = (
    "the writer runs only when padded_bs (= num_decodes, no prefills) <= decode_cudagraph_max_bs, "
    "the allocation's own size"
)
OFFSETS = "the writer runs only when padded_bs <= decode_cudagraph_max_bs (allocated decode_cudagraph_max_bs + 1)"
FLASHMLA = "the copy is guarded: assert n <= cg_buf_tile_scheduler_metadata.size(0)"

_BACKENDS = "vllm/v1/attention/backends/"
GDN = _BACKENDS + "gdn_attn.py"
SHORT_CONV = _BACKENDS + "short_conv_attn.py"
FLASH_MLA_FILE = _BACKENDS + "mla/flashmla.py"

#: Buffers of the decode-graph staging checked by :func:`staging_paths`, per (file, builder class).
STAGED = {
    (GDN, "GDNAttentionMetadataBuilder"): (
        "non_spec_state_indices_tensor",
        "non_spec_query_start_loc",
        "spec_state_indices_tensor",
        "spec_sequence_masks",
        "spec_query_start_loc",
        "num_accepted_tokens",
    ),
    (SHORT_CONV, "PleShortConvAttentionMetadataBuilder"): (
        "has_initial_states_d",
        "spec_state_indices_tensor",
        "spec_sequence_masks",
        "spec_query_start_loc",
        "num_accepted_tokens",
    ),
}
_CAP = "self.decode_cudagraph_max_bs"
#: Attributes of a tensor whose reading touches no element.
_METADATA = ("shape", "size", "dtype", "device", "ndim", "dim", "numel", "stride", "is_cuda")

#: The non-spec GDN batches :func:`gdn_decode_count_sweep` runs: request counts, query lengths per
#: request, whether a request has prior state (seq_len > query_len), is_prefilling None or per
#: request (every combination up to ``is_prefilling_each_up_to`` requests; beyond, all False or all True).
GDN_SWEEP = {"num_reqs": (1, 2, 3, 4), "query_len": (0, 1, 2), "prior": (False, True), "is_prefilling_each_up_to": 3}


def _conjuncts(node) -> list:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        out = []
        for v in node.values:
            out += _conjuncts(v)
        return out
    return [node]


class _Subst(ast.NodeTransformer):
    def __init__(self, binding: dict):
        self.binding = binding

    def visit_Name(self, node):
        return self.binding.get(node.id, node)


def _guard_conjuncts(test, methods: dict) -> list[str]:
    """The conjuncts (source, spaces removed) of an ``if`` test: a conjunction, or a call of a
    method of the class whose body is one ``return <conjunction>`` (parameters bound to the
    call's positional and keyword arguments)."""
    out = []
    for c in _conjuncts(test):
        fn = None
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and _src(c.func.value) == "self":
            fn = methods.get(c.func.attr)
        if fn is not None and all(k.arg for k in c.keywords):
            body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            params = [a.arg for a in fn.args.args][1:]
            if len(body) == 1 and isinstance(body[0], ast.Return) and len(c.args) <= len(params):
                binding = dict(zip(params, c.args))
                binding.update({k.arg: k.value for k in c.keywords})
                ret = _Subst(binding).visit(ast.parse(ast.unparse(body[0].value), mode="eval").body)
                out += [_src(x) for x in _conjuncts(ret)]
                continue
        out.append(_src(c))
    return out


def _stores(fn, name: str) -> list:
    """Assignments (plain, annotated, augmented, tuple targets, loop targets) of ``name`` in ``fn``."""
    out = []
    for a in ast.walk(fn):
        targets = []
        if isinstance(a, ast.Assign):
            targets = a.targets
        elif isinstance(a, (ast.AnnAssign, ast.AugAssign)):
            targets = [a.target]
        elif isinstance(a, (ast.For, ast.comprehension)):
            targets = [a.target]
        for t in targets:
            if any(_src(x) == name for x in ast.walk(t) if isinstance(x, (ast.Name, ast.Attribute))):
                out.append(a)
    return out


def _guards_of(node, parents, methods) -> list[tuple[ast.If, list[str]]]:
    """The ``if`` statements whose body (not ``else``) holds ``node``, innermost first, with their conjuncts."""
    out = []
    while node in parents:
        p = parents[node]
        if isinstance(p, ast.If) and any(node is s for s in p.body):
            out.append((p, _guard_conjuncts(p.test, methods)))
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
        node = p
    return out


def _enclosing_function(node, parents):
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def _capacity(cls, buf: str) -> tuple[int | None, str]:
    """``(0 or 1, "")`` when every allocation of ``self.<buf>`` in ``__init__`` has first dimension
    ``self.decode_cudagraph_max_bs`` (``+ 1``), the attribute being stored only in ``__init__`` and
    never after the allocation; ``(None, why not)`` otherwise."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        return None, f"{cls.name} has no __init__"
    allocs = [a for a in _stores(init, f"self.{buf}") if isinstance(a, (ast.Assign, ast.AnnAssign))]
    heads = set()
    for a in allocs:
        call = a.value
        if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Tuple) and call.args[0].elts:
            heads.add(_src(call.args[0].elts[0]))
        else:
            heads.add(None)
    if not allocs or len(heads) != 1 or heads - {_CAP, _CAP + "+1"}:
        return None, f"self.{buf} is not allocated ({_CAP}[ + 1], ...) in {cls.name}.__init__"
    for f in cls.body:
        if isinstance(f, ast.FunctionDef):
            for s in _stores(f, _CAP):
                if f is not init:
                    return None, f"{_CAP} is stored in {cls.name}.{f.name} (:{s.lineno})"
                if s.lineno > min(a.lineno for a in allocs):
                    return None, f"{_CAP} is stored again at :{s.lineno}, after the allocation of self.{buf}"
    return (1 if heads == {_CAP + "+1"} else 0), ""


def staging_paths(
    tree: ast.Module,
    file: str,
    cls_name: str,
    buf: str,
    judged: dict | None = None,
    base: ast.ClassDef | None = None,
) -> tuple[list[dict], str]:
    """``(paths, "")``: one :func:`capproof.facts.path_record` per use of ``self.<buf>`` in
    ``file`` (the module docstring's rules), or ``([], why)`` when the allocation is not of the
    guarded form. ``judged`` maps a stop's binding (``"<function>:batch_size=<value>"``, spaces
    removed) to ``(result, how, why, conjuncts)`` decided elsewhere (:func:`gdn_decode_count_sweep`),
    used where the enclosing guards have every one of ``conjuncts``. With ``base`` (the allocating
    class, from another file), ``cls_name`` is a subclass of it in ``file``: only the uses in that
    class are read, the capacity is ``base``'s allocation, and ``self._stage_*`` helpers resolve to
    the subclass's methods, then ``base``'s."""
    judged = judged or {}
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    if cls is None:
        return [], f"no class {cls_name} in {file}"
    alloc_cls = base if base is not None else cls
    plus, why = _capacity(alloc_cls, buf)
    if plus is None:
        return [], why
    methods = {f.name: f for f in alloc_cls.body if isinstance(f, ast.FunctionDef)}
    if base is not None:
        methods.update({f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)})
        restored = [s.lineno for f in cls.body if isinstance(f, ast.FunctionDef) for s in _stores(f, _CAP)]
        if restored:
            return [], f"{cls_name} stores {_CAP} again (:{restored[0]})"
    parents = parent_map(tree)
    init = next((f for f in alloc_cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    allocs = {id(t) for a in _stores(init, f"self.{buf}") for t in ast.walk(a)}
    if base is not None:
        own_init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        allocs |= {id(t) for a in (_stores(own_init, f"self.{buf}") if own_init else []) for t in ast.walk(a)}
    realloc = _reallocated(cls) if base is not None else {}
    scope = cls if base is not None else tree
    paths = []
    for u in ast.walk(scope):
        if not (isinstance(u, ast.Attribute) and _src(u) == f"self.{buf}") or id(u) in allocs:
            continue
        p = parents.get(u)
        site = f"{file}:{u.lineno}"
        if isinstance(p, ast.Compare) and _src(p).endswith(("isnotNone", "isNone")):
            continue  # a presence test, no access
        if isinstance(p, ast.Attribute) and p.attr in _METADATA:
            continue  # a metadata read (the bound of a guard), no access
        if not (isinstance(p, ast.Subscript) and p.value is u and isinstance(p.slice, ast.Slice)):
            paths.append(path_record(site, f"self.{buf} ({_src(p)[:60]})", "ast", "not checked", "not a slice"))
            continue
        sets = f"self.{buf}[{ast.unparse(p.slice)}]"
        stop = p.slice.upper
        if stop is None or p.slice.step is not None:
            paths.append(path_record(site, sets, "ast", "not checked", "a slice without a stop, or with a step"))
            continue
        stop_src = _src(stop)
        stop_base, extra = stop_src, 0
        if isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Add) and _src(stop.right) == "1":
            stop_base, extra = _src(stop.left), 1
        if extra > plus:
            paths.append(path_record(site, sets, "ast", "not checked", f"stop {stop_src} reaches past {stop_base}"))
            continue
        guards = _guards_of(p, parents, methods)
        fn = _enclosing_function(p, parents)
        bounded = [(g, c) for g, cs in guards for c in cs if c == f"{stop_base}<={_CAP}"]
        by_shape = [
            (g, c) for g, cs in guards for c in cs if c.startswith(f"{stop_base}<=self.") and c.endswith(".shape[0]")
        ]
        own, shape_why = None, []
        for g, c in by_shape:
            other = c[len(f"{stop_base}<=self.") : -len(".shape[0]")]
            if other == buf and not extra:
                own = f"under `{c}` (:{g.lineno}): the buffer's own rows"
                break
            if other in realloc:
                shape_why.append(
                    f"`{c}` (:{g.lineno}): self.{other} is reallocated in {cls_name}.__init__ (:{realloc[other]}) "
                    f"with another size, so it does not bound self.{buf}'s rows"
                )
            elif other != buf and _capacity(alloc_cls, other)[0] == 0:
                bounded = [(g, f"{stop_base}<={_CAP}")]
                break
            else:
                shape_why.append(f"`{c}` (:{g.lineno}) does not bound self.{buf}'s rows")
        if own:
            paths.append(path_record(site, sets, "ast", "checked", own))
            continue
        if shape_why and not bounded:
            paths.append(path_record(site, sets, "ast", "not checked", "; ".join(shape_why)))
            continue
        if bounded:
            g = bounded[0][0]
            rebound = [
                s.lineno for s in ast.walk(ast.Module(body=g.body, type_ignores=[])) if s in _stores(fn, stop_base)
            ]
            rebound = [n for n in rebound if n < p.lineno]
            if rebound:
                paths.append(path_record(site, sets, "ast", "not checked", f"{stop_base} is rebound at :{rebound[0]}"))
            else:
                paths.append(
                    path_record(
                        site,
                        sets,
                        "ast",
                        "checked",
                        f"under `{stop_base} <= decode_cudagraph_max_bs` (:{g.lineno}), allocated "
                        f"decode_cudagraph_max_bs{' + 1' if plus else ''} rows",
                    )
                )
            continue
        sets_of = _reaching(fn, stop_base, p, guards) if fn is not None else []
        key = f"{fn.name if fn else '?'}:{stop_base}={_src(sets_of[0].value) if len(sets_of) == 1 else '?'}"
        conj = sorted({c for _, cs in guards for c in cs})
        if len(sets_of) == 1 and key in judged and set(judged[key][3]) <= set(conj):
            result, how, why, _ = judged[key]
            paths.append(path_record(site, sets, how, result, why))
            continue
        shape = (
            f"m.{buf}.shape[0]" if len(sets_of) == 1 and _src(sets_of[0].value).endswith(f".{buf}.shape[0]") else None
        )
        if shape and guards and _staged_view(cls, buf, guards[0][0], methods):
            paths.append(
                path_record(
                    site,
                    sets,
                    "ast",
                    "checked",
                    f"{stop_base} = {_src(sets_of[0].value)} (:{sets_of[0].lineno}): under the same guard build "
                    f"stores a slice self.{buf}[:...] in that field, so its rows are at most the allocation's",
                )
            )
            continue
        bound = f"{stop_base} = {_src(sets_of[0].value)} (:{sets_of[0].lineno})" if len(sets_of) == 1 else stop_base
        why = f"{bound}: no guard conjunct bounds it (guard: {' and '.join(conj)})"
        if len(sets_of) == 1 and _src(sets_of[0].value) == "m.num_reqs":
            why += (
                "; m.num_reqs also counts trailing zero-length (padded) requests, which the guard does not bound: "
                "holds when the runner's padded request count is <= decode_cudagraph_max_bs (not read here)"
            )
        paths.append(path_record(site, sets, "ast", "not checked", why))
    return paths, ""


_SUBCLASSES: dict = {}


def subclasses(root: str, cls_name: str) -> list[tuple[str, ast.Module, ast.ClassDef]]:
    """Every class of ``root/vllm`` deriving, directly or through others found here, from a class
    named ``cls_name`` (bases read by name: ``X`` or ``module.X``): ``(file, tree, class)``."""
    key = (root, cls_name)
    if key in _SUBCLASSES:
        return _SUBCLASSES[key]
    from .wheels import py_files

    texts = {}
    for rel, path in py_files(root):
        try:
            texts[rel] = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
    names, out, trees = {cls_name}, [], {}
    while True:
        found = False
        for rel, text in texts.items():
            if not any(n in text for n in names):
                continue
            if rel not in trees:
                try:
                    trees[rel] = ast.parse(text)
                except SyntaxError:
                    continue
            for node in ast.walk(trees[rel]):
                if (
                    isinstance(node, ast.ClassDef)
                    and node.name not in names
                    and any(
                        (b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)) in names for b in node.bases
                    )
                ):
                    names.add(node.name)
                    out.append((rel, trees[rel], node))
                    found = True
        if not found:
            break
    _SUBCLASSES[key] = out
    return out


def _reallocated(cls) -> dict:
    """``{attribute: line}`` of the ``self.<attribute> = torch.<factory>(...)`` stores of ``cls.__init__``."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    out = {}
    for a in ast.walk(init) if init else []:
        if (
            isinstance(a, (ast.Assign, ast.AnnAssign))
            and isinstance(a.value, ast.Call)
            and _src(a.value.func).startswith("torch.")
        ):
            t = a.targets[0] if isinstance(a, ast.Assign) else a.target
            if isinstance(t, ast.Attribute) and _src(t.value) == "self":
                out.setdefault(t.attr, a.lineno)
    return out


def _reaching(fn, name: str, use, guards) -> list:
    """The assignment of ``name`` that reaches ``use``: the last one before it in the innermost
    guarded block holding both, else the only assignment in ``fn``; ``[]`` when neither is one."""
    stores = [s for s in _stores(fn, name) if isinstance(s, ast.Assign)]
    for g, _ in guards:
        inside = {id(n) for b in g.body for n in ast.walk(b)}
        before = [s for s in stores if id(s) in inside and s.lineno < use.lineno]
        if before:
            if len(_stores(fn, name)) == len(stores):
                return [max(before, key=lambda s: s.lineno)]
            return []
    return stores if len(stores) == 1 and len(_stores(fn, name)) == 1 else []


def _staged_view(cls, buf: str, guard: ast.If, methods: dict) -> bool:
    """Whether ``build`` sets the metadata field ``buf`` from a local that, under an ``if`` with the
    same test as ``guard``, is assigned a slice of ``self.<buf>`` (the field then is that view)."""
    build = methods.get("build")
    if build is None:
        return False
    want = _guard_conjuncts(guard.test, methods)
    # the test in update_block_table reads m.<count>; build's reads the local counts of the same names
    want = sorted(re.sub(r"\bm\.", "", w) for w in want)
    for node in ast.walk(build):
        if isinstance(node, ast.If) and sorted(_guard_conjuncts(node.test, methods)) == want:
            for s in node.body:
                if (
                    isinstance(s, ast.Assign)
                    and _src(s.targets[0]) == buf
                    and isinstance(s.value, ast.Subscript)
                    and _src(s.value.value) == f"self.{buf}"
                ):
                    passes = [
                        k
                        for c in ast.walk(build)
                        if isinstance(c, ast.Call)
                        for k in c.keywords
                        if k.arg == buf and _src(k.value) == buf
                    ]
                    return bool(passes)
    return False


def assert_guard_paths(tree: ast.Module, file: str, buf: str) -> list[dict]:
    """One path per use of ``self.<buf>`` in ``tree`` other than its stores and presence tests:
    a slice ``[:n]`` is checked when an earlier statement of the same block is ``assert n <=
    self.<buf>.size(0)`` and ``n`` is not stored between the two; a ``.size(0)`` read is no access."""
    parents = parent_map(tree)
    paths = []
    for u in ast.walk(tree):
        if not (isinstance(u, ast.Attribute) and _src(u) == f"self.{buf}"):
            continue
        p = parents.get(u)
        if isinstance(p, (ast.Assign, ast.AnnAssign)) and u in (p.targets if isinstance(p, ast.Assign) else [p.target]):
            continue
        if isinstance(p, ast.Compare) and _src(p).endswith(("isnotNone", "isNone")):
            continue
        if isinstance(p, ast.Attribute) and p.attr == "size":
            continue  # the bound of an assert, or another metadata read
        site = f"{file}:{u.lineno}"
        if not (isinstance(p, ast.Subscript) and isinstance(p.slice, ast.Slice) and p.slice.upper is not None):
            paths.append(path_record(site, f"self.{buf}", "ast", "not checked", "not a slice [:n]"))
            continue
        n = _src(p.slice.upper)
        sets = f"self.{buf}[:{n}]"
        stmt = p
        while stmt in parents and not isinstance(stmt, ast.stmt):
            stmt = parents[stmt]
        block = next(
            (
                getattr(parents[stmt], f)
                for f in ("body", "orelse", "finalbody")
                if any(s is stmt for s in getattr(parents.get(stmt), f, []) or [])
            ),
            [],
        )
        idx = next(i for i, s in enumerate(block) if s is stmt) if block else 0
        found = None
        for j in range(idx - 1, -1, -1):
            s = block[j]
            if isinstance(s, ast.Assert) and _src(s.test) == f"{n}<=self.{buf}.size(0)":
                found = s
                break
            if any(isinstance(x, ast.Name) and x.id == n and isinstance(x.ctx, ast.Store) for x in ast.walk(s)):
                break
        if found is None:
            paths.append(
                path_record(
                    site, sets, "ast", "not checked", f"no `assert {n} <= self.{buf}.size(0)` earlier in its block"
                )
            )
        else:
            paths.append(
                path_record(
                    site,
                    sets,
                    "ast",
                    "checked",
                    f"after `assert {n} <= self.{buf}.size(0)` (:{found.lineno}), {n} not rebound between",
                )
            )
    return paths


def _non_spec_block(tree: ast.Module, cls_name: str = "GDNAttentionMetadataBuilder"):
    """``(build, block, why not)``: the non-spec classification of ``cls_name.build`` (an ``if
    spec_sequence_masks is None:`` or ``if num_spec_decodes == 0:`` block calling
    ``split_decodes_and_prefills``), when it is the one that ran whenever ``num_spec_decodes == 0``
    (:func:`_runs_without_spec`)."""
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    build = next((f for f in (cls.body if cls else []) if isinstance(f, ast.FunctionDef) and f.name == "build"), None)
    if build is None:
        return None, None, f"no {cls_name}.build"
    block = next(
        (
            n
            for n in ast.walk(build)
            if isinstance(n, ast.If)
            and _src(n.test) in ("spec_sequence_masksisNone", "num_spec_decodes==0")
            and any(
                isinstance(c, ast.Call) and _src(c.func) == "split_decodes_and_prefills"
                for s in n.body
                for c in ast.walk(s)
            )
        ),
        None,
    )
    if block is None:
        return build, None, f"no non-spec classification block in {cls_name}.build"
    return build, block, _runs_without_spec(build, block)


def _runs_without_spec(build, block) -> str:
    """ "" when ``num_spec_decodes == 0`` at the staging means ``block`` ran: ``num_spec_decodes`` is
    not stored after the block's test, and for a test ``spec_sequence_masks is None`` every store of a
    value other than ``None`` into ``spec_sequence_masks`` before it is in the ``else`` of an ``if
    num_spec_decodes == 0:``; else why not."""
    late = [s.lineno for s in _stores(build, "num_spec_decodes") if s.lineno > block.lineno]
    if late:
        return f"num_spec_decodes is stored after the classification (:{late[0]})"
    if _src(block.test) == "num_spec_decodes==0":
        return ""
    parents = parent_map(build)
    for s in _stores(build, "spec_sequence_masks"):
        if s.lineno >= block.lineno or (isinstance(s, ast.Assign) and _src(s.value) == "None"):
            continue
        node, ok = s, False
        while node in parents:
            p = parents[node]
            if isinstance(p, ast.If) and _src(p.test) == "num_spec_decodes==0" and any(node is x for x in p.orelse):
                ok = True
                break
            node = p
        if not ok:
            return f"spec_sequence_masks is set at :{s.lineno} outside the else of `if num_spec_decodes == 0`"
    return ""


_SWEEPS: dict = {}


def gdn_decode_count_sweep(
    root: str, domain: dict | None = None, file: str = GDN, cls_name: str = "GDNAttentionMetadataBuilder"
) -> tuple[bool, str, int]:
    """Run the non-spec classification of a GDN builder (``cls_name.build`` in ``file``: the block
    :func:`_non_spec_block` finds, compiled from the file under ``root``, with vLLM's own
    ``split_decodes_and_prefills`` and CPU tensors) on every batch of ``domain`` (:data:`GDN_SWEEP`):
    ``(num_prefills == 0 implies num_decodes == num_reqs on every batch, the first counterexample or
    why not run, batches run)``. The block must bind ``num_decodes`` and ``num_prefills``; a block
    that raises on a batch counts as not holding. Needs torch and vLLM importable."""
    key = (root, repr(domain), file, cls_name)
    if key not in _SWEEPS:
        _SWEEPS[key] = _sweep(root, domain or GDN_SWEEP, file, cls_name)
    return _SWEEPS[key]


def _sweep(root: str, domain: dict, file: str, cls_name: str) -> tuple[bool, str, int]:
    import torch
    from vllm.v1.attention.backends.utils import split_decodes_and_prefills

    tree = ast.parse(open(os.path.join(root, file), encoding="utf-8").read())
    build, block, why = _non_spec_block(tree, cls_name)
    if block is None or why:
        return False, why, 0
    mod = ast.parse("def _classify(m, query_start_loc, query_start_loc_cpu, block_table_tensor):\n    pass\n")
    mod.body[0].body = [*block.body, ast.parse("return num_decodes, num_prefills").body[0]]
    mod = ast.fix_missing_locations(mod)
    ns = {"torch": torch, "split_decodes_and_prefills": split_decodes_and_prefills}
    exec(compile(mod, f"<{file}:{block.lineno}>", "exec"), ns)  # noqa: S102 - vLLM's own statements
    classify = ns["_classify"]

    class Meta:
        def __init__(self, q, prior, prefilling):
            n = len(q)
            self.num_reqs = n
            self.query_start_loc_cpu = torch.tensor([0, *itertools.accumulate(q)], dtype=torch.int32)
            self.num_actual_tokens = int(sum(q))
            self.max_query_len = max(q)
            self.seq_lens_cpu_upper_bound = torch.tensor([x + int(p) for x, p in zip(q, prior)], dtype=torch.int32)
            self.is_prefilling = prefilling

        def replace(self, **kw):
            other = object.__new__(Meta)
            other.__dict__.update(self.__dict__, **kw)
            return other

    runs = 0
    for n in domain["num_reqs"]:
        for q in itertools.product(domain["query_len"], repeat=n):
            for prior in itertools.product(domain["prior"], repeat=n):
                if n <= domain.get("is_prefilling_each_up_to", n):
                    choices = list(itertools.product((False, True), repeat=n))
                else:
                    choices = [(False,) * n, (True,) * n]
                for pf in [None, *choices]:
                    prefilling = None if pf is None else torch.tensor(pf)
                    m = Meta(q, prior, prefilling)
                    runs += 1
                    try:
                        d, p = classify(m, m.query_start_loc_cpu, m.query_start_loc_cpu, torch.zeros((n, 1)))
                    except Exception as exc:  # noqa: BLE001 - a batch the block rejects is reported
                        return False, f"query lens {q}: {type(exc).__name__}: {exc}", runs
                    if p == 0 and d != n:
                        return (
                            False,
                            f"query lens {q}, prior state {prior}, is_prefilling {pf}: num_prefills 0, "
                            f"num_decodes {d} != num_reqs {n}",
                            runs,
                        )
    return True, "", runs


#: The conjuncts under which GDN's decode staging reads ``batch_size`` (``_stage_decode``).
_DECODE_GUARD = ("num_prefills==0", "num_spec_decodes==0", "num_decodes<=self.decode_cudagraph_max_bs")


def _gdn_judged(root: str) -> dict:
    """``{file: {"build:batch_size=m.num_reqs": (result, how, why, conjuncts)}}`` for GDN's builder and
    every subclass with its own ``build``: the decode staging's ``batch_size`` judged by running that
    builder's classification (:func:`gdn_decode_count_sweep`)."""
    out = {}
    todo = [(GDN, "GDNAttentionMetadataBuilder")]
    todo += [(rel, c.name) for rel, _, c in subclasses(root, "GDNAttentionMetadataBuilder")]
    for file, cls_name in todo:
        tree = ast.parse(open(os.path.join(root, file), encoding="utf-8").read())
        _, block, why = _non_spec_block(tree, cls_name)
        if block is None and file != GDN:
            continue  # no classification of its own (inherits build, or stages nothing of it)
        try:
            ok, cex, runs = gdn_decode_count_sweep(root, None, file, cls_name)
        except Exception as exc:  # noqa: BLE001 - the run failed: the path stays not checked
            ok, cex, runs = False, f"not run: {type(exc).__name__}: {exc}"[:300], 0
        where = f"{file}:{block.lineno}" if block is not None else file
        if ok:
            res = (
                "checked",
                "executed",
                f"batch_size = m.num_reqs; {cls_name}'s non-spec classification ({where}) run with vLLM's "
                f"split_decodes_and_prefills on {runs} batches (up to {max(GDN_SWEEP['num_reqs'])} requests, "
                "query lengths 0-2, any prior state, is_prefilling None or any per request up to 3 requests): "
                "num_prefills == 0 gives num_decodes == "
                "num_reqs, so the guard's num_decodes <= decode_cudagraph_max_bs bounds it (bounded run; the "
                "block is the one run when num_spec_decodes == 0, read in the source)",
                _DECODE_GUARD,
            )
        else:
            res = ("not checked", "executed", f"batch_size = m.num_reqs: {cex or 'the run failed'}", _DECODE_GUARD)
        out[file] = {"build:batch_size=m.num_reqs": res}
    return out


def _subclass_paths(root: str, tree: ast.Module, cls_name: str, buf: str, judged: dict) -> list[dict]:
    """The paths of ``self.<buf>`` in the subclasses of ``cls_name`` outside its file (their own
    guards; the capacity the base's allocation). A subclass whose reading fails gives one path not
    checked."""
    base = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    out = []
    for rel, sub_tree, sub in subclasses(root, cls_name):
        if not any(isinstance(n, ast.Attribute) and _src(n) == f"self.{buf}" for n in ast.walk(sub)):
            continue
        paths, why = staging_paths(sub_tree, rel, sub.name, buf, judged.get(rel, {}), base=base)
        out += paths or [path_record(f"{rel}:{sub.lineno}", f"{sub.name}: self.{buf}", "ast", "not checked", why)]
    return out


def _staging_facts(root: str, judged_gdn: dict) -> list[dict]:
    facts = []
    for (file, cls_name), bufs in STAGED.items():
        path = os.path.join(root, file)
        tree = ast.parse(open(path, encoding="utf-8").read()) if os.path.exists(path) else None
        for buf in bufs:
            ident = f"{file}::{cls_name}.{buf}"
            if tree is None:
                paths, why = [], f"{file} not found"
            else:
                paths, why = staging_paths(tree, file, cls_name, buf, judged_gdn.get(file, {}))
                if paths:
                    paths += _subclass_paths(root, tree, cls_name, buf, judged_gdn)
            if not paths:
                paths = [path_record(file, f"self.{buf}", "ast", "not checked", why or "no access found")]
            facts.append(_fact(ident, paths))
    return facts


def _fact(ident: str, paths: list[dict]) -> dict:
    attr = ident.split("::", 1)[1]
    return fact_record(
        f"{attr}: every slice is bounded by the staging guard's count <= decode_cudagraph_max_bs (its own rows)",
        [ROWS, OFFSETS],
        [ident],
        paths,
    )


def _derived_facts(root: str) -> list[dict]:
    """Facts for the Mamba and Bailing staging from :mod:`.demand_backends`' checked chain."""
    from .demand_backends import (
        LINEAR,
        LINEAR_GUARDED,
        MAMBA,
        MAMBA_GUARDED,
        derive_linear_guarded,
        derive_mamba_guarded,
    )

    facts = []
    for derive, file, cls_name, bufs in (
        (derive_mamba_guarded, MAMBA, "BaseMambaAttentionMetadataBuilder", MAMBA_GUARDED),
        (derive_linear_guarded, LINEAR, "BailingLinearAttentionMetadataBuilder", LINEAR_GUARDED),
    ):
        try:
            found, problems = derive(root)
        except Exception as exc:  # noqa: BLE001 - the chain not checked: its paths say so
            found, problems = {}, [f"{type(exc).__name__}: {exc}"]
        for buf in bufs:
            ident = f"{file}::{cls_name}.{buf}"
            demands = found.get(ident)
            if not demands:
                why = "; ".join(p for p in problems if buf in p) or "; ".join(problems) or "not derived"
                paths = [path_record(file, f"self.{buf}", "ast", "not checked", why[:300])]
            else:
                d0 = next(d for d in demands if d["dim"] == 0)
                sites = [s for s in d0["from"] if "(guarded, :" in s]
                paths = [
                    path_record(s.split(" ", 1)[0], s.split(" ", 1)[1], "ast", "checked", "the staging guard bounds it")
                    for s in sites
                ] + [
                    path_record(
                        "vllm/v1/attention/backends/utils.py",
                        "num_reqs == num_decodes + num_prefills (padded_bs = num_reqs)",
                        "executed",
                        "checked",
                        "; ".join(d0.get("notes") or [])[:300],
                    )
                ]
            facts.append(_fact(ident, paths))
    return facts


#: GDN buffers whose every access :func:`staging_paths` can check (the decode staging).
GDN_DECODE = ("non_spec_state_indices_tensor", "non_spec_query_start_loc")


def derive_gdn_decode(entries: list, root: str) -> list[str]:
    """Set the ``demands`` of :data:`GDN_DECODE` (entries without one) when every path of their
    guard fact is checked: dimension 0 ``select((num_prefills == 0) & (num_decodes <=
    decode_cudagraph_max_bs), num_decodes + num_prefills [+ 1], 0)`` (family ``guarded slice``),
    ``decode_cudagraph_max_bs`` bound to the allocation's traced dimension 0 (minus 1 for the
    offsets). One problem line per entry not derived."""
    from ...facts import status

    by_id = {e.id: e for e in entries}
    problems = []
    try:
        judged = _gdn_judged(root)
    except Exception as exc:  # noqa: BLE001 - one line: not derived
        return [f"GDN decode staging not derived: {type(exc).__name__}: {exc}"[:300]]
    tree = ast.parse(open(os.path.join(root, GDN), encoding="utf-8").read())
    for buf in GDN_DECODE:
        ident = f"{GDN}::GDNAttentionMetadataBuilder.{buf}"
        e = by_id.get(ident)
        if e is None:
            problems.append(f"demand: {ident} is not in the inventory")
            continue
        paths, why = staging_paths(tree, GDN, "GDNAttentionMetadataBuilder", buf, judged.get(GDN, {}))
        if paths:
            paths += _subclass_paths(root, tree, "GDNAttentionMetadataBuilder", buf, judged)
        fact = _fact(ident, paths) if paths else None
        if fact is None or status(fact) != "checked":
            bad = [p["site"] for p in paths if p["result"] != "checked"]
            problems.append(f"demand of {ident} not derived: {why or 'paths not checked: ' + ', '.join(bad)}"[:300])
            continue
        plus = any(p["sets"].endswith("+ 1]") for p in paths)
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GDNAttentionMetadataBuilder")
        alloc_plus, _ = _capacity(cls, buf)
        rows = "num_decodes + num_prefills" + (" + 1" if plus else "")
        if e.demands:
            continue
        e.demands = [
            {
                "dim": 0,
                "how": "executed" if any(p["how"] == "executed" for p in paths) else "ast",
                "family": "guarded slice",
                "extent": f"select((num_prefills == 0) & (num_decodes <= decode_cudagraph_max_bs), {rows}, 0)",
                "binds": {
                    "decode_cudagraph_max_bs": f"({e.shape[0]}) - 1" if alloc_plus else e.shape[0],
                },
                "from": [f"{p['site']} {p['sets']} ({p['how']})" for p in paths],
                # every use read here, subclasses' in other files included (one per path)
                "judged_uses": [p["site"] for p in paths],
                "notes": [
                    "under the guard num_prefills == 0 (so num_decodes + num_prefills == num_decodes); "
                    + "; ".join(p["why"] for p in paths if p["how"] == "executed")
                ][:1],
                "facts": [
                    {
                        "fact": fact["fact"],
                        "checked": True,
                        "paths": {"checked": [f"{p['site']} {p['sets']}: {p['why']}" for p in paths]},
                    }
                ],
            }
        ]
    return problems


def guard_facts(root: str) -> list[dict]:
    """The guard facts (module docstring) over the sources under ``root`` (vLLM importable for the
    executed paths; without it those paths are "not checked")."""
    try:
        judged = _gdn_judged(root)
    except Exception as exc:  # noqa: BLE001 - the run failed: the paths stay not checked
        judged = {
            GDN: {
                "build:batch_size=m.num_reqs": (
                    "not checked",
                    "executed",
                    f"GDN's classification not run: {type(exc).__name__}: {exc}"[:300],
                    _DECODE_GUARD,
                )
            }
        }
    facts = _derived_facts(root) + _staging_facts(root, judged)
    path = os.path.join(root, FLASH_MLA_FILE)
    if os.path.exists(path):
        tree = ast.parse(open(path, encoding="utf-8").read())
        paths = assert_guard_paths(tree, FLASH_MLA_FILE, "cg_buf_tile_scheduler_metadata")
    else:
        paths = []
    facts.append(
        fact_record(
            "FlashMLAMetadataBuilder.cg_buf_tile_scheduler_metadata: every copy [:n] follows assert n <= size(0)",
            [FLASHMLA],
            [f"{FLASH_MLA_FILE}::FlashMLAMetadataBuilder.cg_buf_tile_scheduler_metadata"],
            paths or [path_record(FLASH_MLA_FILE, "cg_buf_tile_scheduler_metadata", "ast", "not checked", "no access")],
        )
    )
    return facts
