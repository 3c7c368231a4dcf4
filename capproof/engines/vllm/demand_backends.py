"""Demands of attention-backend buffers whose extent a builder's guard bounds, read from vLLM's code.

A guard is code: the extent an access may reach is the access's own expression on the paths where
the engine's condition lets it run. Here the condition is found in the source (AST), on every call
site that reaches the access, and the demand is written from the expressions the engine uses
(``select(<guard>, <extent>, 0)``: no access where the guard is false). When any link of the chain
is not of the form checked (another access, a call site passing something else, the bound's
variable assigned otherwise), the entry gets no demand and the reason is returned.

Derived in vLLM 0.33.0:

- ``DeepseekV32IndexerMetadataBuilder.offsets_buffer`` (``vllm/v1/attention/backends/mla/indexer.py``):
  allocated ``torch.arange(next_n)`` with ``next_n = self.num_speculative_tokens + 1`` in
  ``__init__``; its only access, ``self.offsets_buffer[:max_decode_len]`` in
  ``_prepare_decode_tensors``, runs only in the ``else`` of ``if not use_native`` (the native
  path), and every call of ``_prepare_decode_tensors`` passes ``use_native`` assigned, in the
  caller, as a conjunction containing ``max_decode_len <= next_n`` with ``next_n = 1 +
  self.num_speculative_tokens``: "the native path is taken only when max_decode_len <= next_n"
  is checked on every call site, not assumed.
"""

from __future__ import annotations

import ast
import os

from ..tracing.accesses import compact_source as _src
from ..tracing.accesses import parent_map

__all__ = ["INDEXER_OFFSETS", "derive_indexer_offsets", "derive_backends"]

INDEXER = "vllm/v1/attention/backends/mla/indexer.py"
_CLS = "DeepseekV32IndexerMetadataBuilder"
INDEXER_OFFSETS = f"{INDEXER}::{_CLS}.offsets_buffer"


