"""Extents a Triton kernel of vLLM loads and stores, found by running the kernel's own Python body.

A ``@triton.jit`` kernel's body is Python (``JITFunction.fn``). Here it is run with a stand-in
``tl`` (:class:`TL`) on capproof :class:`~capproof.symbolic.SymInt` sizes, launched from the
engine's own host code (the module's kernel names are replaced by :class:`Launcher`, its
``torch`` and ``triton`` by recording stand-ins), once per path (:func:`capproof.symbolic.explore`):

- ``tl.program_id(a)`` is a fresh integer ``0 <= pid < grid[a]`` (the grid the host code
  launched), ``tl.arange(lo, hi)`` one lane, a fresh integer ``lo <= lane < hi`` (a block's lanes
  are the same arithmetic on each lane);
- a pointer argument is the tensor plus an element offset; ``tl.load``/``tl.store`` record the
  offset, the ``mask`` (when it is a condition on sizes and lanes) and the launch's constraints;
- a loaded value is data (:class:`Data`): arithmetic on it is data, a comparison of it is a
  fresh unknown condition (both branches are run), and an offset that depends on data is **not
  derived** (it needs a fact about what the engine stored there).

:func:`extents` then bounds each recorded access per dimension of a contiguous tensor: the index
``offset // stride`` (``% size`` for inner dimensions) is shown, by Z3 on the path's condition,
the launch's constraints and the mask, to lie in ``[0, E)`` for an ``E`` built by substituting
each lane and program id by an upper bound that its constraints state (the first that proves).
An access whose index is not bounded that way is reported, never guessed.
"""

from __future__ import annotations

import inspect
import itertools
import sys
import types
from dataclasses import dataclass, field

import z3

from ...symbolic import SymBool, SymInt, to_z3_bool, to_z3_int

__all__ = ["Data", "FakeTensor", "FakeTorch", "Launcher", "Run", "TL", "KernelAccess", "extents", "patched"]


class Run:
    """What one execution recorded: accesses, constraints on the fresh names, fresh-name counter."""

    current: "Run | None" = None

    def __init__(self):
        self.accesses: list[KernelAccess] = []
        self.constraints: list = []
        self.fresh = 0
        self.launch = 0
        self.kernel_vars: set[str] = set()

    def var(self, prefix: str) -> SymInt:
        self.fresh += 1
        name = f"{prefix}!{self.fresh}"
        self.kernel_vars.add(name)
        return SymInt.var(name)


@dataclass
class KernelAccess:
    """One ``tl.load``/``tl.store``: the tensor, the element offset (None: depends on data), the
    mask condition (None: no mask, or a mask on data), the constraints in force, where."""

    tensor: "FakeTensor"
    kind: str
    offset: object
    mask: object
    constraints: list
    kernel: str
    file: str
    line: int
    launched_at: str = ""


class Data:
    """A value the kernel loaded from memory (or a float): arithmetic keeps it data; a comparison
    is a fresh condition (both outcomes are explored); it never becomes an extent."""

    def _op(self, *other):
        return Data()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _op
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _op
    __neg__ = __pos__ = __abs__ = __invert__ = _op
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _op
    __lshift__ = __rshift__ = __rlshift__ = __rrshift__ = _op

    def _cmp(self, other):
        run = Run.current
        run.fresh += 1
        return SymBool(z3.Bool(f"data_cond!{run.fresh}"))

    __lt__ = __le__ = __gt__ = __ge__ = _cmp

    def __eq__(self, other):  # noqa: D105
        return self._cmp(other)

    def __ne__(self, other):  # noqa: D105
        return self._cmp(other)

    __hash__ = object.__hash__

    def to(self, *a, **k):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: Data()


def _is_int(v) -> bool:
    return isinstance(v, (int, SymInt)) and not isinstance(v, (bool, SymBool))


