"""Which batch reaches an SGLang attention backend's CUDA-graph methods: the fact
``backend_bs <= padded_bs`` checked at every call site (SGLang 0.5.23).

The derivation of the "backend graph rows" family (:func:`capproof.engines.sglang.demand.derive_backend_rows`)
reads a backend buffer's slices ``[:bs]`` in the backend's CUDA-graph methods, ``bs`` being the
method's ``bs`` parameter or ``forward_batch.batch_size``. That ``bs`` is at most the batch the
runner captures or replays is a fact about the *callers*, in other files. Here every call of
such a method in ``sglang/srt`` (by name: dynamic dispatch is not resolved, so every call of the
name counts unless its receiver provably holds another class) is followed backwards (AST) to
where its batch comes from:

- a view builder (``build_replay_fb_view``, ``build_inner_fb_view``) is **run** on a stand-in
  forward batch with a symbolic ``bs``; its ``batch_size`` must be that ``bs``;
- ``ForwardBatch(batch_size=x)`` / ``SimpleNamespace(batch_size=x)``, ``v.batch_size = x``,
  ``SimpleNamespace(**vars(fb))``, a tuple returned by a ``self.`` helper, a parameter (then every
  call of the enclosing function by name, the argument at that position or keyword), a closure's
  free variable (the enclosing function's binding);
- it ends **checked** at ``self._pad_to_bucket(..., self.capture_bs)`` (an element of the runner's
  capture list: run and checked by :func:`capproof.engines.sglang.demand.padded_batch`), a loop
  variable over ``self.capture_bs`` (``reversed(...)``, ``tqdm(list(...))``), or
  ``min(..., self.max_bs)``, in a runner file that gives its backend
  ``init_cuda_graph_state(self.max_bs, ...)`` with ``self.max_bs = max(self.capture_bs)`` (AST);
- anything else ends **not checked**, with the chain of call sites that led there.

A fact checked on every chain is recorded ``checked: True`` (the proofs then take the padded
batch as the demand, no assumption); otherwise the unchecked chains are listed (proofs/coverage.md,
"Assumed facts"). Errors: none raised for unreadable files (a file that does not parse is skipped
only if it does not mention the method; otherwise its sites are unchecked).
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache

from ..tracing.derive import src
from . import graph_reach

__all__ = [
    "backend_bs_sites",
    "relevant_sites",
    "ENTRY_METHODS",
    "view_builders_checked",
    "splitter_checked",
    "children_get_max_bs",
    "site_context",
    "reach_drop",
    "tbo_children_checked",
    "tbo_split_checked",
]

SRT = "sglang/srt"
_CLASS = re.compile(r"^\s*class\s+(\w+)\s*\(([^)]*)\)\s*:", re.M)
_CLASS_NAME = re.compile(r"^\s*class\s+(\w+)\b", re.M)
#: The backend methods the runners call (the ABC's out-of-graph and in-graph metadata prep).
ENTRY_METHODS = ("init_forward_metadata_out_graph", "init_forward_metadata_in_graph")
#: View builders run here: name -> module
VIEW_BUILDERS = {
    "build_replay_fb_view": "sglang.srt.model_executor.runner.decode_cuda_graph_runner",
    "build_inner_fb_view": "sglang.srt.model_executor.forward_batch_info",
}
MAX_DEPTH = 40
#: why an element of a runner's capture list is not within its backend's ``max_bs``
NO_MAX_BS = "no self.max_bs = max(self.capture_bs) given to init_cuda_graph_state"
WIDTH = "self.captured_req_width"
#: A parameter is followed to the calls of its function when there are at most this many.
MAX_CALLERS = 12


class _Index:
    """Parsed ``sglang/srt`` files (lazily, by a text filter), their functions and calls."""

    def __init__(self, root: str):
        self.root = root
        self.files: list[str] = []
        base = os.path.join(root, SRT)
        for dp, _, fs in os.walk(base):
            for f in fs:
                if f.endswith(".py"):
                    self.files.append(os.path.relpath(os.path.join(dp, f), root))
        self.files.sort()
        self._text: dict[str, str] = {}
        self._tree: dict[str, ast.AST | None] = {}
        self._parents: dict[str, dict] = {}
        self._bases: dict[str, set[str]] | None = None
        self._classes: set[str] | None = None

    def text(self, rel: str) -> str:
        if rel not in self._text:
            with open(os.path.join(self.root, rel), encoding="utf-8", errors="replace") as fh:
                self._text[rel] = fh.read()
        return self._text[rel]

    def tree(self, rel: str):
        if rel not in self._tree:
            try:
                self._tree[rel] = ast.parse(self.text(rel))
            except SyntaxError:
                self._tree[rel] = None
        return self._tree[rel]

    def parents(self, rel: str) -> dict:
        if rel not in self._parents:
            t = self.tree(rel)
            self._parents[rel] = {c: p for p in ast.walk(t) for c in ast.iter_child_nodes(p)} if t else {}
        return self._parents[rel]

    def calls(self, name: str) -> list[tuple[str, ast.Call]]:
        """Every call ``<x>.name(...)`` or ``name(...)`` in srt."""
        out = []
        pattern = re.compile(r"(?<![\w])" + re.escape(name) + r"\s*\(")
        for rel in self.files:
            if name not in self.text(rel) or not pattern.search(self.text(rel)):
                continue
            t = self.tree(rel)
            if t is None:
                continue
            for c in ast.walk(t):
                if isinstance(c, ast.Call):
                    f = c.func
                    if (isinstance(f, ast.Attribute) and f.attr == name) or (isinstance(f, ast.Name) and f.id == name):
                        out.append((rel, c))
        return out

    def enclosing(self, rel: str, node):
        p = self.parents(rel).get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            p = self.parents(rel).get(p)
        return p

    def enclosing_class(self, rel: str, node):
        p = self.parents(rel).get(node)
        while p is not None and not isinstance(p, ast.ClassDef):
            p = self.parents(rel).get(p)
        return p

    def class_names(self) -> set[str]:
        """Every class name defined in srt (``class Name`` headers, with or without bases)."""
        if self._classes is None:
            self._classes = {m.group(1) for rel in self.files for m in _CLASS_NAME.finditer(self.text(rel))}
        return self._classes

    def bases(self) -> dict[str, set[str]]:
        """``{class name: names of its bases}`` over srt, read by a regular expression over the
        ``class Name(bases):`` headers (last dotted component of each base; a header split over
        lines is read up to its closing parenthesis)."""
        if self._bases is None:
            self._bases = {}
            for rel in self.files:
                for m in _CLASS.finditer(self.text(rel)):
                    names = {b.strip().split("[", 1)[0].rsplit(".", 1)[-1] for b in m.group(2).split(",")}
                    self._bases.setdefault(m.group(1), set()).update(n for n in names if n and "=" not in n)
        return self._bases


@lru_cache(maxsize=4)
def _index(root: str) -> _Index:
    return _Index(root)


# ------------------------------------------------------------------------------------------------
# view builders, run


class _Any:
    """A stand-in for a tensor or a batch field: every attribute, item, call and arithmetic is
    another stand-in (so a view builder runs without torch tensors)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any()

    def __getitem__(self, key):
        return _Any()

    def __call__(self, *a, **k):
        return _Any()

    def __add__(self, other):
        return _Any()

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __add__


@lru_cache(maxsize=1)
def view_builders_checked() -> dict[str, str]:
    """``{builder: ""}`` for a view builder whose result's ``batch_size`` is its ``bs`` argument
    (SGLang's function **run** on a stand-in forward batch, ``bs`` a capproof SymInt), or
    ``{builder: reason}`` when it is not (or does not run). Needs SGLang importable."""
    import importlib

    from ...symbolic import SymInt

    out = {}
    for name, module in VIEW_BUILDERS.items():
        try:
            fn = getattr(importlib.import_module(module), name)
            bs = SymInt.var("backend_view_bs")
            fb = _Any()
            for field in ("seq_lens_sum", "seq_lens_cpu", "lora_ids", "encoder_lens"):
                fb.__dict__[field] = None
            if name == "build_replay_fb_view":
                view = fn(
                    forward_batch=fb,
                    buffers=_Any(),
                    bs=bs,
                    raw_bs=SymInt.var("backend_view_raw_bs"),
                    num_tokens=SymInt.var("backend_view_num_tokens"),
                    global_num_tokens_cpu=None,
                    seq_len_fill_value=1,
                    capture_forward_mode=_Any(),
                    is_encoder_decoder=False,
                )
            else:
                view = fn(fb, bs=bs, forward_mode=_Any(), encoder_lens=None)
            out[name] = "" if view.batch_size is bs else f"{name}: batch_size is not its bs argument"
        except Exception as exc:  # noqa: BLE001 - the builder is then not checked
            out[name] = f"{name} did not run: {type(exc).__name__}: {exc}"[:200]
    return out


@lru_cache(maxsize=1)
def round_up_grid_checked(max_len: int = 6) -> str:
    """Empty when SGLang's ``round_up_grid(total, grid)`` (``speculative/ragged_verify.py``),
    **run** on every path for a symbolic total and sorted symbolic grids of 1..``max_len`` tiers,
    returns one of the grid's tiers on every path past its ``ValueError`` (the caller rejects that
    batch; taken as a stop, value 0) (Z3); else the reason."""
    try:
        import z3
        from sglang.srt.speculative.ragged_verify import round_up_grid

        from ...symbolic import SymInt
        from ..tracing.derive import all_paths, without_assert_messages

        # the ValueError's f-string message would format the symbolic total: dropped, same paths
        tier = without_assert_messages(round_up_grid, raises=True)

        def fn(total, grid):
            try:
                return tier(total, grid)
            except ValueError as exc:  # the caller rejects the batch: no replay on this path
                raise AssertionError from exc

        for n in range(1, max_len + 1):
            names = ["tier_total"] + [f"tier_{i}" for i in range(n)]
            assume = [z3.Int(x) >= 1 for x in names] + [
                z3.Int(f"tier_{i}") < z3.Int(f"tier_{i + 1}") for i in range(n - 1)
            ]
            grid = [SymInt.var(f"tier_{i}") for i in range(n)]
            value, _ = all_paths(lambda grid=grid: fn(SymInt.var("tier_total"), grid), assume)
            s = z3.Solver()
            s.add(*assume)
            ok = z3.Or(value == 0, *[value == z3.Int(f"tier_{i}") for i in range(n)])
            s.add(z3.Not(ok))
            if s.check() != z3.unsat:
                return f"round_up_grid on {n} tiers may return a value outside the grid"
        return ""
    except Exception as exc:  # noqa: BLE001 - then the tier is not checked
        return f"round_up_grid did not run: {type(exc).__name__}: {exc}"[:200]


#: Methods that hand each of a wrapper's child backends a part of their own batch, run here:
#: name -> (module, class). The method's first parameter is the parent batch; every child call it
#: makes must get a ``batch_size`` between 0 and the parent's (:func:`splitter_checked`).
SPLITTERS = {
    "_dispatch_children_from_replay_view": ("sglang.srt.layers.attention.tbo_backend", "TboAttnBackend"),
}
#: ``speculative_num_draft_tokens`` values the split is run with (a target-verify batch's tokens per
#: request; the same case split as the SGLang obligations')
SPLIT_DRAFT_TOKENS = (1, 2, 3, 4, 5, 8, 16)


class _Rows:
    """A stand-in for a per-request CPU tensor of a batch view: any slice is another stand-in, its
    ``sum()`` one whose ``int()`` is 0 (the children's ``seq_lens_sum``, which no batch size reads)."""

    def __getitem__(self, key):
        return _Rows()

    def sum(self):
        return _Rows()

    def __int__(self):
        return 0