def _assigns(fn, name: str) -> list:
    return [
        a
        for a in ast.walk(fn)
        if isinstance(a, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and any(
            isinstance(t, ast.Name) and t.id == name for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
        )
    ]


def _conjuncts(node) -> list:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        out = []
        for v in node.values:
            out += _conjuncts(v)
        return out
    return [node]


def derive_indexer_offsets(root: str) -> tuple[list[dict], str]:
    """``(demands, why not)`` of ``offsets_buffer`` (module docstring): demands empty and a reason
    when some link of the chain is not found."""
    tree = ast.parse(open(os.path.join(root, INDEXER), encoding="utf-8").read())
    parents = parent_map(tree)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == _CLS), None)
    if cls is None:
        return [], f"no class {_CLS}"
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    init = methods.get("__init__")
    alloc = (
        [a for a in ast.walk(init) if isinstance(a, ast.Assign) and _src(a.targets[0]) == "self.offsets_buffer"]
        if init
        else []
    )
    if len(alloc) != 1 or not (
        isinstance(alloc[0].value, ast.Call)
        and _src(alloc[0].value.func) == "torch.arange"
        and len(alloc[0].value.args) == 1
        and isinstance(alloc[0].value.args[0], ast.Name)
    ):
        return [], "offsets_buffer is not one torch.arange(<name>) in __init__"
    size_name = alloc[0].value.args[0].id
    size_sets = _assigns(init, size_name)
    if len(size_sets) != 1 or _src(size_sets[0].value) != "self.num_speculative_tokens+1":
        return [], f"{size_name} is not self.num_speculative_tokens + 1 in __init__"
    # every access of the buffer in the file
    subs = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and _src(n) == "self.offsets_buffer" and n is not alloc[0].targets[0]
    ]
    if len(subs) != 1 or not isinstance(parents.get(subs[0]), ast.Subscript):
        return [], f"offsets_buffer has {len(subs)} uses other than its allocation (one slice expected)"
    sub = parents[subs[0]]
    if not (
        isinstance(sub.slice, ast.Slice)
        and sub.slice.lower is None
        and sub.slice.step is None
        and isinstance(sub.slice.upper, ast.Name)
    ):
        return [], "the access is not [:<name>]"
    stop = sub.slice.upper.id
    # the enclosing method, and the branch the access is in
    fn, node = None, sub
    branch = None
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.If) and branch is None and _src(parent.test).startswith("not"):
            branch = (parent, node in parent.orelse)
        if isinstance(parent, ast.FunctionDef):
            fn = parent
            break
        node = parent
    if fn is None or branch is None or not branch[1]:
        return [], "the access is not in the else branch of an `if not <flag>:`"
    test = branch[0].test
    if not (isinstance(test, ast.UnaryOp) and isinstance(test.operand, ast.Name)):
        return [], "the guard is not `not <parameter>`"
    flag = test.operand.id
    params = [a.arg for a in fn.args.args]
    if flag not in params or stop not in params or _assigns(fn, flag) or _assigns(fn, stop):
        return [], f"{flag} and {stop} are not unassigned parameters of {fn.name}"
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and _src(c.func) == f"self.{fn.name}"]
    if not calls:
        return [], f"no call of {fn.name}"
    sites = []
    guard = None
    for call in calls:
        kw = {k.arg: k.value for k in call.keywords}
        if not (isinstance(kw.get(flag), ast.Name) and isinstance(kw.get(stop), ast.Name)):
            return [], f"{INDEXER}:{call.lineno} does not pass {flag}= and {stop}= by name"
        caller = call
        while caller in parents and not isinstance(caller, ast.FunctionDef):
            caller = parents[caller]
        u, m = kw[flag].id, kw[stop].id
        sets = _assigns(caller, u)
        if not sets:
            return [], f"{INDEXER}:{call.lineno}: {u} is not assigned in {caller.name}"
        for s in sets:
            bound = [
                c
                for c in _conjuncts(s.value)
                if isinstance(c, ast.Compare)
                and len(c.ops) == 1
                and isinstance(c.ops[0], ast.LtE)
                and _src(c.left) == m
                and isinstance(c.comparators[0], ast.Name)
            ]
            if not bound:
                return [], f"{INDEXER}:{s.lineno}: {u} has no conjunct {m} <= <name>"
            nn = bound[0].comparators[0].id
            nsets = _assigns(caller, nn)
            if len(nsets) != 1 or _src(nsets[0].value) not in (
                "1+self.num_speculative_tokens",
                "self.num_speculative_tokens+1",
            ):
                return [], f"{INDEXER}: {nn} in {caller.name} is not 1 + self.num_speculative_tokens"
            guard = "1 + num_speculative_tokens"
            sites.append(
                f"{INDEXER}:{call.lineno} {fn.name}({flag}={u}, {stop}={m}) with {u} = ... and {m} <= {nn} "
                f"(:{s.lineno}), {nn} = 1 + self.num_speculative_tokens (:{nsets[0].lineno})"
            )
    extent = f"select(max_decode_len <= {guard}, max_decode_len, 0)"
    return [
        {
            "dim": 0,
            "how": "ast",
            "family": "guarded slice",
            "extent": extent,
            "from": [
                f"{INDEXER}:{alloc[0].lineno} offsets_buffer = torch.arange({size_name}), "
                f"{size_name} = self.num_speculative_tokens + 1 (:{size_sets[0].lineno}) (ast)",
                f"{INDEXER}:{sub.lineno} self.offsets_buffer[:{stop}] in {fn.name}, else of `if not {flag}:` "
                f"(:{branch[0].lineno}) (ast; the only use)",
                *sites,
            ],
            "notes": [
                f"{stop} is the step's longest decode (int(decode_lens_cpu.max())): any value; the guard bounds it"
            ],
            "facts": [
                {
                    "fact": f"the native path is taken only when {stop} <= next_n",
                    "checked": True,
                    "paths": {"checked (ast: every call site's use_native)": sites},
                }
            ],
        }
    ], ""