class K:
    """A kernel integer or condition: a SymInt/SymBool/int (sizes, lanes, program ids), combined
    with data it becomes :class:`Data`."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    @staticmethod
    def wrap(v):
        if isinstance(v, (K, Data, Ptr)):
            return v
        if isinstance(v, float):
            return Data()
        return K(v)

    def _bin(opname, reflected=False):  # noqa: N805 - builds the operator methods
        import operator

        fn = getattr(operator, opname)
        compare = opname in ("lt", "le", "gt", "ge", "eq", "ne")

        def op(self, other):
            other = K.wrap(other)
            if isinstance(other, Ptr):
                return other + self if opname == "add" else NotImplemented
            if isinstance(other, Data):
                return Data()._cmp(None) if compare else Data()
            return K(fn(other.v, self.v) if reflected else fn(self.v, other.v))

        return op

    for _n in ("add", "sub", "mul", "floordiv", "mod", "and_", "or_", "xor", "lt", "le", "gt", "ge", "eq", "ne"):
        locals()[f"__{_n.rstrip('_')}__"] = _bin(_n)
    for _n in ("add", "sub", "mul", "floordiv", "mod", "and_", "or_", "xor"):
        locals()[f"__r{_n.rstrip('_')}__"] = _bin(_n, True)
    del _n

    def __truediv__(self, other):
        return Data()

    __rtruediv__ = __truediv__
    __hash__ = object.__hash__

    def __neg__(self):
        return K(-self.v)

    def __invert__(self):
        v = self.v
        return K(~v) if not isinstance(v, (SymBool, bool)) else K(z3_not(v))

    def __bool__(self):
        return bool(self.v)

    def to(self, *a, **k):
        return self


def z3_not(v):
    return SymBool(z3.Not(to_z3_bool(v))) if isinstance(v, SymBool) else (not v)


class Ptr:
    """A tensor argument plus an element offset (a :class:`K`, or :class:`Data`)."""

    def __init__(self, tensor: "FakeTensor", offset):
        self.tensor, self.offset = tensor, offset

    def __add__(self, other):
        return Ptr(self.tensor, self.offset + K.wrap(other))

    __radd__ = __add__

    def to(self, *a, **k):
        return self


def _where() -> tuple[str, int]:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)


class TL:
    """Stand-in for ``triton.language`` (see the module docstring)."""

    constexpr = object
    int1 = int8 = int16 = int32 = int64 = uint8 = uint32 = uint64 = "int"
    float16 = bfloat16 = float32 = float64 = "float"

    def __init__(self, grid, kernel: str, launched_at: str):
        self.grid, self.kernel, self.launched_at = grid, kernel, launched_at
        self.constraints: list = []

    def program_id(self, axis):
        pid = Run.current.var(f"pid{axis}")
        bound = self.grid[axis] if axis < len(self.grid) else 1
        self.constraints += [to_z3_int(pid) >= 0, to_z3_int(pid) < to_z3_int(_plain(bound))]
        return K(pid)

    def num_programs(self, axis):
        return K(_plain(self.grid[axis]) if axis < len(self.grid) else 1)

    def arange(self, lo, hi):
        lane = Run.current.var("lane")
        self.constraints += [to_z3_int(lane) >= to_z3_int(_plain(lo)), to_z3_int(lane) < to_z3_int(_plain(hi))]
        return K(lane)

    def _record(self, kind, ptr, mask):
        if not isinstance(ptr, Ptr):
            raise TypeError(f"{kind} of a non-pointer {ptr!r}")
        file, line = _where()
        off = ptr.offset
        offset = to_z3_int(off.v) if isinstance(off, K) and _is_int(off.v) else None
        m = None
        if isinstance(mask, K) and isinstance(mask.v, (SymBool, bool)):
            m = to_z3_bool(mask.v)
        Run.current.accesses.append(
            KernelAccess(ptr.tensor, kind, offset, m, list(self.constraints), self.kernel, file, line, self.launched_at)
        )

    def load(self, ptr, mask=None, other=None, **kw):
        self._record("load", ptr, mask)
        return Data()

    def store(self, ptr, value, mask=None, **kw):
        self._record("store", ptr, mask)

    def where(self, cond, a, b):
        a, b = K.wrap(a), K.wrap(b)
        if isinstance(cond, K) and isinstance(a, K) and isinstance(b, K):
            from ...arith import select

            return K(select(cond.v, a.v, b.v))
        return Data()

    def maximum(self, a, b, **k):
        a, b = K.wrap(a), K.wrap(b)
        if isinstance(a, K) and isinstance(b, K):
            from ...arith import maximum

            return K(maximum(a.v, b.v))
        return Data()

    def minimum(self, a, b, **k):
        a, b = K.wrap(a), K.wrap(b)
        if isinstance(a, K) and isinstance(b, K):
            from ...arith import minimum

            return K(minimum(a.v, b.v))
        return Data()

    def cdiv(self, a, b):
        return (K.wrap(a) + K.wrap(b) - 1) // K.wrap(b)

    def multiple_of(self, x, *a):
        return x

    max_contiguous = multiple_of

    def static_assert(self, *a, **k):
        return None

    def __getattr__(self, name):
        # reductions, math functions, casts: values, never extents
        return lambda *a, **k: Data()


def _plain(v):
    return v.v if isinstance(v, K) else v


class FakeTensor:
    """A recording stand-in tensor: ``shape`` (ints or SymInts), contiguous strides, ``name``
    (the attribute it is kept in, set after construction)."""

    def __init__(self, shape, name: str = "?"):
        self.shape = tuple(shape)
        self.name = name

    def stride(self, dim=None):
        strides = []
        acc = 1
        for d in reversed(self.shape):
            strides.append(acc)
            acc = acc * d
        strides = tuple(reversed(strides))
        return strides if dim is None else strides[dim]

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    def numel(self):
        out = 1
        for d in self.shape:
            out = out * d
        return out

    def to(self, *a, **k):
        return self

    def __repr__(self):
        return f"FakeTensor({self.name}, {self.shape})"


def _shape_args(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


class FakeTorch:
    """Stand-in ``torch`` for a constructor: every allocation is a :class:`FakeTensor`."""

    float16 = bfloat16 = float32 = float64 = int8 = int16 = int32 = int64 = uint8 = bool = "dtype"
    Tensor = FakeTensor

    def zeros(self, *shape, **kw):
        return FakeTensor(_shape_args(shape))

    empty = ones = zeros

    def full(self, shape, value, **kw):
        return FakeTensor(_shape_args((shape,)))

    def empty_like(self, t, **kw):
        return FakeTensor(t.shape)

    zeros_like = empty_like

    def device(self, *a, **k):
        return "cpu"


class Launcher:
    """Replaces a module's ``@triton.jit`` kernel: ``kernel[grid](*args, **kw)`` runs the kernel's
    Python body with :class:`TL` (keyword arguments the body does not take, such as
    ``num_warps``, are dropped)."""

    def __init__(self, jit, name: str):
        self.fn = getattr(jit, "fn", jit)
        self.name = name

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)
        file, line = _where()

        def launch(*args, **kw):
            Run.current.launch += 1
            tl = TL(grid, self.name, f"{file}:{line}")
            fn = _rebind(self.fn, tl)
            sig = inspect.signature(fn)
            kw = {k: v for k, v in kw.items() if k in sig.parameters}
            bound = sig.bind(*args, **kw)
            bound.apply_defaults()
            call = {}
            for k, v in bound.arguments.items():
                call[k] = Ptr(v, K(0)) if isinstance(v, FakeTensor) else K.wrap(v)
            fn(**call)

        return launch


def _rebind(fn, tl, memo=None):
    """``fn`` with ``tl`` in its globals, and the kernels it calls as device functions rebound the
    same way (``memo``: one rebound function per code object)."""
    memo = {} if memo is None else memo
    if fn.__code__ in memo:
        return memo[fn.__code__]
    g = dict(fn.__globals__)
    g["tl"] = tl
    out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    memo[fn.__code__] = out
    for k, v in list(g.items()):
        if isinstance(v, Launcher):
            g[k] = _rebind(v.fn, tl, memo)
        elif is_kernel(v):
            g[k] = _rebind(getattr(v, "fn", v), tl, memo)
    return out


class _Triton:
    """Stand-in ``triton`` for host code: ``next_power_of_2`` is a fresh integer ``>= n`` and
    ``>= 1`` (what the extents need of it), ``cdiv`` exact."""

    def next_power_of_2(self, n):
        p = Run.current.var("next_power_of_2")
        Run.current.constraints += [to_z3_int(p) >= to_z3_int(n), to_z3_int(p) >= 1]
        return p

    def cdiv(self, a, b):
        return -(-a // b)


class patched:
    """Context: ``module``'s kernels (names in ``kernels``) replaced by :class:`Launcher`, its
    ``torch`` by :class:`FakeTorch` and ``triton`` by the host stand-in; restored on exit."""

    def __init__(self, module, kernels):
        self.module, self.kernels = module, kernels

    def __enter__(self):
        self.saved = {}
        for name in [*self.kernels, "torch", "triton"]:
            if hasattr(self.module, name):
                self.saved[name] = getattr(self.module, name)
        for name in self.kernels:
            setattr(self.module, name, Launcher(getattr(self.module, name), name))
        self.module.torch = FakeTorch()
        self.module.triton = _Triton()
        return self

    def __exit__(self, *exc):
        for name, v in self.saved.items():
            setattr(self.module, name, v)


_KERNEL_CACHE: dict = {}


def is_kernel(v) -> bool:
    """Whether ``v`` is a ``@triton.jit`` function: a ``JITFunction``, or (without Triton, where
    vLLM's placeholder ``jit`` returns the function) a function whose source is decorated with it."""
    if type(v).__name__ == "JITFunction" and hasattr(v, "fn"):
        return True
    if not isinstance(v, types.FunctionType):
        return False
    if v.__code__ not in _KERNEL_CACHE:
        try:
            lines, _ = inspect.getsourcelines(v)
        except (OSError, TypeError):
            lines = []
        _KERNEL_CACHE[v.__code__] = any(ln.lstrip().startswith(("@triton.jit", "@jit", "@tl.jit")) for ln in lines[:4])
    return _KERNEL_CACHE[v.__code__]


def kernels_of(module) -> list[str]:
    """Names of the ``@triton.jit`` functions defined or imported in ``module``."""
    return [k for k, v in vars(module).items() if is_kernel(v)]


def name_tensors(obj) -> None:
    """Name every :class:`FakeTensor` attribute of ``obj`` after its attribute."""
    for k, v in vars(obj).items():
        if isinstance(v, FakeTensor):
            v.name = k


# ------------------------------------------------------------------------------------------------
# Bounding recorded accesses


@dataclass
class DimExtent:
    """The extent of one access along one dimension (``extent`` a Z3 term), or why not."""

    extent: object = None
    why: str = ""


@dataclass
class TensorExtents:
    per_dim: dict = field(default_factory=dict)  # dim -> list of Z3 extents
    sites: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def _atoms(cond) -> list:
    if cond is None:
        return []
    if z3.is_and(cond):
        out = []
        for c in cond.children():
            out += _atoms(c)
        return out
    return [cond]


def _upper_bounds(var, conds) -> list:
    """Upper bounds (inclusive) of ``var`` that the atoms of ``conds`` state directly."""
    out = []
    for c in conds:
        for a in _atoms(c):
            neg = False
            if z3.is_not(a):
                a, neg = a.arg(0), True
            if a.num_args() != 2:
                continue
            left, right = a.arg(0), a.arg(1)
            kind = a.decl().kind()
            flip = {
                z3.Z3_OP_LT: z3.Z3_OP_GT,
                z3.Z3_OP_LE: z3.Z3_OP_GE,
                z3.Z3_OP_GT: z3.Z3_OP_LT,
                z3.Z3_OP_GE: z3.Z3_OP_LE,
            }
            if kind not in flip:
                continue
            if z3.eq(right, var):
                left, right, kind = right, left, flip[kind]
            if not z3.eq(left, var):
                continue
            if neg:  # not (v > e) is v <= e; not (v >= e) is v < e
                kind = {z3.Z3_OP_GT: z3.Z3_OP_LE, z3.Z3_OP_GE: z3.Z3_OP_LT}.get(kind)
            if kind == z3.Z3_OP_LT:
                out.append(right - 1)
            elif kind == z3.Z3_OP_LE:
                out.append(right)
    return out


def _stated_bounds(conds, allowed: set[str]) -> list:
    """Exclusive upper bounds the constraints state (``v < e``: ``e``; ``v <= e``: ``e + 1``) in
    ``allowed`` names only."""
    out = []
    for c in conds:
        for a in _atoms(c):
            if z3.is_not(a):  # not (e <= v) is v < e; not (e < v) is v <= e
                a = a.arg(0)
                if a.num_args() == 2 and a.decl().kind() in (z3.Z3_OP_LE, z3.Z3_OP_LT) and _free(a.arg(0)) <= allowed:
                    e = a.arg(0)
                    out.append(z3.simplify(e if a.decl().kind() == z3.Z3_OP_LE else e + 1))
                continue
            if a.num_args() != 2:
                continue
            kind, right = a.decl().kind(), a.arg(1)
            if kind in (z3.Z3_OP_LT, z3.Z3_OP_LE) and _free(right) <= allowed:
                out.append(z3.simplify(right if kind == z3.Z3_OP_LT else right + 1))
    return out


def _free(term) -> set[str]:
    out = set()
    todo = [term]
    while todo:
        t = todo.pop()
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(t.decl().name())
        todo += list(t.children())
    return out


def _valid(claim, facts, rlimit: int = 2_000_000) -> bool:
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.add(*facts)
    s.add(z3.Not(claim))
    return s.check() == z3.unsat


def _index_terms(acc: KernelAccess) -> list:
    """Per dimension, the index of a contiguous tensor at the flat ``offset``: ``offset // inner``
    for dimension 0, ``offset // inner % size`` for the others (``inner`` the product of the
    dimensions after it)."""
    shape = [z3.IntVal(d) if type(d) is int else to_z3_int(d) for d in acc.tensor.shape]
    out = []
    for d in range(len(shape)):
        inner = z3.IntVal(1)
        for s in shape[d + 1 :]:
            inner = inner * s
        idx = acc.offset if len(shape) == 1 else acc.offset / inner
        if d > 0:
            idx = idx % shape[d]
        out.append(z3.simplify(idx))
    return out


def bound_access(
    acc: KernelAccess, facts: list, kernel_vars: set[str], allowed: set[str], plain: list | None = None
) -> list[DimExtent]:
    """The extent per dimension of one access, on ``facts`` (the path's condition, the domain),
    the launch's constraints and the mask (see the module docstring). ``plain``: the facts without
    the path's condition (an extent is printed as a stated bound only when equal to it on those:
    a path's condition can force a size, and the extent must not carry that to other paths)."""
    if acc.offset is None:
        return [DimExtent(why="the offset depends on loaded data")] * len(acc.tensor.shape)
    if any(not isinstance(d, int) for d in acc.tensor.shape[1:]) and len(acc.tensor.shape) > 1:
        return [DimExtent(why="an inner dimension is symbolic (not linear)")] * len(acc.tensor.shape)
    conds = list(acc.constraints) + ([acc.mask] if acc.mask is not None else [])
    all_facts = list(facts) + conds
    out = []
    for idx in _index_terms(acc):
        vs = sorted(n for n in _free(idx) if n in kernel_vars)
        options = []
        for n in vs:
            var = z3.Int(n)
            ubs = _upper_bounds(var, conds)
            if not ubs:
                options = None
                break
            options.append([(var, u) for u in ubs])
        if options is None:
            out.append(DimExtent(why=f"no upper bound stated for a lane or program id of {idx}"))
            continue
        found = None
        for combo in itertools.product(*options) if options else [()]:
            cand = z3.simplify(z3.substitute(idx, *combo) + 1) if combo else z3.simplify(idx + 1)
            if not _free(cand) <= allowed:
                continue
            if _valid(z3.And(idx >= 0, idx < cand), all_facts):
                found = cand
                break
        if found is not None:
            # print it as a bound the constraints state, where one equals it (rows, not 1 + (4*rows - 1)/4)
            same = (list(plain) if plain is not None else list(facts)) + conds
            for atom in _stated_bounds(conds, allowed):
                if _valid(atom == found, same):
                    found = atom
                    break
        out.append(DimExtent(extent=found) if found is not None else DimExtent(why=f"index {idx} not bounded"))
    return out


def extents(exploration, domain: list, allowed: set[str], out: dict | None = None) -> dict[str, TensorExtents]:
    """Per tensor name, the extents of every access on every path of ``exploration`` (whose
    paths' values are the :class:`Run` of that execution), added to ``out``."""
    out = {} if out is None else out
    if not exploration.complete:
        raise RuntimeError(f"{exploration.unexplored} paths unexplored (budget {exploration.budget})")
    for path in exploration.paths:
        if path.error is not None:
            import traceback

            tb = traceback.extract_tb(path.error.__traceback__)[-1]
            raise RuntimeError(
                f"a path raised {type(path.error).__name__}: {path.error} at {_rel(tb.filename)}:{tb.lineno}"[:300]
            )
        run: Run = path.value
        cond = [c if taken else z3.Not(c) for _, c, taken in path.decisions]
        facts = list(domain) + cond + list(run.constraints)
        for acc in run.accesses:
            rec = out.setdefault(acc.tensor.name, TensorExtents())
            site = f"{_rel(acc.file)}:{acc.line} {acc.kernel} {acc.kind} (launched at {_rel(acc.launched_at)})"
            if site not in rec.sites:
                rec.sites.append(site)
            plain = list(domain) + list(run.constraints)
            for d, ext in enumerate(bound_access(acc, facts, run.kernel_vars, allowed, plain)):
                if ext.extent is None:
                    problem = f"{site} dim {d}: {ext.why}"
                    if problem not in rec.problems:
                        rec.problems.append(problem)
                else:
                    lst = rec.per_dim.setdefault(d, [])
                    if not any(z3.eq(ext.extent, e) for e in lst):
                        lst.append(ext.extent)
    return out


def _rel(path: str) -> str:
    i = path.find("vllm/")
    return path[i:] if i >= 0 else path


def combine(terms: list, domain: list):
    """One term bounding all ``terms`` (the one provably >= the others on ``domain``, else their
    maximum, as an ``If`` chain)."""
    for t in terms:
        if all(_valid(t >= o, domain) for o in terms):
            return t
    out = terms[0]
    for t in terms[1:]:
        out = z3.If(out >= t, out, t)
    return out