@lru_cache(maxsize=4)
def splitter_checked(name: str) -> str:
    """Empty when SGLang's splitter ``name`` (:data:`SPLITTERS`), **run** on every path for a parent
    batch view of symbolic ``batch_size >= 1`` in every ``ForwardMode`` (target verify with each of
    :data:`SPLIT_DRAFT_TOKENS` draft tokens per request), hands each child backend a batch whose
    ``batch_size`` is between 0 and the parent's (Z3, per path); else the reason. A path that raises
    makes no child call after the exception (the calls made before it are still checked). The
    view's per-request tensors are stand-ins (:class:`_Rows`) and its speculative input a dataclass
    with the draft-token count and no tensors: they feed the children's tensor slices and
    ``seq_lens_sum``, not their ``batch_size``. Needs SGLang importable."""
    try:
        import dataclasses
        import importlib
        from types import SimpleNamespace

        import z3

        from ...symbolic import SymInt, explore, to_z3_int

        module, cls_name = SPLITTERS[name]
        method = getattr(getattr(importlib.import_module(module), cls_name), name)
        modes = importlib.import_module("sglang.srt.model_executor.forward_batch_info").ForwardMode

        @dataclasses.dataclass
        class Spec:
            draft_token_num: int
            draft_token: object = None
            custom_mask: object = None
            positions: object = None
            retrieve_index: object = None
            retrieve_next_token: object = None
            retrieve_next_sibling: object = None
            retrieve_cum_len: object = None
            seq_lens_cpu: object = None
            seq_lens_sum: object = None

        bs = SymInt.var("split_parent_bs")
        calls = 0
        for mode in modes:
            for draft in SPLIT_DRAFT_TOKENS if mode.is_target_verify() else (None,):
                seen: list = []

                class Child:
                    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
                        seen.append(forward_batch.batch_size)

                    init_forward_metadata_in_graph = init_forward_metadata_out_graph

                def run(mode=mode, draft=draft):
                    seen.clear()
                    me = SimpleNamespace(children=[Child(), Child()])
                    view = SimpleNamespace(
                        batch_size=bs,
                        forward_mode=mode,
                        spec_info=Spec(draft_token_num=draft) if draft is not None else None,
                        seq_lens_cpu=_Rows(),
                        seq_lens=_Rows(),
                        req_pool_indices=_Rows(),
                        input_ids=None,
                        out_cache_loc=None,
                        encoder_lens=None,
                        max_seq_len_override=None,
                    )
                    try:
                        method(me, view)
                    except Exception:  # noqa: BLE001 - SGLang raises: no child call after it
                        pass
                    return list(seen)

                exploration = explore(run, assume=[bs.term >= 1], watch=False)
                if not exploration.complete:
                    return f"{name}: {exploration.unexplored} paths unexplored in {mode.name}"
                for path in exploration.paths:
                    if path.error is not None:
                        return f"{name} in {mode.name}: {type(path.error).__name__}: {path.error}"[:200]
                    cond = [c if taken else z3.Not(c) for _, c, taken in path.decisions]
                    for b in path.value:
                        calls += 1
                        s = z3.Solver()
                        s.add(bs.term >= 1, *cond)
                        term = to_z3_int(b)
                        s.add(z3.Not(z3.And(term >= 0, term <= bs.term)))
                        if s.check() != z3.unsat:
                            return f"{name} in {mode.name}: a child batch may lie outside [0, parent batch]"
        return "" if calls else f"{name}: no child call on any path"
    except Exception as exc:  # noqa: BLE001 - then the split is not checked
        return f"{name} did not run: {type(exc).__name__}: {exc}"[:200]


#: Where two-batch overlap splits a forward batch into its children (module, class, method): the
#: only non-``None`` store of ``.tbo_children`` in srt must be in this method (:func:`tbo_children_checked`).
TBO_PREPARER = ("sglang.srt.batch_overlap.two_batch_overlap", "TboForwardBatchPreparer", "prepare_raw")
TBO_FILE = SRT + "/batch_overlap/two_batch_overlap.py"
#: the child's batch size as ``filter_batch`` builds the child (``ForwardBatch(**output_dict)``)
TBO_CHILD_SIZE = "end_seq_index-start_seq_index"


def _tbo_children_stores(ix: _Index) -> list[str]:
    """Every store of ``.tbo_children`` (attribute store or ``tbo_children=`` keyword) in srt that is
    not ``None`` and not in :data:`TBO_PREPARER`'s method: ``["file:line"]`` (AST)."""
    out = []
    for rel in ix.files:
        text = ix.text(rel)
        if "tbo_children" not in text:
            continue
        tree = ix.tree(rel)
        if tree is None:
            out.append(f"{rel}: does not parse")
            continue
        for n in ast.walk(tree):
            value = None
            if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "tbo_children" for t in n.targets
            ):
                value = n.value
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and getattr(n.target, "attr", None) == "tbo_children":
                value = n.value if n.value is not None else n
            elif isinstance(n, ast.keyword) and n.arg == "tbo_children":
                value = n.value
            elif (
                isinstance(n, ast.Call)
                and src(n.func) in ("setattr", "object.__setattr__")
                and "tbo_children" in src(n)
            ):
                value = n
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue
            fn = ix.enclosing(rel, n)
            owner = ix.enclosing_class(rel, n)
            if (
                rel == TBO_FILE
                and fn is not None
                and owner is not None
                and (owner.name, getattr(fn, "name", "")) == TBO_PREPARER[1:]
            ):
                continue
            out.append(f"{rel}:{getattr(n, 'lineno', '?')}")
    return out


def _tbo_child_size_read(ix: _Index) -> str:
    """Empty when ``filter_batch`` of :data:`TBO_PREPARER`'s class builds a child whose
    ``batch_size`` is ``end_seq_index - start_seq_index`` (one ``batch_size=`` keyword, no
    ``.batch_size`` store, both index parameters never rebound) and the two-chunk field update
    (``derive_fields_related_to_seq_len_for_two_chunk``) stores no ``batch_size`` (AST); else the
    reason."""
    tree = ix.tree(TBO_FILE)
    cls = (
        next(
            (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == TBO_PREPARER[1]),
            None,
        )
        if tree is not None
        else None
    )
    if cls is None:
        return f"{TBO_PREPARER[1]} not in {TBO_FILE}"
    meths = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    fb = meths.get("filter_batch")
    two = meths.get("derive_fields_related_to_seq_len_for_two_chunk")
    if fb is None or two is None:
        return "filter_batch or the two-chunk update is not in the class"
    sizes = [src(k.value) for k in ast.walk(fb) if isinstance(k, ast.keyword) and k.arg == "batch_size"]
    if sizes != [TBO_CHILD_SIZE]:
        return f"filter_batch builds batch_size as {sizes}"
    for m in (fb, two):
        for n in ast.walk(m):
            if isinstance(n, ast.Attribute) and n.attr == "batch_size" and isinstance(n.ctx, ast.Store):
                return f"{m.name} stores .batch_size at line {n.lineno}"
            if (
                isinstance(n, ast.Name)
                and n.id in ("start_seq_index", "end_seq_index")
                and isinstance(n.ctx, ast.Store)
            ):
                return f"{m.name} rebinds {n.id} at line {n.lineno}"
    return ""


@lru_cache(maxsize=1)
def tbo_children_checked() -> str:
    """Empty when SGLang's two-batch-overlap split (:data:`TBO_PREPARER`, ``prepare_raw``), **run**
    on a parent batch of symbolic ``batch_size >= 0`` and symbolic split index ``s`` in every
    ``ForwardMode``, with the two-chunk split on and off, hands each child a batch of size between 0
    and the parent's whenever ``0 <= s <= batch_size`` (two-chunk: ``s < batch_size``, the index of
    one of the parent's requests) (Z3, per path); the child's size is ``filter_batch``'s
    ``end_seq_index - start_seq_index`` (AST, :func:`_tbo_child_size_read`), and no other code of srt
    stores a non-``None`` ``.tbo_children`` (AST). Else the reason. ``filter_batch``,
    ``_compute_split_token_index`` and the two-chunk field update are stand-ins recording the
    sequence range (they build tensors, not the size); ``get_attn_backend`` returns a bare
    ``TboAttnBackend`` for the method's sanity assert. That ``s`` is within the parent is the
    split index's own fact, judged where it is stored (:func:`tbo_split_stores`). Needs SGLang
    importable."""
    try:
        import importlib
        from types import SimpleNamespace

        import z3

        from ...symbolic import SymInt, explore, to_z3_int

        ix_root = importlib.import_module("sglang").__file__
        root = os.path.dirname(os.path.dirname(ix_root))
        ix = _index(root)
        others = _tbo_children_stores(ix)
        if others:
            return "tbo_children stored outside the split: " + ", ".join(others[:4])
        size = _tbo_child_size_read(ix)
        if size:
            return size
        module, cls_name, meth = TBO_PREPARER
        mod = importlib.import_module(module)
        raw = getattr(getattr(mod, cls_name), meth).__func__
        modes = importlib.import_module("sglang.srt.model_executor.forward_batch_info").ForwardMode
        backend_cls = importlib.import_module("sglang.srt.layers.attention.tbo_backend").TboAttnBackend
        bs = SymInt.var("tbo_parent_bs")
        split = SymInt.var("tbo_split_seq_index")
        seen: list = []

        class StandIn:
            @classmethod
            def _compute_split_token_index(cls, batch):
                return SymInt.var("tbo_split_token_index")

            @classmethod
            def filter_batch(cls, batch, *, start_seq_index, end_seq_index, **_):
                seen.append((start_seq_index, end_seq_index))
                return SimpleNamespace()

            @classmethod
            def derive_fields_related_to_seq_len_for_two_chunk(cls, batch, **_):
                return None

        saved = {k: getattr(mod, k) for k in ("get_attn_backend", "_is_two_chunk_split_enabled")}
        calls = 0
        try:
            mod.get_attn_backend = lambda: object.__new__(backend_cls)
            for two_chunk in (False, True):
                mod._is_two_chunk_split_enabled = lambda _lens, on=two_chunk: on
                bound = split.term < bs.term if two_chunk else split.term <= bs.term
                assume = [bs.term >= 0, split.term >= 0, bound]
                for mode in modes:

                    def run(mode=mode):
                        seen.clear()
                        batch = SimpleNamespace(
                            batch_size=bs,
                            tbo_split_seq_index=split,
                            forward_mode=mode,
                            extend_seq_lens_cpu=None,
                            input_ids=_Any(),
                            tbo_children=None,
                        )
                        raw(StandIn, batch, tbo_children_num_token_non_padded=(_Any(), _Any()))
                        return list(seen)

                    exploration = explore(run, assume=assume, watch=False)
                    if not exploration.complete:
                        return f"{meth}: {exploration.unexplored} paths unexplored in {mode.name}"
                    for path in exploration.paths:
                        if path.error is not None:
                            return f"{meth} in {mode.name}: {type(path.error).__name__}: {path.error}"[:200]
                        cond = [c if taken else z3.Not(c) for _, c, taken in path.decisions]
                        if len(path.value) != 2:
                            return f"{meth} in {mode.name}: {len(path.value)} children"
                        for start, end in path.value:
                            calls += 1
                            child = to_z3_int(end) - to_z3_int(start)
                            s = z3.Solver()
                            s.add(*assume, *cond, z3.Not(z3.And(child >= 0, child <= bs.term)))
                            if s.check() != z3.unsat:
                                return f"{meth} in {mode.name}: a child batch may lie outside [0, parent batch]"
        finally:
            for k, v in saved.items():
                setattr(mod, k, v)
        return "" if calls else f"{meth}: no child on any path"
    except Exception as exc:  # noqa: BLE001 - then the split is not checked
        return f"{TBO_PREPARER[2]} did not run: {type(exc).__name__}: {exc}"[:200]


def _tbo_child_parent(fn, name: str) -> str | None:
    """The parameter ``P`` of ``fn`` when ``name`` is bound only as the second target of ``for _,
    name in zip(self.children, T, ...)`` with ``T = getattr(P, "tbo_children", None)`` or ``T =
    P.tbo_children`` (each bound once in ``fn``, ``P`` never rebound): ``name`` is then one of the
    children two-batch overlap split off ``P``'s batch. Else None (AST)."""
    if fn is None or isinstance(fn, ast.Lambda):
        return None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    loops, other = [], False
    for n in _walk_own(fn):
        if isinstance(n, (ast.For, ast.comprehension)):
            t = n.target
            names = [e.id for e in getattr(t, "elts", []) if isinstance(e, ast.Name)]
            if isinstance(t, ast.Tuple) and len(t.elts) == 2 and names[1:] == [name] and len(names) == 2:
                loops.append(n)
            elif name in {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}:
                other = True
        elif isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
            if not any(n in ast.walk(lp.target) for lp in loops):
                other = True
    if other or len(loops) != 1:
        return None
    it = loops[0].iter
    if not (
        isinstance(it, ast.Call)
        and src(it.func) == "zip"
        and len(it.args) == 2
        and src(it.args[0]) == "self.children"
        and isinstance(it.args[1], ast.Name)
    ):
        return None
    holder = it.args[1].id
    values = [
        n.value
        for n in _walk_own(fn)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == holder for t in n.targets)
    ]
    stores = [n for n in _walk_own(fn) if isinstance(n, ast.Name) and n.id == holder and isinstance(n.ctx, ast.Store)]
    if len(values) != 1 or len(stores) != 1:
        return None
    v = values[0]
    if isinstance(v, ast.Call) and src(v.func) == "getattr" and len(v.args) >= 2:
        base, attr = v.args[0], v.args[1]
        if not (isinstance(attr, ast.Constant) and attr.value == "tbo_children"):
            return None
    elif isinstance(v, ast.Attribute) and v.attr == "tbo_children":
        base = v.value
    else:
        return None
    if not isinstance(base, ast.Name) or base.id not in params:
        return None
    if any(isinstance(n, ast.Name) and n.id == base.id and isinstance(n.ctx, ast.Store) for n in _walk_own(fn)):
        return None
    return base.id