def derive_backends(entries: list, root: str) -> list[str]:
    """Set the ``demands`` this module derives on ``entries`` (those without one); return one
    problem line per derivation not made."""
    by_id = {e.id: e for e in entries}
    problems = []
    found = {}
    for derive in (derive_mamba_guarded, derive_linear_guarded):
        try:
            got, probs = derive(root)
        except Exception as exc:  # noqa: BLE001 - one line: that staging is not derived
            got, probs = {}, [f"{derive.__name__} failed: {type(exc).__name__}: {exc}"[:300]]
        found.update(got)
        problems += probs
    for ident, demands in found.items():
        e = by_id.get(ident)
        if e is None:
            problems.append(f"demand: {ident} is not in the inventory")
            continue
        for d in demands:  # a capacity name bound to the allocation's own traced dimension 0
            d["binds"] = {
                k: {"dim0": e.shape[0], "dim0 - 1": f"({e.shape[0]}) - 1"}.get(v, v)
                for k, v in (d.get("binds") or {}).items()
            }
            if not d["binds"]:
                del d["binds"]
        if not e.demands:
            e.demands = demands
    for ident, derive in ((INDEXER_OFFSETS, derive_indexer_offsets),):
        e = by_id.get(ident)
        if e is None:
            problems.append(f"demand: {ident} is not in the inventory")
            continue
        try:
            demands, why = derive(root)
        except Exception as exc:  # noqa: BLE001 - one line per derivation that failed
            demands, why = [], f"{type(exc).__name__}: {exc}"
        if not demands:
            problems.append(f"demand of {ident} not derived: {why}"[:300])
        elif not e.demands:
            e.demands = demands
    return problems


# ------------------------------------------------------------------------------------------------
# Mamba decode buffers staged for a full CUDA graph (the builder's guard, checked)

MAMBA = "vllm/v1/attention/backends/mamba_attn.py"
_MAMBA_CLS = "BaseMambaAttentionMetadataBuilder"
#: buffers of the guarded staging whose every access is in the guarded block
MAMBA_GUARDED = (
    "state_indices_tensor_d",
    "decode_num_accepted_tokens",
    "decode_write_pos_d",
    "decode_is_flush_d",
    "decode_replayssm_state_indices_d",
)
_COUNTS = ("num_reqs", "num_decodes", "num_prefills")


def split_keeps_every_request(root: str) -> tuple[bool, list[str]]:
    """Run vLLM's ``split_decodes_and_prefills`` (``vllm/v1/attention/backends/utils.py``) on every
    path, with symbolic ``num_reqs``, ``max_query_len``, ``decode_threshold`` and stand-in tensors
    whose data-dependent tests (``torch.all``/``torch.any``, ``.item()``) are fresh unknowns (both
    outcomes run), for both values of ``treat_short_extends_as_decodes`` and ``require_uniform``:
    ``(num_decodes + num_prefills == num_reqs on every path, notes)``."""
    import z3
    from vllm.v1.attention.backends import utils as bu

    from ...symbolic import SymBool, SymInt, explore, to_z3_int

    counter = [0]

    def fresh_int():
        counter[0] += 1
        return SymInt.var(f"data!{counter[0]}")

    class Vec:
        def __getitem__(self, k):
            return Vec() if isinstance(k, slice) else Scalar()

        def _v(self, *a):
            return Vec()

        __sub__ = __add__ = __eq__ = __ne__ = __gt__ = __lt__ = __ge__ = __le__ = __or__ = __and__ = __ior__ = _v
        __hash__ = object.__hash__

        def int(self):
            return self

        def argmax(self, dim=None):
            return Scalar()

        def clone(self):
            return self

    class Scalar:
        def item(self):
            return fresh_int()

    class Torch:
        def all(self, v):
            counter[0] += 1
            return SymBool(z3.Bool(f"data!{counter[0]}"))

        any = all

    names = ("num_reqs", "max_query_len", "decode_threshold", "num_actual_tokens")
    n, mq, th, nt = (SymInt.var(x) for x in names)
    assume = [z3.Int(x) >= 0 for x in names]
    ok, notes = True, []
    saved = bu.torch
    try:
        bu.torch = Torch()
        for treat in (True, False):
            for uniform in (True, False):

                def run():
                    counter[0] = 0
                    cam = type("CAM", (), {})()
                    cam.max_query_len, cam.num_reqs, cam.num_actual_tokens = mq, n, nt
                    cam.query_start_loc_cpu, cam.is_prefilling = Vec(), Vec()
                    d, p, _, _ = bu.split_decodes_and_prefills(
                        cam, decode_threshold=th, require_uniform=uniform, treat_short_extends_as_decodes=treat
                    )
                    return to_z3_int(d) + to_z3_int(p) == to_z3_int(n)

                ex = explore(run, assume=assume, watch=False)
                if not ex.complete:
                    return False, [f"split_decodes_and_prefills: {ex.unexplored} paths unexplored"]
                for path in ex.paths:
                    if path.error is not None:
                        return False, [f"split_decodes_and_prefills raised {type(path.error).__name__}: {path.error}"]
                    s = z3.Solver()
                    s.add(*assume, *[c if t else z3.Not(c) for _, c, t in path.decisions], z3.Not(path.value))
                    if s.check() != z3.unsat:
                        ok = False
                notes.append(
                    f"split_decodes_and_prefills(treat_short_extends_as_decodes={treat}, require_uniform={uniform}): "
                    f"{len(ex.paths)} paths, num_decodes + num_prefills == num_reqs on {'every' if ok else 'not every'} path"
                )
    finally:
        bu.torch = saved
    return ok, notes