def tbo_split_checked(ix: _Index) -> str:
    """The reason the two-batch-overlap split index is not known to lie within its batch
    (``0 <= s <= batch_size``, :func:`tbo_children_checked`'s precondition), naming where it is
    stored as ``file.py:line`` (AST: ``.tbo_split_seq_index`` as an assignment target, also inside a tuple target, or
    a ``tbo_split_seq_index=`` keyword; ``None`` and copies of another batch's index left out).
    No store is judged yet, so the answer is never empty: the capture-time split
    (``capture_one_batch_size``: ``compute_split_seq_index`` of the runner's ``num_tokens`` over
    the mode's tokens per request, which equals the captured batch only when the runner's
    ``captured_req_width`` is the mode's tokens per request) and the scheduler's (DP attention's
    gathered split) are listed."""
    found = []
    for rel in ix.files:
        if "tbo_split_seq_index" not in ix.text(rel):
            continue
        tree = ix.tree(rel)
        if tree is None:
            found.append(f"{rel}: does not parse")
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and any(
                isinstance(x, ast.Attribute) and x.attr == "tbo_split_seq_index" for t in n.targets for x in ast.walk(t)
            ):
                value = n.value
            elif isinstance(n, ast.keyword) and n.arg == "tbo_split_seq_index":
                value = n.value
            else:
                continue
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            if isinstance(value, ast.Attribute) and value.attr == "tbo_split_seq_index":
                continue  # a copy: the index is judged where the copied batch's was stored
            found.append(f"{os.path.basename(rel)}:{getattr(value, 'lineno', '?')}")
    return "split index not checked" + (" at " + ", ".join(found) if found else "")


# ------------------------------------------------------------------------------------------------
# backward tracing


class _Tracer:
    def __init__(self, root: str):
        self.ix = _index(root)
        self.views = view_builders_checked()
        self.runner_ok: dict[str, bool] = {}
        self.memo: dict = {}
        self.active: set = set()
        #: ``{id(function): {parameter: (argument, calling function, note)}}`` while a return of that
        #: function is traced for one call (:meth:`_returned`)
        self.bind: dict = {}

    # -- helpers ---------------------------------------------------------------------------------
    def _fn_name(self, fn) -> str:
        return getattr(fn, "name", "<lambda>")

    def _where(self, rel: str, node) -> str:
        fn = self.ix.enclosing(rel, node)
        return f"{rel}:{node.lineno} ({self._fn_name(fn) if fn else 'module'})"

    def _assigns(self, fn, name: str):
        """``[(value, index)]``: every binding of ``name`` in ``fn`` (not in nested functions);
        index is the tuple position for ``a, b = value``; ``("for", iter)`` for a loop target."""
        out = []
        for node in _walk_own(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == name:
                        out.append((node.value if not isinstance(node, ast.AugAssign) else None, None))
                    elif isinstance(t, (ast.Tuple, ast.List)):
                        for i, el in enumerate(t.elts):
                            if isinstance(el, ast.Name) and el.id == name:
                                out.append((node.value, i))
            elif isinstance(node, (ast.For, ast.comprehension)):
                t = node.target
                if isinstance(t, ast.Name) and t.id == name:
                    out.append((("for", node.iter), None))
            elif isinstance(node, (ast.With,)):
                for item in node.items:
                    v = item.optional_vars
                    if isinstance(v, ast.Name) and v.id == name:
                        out.append((None, None))
            elif isinstance(node, ast.NamedExpr) and node.target.id == name:
                out.append((node.value, None))
        return out

    def _reaching(self, rel: str, fn, binds: list, use) -> list:
        """The bindings of :meth:`_assigns` that may reach ``use``: a binding inside the body (or
        ``else``) of an ``if`` of ``fn`` that ends in ``return``/``raise``, has no ``break``/
        ``continue`` and is in no ``try`` or ``with`` of ``fn`` does not reach a use after that ``if`` (control
        leaves ``fn`` first)."""
        uline = getattr(use, "lineno", None)
        if uline is None:
            return binds
        parents = self.ix.parents(rel)
        out = []
        for value, index in binds:
            node = value[1] if isinstance(value, tuple) else value
            blocked = False
            p, child = (parents.get(node), node) if node is not None else (None, None)
            while p is not None and p is not fn and not blocked:
                if isinstance(p, ast.If) and (p.end_lineno or p.lineno) < uline and not self._in_try(rel, p, fn):
                    block = p.body if child in p.body else (p.orelse if child in p.orelse else None)
                    if (
                        block
                        and isinstance(block[-1], (ast.Return, ast.Raise))
                        and not any(isinstance(x, (ast.Break, ast.Continue)) for b in block for x in [b, *_walk_own(b)])
                    ):
                        blocked = True
                p, child = parents.get(p), p
            if not blocked:
                out.append((value, index))
        return out

    def _in_try(self, rel: str, node, fn) -> bool:
        """``node`` is inside a ``try`` or a ``with`` of ``fn`` (an exception raised in it may be
        caught, or suppressed by the context manager, and control go on after it)."""
        p = self.ix.parents(rel).get(node)
        while p is not None and p is not fn:
            if isinstance(p, (ast.Try, getattr(ast, "TryStar", ast.Try), ast.With, ast.AsyncWith)):
                return True
            p = self.ix.parents(rel).get(p)
        return False

    def _params(self, fn) -> list[str]:
        a = fn.args
        return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]

    def _runner_gives_max_bs(self, rel: str) -> bool:
        """The runner file sets ``self.max_bs = max(self.capture_bs)`` and gives a backend
        ``init_cuda_graph_state(self.max_bs, ...)``."""
        if rel not in self.runner_ok:
            t = self.ix.tree(rel)
            ok_max = ok_state = False
            for n in ast.walk(t) if t else []:
                if isinstance(n, ast.Assign) and src(n.value) == "max(self.capture_bs)":
                    ok_max |= any(src(x) == "self.max_bs" for x in n.targets)
                if (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "init_cuda_graph_state"
                    and n.args
                    and src(n.args[0]) == "self.max_bs"
                ):
                    ok_state = True
            self.runner_ok[rel] = ok_max and ok_state
        return self.runner_ok[rel]

    def _scaled_runner(self, rel: str) -> str:
        """Empty when the runner file ``rel`` sets ``self.max_bs = max(self.capture_bs)``, gives its
        backend ``init_cuda_graph_state(self.max_bs * self.topk, ...)`` with ``self.topk =
        get_spec().speculative_eagle_topk`` and ``self.captured_req_width =
        resolve_num_tokens_per_req(phase="draft_decode")``, which SGLang's function returns as
        ``speculative_eagle_topk`` (run on the published arguments): then a captured or padded
        batch times the width is within the backend's ``max_bs``. Else the reason (AST)."""
        key = ("scaled", rel)
        if key not in self.memo:
            t = self.ix.tree(rel)
            body = {src(n) for n in ast.walk(t)} if t else set()
            need = (
                "self.max_bs=max(self.capture_bs)",
                "self.topk=get_spec().speculative_eagle_topk",
                "self.captured_req_width=resolve_num_tokens_per_req(phase='draft_decode')",
            )
            missing = [x for x in need if x not in body]
            state = any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "init_cuda_graph_state"
                and n.args
                and src(n.args[0]) == "self.max_bs*self.topk"
                for n in (ast.walk(t) if t else [])
            )
            reason = ""
            if missing or not state:
                reason = "no init_cuda_graph_state(self.max_bs * self.topk) with the top-k width: " + ", ".join(
                    missing or ["init_cuda_graph_state"]
                )
            else:
                reason = _draft_decode_width_is_topk()
            self.memo[key] = reason
        return self.memo[key]

    def _callers(self, fn, rel: str, param: str, depth: int, chain: list, kind: str = "bs"):
        """Resolve a parameter of ``fn``: the argument every call of ``fn``'s name passes (a forward
        batch when ``kind == "fb"``). A parameter of an entry method (:data:`ENTRY_METHODS`) is
        ``("forwarded", class)``: that method's own call sites are checked for its class."""
        name = self._fn_name(fn)
        hit = self.bind.get(id(fn), {}).get(param)
        if hit is not None:
            # the argument is traced in the caller with this binding lifted (it holds only inside
            # this invocation of fn)
            arg, caller, note = hit
            held = self.bind.pop(id(fn))
            try:
                yield from self._kind(kind)(arg, rel, caller, depth + 1, chain + [note])
            finally:
                self.bind[id(fn)] = held
            return
        if name in ENTRY_METHODS:
            owner = self.ix.enclosing_class(rel, fn)
            yield ("forwarded", chain + [f"{rel}:{fn.lineno} {owner.name if owner else '?'}.{name}"])
            return
        params = [p.arg for p in fn.args.posonlyargs + fn.args.args]
        method = bool(params) and params[0] in ("self", "cls")
        pos = params.index(param) - (1 if method else 0) if param in params else None
        calls = self.ix.calls(name)
        owner = self.ix.enclosing_class(rel, fn) if method else None
        if owner is not None:
            # ``self.name(...)`` reaches this method only from a class related to its owner
            related = _related(self.ix, owner.name)
            kept = []
            below = _subclasses(self.ix, owner.name)
            for r, c in calls:
                recv = c.func.value if isinstance(c.func, ast.Attribute) else None
                if recv is not None and src(recv) == "self":
                    k = self.ix.enclosing_class(r, c)
                    if k is None or k.name not in related:
                        continue
                if recv is not None and src(recv) != "self" and not isinstance(recv, ast.Call):
                    # ``self.X.name(...)`` where every binding of ``self.X`` constructs an unrelated class
                    k = self.ix.enclosing_class(r, c)
                    attr = _receiver_attr(c, self.ix.enclosing(r, c))
                    held = _holds(self.ix, r, k, attr) if k is not None and attr is not None else None
                    if held is not None and not (held & related):
                        continue
                if isinstance(recv, ast.Call) and src(recv.func) == "super":
                    # ``super().name(...)`` dispatches to a base of the calling class
                    k = self.ix.enclosing_class(r, c)
                    if k is None or k.name not in below or k.name == owner.name:
                        continue
                kept.append((r, c))
            calls = kept
        if owner is not None:
            holders = _instance_receivers(self.ix, owner.name)
            if holders is not None:
                calls = [(r, c) for r, c in calls if _may_hold(self.ix, r, c, owner.name, holders)]
        calls = [(r, c) for r, c in calls if _bindable(fn, c, method)]
        if len(calls) > MAX_CALLERS:
            yield ("unchecked", chain + [f"{rel}:{fn.lineno} {name}: {len(calls)} calls of the name (not followed)"])
            return
        if not calls:
            yield ("unchecked", chain + [f"{rel}:{fn.lineno} {name}({param}): no call of {name} in srt"])
            return
        for crel, call in calls:
            arg = next((k.value for k in call.keywords if k.arg == param), None)
            if arg is None and pos is not None and 0 <= pos < len(call.args):
                if any(isinstance(a, ast.Starred) for a in call.args[: pos + 1]):
                    arg = None
                else:
                    arg = call.args[pos]
            step = chain + [f"{self._where(crel, call)} passes {param}"]
            if arg is None:
                if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
                    yield ("unchecked", step + ["passed through *args/**kwargs"])
                else:
                    yield ("unchecked", step + [f"{param} not passed (default)"])
                continue
            caller = self.ix.enclosing(crel, call)
            yield from self._kind(kind)(arg, crel, caller, depth + 1, step)

    # -- the tracer ------------------------------------------------------------------------------
    def batch(self, node, rel: str, fn, depth: int, chain: list, want: str = "fb"):
        """Yield ``(status, chain)`` for every origin of the batch size of ``node`` (a forward batch
        when ``want == "fb"``, an int when ``"bs"``)."""
        yield from (self.fb(node, rel, fn, depth, chain) if want == "fb" else self.expr(node, rel, fn, depth, chain))

    def fb(self, node, rel: str, fn, depth: int, chain: list):
        """Origins of ``node.batch_size`` for a forward-batch expression ``node`` (memoised)."""
        yield from self._memo("fb", node, rel, fn, depth, chain)

    def expr(self, node, rel: str, fn, depth: int, chain: list):
        """Origins of an int batch size ``node`` (memoised)."""
        yield from self._memo("bs", node, rel, fn, depth, chain)

    def tokens(self, node, rel: str, fn, depth: int, chain: list):
        """Origins of a token count that a caller divides by ``self.captured_req_width``
        (memoised): ``x * self.captured_req_width`` (then the origins of the batch ``x``), or a
        ragged-verify tier ``self._ragged_graph_num_tokens(...)`` (:meth:`_tier_ok`)."""
        yield from self._memo("tok", node, rel, fn, depth, chain)

    def _kind(self, kind: str):
        return {"fb": self.fb, "bs": self.expr, "tok": self.tokens}[kind]

    def _tokens(self, node, rel: str, fn, depth: int, chain: list):
        if depth > MAX_DEPTH:
            yield ("unchecked", chain + ["call chain longer than followed"])
            return
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and src(node.right) == WIDTH:
            yield from self.expr(node.left, rel, fn, depth + 1, chain + [f"{where} {src(node)}"])
            return
        if isinstance(node, ast.Call) and src(node.func) == "self._ragged_graph_num_tokens":
            reason = self._tier_ok(rel, fn)
            if reason:
                yield ("unchecked", chain + [f"{where} {src(node)}: {reason}"])
            else:
                yield self._terminal(
                    rel,
                    chain
                    + [
                        f"{where} {src(node)} (round_up_grid run: an element of capture_num_tokens = "
                        "{bs * captured_req_width for bs in capture_bs})"
                    ],
                )
            return
        if isinstance(node, ast.Name) and fn is not None:
            binds = self._reaching(rel, fn, self._assigns(fn, node.id), node)
            if binds:
                for value, index in binds:
                    step = chain + [f"{rel}:{fn.lineno} {self._fn_name(fn)}: {node.id} bound"]
                    if value is None or isinstance(value, tuple) or index is not None:
                        yield ("unchecked", step + [f"{node.id} bound by a with/for/tuple assignment"])
                    else:
                        yield from self.tokens(value, rel, fn, depth + 1, step)
                return
            if node.id in self._params(fn):
                yield from self._callers(fn, rel, node.id, depth, chain, kind="tok")
                return
        if isinstance(node, ast.IfExp):
            yield from self.tokens(node.body, rel, fn, depth, chain)
            yield from self.tokens(node.orelse, rel, fn, depth, chain)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and src(node.func.value) == "self":
            defs, rets = self._method_returns(rel, fn, node.func.attr) if fn is not None else ([], [])
            if rets:
                for r in rets:
                    yield from self._returned(
                        "tok",
                        r.value,
                        node,
                        defs[0],
                        rel,
                        fn,
                        depth + 1,
                        chain + [f"{rel}:{r.lineno} {node.func.attr} returns"],
                    )
                return
        if isinstance(node, ast.Attribute) and src(node.value) == "self" and fn is not None:
            yield from self._self_attribute(node, rel, fn, depth, chain, kind="tok")
            return
        # any other count: ``n // captured_req_width <= n`` (the width is >= 1), so ``n`` itself an
        # element of the capture list bounds the quotient
        yield from self.expr(node, rel, fn, depth + 1, chain + [f"{where} {src(node)} (n // width <= n)"])

    def _tier_ok(self, rel: str, fn) -> str:
        """Empty when the runner's ragged tiers are ``{bs * captured_req_width for bs in
        capture_bs}`` and ``_ragged_graph_num_tokens`` returns ``round_up_grid(x,
        self.capture_num_tokens)`` (AST), ``round_up_grid`` returning an element of its grid on
        every path (run); else the reason."""
        cls = self.ix.enclosing_class(rel, fn)
        if cls is None:
            return "no class"
        meths = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        h = meths.get("_ragged_graph_num_tokens")
        b = meths.get("_build_ragged_verify_token_buckets")
        if h is None or b is None:
            return "tier helpers not in the class"
        rets = [src(r.value) for r in _walk_own(h) if isinstance(r, ast.Return)]
        if rets != ["round_up_grid(total_verify_tokens,self.capture_num_tokens)"]:
            return f"_ragged_graph_num_tokens returns {rets}"
        built = [src(a.value) for a in _walk_own(b) if isinstance(a, ast.Assign) and src(a.targets[0]) == "buckets"]
        if built != ["sorted({bs*self.captured_req_widthforbsinself.capture_bs})"]:
            return f"tiers built as {built}"
        binds = [
            src(n.value)
            for n in ast.walk(cls)
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            and any(
                src(t) == "self.capture_num_tokens" for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        if not binds or any(
            v not in ("self._build_ragged_verify_token_buckets()ifself.ragged_verify_modeelseNone", "None")
            for v in binds
        ):
            return f"capture_num_tokens bound as {binds}"
        return round_up_grid_checked()

    def _returned(self, kind: str, value, call: ast.Call, defn, rel: str, caller, depth: int, chain: list):
        """Origins of ``value``, an expression ``defn`` returns, for the call ``call`` of ``defn`` in
        ``caller`` (same file): while it is traced, every parameter of ``defn`` that ``defn`` never
        rebinds and that this call passes is *this* call's argument (traced in the caller), not the
        argument of every call of the name (:meth:`_callers`); a parameter left to its default is
        followed to every call as before."""
        owner = self.ix.enclosing_class(rel, defn)
        if owner is not None and any(
            _defines_own(self.ix, sub, defn.name) for sub in _subclasses(self.ix, owner.name) - {owner.name}
        ):
            yield ("unchecked", chain + [f"{rel}:{defn.lineno} {defn.name} is overridden in a subclass"])
            return
        params = [p.arg for p in defn.args.posonlyargs + defn.args.args]
        method = bool(params) and params[0] in ("self", "cls")
        starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        bound = {}
        for name in params[(1 if method else 0) :] + [p.arg for p in defn.args.kwonlyargs]:
            if starred or self._assigns(defn, name):
                continue
            arg = next((k.value for k in call.keywords if k.arg == name), None)
            if arg is None and name in params:
                pos = params.index(name) - (1 if method else 0)
                if 0 <= pos < len(call.args):
                    arg = call.args[pos]
            if arg is not None:
                bound[name] = (arg, caller, f"{rel}:{call.lineno} {name} is this call's argument")
        saved = self.bind.get(id(defn))
        self.bind[id(defn)] = bound
        try:
            yield from self._kind(kind)(value, rel, defn, depth, chain)
        finally:
            if saved is None:
                del self.bind[id(defn)]
            else:
                self.bind[id(defn)] = saved

    def _context(self) -> tuple:
        """The parameter bindings in force (:meth:`_returned`), as a memo key."""
        return tuple(sorted((d, n, id(a)) for d, names in self.bind.items() for n, (a, _c, _w) in names.items()))

    def _memo(self, kind, node, rel, fn, depth, chain):
        key = (kind, rel, id(fn), id(node), self._context())
        if key in self.active:
            # a cycle of bindings (flow-insensitive: two branches feeding each other) adds no value
            # of its own: every value on it comes, by a finite derivation, from an origin off the
            # cycle, and every rule here keeps "an element of the capture list"
            return
        if key not in self.memo:
            self.active.add(key)
            try:
                impl = {"fb": self._fb, "bs": self._expr, "tok": self._tokens}[kind]
                self.memo[key] = [(st, ch) for st, ch in impl(node, rel, fn, depth, [])]
            finally:
                self.active.discard(key)
        for st, ch in self.memo[key]:
            yield st, chain + ch

    def _fb(self, node, rel: str, fn, depth: int, chain: list):
        if depth > MAX_DEPTH:
            yield ("unchecked", chain + ["call chain longer than followed"])
            return
        if isinstance(node, ast.Call):
            yield from self._built(node, rel, fn, depth, chain)
            return
        if not isinstance(node, ast.Name) or fn is None:
            yield ("unchecked", chain + [f"{rel}:{getattr(node, 'lineno', '?')} batch {src(node)}"])
            return
        name = node.id
        if self._fn_name(fn) in SPLITTERS and name not in self._params(fn):
            # a child's batch inside a splitter run here: within the parent batch (its first
            # parameter), whose origins are traced in turn
            reason = splitter_checked(self._fn_name(fn)) or children_get_max_bs(self.ix.enclosing_class(rel, fn))
            where = f"{rel}:{node.lineno} {self._fn_name(fn)}"
            params = [p for p in self._params(fn) if p not in ("self", "cls")]
            if reason or not params:
                yield ("unchecked", chain + [f"{where}: {reason or 'no parent batch parameter'}"])
                return
            step = chain + [f"{where}: {name} is a child of {params[0]} (run: 0 <= child batch <= parent batch)"]
            yield from self._callers_fb(fn, rel, params[0], depth, step)
            return
        # ``v.batch_size = x`` in the same function overrides whatever ``v`` is
        sets = [
            n
            for n in _walk_own(fn)
            if isinstance(n, ast.Assign) and any(src(t) == f"{name}.batch_size" for t in n.targets)
        ]
        # flow-insensitive: the set values and the original binding are all origins, except that
        # a set after the use (no loop around both) does not reach it, and a set guarded by
        # ``if x != raw:`` with ``raw = v.batch_size`` leaves the batch ``x`` on both branches
        use = getattr(node, "lineno", 0)
        if not _in_loop(self.ix, rel, node, fn):
            sets = [n for n in sets if n.lineno < use]
        for n in sets:
            yield from self.expr(n.value, rel, fn, depth, chain + [f"{rel}:{n.lineno} {name}.batch_size ="])
        if sets and all(self._guarded_set(n, rel, fn, name) for n in sets):
            return
        binds = self._reaching(rel, fn, self._assigns(fn, name), node)
        if binds:
            for value, index in binds:
                step = chain + [f"{rel}:{fn.lineno} {self._fn_name(fn)}: {name} bound"]
                if value is None or isinstance(value, tuple):
                    yield ("unchecked", step + [f"{name} bound by a with/for/augmented assignment"])
                elif index is not None:
                    yield from self._tuple_element(value, index, rel, fn, depth, step)
                elif isinstance(value, ast.Call) and src(value.func) in ("copy.copy", "copy"):
                    yield from (
                        self.fb(value.args[0], rel, fn, depth + 1, step) if value.args else iter([("unchecked", step)])
                    )
                else:
                    yield from self.fb(value, rel, fn, depth + 1, step)
            return
        if name in self._params(fn):
            yield from self._callers_fb(fn, rel, name, depth, chain)
            return
        parent = _tbo_child_parent(fn, name)
        if parent is not None:
            # a two-batch-overlap child of the entry's own batch: within it when the split is
            where = f"{name} <- {parent}.tbo_children"  # the site's own line: kept short for the facts file
            reason = tbo_children_checked() or tbo_split_checked(self.ix)
            if reason:
                yield ("unchecked", chain + [f"{where}: {reason}"])
                return
            step = chain + [f"{where} (run: 0 <= child batch <= parent batch)"]
            yield from self._callers_fb(fn, rel, parent, depth, step)
            return
        outer = self.ix.enclosing(rel, fn)
        if outer is not None:
            yield from self.fb(node, rel, outer, depth + 1, chain + [f"{rel}:{fn.lineno} closure over {name}"])
            return
        yield ("unchecked", chain + [f"{rel}:{node.lineno} {name} unbound"])

    def _self_attribute(self, node, rel: str, fn, depth: int, chain: list, kind: str = "bs"):
        """``self.A``: every store ``X.A = v`` in srt must be ``self.A = v`` in a class related to
        the reading class (so no other object writes it); the origins of every ``v``."""
        attr = node.attr
        cls = self.ix.enclosing_class(rel, fn)
        where = f"{rel}:{node.lineno} self.{attr}"
        if cls is None:
            yield ("unchecked", chain + [f"{where} outside a class"])
            return
        related = _related(self.ix, cls.name)
        pattern = re.compile(r"\." + re.escape(attr) + r"\s*(?:\[[^\]]*\])?\s*(?:[-+*/]?=)(?!=)")
        stores = []
        for frel in self.ix.files:
            text = self.ix.text(frel)
            if attr not in text or not pattern.search(text):
                continue
            t = self.ix.tree(frel)
            if t is None:
                yield ("unchecked", chain + [f"{where}: {frel} does not parse"])
                return
            for n in ast.walk(t):
                if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, (ast.Store, ast.Del)):
                    stores.append((frel, n))
        if not stores:
            yield ("unchecked", chain + [f"{where} never assigned"])
            return
        may_be = _instance_classes(self.ix, cls.name)
        for frel, n in stores:
            owner = self.ix.enclosing_class(frel, n)
            stmt = self.ix.parents(frel).get(n)
            if self._other_object(frel, n, owner, may_be):
                continue  # a store into an object that is not an instance of the reading class
            if (
                src(n.value) != "self"
                or owner is None
                or owner.name not in related
                or not isinstance(stmt, ast.Assign)
                or len(stmt.targets) != 1
                or stmt.targets[0] is not n
            ):
                yield ("unchecked", chain + [f"{frel}:{n.lineno} {src(n)} stored otherwise"])
                continue
            yield from self._kind(kind)(
                stmt.value, frel, self.ix.enclosing(frel, n), depth + 1, chain + [f"{frel}:{n.lineno} self.{attr} ="]
            )

    def _attribute_stores(self, attr: str) -> list:
        """Every ``X.attr = ...`` / ``del X.attr`` in srt: ``[(file, Attribute node)]``."""
        key = ("stores", attr)
        if key not in self.memo:
            pattern = re.compile(r"\." + re.escape(attr) + r"\s*(?:\[[^\]]*\])?\s*(?:[-+*/]?=)(?!=)")
            out = []
            for frel in self.ix.files:
                text = self.ix.text(frel)
                if attr not in text or not pattern.search(text):
                    continue
                t = self.ix.tree(frel)
                for n in ast.walk(t) if t else []:
                    if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, (ast.Store, ast.Del)):
                        out.append((frel, n))
            self.memo[key] = out
        return self.memo[key]

    def _field_elsewhere(self, attr: str) -> bool:
        """``attr`` may be set other than by an attribute store: a class-body field named ``attr``
        (a dataclass or struct sets it from its constructor) or a call with a keyword ``attr=``."""
        key = ("field", attr)
        if key not in self.memo:
            hit = False
            pattern = re.compile(r"\b" + re.escape(attr) + r"\s*[:=]")
            for frel in self.ix.files:
                text = self.ix.text(frel)
                if attr not in text or not pattern.search(text):
                    continue
                t = self.ix.tree(frel)
                if t is None:
                    hit = True
                    break
                for n in ast.walk(t):
                    if isinstance(n, ast.keyword) and n.arg == attr:
                        hit = True
                    elif isinstance(n, ast.ClassDef):
                        for b in n.body:
                            targets = b.targets if isinstance(b, ast.Assign) else [getattr(b, "target", None)]
                            if isinstance(b, (ast.Assign, ast.AnnAssign)) and any(
                                isinstance(x, ast.Name) and x.id == attr for x in targets
                            ):
                                hit = True
                if hit:
                    break
            self.memo[key] = hit
        return self.memo[key]

    def _other_object(self, rel: str, n: ast.Attribute, owner, may_be: set[str]) -> bool:
        """The store ``X.A`` at ``n`` writes an object whose class is known and is none of
        ``may_be`` (:func:`_instance_classes`): ``self.A`` in a class outside ``may_be``; ``self.Y.A``
        or ``X.A`` where every store of ``.Y`` in srt (on any object), or every binding of the local
        ``X`` in its function, is ``None`` or constructs a class of srt (or a ``SimpleNamespace``)
        outside ``may_be`` (a local may also be bound to such a ``self.Y``). Anything else (a
        parameter, an attribute stored otherwise) is not known."""
        recv = n.value
        if src(recv) == "self":
            return owner is not None and owner.name not in may_be
        known = self.ix.class_names() | {"SimpleNamespace"}

        def ctor(v) -> str | None:
            if isinstance(v, ast.Call) and isinstance(v.func, (ast.Name, ast.Attribute)):
                name = src(v.func).rsplit(".", 1)[-1]
                return name if name in known else None
            return None

        def held(attr: str) -> set[str] | None:
            # every store of ``.attr`` anywhere in srt, on any object, is a constructor or None
            if self._field_elsewhere(attr):
                return None
            found: set[str] = set()
            for r, m in self._attribute_stores(attr):
                stmt = self.ix.parents(r).get(m)
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is m):
                    return None
                v = stmt.value
                if isinstance(v, ast.Constant) and v.value is None:
                    continue
                c = ctor(v)
                if c is None:
                    return None
                found.add(c)
            return found or None

        if isinstance(recv, ast.Attribute) and src(recv.value) == "self":
            h = held(recv.attr)
            return bool(h) and h <= known and not (h & may_be)
        if not isinstance(recv, ast.Name):
            return False
        fn = self.ix.enclosing(rel, n)
        if fn is None or isinstance(fn, ast.Lambda) or recv.id in self._params(fn):
            return False
        binds = self._assigns(fn, recv.id)
        if not binds:
            return False
        for value, index in binds:
            if index is not None or value is None or isinstance(value, tuple):
                return False
            c = ctor(value)
            if c is not None:
                if c in may_be:
                    return False
                continue
            if isinstance(value, ast.Attribute) and src(value.value) == "self":
                h = held(value.attr)
                if not (h and h <= known and not (h & may_be)):
                    return False
                continue
            if isinstance(value, ast.Call) and self._passes_through(rel, owner, value, recv.id):
                continue  # ``X = self.m(..., X, ...)`` returning X: the other bindings decide
            return False
        return True

    def _passes_through(self, rel: str, owner, call: ast.Call, name: str) -> bool:
        """``call`` is ``self.m(...)`` and every ``def m`` of a class related to ``owner`` (its
        bases and subclasses, by name, anywhere in srt) returns only the parameter to which
        ``call`` passes the local ``name`` (so the call's value is that local's own object)."""
        f = call.func
        if owner is None or not (isinstance(f, ast.Attribute) and src(f.value) == "self"):
            return False
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return False
        related = _related(self.ix, owner.name)
        defs = []
        for frel in self.ix.files:
            if f"def {f.attr}" not in self.ix.text(frel):
                continue
            t = self.ix.tree(frel)
            for c in ast.walk(t) if t else []:
                if isinstance(c, ast.ClassDef) and c.name in related:
                    defs += [
                        d for d in c.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == f.attr
                    ]
        if not defs:
            return False
        for d in defs:
            params = [a.arg for a in d.args.posonlyargs + d.args.args][1:]
            passed = {p for p, a in zip(params, call.args) if isinstance(a, ast.Name) and a.id == name}
            passed |= {k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == name}
            rets = [r for r in _walk_own(d) if isinstance(r, ast.Return)]
            if not rets or not all(isinstance(r.value, ast.Name) and r.value.id in passed for r in rets):
                return False
            if any(isinstance(x, ast.Name) and x.id in passed and isinstance(x.ctx, ast.Store) for x in _walk_own(d)):
                return False  # the parameter rebound inside
        return True

    def _guarded_set(self, n, rel: str, fn, name: str) -> bool:
        """``n`` (``v.batch_size = x``) is directly under ``if x != raw:`` (or ``raw != x``) where
        every binding of ``raw`` in ``fn`` is ``v.batch_size``: after it ``v.batch_size == x``
        whichever branch ran (x is a Name)."""
        parent = self.ix.parents(rel).get(n)
        if not (isinstance(parent, ast.If) and n in parent.body and isinstance(n.value, ast.Name)):
            return False
        t = parent.test
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.NotEq)):
            return False
        sides = {src(t.left), src(t.comparators[0])}
        x = n.value.id
        if x not in sides or len(sides) != 2:
            return False
        (raw,) = sides - {x}
        binds = self._assigns(fn, raw)
        return bool(binds) and all(
            i is None and not isinstance(v, tuple) and v is not None and src(v) == f"{name}.batch_size"
            for v, i in binds
        )

    def _callers_fb(self, fn, rel, param, depth, chain):
        yield from self._callers(fn, rel, param, depth, chain, kind="fb")

    def _built(self, call: ast.Call, rel: str, fn, depth: int, chain: list):
        """A forward batch built by a call."""
        name = src(call.func).rsplit(".", 1)[-1]
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if name in VIEW_BUILDERS:
            reason = self.views.get(name, "not run")
            if reason:
                yield ("unchecked", chain + [f"{rel}:{call.lineno} {reason}"])
                return
            step = chain + [f"{rel}:{call.lineno} {name}(bs=...) (run: batch_size is bs)"]
            yield from (
                self.expr(kw["bs"], rel, fn, depth + 1, step)
                if "bs" in kw
                else iter([("unchecked", step + ["bs not a keyword"])])
            )
            return
        if name in ("ForwardBatch", "SimpleNamespace"):
            if "batch_size" in kw:
                yield from self.expr(
                    kw["batch_size"], rel, fn, depth + 1, chain + [f"{rel}:{call.lineno} {name}(batch_size=...)"]
                )
                return
            star = [k.value for k in call.keywords if k.arg is None]
            if (
                name == "SimpleNamespace"
                and len(star) == 1
                and isinstance(star[0], ast.Call)
                and src(star[0].func) == "vars"
                and star[0].args
            ):
                yield from self.fb(
                    star[0].args[0], rel, fn, depth + 1, chain + [f"{rel}:{call.lineno} SimpleNamespace(**vars(...))"]
                )
                return
        if isinstance(call.func, ast.Attribute) and src(call.func.value) == "self" and fn is not None:
            # a batch returned by a method of the class (``self.get_forward_batch(bs)``, a hook
            # returning the batch it is given): every return, with this call's arguments
            defs, rets = self._method_returns(rel, fn, call.func.attr)
            if rets:
                for r in rets:
                    yield from self._returned(
                        "fb",
                        r.value,
                        call,
                        defs[0],
                        rel,
                        fn,
                        depth + 1,
                        chain + [f"{rel}:{r.lineno} {call.func.attr} returns"],
                    )
                return
        yield ("unchecked", chain + [f"{rel}:{call.lineno} batch built by {src(call.func)}"])

    def _methods(self, rel: str, fn, name: str) -> list:
        """The methods named ``name`` defined in the class that encloses ``fn`` of file ``rel``."""
        cls = self.ix.enclosing_class(rel, fn)
        return [
            n
            for n in (cls.body if cls else [])
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
        ]

    def _method_returns(self, rel: str, fn, name: str) -> tuple[list, list]:
        """The class's methods named ``name`` and, when there is exactly one, its own ``return
        <value>`` statements (none otherwise)."""
        defs = self._methods(rel, fn, name)
        if len(defs) != 1:
            return defs, []
        return defs, [r for r in _walk_own(defs[0]) if isinstance(r, ast.Return) and r.value is not None]

    def _tuple_element(self, value, index: int, rel: str, fn, depth: int, chain: list):
        """Element ``index`` of what ``self.<helper>(...)`` returns (every return a tuple)."""
        if not (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and src(value.func.value) == "self"
        ):
            yield ("unchecked", chain + [f"{rel}:{value.lineno} tuple from {src(value)[:60]}"])
            return
        helper = value.func.attr
        defs = self._methods(rel, fn, helper)
        if len(defs) != 1:
            yield ("unchecked", chain + [f"{rel}:{value.lineno} {helper} not one method of the class"])
            return
        h = defs[0]
        rets = [r for r in _walk_own(h) if isinstance(r, ast.Return)]
        if not rets:
            yield ("unchecked", chain + [f"{rel}:{h.lineno} {helper} returns nothing"])
            return
        for r in rets:
            if not (isinstance(r.value, ast.Tuple) and index < len(r.value.elts)):
                yield ("unchecked", chain + [f"{rel}:{r.lineno} {helper} returns {src(r.value)[:60]}"])
                continue
            el = r.value.elts[index]
            step = chain + [f"{rel}:{r.lineno} {helper} returns"]
            # the helper's own parameters are the call's arguments
            yield from self._bind_call(h, value, el, rel, fn, depth, step)

    def _bind_call(self, h, call, el, rel, caller, depth, chain):
        """``el`` in helper ``h`` called by ``call`` in ``caller``: trace in ``h``; a parameter of
        ``h`` maps to that call's argument (this call only)."""
        for status, ch in self.fb(el, rel, h, depth + 1, chain):
            yield status, ch

    def _expr(self, node, rel: str, fn, depth: int, chain: list):
        if depth > MAX_DEPTH:
            yield ("unchecked", chain + ["call chain longer than followed"])
            return
        s = src(node)
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call) and s.startswith("self._pad_to_bucket(") and s.endswith(",self.capture_bs)"):
            yield self._terminal(rel, chain + [f"{where} {s} (an element of the capture list)"])
            return
        if isinstance(node, ast.Call) and src(node.func) == "min" and any(src(a) == "self.max_bs" for a in node.args):
            yield self._terminal(rel, chain + [f"{where} {s}"])
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and src(node.right) == WIDTH:
            # ``x * captured_req_width``, x an element of the capture list: within the backend's
            # ``max_bs * topk`` where the runner gives its backend that and its width is the top-k
            origins = list(self.expr(node.left, rel, fn, depth + 1, chain + [f"{where} {s}"]))
            reason = self._scaled_runner(rel)
            for st, ch in origins:
                if st == "unchecked" and ch and ch[-1] == f"{rel}: {NO_MAX_BS}":
                    if reason:
                        yield ("unchecked", ch + [f"{rel}: {reason}"])
                        continue
                    st = "checked"  # an element of this runner's own capture list
                if st == "checked" and reason:
                    yield ("unchecked", ch + [f"{rel}: {reason}"])
                elif st == "checked":
                    yield ("checked", ch + [f"{rel}: x * captured_req_width <= max_bs * topk, the backend's max_bs"])
                else:
                    yield (st, ch)
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and src(node.right) == WIDTH:
            # ``n // captured_req_width``: ``n`` a multiple of the width by a batch, or a ragged tier
            yield from self.tokens(node.left, rel, fn, depth + 1, chain + [f"{where} {s}"])
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and src(node.func.value) == "self":
            # an int returned by a method of the class: the origins of every return
            cls = self.ix.enclosing_class(rel, fn) if fn is not None else None
            defs = [
                n
                for n in (cls.body if cls else [])
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == node.func.attr
            ]
            if len(defs) == 1:
                rets = [r for r in _walk_own(defs[0]) if isinstance(r, ast.Return) and r.value is not None]
                if rets:
                    for r in rets:
                        yield from self._returned(
                            "bs",
                            r.value,
                            node,
                            defs[0],
                            rel,
                            fn,
                            depth + 1,
                            chain + [f"{rel}:{r.lineno} {node.func.attr} returns"],
                        )
                    return
        if isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool):
            yield ("checked", chain + [f"{where} 0"])
            return
        if isinstance(node, ast.Attribute) and src(node.value) == "self" and fn is not None:
            yield from self._self_attribute(node, rel, fn, depth, chain)
            return
        if isinstance(node, ast.IfExp):
            yield from self.expr(node.body, rel, fn, depth, chain)
            yield from self.expr(node.orelse, rel, fn, depth, chain)
            return
        if isinstance(node, ast.Attribute) and node.attr == "batch_size":
            yield from self.fb(node.value, rel, fn, depth + 1, chain + [f"{where} {s}"])
            return
        if not isinstance(node, ast.Name) or fn is None:
            yield ("unchecked", chain + [f"{where} {s}"])
            return
        name = node.id
        binds = self._reaching(rel, fn, self._assigns(fn, name), node)
        if binds:
            for value, index in binds:
                step = chain + [f"{rel}:{fn.lineno} {self._fn_name(fn)}: {name} bound"]
                if isinstance(value, tuple) and value[0] == "for":
                    it = value[1]
                    origins = [it]
                    if isinstance(it, ast.Name):
                        origins = [v for v, i in self._assigns(fn, it.id) if i is None and not isinstance(v, tuple)]
                        for v in list(origins):
                            if isinstance(v, ast.IfExp):
                                origins.remove(v)
                                origins += [v.body, v.orelse]
                    ok = bool(origins) and all(
                        src(o)
                        in (
                            "self.capture_bs",
                            "reversed(self.capture_bs)",
                            "tqdm.tqdm(list(reversed(self.capture_bs)))",
                        )
                        for o in origins
                    )
                    if ok:
                        yield self._terminal(
                            rel, step + [f"{rel}:{it.lineno} for {name} in {src(it)} (a captured size)"]
                        )
                    else:
                        yield ("unchecked", step + [f"{rel}:{it.lineno} for {name} in {src(it)}"])
                elif value is None or isinstance(value, tuple) or index is not None:
                    yield ("unchecked", step + [f"{name} bound by a with/augmented/tuple assignment"])
                else:
                    yield from self.expr(value, rel, fn, depth + 1, step)
            return
        if name in self._params(fn):
            yield from self._callers(fn, rel, name, depth, chain)
            return
        outer = self.ix.enclosing(rel, fn)
        if outer is not None:
            yield from self.expr(node, rel, outer, depth + 1, chain + [f"{rel}:{fn.lineno} closure over {name}"])
            return
        yield ("unchecked", chain + [f"{where} {name} unbound"])

    def _terminal(self, rel: str, chain: list):
        if self._runner_gives_max_bs(rel):
            return ("checked", chain)
        return ("unchecked", chain + [f"{rel}: {NO_MAX_BS}"])