def _mamba_files(root: str) -> dict:
    """``{relative file: tree}`` of the backends defining a subclass of the Mamba builder (and the base)."""
    base = os.path.join(root, "vllm/v1/attention/backends")
    out = {}
    for f in sorted(os.listdir(base)):
        if f.endswith(".py"):
            text = open(os.path.join(base, f), encoding="utf-8").read()
            if _MAMBA_CLS in text:
                out[f"vllm/v1/attention/backends/{f}"] = ast.parse(text)
    return out


def mamba_counts_consistent(root: str) -> tuple[list[str], list[str]]:
    """``(checked, not checked)`` sites for "a Mamba metadata's num_reqs is its num_decodes +
    num_prefills" (AST, over every backend subclassing the Mamba builder):
    ``_compute_common_metadata`` builds the metadata with ``num_reqs = common_attn_metadata.num_reqs``
    and the split of the same ``common_attn_metadata`` (replaced only with other fields), no other
    code constructs it with those fields, and no ``replace`` changes them."""
    files = _mamba_files(root)
    checked, unchecked = [], []
    tree = files.get(MAMBA)
    if tree is None:
        return [], [f"{MAMBA} not found"]
    fn = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_compute_common_metadata"), None
    )
    if fn is None:
        return [], ["_compute_common_metadata not found"]
    reqs = _assigns(fn, "num_reqs")
    ok_reqs = len(reqs) == 1 and _src(reqs[0].value) == "common_attn_metadata.num_reqs"
    split = [
        a
        for a in ast.walk(fn)
        if isinstance(a, ast.Assign)
        and isinstance(a.targets[0], ast.Tuple)
        and [_src(t) for t in a.targets[0].elts][:2] == ["num_decodes", "num_prefills"]
    ]
    ok_split = (
        len(split) == 1
        and isinstance(split[0].value, ast.Call)
        and _src(split[0].value.func) == "split_decodes_and_prefills"
        and _src(split[0].value.args[0]) == "common_attn_metadata"
        and not [a for a in _assigns(fn, "num_decodes") + _assigns(fn, "num_prefills") if a is not split[0]]
    )
    recams = _assigns(fn, "common_attn_metadata")
    ok_cam = all(
        isinstance(a.value, ast.Call)
        and _src(a.value.func) == "common_attn_metadata.replace"
        and not {k.arg for k in a.value.keywords} & {"num_reqs", "query_start_loc_cpu", "max_query_len"}
        for a in recams
    )
    (checked if ok_reqs and ok_split and ok_cam else unchecked).append(
        f"{MAMBA}:{fn.lineno} _compute_common_metadata: num_reqs = common_attn_metadata.num_reqs "
        f"(:{reqs[0].lineno if reqs else '?'}), num_decodes, num_prefills = split_decodes_and_prefills(common_attn_metadata) "
        f"(:{split[0].lineno if split else '?'}), common_attn_metadata replaced only with other fields"
    )
    for file, t in files.items():
        for call in ast.walk(t):
            if not isinstance(call, ast.Call):
                continue
            keys = {k.arg for k in call.keywords} & set(_COUNTS)
            if not keys:
                continue
            f = _src(call.func)
            site = f"{file}:{call.lineno} {f}({', '.join(sorted(keys))}=...)"
            if f == "self.metadata_cls" and file == MAMBA and fn.lineno <= call.lineno <= (fn.end_lineno or 0):
                if all(_src(k.value) == k.arg for k in call.keywords if k.arg in _COUNTS) and keys == set(_COUNTS):
                    checked.append(site + " (the counts above)")
                    continue
            why = _never_reused(t, call, root)
            (checked if why else unchecked).append(site + (f" ({why})" if why else " (sets a count otherwise)"))
    return checked, unchecked