def _instance_receivers(ix: _Index, cls: str):
    """Where an instance of ``cls`` can be held, when that is known from srt's source (AST), as
    ``{"attrs": {A, ...}, "params": {(file, function line, p), ...}}``; None when not known.

    Known when ``cls`` has no subclass in srt, every mention of its name is an import, an
    ``isinstance`` test, an annotation or a construction ``cls(...)``, every construction is
    assigned (directly or as a branch of a conditional expression) to ``self.A``, and every read of
    an attribute ``.A`` anywhere in srt is an attribute access on it (``x.A.m``), an ``is``/``is
    not`` comparison, an ``isinstance`` argument, a truth test, or an argument ``f(A=x.A)`` /
    ``f(x.A)`` to a function ``f`` every definition of which uses that parameter only for attribute
    accesses and ``is`` comparisons. A method call ``recv.m(...)`` can then run ``cls.m`` only when
    ``recv`` is such an ``x.A`` or such a parameter (or ``self`` inside ``cls``)."""
    if _subclasses(ix, cls) != {cls}:
        return None
    attrs: set[str] = set()
    for rel in ix.files:
        if cls not in ix.text(rel):
            continue
        t = ix.tree(rel)
        if t is None:
            return None
        par = ix.parents(rel)
        for n in ast.walk(t):
            if not (isinstance(n, ast.Name) and n.id == cls) and not (
                isinstance(n, ast.Attribute) and n.attr == cls and isinstance(n.ctx, ast.Load)
            ):
                continue
            up = par.get(n)
            if isinstance(up, ast.Call) and up.func is n:
                v, stmt = up, par.get(up)
                while isinstance(stmt, ast.IfExp) and v is not stmt.test:
                    v, stmt = stmt, par.get(stmt)
                if not (
                    isinstance(stmt, ast.Assign)
                    and stmt.value is v
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Attribute)
                    and src(stmt.targets[0].value) == "self"
                ):
                    return None
                attrs.add(stmt.targets[0].attr)
            elif isinstance(up, ast.Call) and src(up.func) == "isinstance":
                continue
            elif (
                isinstance(up, ast.arg)
                or (isinstance(up, ast.AnnAssign) and up.annotation is n)
                or (isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.returns is n)
            ):
                continue  # an annotation
            elif isinstance(up, (ast.Subscript, ast.BinOp, ast.Tuple)) and _in_annotation(par, up):
                continue
            else:
                return None
    if not attrs:
        return None
    methods: set[str] = set()
    # the instance's own methods must not hand ``self`` on (only ``self.x`` reads and stores)
    for rel in ix.files:
        if f"class {cls}" not in ix.text(rel):
            continue
        t = ix.tree(rel)
        par = ix.parents(rel)
        for k in ast.walk(t) if t else []:
            if isinstance(k, ast.ClassDef) and k.name == cls:
                if k.decorator_list or k.keywords:
                    return None  # a decorator or metaclass may register the class elsewhere
                methods |= {b.name for b in k.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}
                for x in ast.walk(k):
                    if (
                        isinstance(x, ast.Name)
                        and x.id == "self"
                        and _harmless_use(par, x, frozenset(methods)) is not True
                    ):
                        return None
    frozen = frozenset(methods)
    params: set = set()
    for attr in attrs:
        for rel in ix.files:
            if attr not in ix.text(rel):
                continue
            t = ix.tree(rel)
            if t is None:
                return None
            par = ix.parents(rel)
            for n in ast.walk(t):
                if isinstance(n, ast.Constant) and n.value == attr:
                    return None  # read by name (getattr, vars): not followed
                if not (isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Load)):
                    continue
                use = _harmless_use(par, n, frozen)
                if use is True:
                    continue
                if use is None:
                    return None
                callee, param = use
                if callee == "=":
                    # a local alias: every read of it in its function must be harmless too
                    fn = ix.enclosing(rel, n)
                    if fn is None or isinstance(fn, ast.Lambda):
                        return None
                    for x in _walk_own(fn):
                        if isinstance(x, ast.Name) and x.id == param and isinstance(x.ctx, ast.Load):
                            if _harmless_use(par, x, frozen) is not True:
                                return None
                    params.add((rel, fn.lineno, param))
                    continue
                defs = [
                    (r, d)
                    for r in ix.files
                    if f"def {callee}" in ix.text(r)
                    for d in ast.walk(ix.tree(r) or ast.Module(body=[], type_ignores=[]))
                    if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == callee
                ]
                if not defs:
                    return None
                for r, d in defs:
                    names = [a.arg for a in d.args.posonlyargs + d.args.args + d.args.kwonlyargs]
                    if isinstance(param, int):
                        offset = 1 if names[:1] in (["self"], ["cls"]) else 0
                        if param + offset >= len(names):
                            return None
                        pname = names[param + offset]
                    else:
                        pname = param
                    if pname not in names:
                        continue
                    dpar = ix.parents(r)
                    for x in _walk_own(d):
                        if isinstance(x, ast.Name) and x.id == pname:
                            if isinstance(x.ctx, ast.Store) or _harmless_use(dpar, x, frozen) is not True:
                                return None
                    params.add((r, d.lineno, pname))
    return {"attrs": attrs, "params": params}


def _in_annotation(par: dict, node) -> bool:
    """``node`` sits in an annotation (of an argument, a return or an annotated assignment)."""
    p, child = par.get(node), node
    while p is not None:
        if isinstance(p, ast.arg) and p.annotation is child:
            return True
        if isinstance(p, ast.AnnAssign) and p.annotation is child:
            return True
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and p.returns is child:
            return True
        if isinstance(p, (ast.stmt, ast.Call)):
            return False
        p, child = par.get(p), p
    return False


def _harmless_use(par: dict, n, methods: frozenset = frozenset()):
    """How a read ``n`` of a value is used: True when it cannot hand the value on (an attribute
    access on it, other than one of ``methods`` not called at once; an ``is`` comparison, an
    ``isinstance`` argument, a truth test); ``(function name,
    position or keyword)`` when it is an argument of a call of a named function; ``("=", local)``
    when it is assigned to a local; None otherwise."""
    up = par.get(n)
    if isinstance(up, ast.Attribute) and up.value is n:
        # a method of the class taken without calling it hands a bound method (and the instance) on
        called = isinstance(par.get(up), ast.Call) and par.get(up).func is up
        return True if called or up.attr not in methods else None
    if isinstance(up, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in up.ops):
        return True
    if isinstance(up, ast.Call) and src(up.func) == "isinstance":
        return True
    if isinstance(up, (ast.If, ast.While, ast.IfExp)) and up.test is n:
        return True
    if isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
        return True
    if isinstance(up, ast.BoolOp) and isinstance(par.get(up), (ast.If, ast.While)) and par.get(up).test is up:
        return True
    if isinstance(up, ast.Assign) and up.value is n and len(up.targets) == 1 and isinstance(up.targets[0], ast.Name):
        return ("=", up.targets[0].id)
    call, key = None, None
    if isinstance(up, ast.keyword) and isinstance(par.get(up), ast.Call):
        call, key = par.get(up), up.arg
    elif isinstance(up, ast.Call) and n in up.args:
        call, key = up, up.args.index(n)
        if any(isinstance(a, ast.Starred) for a in up.args[: key + 1]):
            return None
    if call is None or key is None:
        return None
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return (name, key) if name else None


def _may_hold(ix: _Index, rel: str, call: ast.Call, cls: str, holders: dict) -> bool:
    """Whether the receiver of ``call`` (``recv.m(...)``) may be an instance of ``cls`` given where
    its instances can be held (:func:`_instance_receivers`)."""
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False  # a plain function call, not a method of cls
    recv = f.value
    if src(recv) == "self":
        k = ix.enclosing_class(rel, call)
        return k is None or k.name == cls
    if isinstance(recv, ast.Attribute):
        return recv.attr in holders["attrs"]
    if isinstance(recv, ast.Name):
        fn = ix.enclosing(rel, call)
        while fn is not None:
            if (rel, getattr(fn, "lineno", -1), recv.id) in holders["params"]:
                return True
            fn = ix.enclosing(rel, fn)
        return False
    return False


#: The directory of the non-CUDA device code (Ascend NPU, Apple MLX); outside the inventory's scope
HARDWARE = SRT + "/hardware_backend/"
#: Tests that hold only on an NPU device
NPU_TESTS = ("_is_npu", "is_npu()")


def _not_on_cuda(ix: _Index, rel: str, cls: str) -> str:
    """Why class ``cls`` (defined in ``rel``) is never constructed on a CUDA device, or "" when that
    is not shown (AST): ``rel`` is under :data:`HARDWARE`, every subclass of ``cls`` is such a class
    too, and every mention of the name in srt outside ``rel`` is an import, a value of a dict display
    under a string key other than ``"cuda"`` (the runner table indexed by the device,
    ``cuda_graph_setup.py``), or the first branch of a conditional expression testing
    :data:`NPU_TESTS` (a module attribute ``m.cls`` or the name as a string refuses)."""
    if not rel.startswith(HARDWARE):
        return ""
    for sub in _subclasses(ix, cls) - {cls}:
        # an instance of a subclass runs this class's methods too: it must be chosen only off CUDA as well
        homes = [r for r in ix.files if re.search(r"^\s*class\s+" + re.escape(sub) + r"\b", ix.text(r), re.M)]
        if not homes or any(not _not_on_cuda(ix, r, sub) for r in homes):
            return ""
    keys = set()
    for r in ix.files:
        if r == rel or cls not in ix.text(r):
            continue
        t = ix.tree(r)
        if t is None:
            return ""
        par = ix.parents(r)
        for n in ast.walk(t):
            if (isinstance(n, ast.Attribute) and n.attr == cls) or (isinstance(n, ast.Constant) and n.value == cls):
                return ""  # reached as a module attribute or by name
            if not (isinstance(n, ast.Name) and n.id == cls):
                continue
            up = par.get(n)
            if isinstance(up, ast.Dict) and n in up.values:
                k = up.keys[up.values.index(n)]
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value != "cuda":
                    keys.add(f"{r}:{n.lineno} under {k.value!r}")
                    continue
            if isinstance(up, ast.IfExp) and up.body is n and src(up.test) in NPU_TESTS:
                keys.add(f"{r}:{n.lineno} if {src(up.test)}")
                continue
            return ""
    return f"{cls} is under hardware_backend/ and chosen only off CUDA (" + "; ".join(sorted(keys)) + ")"