def _never_reused(tree, call, root: str) -> str:
    """Why a metadata built at ``call`` never reaches ``_update_metadata_for_cudagraph_capture``, or
    "": the enclosing builder class says ``supports_update_block_table = False`` (the runners reuse a
    cached metadata only through ``update_block_table`` of a builder of the same type, keyed by
    ``type(builder)``: checked in both runners' source) and the enclosing method does not stage it."""
    cls = fn = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno <= call.lineno <= (node.end_lineno or 0):
            cls = node if cls is None or node.lineno > cls.lineno else cls
    if cls is None:
        return ""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.lineno <= call.lineno <= (node.end_lineno or 0):
            fn = node
    off = any(
        isinstance(a, ast.Assign) and _src(a.targets[0]) == "supports_update_block_table" and _src(a.value) == "False"
        for a in cls.body
    )
    stages = fn is None or any(
        isinstance(c, ast.Call) and _src(c.func).endswith("_update_metadata_for_cudagraph_capture")
        for c in ast.walk(fn)
    )
    keyed = []
    for rel, text in (
        ("vllm/v1/worker/gpu_model_runner.py", "cache_key = (kv_cache_spec, type(builder))"),
        ("vllm/v1/worker/gpu/attn_utils.py", "reuse_key = (attn_group.kv_cache_spec, type(attn_metadata_builder))"),
    ):
        try:
            if text in open(os.path.join(root, rel), encoding="utf-8").read():
                keyed.append(rel)
        except OSError:
            pass
    if off and not stages and len(keyed) == 2:
        return (
            f"{cls.name}: supports_update_block_table = False and {fn.name} does not stage; the runners reuse "
            "metadata by type(builder): " + ", ".join(keyed)
        )
    return ""


def derive_mamba_guarded(root: str) -> tuple[dict[str, list[dict]], list[str]]:
    """``({entry id: demands}, problems)`` for :data:`MAMBA_GUARDED`: every access of each buffer is
    a ``[:metadata.num_decodes]`` or ``[:padded_bs]`` slice (``padded_bs = metadata.num_reqs``) in
    the block of ``if metadata.num_prefills == 0 and metadata.num_decodes <= self.decode_cudagraph_max_bs
    and ...`` (AST), the buffer's dimension 0 is ``self.decode_cudagraph_max_bs`` (AST), and
    ``num_reqs = num_decodes + num_prefills`` for every metadata (:func:`split_keeps_every_request`,
    run; :func:`mamba_counts_consistent`, AST). The extent is then
    ``select((num_prefills == 0) & (num_decodes <= decode_cudagraph_max_bs), num_decodes + num_prefills, 0)``,
    with ``decode_cudagraph_max_bs`` bound to the allocation's traced dimension 0."""
    tree = _mamba_files(root).get(MAMBA)
    if tree is None:
        return {}, [f"{MAMBA} not found"]
    split_ok, split_notes = split_keeps_every_request(root)
    checked, unchecked = mamba_counts_consistent(root)
    if not split_ok or unchecked:
        return {}, [f"num_reqs = num_decodes + num_prefills not checked: {'; '.join(unchecked) or split_notes}"]
    return _guarded_staging(
        tree,
        MAMBA,
        _MAMBA_CLS,
        "_update_metadata_for_cudagraph_capture",
        "metadata.",
        MAMBA_GUARDED,
        checked,
        split_notes,
    )


LINEAR = "vllm/v1/attention/backends/linear_attn.py"
_LINEAR_CLS = "BailingLinearAttentionMetadataBuilder"
LINEAR_GUARDED = (
    "decode_state_indices_tensor",
    "decode_legacy_state_indices_tensor",
    "decode_query_start_loc",
    "decode_num_accepted_tokens",
)


def derive_linear_guarded(root: str) -> tuple[dict[str, list[dict]], list[str]]:
    """As :func:`derive_mamba_guarded` for ``BailingLinearAttentionMetadataBuilder.build``
    (``vllm/v1/attention/backends/linear_attn.py``): its counts are ``num_reqs =
    common_attn_metadata.num_reqs`` and the split of the same ``common_attn_metadata`` (never
    reassigned) in ``build`` itself, and the builder never stages a reused metadata
    (``supports_update_block_table = False``)."""
    tree = ast.parse(open(os.path.join(root, LINEAR), encoding="utf-8").read())
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == _LINEAR_CLS), None)
    if cls is None:
        return {}, [f"no class {_LINEAR_CLS}"]
    build = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "build"), None)
    off = any(
        isinstance(a, (ast.Assign, ast.AnnAssign))
        and _src(a.targets[0] if isinstance(a, ast.Assign) else a.target) == "supports_update_block_table"
        and _src(a.value) == "False"
        for a in cls.body
    )
    if build is None or not off:
        return {}, [f"{_LINEAR_CLS}: no build, or it may stage a reused metadata"]
    reqs = _assigns(build, "num_reqs")
    split = [
        a
        for a in ast.walk(build)
        if isinstance(a, ast.Assign)
        and isinstance(a.targets[0], ast.Tuple)
        and [_src(t) for t in a.targets[0].elts][:2] == ["num_decodes", "num_prefills"]
    ]
    ok = (
        len(reqs) == 1
        and _src(reqs[0].value) == "common_attn_metadata.num_reqs"
        and len(split) == 1
        and _src(split[0].value.func) == "split_decodes_and_prefills"
        and _src(split[0].value.args[0]) == "common_attn_metadata"
        and not _assigns(build, "num_decodes")  # no assignment besides the split's tuple
        and not _assigns(build, "num_prefills")
        and not _assigns(build, "common_attn_metadata")
    )
    if not ok:
        return {}, [f"{LINEAR}: build's counts are not num_reqs and the split of the same common_attn_metadata"]
    split_ok, split_notes = split_keeps_every_request(root)
    if not split_ok:
        return {}, ["split_decodes_and_prefills does not keep every request"]
    checked = [
        f"{LINEAR}:{build.lineno} build: num_reqs = common_attn_metadata.num_reqs (:{reqs[0].lineno}), "
        f"num_decodes, num_prefills = split_decodes_and_prefills(common_attn_metadata) (:{split[0].lineno}); "
        "supports_update_block_table = False"
    ]
    return _guarded_staging(tree, LINEAR, _LINEAR_CLS, "build", "", LINEAR_GUARDED, checked, split_notes)