@lru_cache(maxsize=1)
def _draft_decode_width_is_topk() -> str:
    """Empty when SGLang's ``resolve_num_tokens_per_req(phase="draft_decode")`` (run on the published
    speculative arguments) is ``speculative_eagle_topk``; else the reason."""
    try:
        from sglang.srt.speculative.spec_utils import resolve_num_tokens_per_req

        from ...symbolic import SymInt
        from .trace import config_values, published

        with published(config_values(), spec="EAGLE"):
            width = resolve_num_tokens_per_req(phase="draft_decode")
    except Exception as exc:  # noqa: BLE001 - then not checked, with the reason
        return f"resolve_num_tokens_per_req did not run: {type(exc).__name__}: {exc}"[:200]
    topk = SymInt.var("speculative_eagle_topk")
    same = isinstance(width, SymInt) and width.term.eq(topk.term)
    return "" if same else f"draft_decode width is {width}, not the top-k"


def children_get_max_bs(cls) -> str:
    """Empty when class ``cls`` (a splitter's wrapper backend) gives every child backend its own
    ``max_bs``: its ``init_cuda_graph_state(self, max_bs, ...)`` calls
    ``X.init_cuda_graph_state(max_bs=max_bs, ...)`` (or with ``max_bs`` first) in a loop ``for X in
    self.children`` (AST), so a child batch within the parent's is within the child's ``max_bs``;
    else the reason."""
    if cls is None:
        return "the splitter is not a method"
    for d in cls.body:
        if not (isinstance(d, ast.FunctionDef) and d.name == "init_cuda_graph_state"):
            continue
        params = [a.arg for a in d.args.args]
        if params[1:2] != ["max_bs"] or any(
            isinstance(n, ast.Name) and n.id == "max_bs" and isinstance(n.ctx, ast.Store) for n in ast.walk(d)
        ):
            return f"{cls.name}.init_cuda_graph_state does not keep its max_bs"
        for loop in ast.walk(d):
            if not (
                isinstance(loop, ast.For) and src(loop.iter) == "self.children" and isinstance(loop.target, ast.Name)
            ):
                continue
            for c in ast.walk(loop):
                if (
                    isinstance(c, ast.Call)
                    and src(c.func) == f"{loop.target.id}.init_cuda_graph_state"
                    and (
                        any(k.arg == "max_bs" and src(k.value) == "max_bs" for k in c.keywords)
                        or (c.args and src(c.args[0]) == "max_bs")
                    )
                ):
                    return ""
    return f"{cls.name} does not give each of self.children its max_bs (init_cuda_graph_state)"


def _bindable(fn, call: ast.Call, method: bool) -> bool:
    """The call's arguments can bind to ``fn``'s signature (else calling it raises TypeError before
    its body runs, so the call does not reach it). A call with ``*``/``**`` arguments is kept."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args][1 if method else 0 :]
    if len(call.args) > len(positional) and a.vararg is None:
        return False
    names = set(positional[len(call.args) :]) | {p.arg for p in a.kwonlyargs}
    given = {k.arg for k in call.keywords}
    if a.kwarg is None and not given <= names:
        return False
    n_def = len(a.defaults)
    required = positional[len(call.args) : len(positional) - n_def] if n_def else positional[len(call.args) :]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    return set(required) <= given


def _in_loop(ix: _Index, rel: str, node, fn) -> bool:
    """``node`` is inside a ``for``/``while`` of ``fn``."""
    p = ix.parents(rel).get(node)
    while p is not None and p is not fn:
        if isinstance(p, (ast.For, ast.While, ast.AsyncFor)):
            return True
        p = ix.parents(rel).get(p)
    return False


@lru_cache(maxsize=4)
def _tracer(root: str) -> _Tracer:
    return _Tracer(root)


def _walk_own(fn):
    """``ast.walk`` of ``fn`` without descending into nested functions/lambdas/classes."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(n))


# ------------------------------------------------------------------------------------------------
# which call sites may reach a backend class


def _related(ix: _Index, cls: str) -> set[str]:
    """``cls``, its subclasses and its bases (transitively, by name): the classes whose
    ``self.m(...)`` may dispatch to ``cls.m``."""
    bases = ix.bases()
    up, todo = {cls}, [cls]
    while todo:
        for b in bases.get(todo.pop(), ()):
            if b not in up:
                up.add(b)
                todo.append(b)
    return up | _subclasses(ix, cls)


def _ancestors(ix: _Index, cls: str) -> set[str]:
    """The bases of ``cls``, transitively (by name)."""
    bases = ix.bases()
    up, todo = set(), [cls]
    while todo:
        for b in bases.get(todo.pop(), ()):
            if b not in up:
                up.add(b)
                todo.append(b)
    return up


def _instance_classes(ix: _Index, cls: str) -> set[str]:
    """The classes whose methods may run on an instance of ``cls`` (by name): ``cls``, its bases,
    its subclasses and every base of a subclass (a mixin of a subclass writes that instance too)."""
    out = {cls} | _ancestors(ix, cls)
    for sub in _subclasses(ix, cls):
        out |= {sub} | _ancestors(ix, sub)
    return out


def _defines(ix: _Index, cls: str, method: str) -> bool:
    """Every class named ``cls`` in srt defines ``method`` in its own body."""
    found = False
    for rel in ix.files:
        if f"class {cls}" not in ix.text(rel):
            continue
        t = ix.tree(rel)
        for n in ast.walk(t) if t else []:
            if isinstance(n, ast.ClassDef) and n.name == cls:
                found = True
                if not any(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == method for b in n.body):
                    return False
    return found


def _defines_own(ix: _Index, cls: str, method: str) -> bool:
    """Some class named ``cls`` in srt defines ``method`` in its own body."""
    for rel in ix.files:
        if f"class {cls}" not in ix.text(rel) or f"def {method}" not in ix.text(rel):
            continue
        t = ix.tree(rel)
        for n in ast.walk(t) if t else []:
            if isinstance(n, ast.ClassDef) and n.name == cls:
                if any(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == method for b in n.body):
                    return True
    return False


def _subclasses(ix: _Index, cls: str) -> set[str]:
    bases = ix.bases()
    out = {cls}
    changed = True
    while changed:
        changed = False
        for name, bs in bases.items():
            if name not in out and bs & out:
                out.add(name)
                changed = True
    return out


def _holds(ix: _Index, rel: str, cls_node, attr: str) -> set[str] | None:
    """Class names ``self.<attr>`` may hold in ``cls_node`` (constructors assigned or appended in
    the class), or None when some binding is not a constructor of a named class."""
    found: set[str] = set()
    any_bind = False

    def ctor(v):
        if isinstance(v, ast.Call) and isinstance(v.func, (ast.Name, ast.Attribute)):
            name = src(v.func).rsplit(".", 1)[-1]
            if name[:1].isupper():
                return name
        return None

    for n in ast.walk(cls_node):
        vals = []
        if isinstance(n, ast.Assign) and any(src(t) == f"self.{attr}" for t in n.targets):
            v = n.value
            if isinstance(v, (ast.List, ast.Tuple)):
                vals = list(v.elts)
                if not vals:
                    any_bind = True
                    continue
            elif isinstance(v, ast.ListComp):
                vals = [v.elt]
            else:
                vals = [v]
        elif isinstance(n, ast.Call) and src(n.func) == f"self.{attr}.append" and n.args:
            vals = [n.args[0]]
        for v in vals:
            any_bind = True
            c = ctor(v)
            if c is None:
                return None
            found.add(c)
    return found if any_bind else None


def _receiver_attr(call: ast.Call, fn) -> str | None:
    """``X`` for a receiver ``self.X``, ``self.X[i]``, or a loop variable over ``self.X``."""
    r = call.func.value if isinstance(call.func, ast.Attribute) else None
    if r is None:
        return None
    if isinstance(r, ast.Subscript):
        r = r.value
    if isinstance(r, ast.Attribute) and src(r.value) == "self":
        return r.attr
    if isinstance(r, ast.Name) and fn is not None:
        for n in _walk_own(fn):
            if isinstance(n, ast.For) and isinstance(n.target, ast.Name) and n.target.id == r.id:
                it = n.iter
                if isinstance(it, ast.Attribute) and src(it.value) == "self":
                    return it.attr
    return None


def relevant_sites(root: str, cls: str, method: str) -> list[tuple[str, ast.Call, str]]:
    """Every call of ``method`` in srt that may dispatch to class ``cls`` (or a subclass): all calls
    of the name except those whose receiver provably holds other classes (``super()`` in a class
    not derived from it; ``self.X`` whose every binding in its class constructs another class).
    ``[(file, call, why kept)]``."""
    ix = _index(root)
    mine = _subclasses(ix, cls)
    out = []
    for rel, call in ix.calls(method):
        if not isinstance(call.func, ast.Attribute):
            continue
        fn = ix.enclosing(rel, call)
        owner = ix.enclosing_class(rel, call)
        recv = call.func.value
        if isinstance(recv, ast.Call) and src(recv.func) == "super":
            if owner is not None and not any(src(b).rsplit(".", 1)[-1] in mine for b in owner.bases):
                continue
            out.append((rel, call, "super() of a subclass"))
            continue
        if src(recv) == "self":
            if owner is not None and owner.name not in mine:
                # a base class's ``self.method(...)`` reaches ``cls`` unless ``cls`` overrides the
                # calling method itself (an intermediate override is not looked for: kept)
                if owner.name not in _ancestors(ix, cls) or (fn is not None and _defines(ix, cls, fn.name)):
                    continue
                out.append((rel, call, "self in a base class"))
                continue
            out.append((rel, call, "self"))
            continue
        attr = _receiver_attr(call, fn)
        if attr is not None and owner is not None:
            held = _holds(ix, rel, owner, attr)
            if held is not None and not (held & mine):
                continue
        out.append((rel, call, "receiver may hold it"))
    return out


def backend_bs_sites(root: str, cls: str, drop=None) -> dict:
    """The fact ``backend_bs <= padded_bs`` for backend class ``cls``, checked at every call of its
    CUDA-graph entry methods (:data:`ENTRY_METHODS`) that may reach it, and of every wrapper class
    that forwards its own forward batch to such a call (closed over): ``{"checked": [...], "not
    checked": [...]}``, one line per call site (for an unchecked one, the end of its first
    unchecked chain). ``drop(tracer, rel, call, method, classes)``, when given, returns a reason a
    call cannot reach what the caller asks about through any of ``classes`` (``cls`` and the
    wrappers forwarding to it; :mod:`.graph_reach`), or ""; such a call is listed checked with that
    reason instead of its batch's judgement."""
    tracer = _tracer(root)
    checked, unchecked, calls, done = _sites(root, cls)
    checked, unchecked = list(checked), list(unchecked)
    if drop is not None:
        # a call whose context reaches no slice of the buffer through any class it may dispatch to
        # (``cls`` or a wrapper forwarding to it) is checked whatever its batch
        moved = {}
        for rel, call, method in calls:
            reason = drop(tracer, rel, call, method, sorted(done))
            if reason:
                fn = tracer.ix.enclosing(rel, call)
                moved[f"{rel}:{call.lineno} {tracer._fn_name(fn) if fn else 'module'} -> {method}"] = reason
        unchecked = [u for u in unchecked if not any(u.startswith(m + ":") for m in moved)]
        checked = [c for c in checked if not any(c.startswith(m + " (") for m in moved)]
        checked += [f"{m} (cannot reach the buffer's slices: {r})" for m, r in moved.items()]
    return {"checked": checked, "not checked": unchecked, "classes": sorted(done)}