def _guarded_staging(tree, file, cls_name, fn_name, pre, buffers, checked, split_notes):
    """The demands of ``buffers`` staged in ``cls_name.fn_name`` of ``file`` under the guard
    ``{pre}num_prefills == 0 and {pre}num_decodes <= self.decode_cudagraph_max_bs`` with
    ``padded_bs = {pre}num_reqs`` (AST; see :func:`derive_mamba_guarded`)."""
    parents = parent_map(tree)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    if cls is None:
        return {}, [f"no class {cls_name}"]
    upd = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == fn_name), None)
    if upd is None:
        return {}, [f"no {fn_name}"]
    guard = next(
        (
            n
            for n in ast.walk(upd)
            if isinstance(n, ast.If)
            and isinstance(n.test, ast.BoolOp)
            and isinstance(n.test.op, ast.And)
            and {f"{pre}num_prefills==0", f"{pre}num_decodes<=self.decode_cudagraph_max_bs"}
            <= {_src(v) for v in n.test.values}
        ),
        None,
    )
    if guard is None:
        return {}, [
            f"{file}: the staging guard (num_prefills == 0 and num_decodes <= decode_cudagraph_max_bs) not found"
        ]
    pb = [a for a in guard.body if isinstance(a, ast.Assign) and _src(a.targets[0]) == "padded_bs"]
    if len(pb) != 1 or _src(pb[0].value) != f"{pre}num_reqs" or len(_assigns(upd, "padded_bs")) != 1:
        return {}, [f"{file}: padded_bs is not {pre}num_reqs, once, in the guarded block"]
    inside = {id(n) for b in guard.body for n in ast.walk(b)}
    stops = {f"{pre}num_decodes": 0, "padded_bs": 0, f"{pre}num_decodes+1": 1, "padded_bs+1": 1}
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    out, problems = {}, []
    for buf in buffers:
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _src(n) == f"self.{buf}"]
        allocs = [
            a
            for a in ast.walk(init)
            if isinstance(a, (ast.Assign, ast.AnnAssign))
            and _src(a.targets[0] if isinstance(a, ast.Assign) else a.target) == f"self.{buf}"
        ]
        targets = {id(a.targets[0] if isinstance(a, ast.Assign) else a.target) for a in allocs}
        dims = []
        for a in allocs:
            call = a.value
            if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Tuple):
                dims.append([_src(e) for e in call.args[0].elts])
            elif not (isinstance(call, ast.Constant) and call.value is None):
                dims.append(None)
        heads = {d[0] if d else None for d in dims}
        if not dims or len(heads) != 1 or heads - {"self.decode_cudagraph_max_bs", "self.decode_cudagraph_max_bs+1"}:
            problems.append(f"{buf}: not allocated (decode_cudagraph_max_bs [+ 1], ...) in __init__")
            continue
        plus = 1 if heads == {"self.decode_cudagraph_max_bs+1"} else 0
        sites, bad, extra = [], [], 0
        for u in uses:
            if id(u) in targets:
                continue
            p = parents.get(u)
            if isinstance(p, ast.Compare) and _src(p).endswith("isnotNone"):
                continue  # a presence test, no access
            if (
                id(u) in inside
                and isinstance(p, ast.Subscript)
                and isinstance(p.slice, ast.Slice)
                and p.slice.lower is None
                and p.slice.step is None
                and p.slice.upper is not None
                and _src(p.slice.upper) in stops
            ):
                extra = max(extra, stops[_src(p.slice.upper)])
                sites.append(f"{file}:{p.lineno} self.{buf}[:{ast.unparse(p.slice.upper)}] (guarded, :{guard.lineno})")
            else:
                bad.append(f"{file}:{u.lineno}")
        if bad or not sites:
            problems.append(f"{buf}: accesses outside the guarded staging or of another form at {bad}")
            continue
        rows = "num_decodes + num_prefills" + (" + 1" if extra else "")
        demands = [
            {
                "dim": 0,
                "how": "ast",
                "family": "guarded slice",
                "extent": f"select((num_prefills == 0) & (num_decodes <= decode_cudagraph_max_bs), {rows}, 0)",
                "binds": {"decode_cudagraph_max_bs": "dim0 - 1" if plus else "dim0"},
                "from": [
                    f"{file}:{allocs[0].lineno} self.{buf} allocated ({dims[0][0]}, ...) (ast)",
                    f"{file}:{guard.lineno} guard: {pre}num_prefills == 0 and {pre}num_decodes <= "
                    f"self.decode_cudagraph_max_bs; padded_bs = {pre}num_reqs (:{pb[0].lineno}) (ast)",
                    *sites,
                    "vllm/v1/attention/backends/utils.py split_decodes_and_prefills (executed, every path)",
                    *checked,
                ],
                "notes": split_notes,
                "facts": [
                    {
                        "fact": "the writer runs only when padded_bs (= num_decodes, no prefills) <= decode_cudagraph_max_bs",
                        "checked": True,
                        "paths": {
                            "checked (executed: split_decodes_and_prefills; ast: the guard, the metadata's counts)": [
                                *sites,
                                *checked,
                            ]
                        },
                    }
                ],
            }
        ]
        if len(dims[0]) == 2:
            cols = dims[0][1]
            narrow = [
                n.lineno
                for n in ast.walk(tree)
                if isinstance(n, ast.Assign)
                and _src(n.targets[0]) == "state_indices_tensor_d"
                and _src(n.value) == "state_indices_tensor_d[:,:1+self.num_spec_tokens]"
            ]
            if cols == "1+self.num_spec_tokens" and narrow:
                demands.append(
                    {
                        "dim": 1,
                        "how": "ast",
                        "family": "guarded slice",
                        "extent": "1 + num_speculative_tokens",
                        "from": [
                            f"{file}:{allocs[0].lineno} columns 1 + self.num_spec_tokens (ast; traced as 1 + num_speculative_tokens)",
                            f"{file}:{','.join(map(str, narrow))} the staged rows are state_indices_tensor_d[:, : 1 + self.num_spec_tokens] (ast)",
                            *sites,
                        ],
                        "notes": [
                            "the staging copies whole rows: its columns are the source's, at most 1 + num_spec_tokens"
                        ],
                        "facts": [],
                    }
                )
        out[f"{file}::{cls_name}.{buf}"] = demands
    return out, problems