@lru_cache(maxsize=64)
def _sites(root: str, cls: str) -> tuple:
    """``(checked, not checked, calls, classes)`` of :func:`backend_bs_sites` before any drop;
    ``calls`` the ``(file, call, method)`` judged."""
    tracer = _tracer(root)
    checked, unchecked = [], []
    calls: list = []
    seen_sites: set = set()
    todo, done = [cls], set()
    while todo:
        c = todo.pop()
        if c in done:
            continue
        done.add(c)
        for method in ENTRY_METHODS:
            for rel, call, _why in relevant_sites(root, c, method):
                if (rel, call.lineno) in seen_sites:
                    continue
                fn = tracer.ix.enclosing(rel, call)
                seen_sites.add((rel, call.lineno))
                calls.append((rel, call, method))
                arg = (
                    call.args[0]
                    if call.args
                    else next((k.value for k in call.keywords if k.arg == "forward_batch"), None)
                )
                site = f"{rel}:{call.lineno} {tracer._fn_name(fn) if fn else 'module'} -> {method}"
                owner = tracer.ix.enclosing_class(rel, call)
                why_not = _not_on_cuda(tracer.ix, rel, owner.name) if owner is not None else ""
                if why_not:
                    checked.append(f"{site} (not run on a CUDA device: {why_not})")
                    continue
                if arg is None:
                    unchecked.append(f"{site}: no forward batch argument")
                    continue
                origins = list(tracer.fb(arg, rel, fn, 0, []))
                for st, ch in origins:
                    if st == "forwarded":
                        todo.append(ch[-1].rsplit(" ", 1)[-1].split(".", 1)[0])
                bad = [ch for st, ch in origins if st == "unchecked"]
                if origins and not bad:
                    fw = sum(st == "forwarded" for st, _ in origins)
                    checked.append(
                        f"{site} (every origin an element of the capture list"
                        + (f"; forwarded from its own caller, checked as a call of {method}" if fw else "")
                        + ")"
                    )
                else:
                    first = bad[0] if bad else ["no origin"]
                    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
                    unchecked.append(f"{site}: " + " <- ".join(first[-4:]) + more)
    return tuple(checked), tuple(unchecked), tuple(calls), frozenset(done)


# ------------------------------------------------------------------------------------------------
# which call sites cannot reach a buffer's slices (forward mode, capture phase)


def _mode_of(ix, rel: str, node, stores) -> set | None:
    """Member names a mode expression may hold, or None (any)."""
    if isinstance(node, ast.Attribute) and src(node.value) == "ForwardMode":
        return {node.attr}
    if isinstance(node, ast.Attribute) and src(node.value) == "self":
        found = stores(node.attr)
        if not found:
            return None
        out: set = set()
        for frel, n in found:
            stmt = ix.parents(frel).get(n)
            if frel != rel or src(n.value) != "self" or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                return None
            v = stmt.value
            if isinstance(v, ast.Attribute) and src(v.value) == "ForwardMode":
                out.add(v.attr)
            else:
                return None
        return out
    return None


def site_context(tracer: _Tracer, rel: str, call: ast.Call, method: str) -> tuple:
    """``(method, in_capture, modes)`` of a call site: ``in_capture`` True/False for a literal,
    ``"default"`` when not given, None when unknown (in-graph: None); ``modes`` a set of
    ``ForwardMode`` member names, or None for any mode."""
    ix = tracer.ix
    fn = ix.enclosing(rel, call)
    cap = None
    if method == graph_reach.OUT_GRAPH:
        arg = (
            call.args[1]
            if len(call.args) > 1
            else next((k.value for k in call.keywords if k.arg == "in_capture"), None)
        )
        if arg is None:
            cap = "default"
        elif isinstance(arg, ast.Constant) and isinstance(arg.value, bool):
            cap = arg.value
    fb = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "forward_batch"), None)
    modes = None
    if isinstance(fb, ast.Name) and fn is not None:
        sets = [
            n
            for n in ast.walk(fn)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and any(
                src(t).startswith(f"{fb.id}.forward_mode") for t in getattr(n, "targets", [getattr(n, "target", None)])
            )
        ]
        binds = tracer._reaching(rel, fn, tracer._assigns(fn, fb.id), fb)
        if binds and not sets:
            modes = set()
            for value, index in binds:
                kw = (
                    {k.arg: k.value for k in value.keywords if k.arg}
                    if isinstance(value, ast.Call) and index is None
                    else {}
                )
                if "forward_mode" in kw:
                    m = _mode_of(ix, rel, kw["forward_mode"], tracer._attribute_stores)
                elif isinstance(value, ast.Call) and isinstance(index, int):
                    m = returned_batch_modes(tracer, rel, fn, value, index)
                else:
                    m = None
                if m is None:
                    modes = None
                    break
                modes |= m
    return method, cap, modes


def _mode_kept(ix: _Index, call: ast.Call, name: str) -> bool:
    """``call`` is ``<x>.m(name)`` (the local ``name`` its one argument) and every ``def m`` in srt,
    whatever its class, returns only its first parameter, never rebinds it and stores no
    ``.forward_mode`` on it (AST): the call hands back ``name``'s batch with its mode unchanged
    (SGLang 0.5.23's ``ModelRunner.prepare_dummy_forward_batch``, ``model_runner.py:1705-1711``)."""
    f = call.func
    if not (
        isinstance(f, ast.Attribute)
        and len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == name
    ):
        return False
    defs = []
    for frel in ix.files:
        if f"def {f.attr}" not in ix.text(frel):
            continue
        t = ix.tree(frel)
        if t is None:
            return False
        defs += [d for d in ast.walk(t) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == f.attr]
    if not defs:
        return False
    for d in defs:
        params = [a.arg for a in d.args.posonlyargs + d.args.args]
        if len(params) != 2 or d.args.vararg or d.args.kwarg:
            return False
        p = params[1]
        rets = [r for r in _walk_own(d) if isinstance(r, ast.Return)]
        if not rets or not all(isinstance(r.value, ast.Name) and r.value.id == p for r in rets):
            return False
        for x in _walk_own(d):
            if isinstance(x, ast.Name) and x.id == p and isinstance(x.ctx, ast.Store):
                return False
            if isinstance(x, ast.Attribute) and x.attr == "forward_mode" and isinstance(x.ctx, ast.Store):
                return False
            if isinstance(x, ast.Call) and src(x.func) in ("setattr", "object.__setattr__"):
                return False
    return True


def returned_batch_modes(tracer: _Tracer, rel: str, fn, call: ast.Call, index: int) -> set | None:
    """``ForwardMode`` member names of element ``index`` of what ``self.<helper>(...)`` (``call``,
    in ``fn`` of file ``rel``) returns, or None (any) (AST). Known only when the helper is one
    method of ``fn``'s class that no subclass in srt defines again, every ``return`` of it is a
    tuple whose element ``index`` is a name bound in the helper only to ``ForwardBatch(...,
    forward_mode=ForwardMode.X, ...)`` calls, and the helper stores no ``<name>.forward_mode``.
    SGLang 0.5.23's ``PrefillCudaGraphRunner.capture_prepare``
    (``prefill_cuda_graph_runner.py:1510-1680``) is such a helper: its capture batch is
    ``ForwardMode.EXTEND``."""
    ix = tracer.ix
    if not (isinstance(call.func, ast.Attribute) and src(call.func.value) == "self"):
        return None
    owner = ix.enclosing_class(rel, fn)
    defs, rets = tracer._method_returns(rel, fn, call.func.attr)
    if owner is None or len(defs) != 1 or not rets:
        return None
    if any(_defines_own(ix, sub, call.func.attr) for sub in _subclasses(ix, owner.name) - {owner.name}):
        return None
    helper = defs[0]
    out: set = set()
    for r in rets:
        if not (isinstance(r.value, ast.Tuple) and index < len(r.value.elts)):
            return None
        el = r.value.elts[index]
        if not isinstance(el, ast.Name):
            return None
        if any(
            isinstance(n, ast.Attribute)
            and isinstance(n.ctx, ast.Store)
            and n.attr == "forward_mode"
            and src(n.value) == el.id
            for n in _walk_own(helper)
        ):
            return None
        binds = tracer._assigns(helper, el.id)
        if not binds:
            return None
        for value, i in binds:
            if isinstance(value, ast.Call) and i is None and _mode_kept(ix, value, el.id):
                continue  # the same batch handed back: its mode is set by the other bindings
            if not (isinstance(value, ast.Call) and i is None and src(value.func) == "ForwardBatch"):
                return None
            kw = {k.arg: k.value for k in value.keywords if k.arg}
            m = _mode_of(ix, rel, kw["forward_mode"], tracer._attribute_stores) if "forward_mode" in kw else None
            if m is None:
                return None
            out |= m
    return out


def _class_files(ix: _Index, cls: str) -> list[str]:
    """The files of srt defining a class named ``cls``."""
    pattern = re.compile(r"^\s*class\s+" + re.escape(cls) + r"\b", re.M)
    return [rel for rel in ix.files if f"class {cls}" in ix.text(rel) and pattern.search(ix.text(rel))]


def _mros(ix: _Index, cls: str, first: str, depth: int = 0) -> list[list]:
    """Every resolution order ``[(file, tree, class name)]`` of the class ``cls`` defined in
    ``first``: the class, then each base's order in turn (depth first, a class kept at its first
    place), the bases read from that definition's own header; a base defined in several files
    gives one order per definition, a base not defined in srt (``ABC``) is left out."""
    tree = ix.tree(first)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    if node is None or depth > 12:
        return []
    orders: list[list] = [[(first, tree, cls)]]
    for b in node.bases:
        name = src(b).split("[", 1)[0].rsplit(".", 1)[-1]
        alts = [m for f in _class_files(ix, name) for m in _mros(ix, name, f, depth + 1)]
        if not alts:
            continue
        orders = [o + [x for x in alt if (x[0], x[2]) not in {(y[0], y[2]) for y in o}] for o in orders for alt in alts]
    return orders


_WALKS: dict = {}


def _walks(ix: _Index, cls: str, modes: tuple, pred) -> list | None:
    key = (id(ix), cls)
    if key not in _WALKS:
        _WALKS[key] = _walks_of(ix, cls, modes, pred)
    return _WALKS[key]


def _walks_of(ix: _Index, cls: str, modes: tuple, pred) -> list | None:
    """:func:`graph_reach.walk_contexts` of ``cls`` and of every subclass (each with its own method
    resolution), or None when one is unknown."""
    out = []
    for k in sorted(_subclasses(ix, cls)):
        # a class name defined in several files, or with such a base: each definition walked
        mros = [m for f in _class_files(ix, k) for m in _mros(ix, k, f)]
        if not mros:
            return None
        for mro in mros:
            methods, external = graph_reach.class_methods(mro)
            table = graph_reach.walk_contexts(methods, external, modes, pred)
            if table is None:
                return None
            out.append((table, graph_reach.entry_default(methods)))
    return out


def reach_drop(root: str, cls: str, lines) -> tuple:
    """``(drop, note)``: ``drop`` for :func:`backend_bs_sites` when the buffer of class ``cls`` is
    sliced by the batch on ``lines`` of its file: a call site is dropped when its context
    (:func:`site_context`) reaches none of those lines through ``cls`` or a wrapper forwarding to it
    (:func:`capproof.engines.sglang.graph_reach.may_reach`; SGLang's ``ForwardMode`` run). ``drop`` is
    None (``note`` the reason) when SGLang's ``ForwardMode`` does not import or the walk of ``cls``
    is unknown."""
    try:
        modes, pred = graph_reach.mode_table()
    except Exception as exc:  # noqa: BLE001 - then nothing is dropped
        return None, f"ForwardMode not run: {type(exc).__name__}: {exc}"[:200]
    ix = _index(root)
    files = _class_files(ix, cls)
    walks = _walks(ix, cls, modes, pred)
    if len(files) != 1 or walks is None:
        return None, f"the walk of {cls}'s graph methods is unknown"
    defaults = {d for _, d in walks}
    default = defaults.pop() if len(defaults) == 1 else None
    uses = graph_reach.use_contexts([t for t, _ in walks], files[0], list(lines))
    if not all(uses.values()):
        # a slice no entry context reaches is reached some other way: its callers are not these sites
        return None, f"{cls}: a slicing line no entry method reaches"
    reach: dict = {cls: ("uses", uses, default)}

    def info(c: str):
        if c not in reach:
            ws = _walks(ix, c, modes, pred)
            ds = {d for _, d in ws or []}
            reach[c] = (
                None
                if ws is None
                else ("wrapper", graph_reach.forwarded_contexts([t for t, _ in ws]), ds.pop() if len(ds) == 1 else None)
            )
        return reach[c]

    def drop(tracer, rel, call, method, classes) -> str:
        table = {c: info(c) for c in classes}
        ctx = site_context(tracer, rel, call, method)
        if graph_reach.may_reach(ctx, table):
            return ""
        cap = {True: "in_capture=True", False: "in_capture=False", "default": "in_capture default", None: ""}[ctx[1]]
        mode = "any mode" if ctx[2] is None else "mode " + "/".join(sorted(ctx[2]))
        return f"{method} with {', '.join(x for x in (cap, mode) if x)} reaches no slice of it (ast; ForwardMode run)"

    return drop, ""
