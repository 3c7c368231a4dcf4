"""Trace vLLM's own constructors on symbolic config values: the ``traced`` side of the inventory.

The constructors of vLLM 0.33.0 (loaded from the wheel, :func:`.wheels.activate`) run with
capproof :class:`~capproof.symbolic.SymInt` config fields in duck-typed config objects
(``SimpleNamespace``-style, only the fields they read). A **recording stand-in** replaces the
allocation calls while they run: ``torch.zeros/empty/full/ones/arange/*_like``, ``Tensor.new_*``
and the numpy equivalents record ``(shape terms, dtype, the caller's file:line)`` and return a
:class:`FakeTensor` that supports what the constructors do next (``.numpy()``, ``.stride()``,
slicing, ``.to()``...). vLLM's buffer wrappers (``CpuGpuBuffer``, ``_make_buffer``, the V2
runner's ``UvaBackedTensor``/``StagedWriteTensor``) run unchanged on top of it; an allocation is
attributed to the innermost frame whose ``file:line`` is an allocation the static scan
(:mod:`.scan`) listed, so a wrapper's allocation lands on its caller's line.

The recorded terms print back to the shape expression language with
:func:`capproof.inventory.to_expression` (every config name is a size ``>= 1`` except
``num_speculative_tokens``, ``>= 0``).

The same harness runs with plain ints and the **real** torch/numpy functions (``mode="real"``):
``tests/test_inventory_trace.py`` (marked ``real``) compares the real tensors' shapes with the
traced expressions evaluated at those ints, which is what makes ``traced`` trustworthy.

A harness that raises (a branch on a symbolic value, a CUDA-only call, a device query) leaves its
allocations ``read`` with the error as ``why``.

The harnesses of ``vllm/v1/worker/**``, ``vllm/v1/spec_decode/**`` and the MoE alignment live in
:mod:`.harness_worker` (it adds stand-ins through :data:`PATCH_PROVIDERS` and names through
:data:`EXTRA_VALUES`) and those of the attention backends in :mod:`.harness_attention`; both
register into :data:`HARNESSES` when imported, which :mod:`.harnesses` does: import that module
to trace with every harness.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Iterator

from ...errors import CapproofError, SpecError
from ...inventory import Entry, classify, expression_names, to_expression
from ...symbolic import SymInt, tracing

__all__ = ["FakeTensor", "Recorded", "Recorder", "recording", "HARNESSES", "trace_all", "config_values",
           "POSITIVE", "NONNEGATIVE"]

#: Config names that are sizes (>= 1) and names that may be 0, for the printer.
POSITIVE = ("max_num_reqs", "max_num_batched_tokens", "max_model_len", "block_size", "dcp", "pcp",
            "hidden_size", "vocab_size", "num_sms", "max_num_blocks", "num_experts", "top_k",
            "block_size_m", "max_num_tokens", "num_heads", "head_size", "num_kv_heads",
            "kernel_block_size", "index_topk", "cp_kv_cache_interleave_size", "block_table_width", "num_heads",
            "max_cudagraph_capture_size")
NONNEGATIVE = ("num_speculative_tokens",)


def _dtype_name(dtype) -> str:
    if dtype is None:
        return ""
    text = str(dtype)
    if text.startswith("torch."):
        return text[len("torch."):]
    try:
        import numpy as np

        return np.dtype(dtype).name
    except Exception:  # noqa: BLE001 - any dtype spelling numpy does not know
        return getattr(dtype, "__name__", text)


def _dim(x):
    """One shape entry as an int or SymInt (FakeTensor .shape entries pass through)."""
    if isinstance(x, (int, SymInt)):
        return x
    if hasattr(x, "__index__"):
        return x.__index__()
    raise TypeError(f"shape entry {x!r}")


def _shape(args) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list, FakeShape)):
        return tuple(_dim(a) for a in args[0])
    if len(args) == 1 and not isinstance(args[0], (int, SymInt)) and hasattr(args[0], "shape"):
        return tuple(args[0].shape)
    return tuple(_dim(a) for a in args)


class FakeShape(tuple):
    """``tensor.shape``: a tuple of ints/SymInts that also answers ``numel()``."""

    def numel(self):
        n = 1
        for d in self:
            n = n * d
        return n


class FakeTensor:
    """A tensor-like value standing in for an allocation: it keeps the (symbolic) shape and dtype
    and supports what vLLM's constructors do with a fresh buffer (views, numpy views, stride,
    device moves, fills). Data is never computed."""

    __array_priority__ = 1000

    def __init__(self, shape: tuple, dtype=None, device=None):
        self.shape = FakeShape(shape)
        self.dtype = dtype
        self.device = device

    # shape queries
    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    ndim = property(dim)

    def numel(self):
        return self.shape.numel()

    def __len__(self):
        n = self.shape[0]
        if isinstance(n, SymInt):
            n.__index__()  # raises NotConcreteError with the caller's line
        return n

    def stride(self, dim=None):
        strides = []
        acc = 1
        for d in reversed(self.shape):
            strides.append(acc)
            acc = acc * d
        strides = tuple(reversed(strides))
        return strides if dim is None else strides[dim]

    def element_size(self):
        try:
            import torch

            if isinstance(self.dtype, torch.dtype):
                return torch.empty((), dtype=self.dtype).element_size()
        except Exception:  # noqa: BLE001
            pass
        import numpy as np

        return np.dtype(self.dtype).itemsize

    # views and moves: same buffer
    def _same(self, *args, **kwargs):
        return self

    def fill(self, *args, **kwargs):  # numpy's in-place fill
        return None

    numpy = cpu = cuda = pin_memory = contiguous = clone = detach = share_memory_ = _same

    def _elementwise(self, other):
        # ``arange(n) * k``, ``x + 1``: a scalar operand keeps the buffer's shape
        if isinstance(other, (int, float, SymInt)) or other is self or (
                isinstance(other, FakeTensor) and len(other.shape) == len(self.shape)
                and all(_same_dim(a, b) for a, b in zip(self.shape, other.shape))):
            return FakeTensor(tuple(self.shape), self.dtype, self.device)
        return NotImplemented

    __mul__ = __rmul__ = __add__ = __radd__ = __sub__ = __rsub__ = __floordiv__ = _elementwise

    def repeat(self, *sizes):
        """``Tensor.repeat``: leading new dimensions, then each dimension times its factor."""
        sizes = _shape(sizes)
        lead = len(sizes) - len(self.shape)
        if lead < 0:
            raise TypeError("repeat: fewer sizes than dimensions")
        shape = tuple(sizes[:lead]) + tuple(d * k for d, k in zip(self.shape, sizes[lead:]))
        return FakeTensor(shape, self.dtype, self.device)
    fill_ = zero_ = copy_ = normal_ = uniform_ = masked_fill_ = index_fill_ = _same
    __iadd__ = __isub__ = __imul__ = _same

    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        for a in args:
            if _is_dtype(a):
                dtype = a
        return FakeTensor(tuple(self.shape), dtype or self.dtype, kwargs.get("device", self.device))

    def view(self, *args):
        if len(args) == 1 and _is_dtype(args[0]):
            return FakeTensor(tuple(self.shape), args[0], self.device)
        return FakeTensor(_shape(args), self.dtype, self.device)

    reshape = view

    def flatten(self, *args):
        return FakeTensor((self.numel(),), self.dtype, self.device)

    def unsqueeze(self, dim):
        s = list(self.shape)
        s.insert(dim if dim >= 0 else len(s) + dim + 1, 1)
        return FakeTensor(tuple(s), self.dtype, self.device)

    def expand(self, *args):
        return FakeTensor(_shape(args), self.dtype, self.device)

    def __getitem__(self, key):
        # a view: keep the buffer's trailing shape; slicing the first dimension keeps the fake
        if isinstance(key, tuple) and len(key) >= 1 and all(isinstance(k, slice) for k in key):
            return self
        if isinstance(key, slice) and key.start is None and key.step is None and isinstance(key.stop, int) \
                and key.stop < 0 and self.shape:
            # ``x[:-c]`` (e.g. ``query_start_loc[:-1]``): c fewer rows, never fewer than none
            from ...arith import maximum

            n = self.shape[0] + key.stop
            return FakeTensor((maximum(n, 0) if isinstance(n, SymInt) and not _provably_nonnegative(n) else
                               max(n, 0) if isinstance(n, int) else n,) + tuple(self.shape[1:]), self.dtype, self.device)
        if isinstance(key, slice):
            return self
        if isinstance(key, int) and len(self.shape) > 1:
            return FakeTensor(tuple(self.shape[1:]), self.dtype, self.device)
        return FakeTensor(tuple(self.shape[1:]) if len(self.shape) > 1 else (), self.dtype, self.device)

    def __setitem__(self, key, value):
        return None

    def tolist(self):
        raise CapproofError("tolist() of a traced buffer: its data is not computed")

    def item(self):
        raise CapproofError("item() of a traced buffer: its data is not computed")

    def __repr__(self):
        return f"FakeTensor({self.shape!r}, {self.dtype})"

    new_zeros = new_empty = new_full = new_ones = None  # set by recording()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith("_"):  # any other in-place op
            return self._same
        if name in ("is_cuda", "is_pinned", "requires_grad"):
            return False
        if name == "data_ptr":
            return lambda: 0
        raise AttributeError(f"FakeTensor has no {name!r} (traced buffer)")


def _same_dim(a, b) -> bool:
    """Whether two shape entries are the same expression (structurally; no solver call)."""
    if isinstance(a, SymInt) and isinstance(b, SymInt):
        return a.term.eq(b.term)
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return False
    return int(a) == int(b)


def _provably_nonnegative(n: SymInt) -> bool:
    """Whether ``n >= 0`` follows from every config name being a size (:data:`POSITIVE`, >= 1) or a
    count (:data:`NONNEGATIVE`, >= 0)."""
    import z3

    s = z3.Solver()
    s.add(*_facts(), n.term < 0)
    return s.check() == z3.unsat


def _is_dtype(x) -> bool:
    try:
        import torch

        if isinstance(x, torch.dtype):
            return True
    except ImportError:  # pragma: no cover
        pass
    import numpy as np

    return isinstance(x, type) and issubclass(x, np.generic) or isinstance(x, np.dtype)


@dataclass
class Recorded:
    """One recorded allocation: its shape (ints/SymInts), dtype name, the call, and the stack of
    ``(wheel-relative file, line)`` frames from the innermost outwards."""

    shape: tuple
    dtype: str
    call: str
    stack: list[tuple[str, int]]
    #: made by a statement on which the engine caught a capproof error (a try/except around a
    #: branch on a symbolic value may have taken a fallback path): not trusted
    untrusted: bool = False


@dataclass
class Recorder:
    """The recording stand-in for torch/numpy allocation calls (see the module docstring).

    ``mode="fake"``: return :class:`FakeTensor` (symbolic shapes allowed); ``mode="real"``: call
    the real function and record the real shape (ints only; for the comparison tests).
    """

    root: str
    mode: str = "fake"
    records: list[Recorded] = field(default_factory=list)

    def from_engine(self) -> bool:
        """Whether the allocation is called from the engine's sources (not torch/numpy internals)."""
        fn = os.path.abspath(sys._getframe(2).f_code.co_filename)
        return fn.startswith(os.path.abspath(self.root) + os.sep)

    def _stack(self) -> list[tuple[str, int]]:
        out = []
        f = sys._getframe(2)
        root = os.path.abspath(self.root) + os.sep
        while f is not None:
            fn = os.path.abspath(f.f_code.co_filename)
            if fn.startswith(root):
                out.append((fn[len(root):].replace(os.sep, "/"), f.f_lineno))
            f = f.f_back
        return out

    def _record(self, call: str, shape, dtype, real, args, kwargs, like=None):
        if self.mode == "real":
            # pinned host memory needs an accelerator; pinning does not change the shape or dtype
            kwargs = {k: val for k, val in kwargs.items() if k != "pin_memory"}
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs = {**kwargs, "device": "cpu"}  # a shape does not depend on the device
            result = real(*args, **kwargs)
            self.records.append(Recorded(tuple(int(d) for d in result.shape), _dtype_name(result.dtype), call,
                                         self._stack()))
            self._remember(result)
            return result
        if dtype is None and like is not None:
            dtype = getattr(like, "dtype", None)
        self.records.append(Recorded(tuple(shape), _dtype_name(dtype), call, self._stack()))
        result = FakeTensor(tuple(shape), dtype, kwargs.get("device"))
        self._remember(result)
        return result

    def _remember(self, result) -> None:
        """Keep the last allocation with its caller frame and where its call expression ends."""
        caller = _engine_caller(self.root)
        self.last = (result, self.records[-1], caller, _call_end(caller) if caller is not None else None)

    def repeat_method(self, real: Callable) -> Callable:
        """``Tensor.repeat`` applied, in the allocating statement, to the tensor just allocated
        (``torch.arange(n).repeat(k)``, DFlashSpeculator.sample_col): the buffer kept is the
        repeated one, so the record takes its shape."""
        rec = self

        def repeat(tensor, *sizes):
            result = real(tensor, *sizes)
            last = getattr(rec, "last", None)
            if last is not None and last[0] is tensor and last[2] is not None:
                caller = sys._getframe(1)
                # ``<allocation call>.repeat(...)`` exactly: same frame, the method name right after
                # the allocation call's closing parenthesis and its dot
                if caller is last[2] and last[3] is not None and _call_start(caller) == (last[3][0], last[3][1] + 1):
                    last[1].shape = tuple(int(d) for d in result.shape) if rec.mode == "real" else tuple(result.shape)
                    rec.last = (result, last[1], caller, _call_end(caller))
            return result

        return repeat

    # factories -------------------------------------------------------------------------------
    def factory(self, module: str, name: str, real: Callable) -> Callable:
        rec = self

        def alloc(*args, **kwargs):
            if not rec.from_engine():
                return real(*args, **kwargs)
            if rec.mode == "real":
                return rec._record(f"{module}.{name}", None, None, real, args, kwargs)
            dtype = kwargs.get("dtype")
            if name in ("full",):
                shape = _shape(args[:1]) if not kwargs.get("size") else _shape((kwargs["size"],))
                if len(args) >= 3 and dtype is None:
                    dtype = args[2]
            elif name == "arange":
                nums = list(args)
                if len(nums) == 1:
                    shape = (nums[0],)
                elif len(nums) >= 2:
                    step = nums[2] if len(nums) > 2 else kwargs.get("step", 1)
                    shape = ((nums[1] - nums[0]) // step if step == 1 else -((nums[0] - nums[1]) // step),)
                else:
                    shape = (kwargs["end"],)
                if dtype is None and module == "torch":
                    import torch  # noqa: F811 - only reached from torch.arange

                    dtype = torch.int64
                elif dtype is None:
                    dtype = "int64"
            elif name.endswith("_like"):
                like = args[0]
                shape = tuple(like.shape)
                return rec._record(f"{module}.{name}", shape, dtype or getattr(like, "dtype", None), real, args, kwargs)
            else:
                if args:
                    shape = _shape(args)
                else:
                    shape = _shape((kwargs.get("size", kwargs.get("shape")),))
                if module == "np" and dtype is None and len(args) >= 2 and name != "full":
                    dtype = args[1]
            if module == "np" and name == "full" and dtype is None and len(args) >= 3:
                dtype = args[2]
            if dtype is None:
                dtype = "float32" if module == "torch" else "float64"
            return rec._record(f"{module}.{name}", shape, dtype, real, args, kwargs)

        return alloc

    def new_method(self, name: str, real: Callable) -> Callable:
        rec = self

        def alloc(tensor, *args, **kwargs):
            if not rec.from_engine():
                return real(tensor, *args, **kwargs)
            if rec.mode == "real":
                return rec._record(f"Tensor.{name}", None, None, lambda *a, **k: real(tensor, *a, **k), args, kwargs)
            shape = _shape(args[:1]) if name == "new_full" else _shape(args)
            return rec._record(f"Tensor.{name}", shape, kwargs.get("dtype") or tensor.dtype, real, args, kwargs)

        return alloc


_ACTIVE: "Recorder | None" = None


def _engine_caller(root: str):
    """The innermost frame running the engine's code (the allocation's caller)."""
    f = sys._getframe(1)
    root = os.path.abspath(root) + os.sep
    while f is not None:
        if os.path.abspath(f.f_code.co_filename).startswith(root):
            return f
        f = f.f_back
    return None


def _position(frame):
    try:
        return list(frame.f_code.co_positions())[frame.f_lasti // 2]
    except (AttributeError, IndexError):  # pragma: no cover - Python < 3.11
        return (None, None, None, None)


def _call_start(frame):
    """``(line, column)`` where the call the frame is executing starts (a method call: its name)."""
    p = _position(frame)
    return (p[0], p[2])


def _call_end(frame):
    p = _position(frame)
    return (p[1], p[3]) if p[1] is not None else None


def _symbolic_aware(real, which: str):
    """Builtin ``max``/``min`` that also take capproof SymInts (then ``maximum``/``minimum``, the
    same value as Python's on ints); anything else goes to the builtin."""
    from ...arith import maximum, minimum

    def fn(*args, **kwargs):
        items = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
        if not kwargs and len(items) >= 1 and any(isinstance(x, SymInt) for x in items) and all(
                isinstance(x, (int, SymInt)) and not isinstance(x, bool) for x in items):
            return (maximum if which == "max" else minimum)(*items)
        return real(*args, **kwargs)

    return fn

TORCH_FACTORIES = ("zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like")
NUMPY_FACTORIES = ("zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like")


_ABSENT = object()


@contextlib.contextmanager
def recording(root: str, mode: str = "fake") -> Iterator[Recorder]:
    """Patch the allocation calls of torch and numpy with a :class:`Recorder` while the body runs."""
    import numpy as np

    try:
        import torch
    except ImportError:  # numpy-only code (the fast-tier tests) needs no torch
        torch = None

    global _ACTIVE
    rec = Recorder(root, mode)
    previous = _ACTIVE
    _ACTIVE = rec
    saved: list[tuple[object, str, object]] = []

    def patch(obj, name, value):
        saved.append((obj, name, getattr(obj, name, _ABSENT)))
        setattr(obj, name, value)

    try:
        for target, attr, value in _engine_patches():
            patch(target, attr, value)
        if mode == "fake":
            import builtins

            patch(builtins, "max", _symbolic_aware(builtins.max, "max"))
            patch(builtins, "min", _symbolic_aware(builtins.min, "min"))
        if torch is not None:
            for name in TORCH_FACTORIES:
                patch(torch, name, rec.factory("torch", name, getattr(torch, name)))
        for name in NUMPY_FACTORIES:
            patch(np, name, rec.factory("np", name, getattr(np, name)))
        for name in ("new_zeros", "new_empty", "new_full", "new_ones"):
            if torch is not None:
                patch(torch.Tensor, name, rec.new_method(name, getattr(torch.Tensor, name)))
            patch(FakeTensor, name, rec.new_method(name, None))
        if torch is not None:
            patch(torch.Tensor, "repeat", rec.repeat_method(torch.Tensor.repeat))
        patch(FakeTensor, "repeat", rec.repeat_method(FakeTensor.repeat))
        yield rec
    finally:
        _ACTIVE = previous
        for obj, name, value in reversed(saved):
            if value is _ABSENT:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


#: more stand-ins, registered by harness modules (:mod:`.harness_worker`): each a function
#: returning ``[(object, attribute, value)]`` to patch while recording (both modes)
PATCH_PROVIDERS: list[Callable[[], list]] = []


def _engine_patches():
    """Stand-ins for the few engine calls that need a GPU or concrete values while tracing:

    - ``vllm.v1.worker.gpu.buffer_utils.is_uva_available`` -> False: the V2 runner's UVA buffers
      take their explicit-copy fallback (``NonUvaBuffer``), which allocates the same shapes on CPU.
    - ``vllm.v1.worker.block_table.get_block_table_width(n, block_size)`` on a symbolic argument ->
      the name ``block_table_width`` (it calls ``math.gcd``, which needs concrete ints): shapes that
      use the aligned width say so, and an obligation evaluates vLLM's own function for it.
    """
    out = []
    mod = sys.modules.get("vllm.v1.worker.gpu.buffer_utils")
    if mod is not None:
        out.append((mod, "is_uva_available", lambda: False))
    mod = sys.modules.get("vllm.v1.worker.block_table")
    if mod is not None:
        real_width = mod.get_block_table_width

        def width(max_num_blocks, block_size, token_alignment=128):
            if isinstance(max_num_blocks, SymInt) or isinstance(block_size, SymInt):
                if token_alignment is None:
                    return max_num_blocks
                return SymInt.var("block_table_width")
            return real_width(max_num_blocks, block_size, token_alignment=token_alignment)

        out.append((mod, "get_block_table_width", width))
    for provider in PATCH_PROVIDERS:
        out.extend(provider())
    return out


# ------------------------------------------------------------------------------------------------
# statement-level execution of a constructor

class Poisoned:
    """The value of a name whose defining statement could not run on symbolic values. Statements
    that read a poisoned name are not run (their own targets are poisoned in turn)."""

    def __init__(self, why: str):
        self.why = why

    def __repr__(self):
        return f"<not traced: {self.why}>"


@dataclass
class StepLog:
    """What :func:`run_statements` did: the statements skipped and why (first failure first)."""

    #: (file relative to the wheel, first line, last line, why)
    skipped: list[tuple[str, int, int, str]] = field(default_factory=list)


_MUTATORS = {"append", "extend", "insert", "update", "add", "pop", "popitem", "setdefault", "remove",
             "discard", "clear", "sort", "reverse", "register", "register_warmup"}


def _stored_names(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """``(locals, self attributes)`` a statement may assign or mutate (``x =``, ``self.a =``,
    ``self.a[k] =``, ``x.append(...)``, ``for x in``, ``with ... as x``, augmented assignments)."""
    names: set[str] = set()
    attrs: set[str] = set()

    def target(t):
        while isinstance(t, (ast.Subscript, ast.Starred)):
            t = t.value
        if isinstance(t, ast.Attribute):
            chain = []
            node = t
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id == "self":
                attrs.add(chain[-1])
            elif isinstance(node, ast.Name):
                names.add(node.id)
        elif isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)

    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            target(node.target)
        elif isinstance(node, (ast.For, ast.comprehension)):
            target(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            target(node.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            target(node.target)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and (node.func.attr in _MUTATORS or node.func.attr.endswith("_"))):
            target(node.func.value)   # x.append(...), self.buf.fill_(...): the receiver changes
    return names, attrs


def _loaded(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """``(names, self attributes)`` a statement reads."""
    names: set[str] = set()
    attrs: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            attrs.add(node.attr)
    return names, attrs


class _ReturnSignal(Exception):
    """A ``return`` inside a top-level statement of a traced body (``if not enabled: return``)."""


class _Returns(ast.NodeTransformer):
    """``return ...`` (not inside a nested function) -> ``raise __capproof_return__``: the body ends there."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node):
        return ast.copy_location(ast.Raise(exc=ast.Name("__capproof_return__", ast.Load()), cause=None), node)


class _ZeroArgSuper(ast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args:
            node.args = [ast.Name("__class__", ast.Load()), ast.Name("self", ast.Load())]
        return node


def run_statements(fn, owner_cls, self_obj, arguments: dict, log: StepLog | None = None,
                   overrides: dict | None = None) -> StepLog:
    """Run the body of ``fn`` (a method of ``owner_cls``, e.g. ``__init__``) one top-level statement
    at a time, in a namespace of its module's globals, ``self`` and ``arguments``.

    A statement that raises (a branch on a symbolic value, ``range`` of a symbolic int, a device
    query, ...) or on which the engine caught a capproof error is skipped, and every name and
    ``self`` attribute it may assign or mutate is poisoned; a later statement that reads a poisoned
    name is skipped the same way. So every statement that runs sees exactly the values vLLM's own
    code computes. ``return`` ends the body. Returns the log of skipped statements (line, why).
    """
    import inspect
    import textwrap

    from ...symbolic import trace_state

    log = log or StepLog()
    fn = inspect.unwrap(fn)
    source = textwrap.dedent(inspect.getsource(fn))
    filename = inspect.getsourcefile(fn)
    first = fn.__code__.co_firstlineno
    tree = ast.parse(source)
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    ns = dict(fn.__globals__)
    ns["__class__"] = owner_cls
    ns["self"] = self_obj
    ns.update(overrides or {})
    ns.update(arguments)
    poisoned_names: dict[str, str] = {}
    poisoned_attrs: dict[str, str] = {}
    body = fdef.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # docstring
    for stmt in body:
        if isinstance(stmt, ast.Return):
            break
        reads, attr_reads = _loaded(stmt)
        # sorted: the same statement names the same poisoned input in every run (sets are unordered)
        bad = sorted(n for n in reads if n in poisoned_names) + sorted(f"self.{a}" for a in attr_reads if a in poisoned_attrs)
        why = None
        if bad:
            why = f"reads {bad[0]}, not traced ({(poisoned_names | {('self.' + k): v for k, v in poisoned_attrs.items()})[bad[0]]})"
        elif _is_super_init(stmt) and _parent_init(owner_cls) is not None:
            # super().__init__(...): run the parent's body statement by statement too, so what it
            # cannot trace is poisoned attribute by attribute (not the whole object)
            parent, parent_init = _parent_init(owner_cls)
            call = stmt.value
            try:
                args_code = compile(ast.fix_missing_locations(ast.Expression(ast.Call(
                    ast.Name("__capture__", ast.Load()), call.args, call.keywords))), filename, "eval")
                ns["__capture__"] = lambda *a, **k: (a, k)
                pargs, pkwargs = eval(args_code, ns)
                sig = inspect.signature(parent_init)
                bound = sig.bind(self_obj, *pargs, **pkwargs)
                bound.apply_defaults()
                parguments = dict(bound.arguments)
                parguments.pop(next(iter(sig.parameters)))
            except Exception as exc:  # noqa: BLE001
                why = f"{type(exc).__name__}: {exc}"
            else:
                run_statements(parent_init, parent, self_obj, parguments, log, overrides)
                for a in list(vars(self_obj)) if hasattr(self_obj, "__dict__") else []:
                    if isinstance(getattr(self_obj, a, None), Poisoned):
                        poisoned_attrs.setdefault(a, "skipped in the parent constructor")
        else:
            module = ast.fix_missing_locations(ast.Module([_Returns().visit(_ZeroArgSuper().visit(stmt))],
                                                          type_ignores=[]))
            ns["__capproof_return__"] = _ReturnSignal
            trace = getattr(trace_state, "trace", None)
            before = len(trace.misuse) if trace is not None else 0
            made = len(_ACTIVE.records) if _ACTIVE is not None else 0
            raised = None
            try:
                # a statement holding a nested ``return`` (``if x: return y``) does not compile
                # alone: it is skipped like one that raises, its targets poisoned
                code = compile(module, filename, "exec")
                exec(code, ns)
            except _ReturnSignal:
                break
            except Exception as exc:  # noqa: BLE001 - the statement is skipped, its targets poisoned
                raised = exc
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            # allocations made before the statement raised are exact, unless the engine caught an
            # earlier capproof error in it (a try/except may have taken a fallback path)
            caught = (len(trace.misuse) - before) if trace is not None else 0
            if raised is not None and isinstance(raised, CapproofError):
                caught -= 1
            if caught > 0:
                why = why or f"caught by the engine: {trace.misuse[before]}"
                if _ACTIVE is not None:
                    for r in _ACTIVE.records[made:]:
                        r.untrusted = True
        if why is not None:
            why = re.sub(r"\S*?(vllm/\S+\.py:\d+)", r"\1", why)[:200]
            rel = os.path.relpath(filename, _root_of(filename)).replace(os.sep, "/")
            where = f"{rel}:{stmt.lineno}"
            log.skipped.append((rel, stmt.lineno, stmt.end_lineno or stmt.lineno, f"statement at {where} not traced: {why}"))
            names, attrs = _stored_names(stmt)
            for n in names - {"self"}:
                poisoned_names[n] = f"{where} skipped"
                ns[n] = Poisoned(where)
            for a in attrs:
                poisoned_attrs[a] = f"{where} skipped"
                try:
                    object.__setattr__(self_obj, a, Poisoned(where))
                except Exception:  # noqa: BLE001 - slots or properties: the name stays poisoned anyway
                    pass
    return log


def _is_super_init(stmt: ast.stmt) -> bool:
    """``super().__init__(...)`` (zero-argument super) as a statement."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    return (isinstance(f, ast.Attribute) and f.attr == "__init__" and isinstance(f.value, ast.Call)
            and isinstance(f.value.func, ast.Name) and f.value.func.id == "super" and not f.value.args)


def _parent_init(owner_cls):
    """``(class, __init__)`` the zero-argument ``super().__init__`` of ``owner_cls`` reaches, when it
    is Python code (not ``object.__init__`` or a C/generic base)."""
    import inspect

    mro = owner_cls.__mro__
    for k in mro[1:]:
        init = k.__dict__.get("__init__")
        if init is None:
            continue
        if k is object or not inspect.isfunction(init):
            return None
        try:
            inspect.getsource(init)
        except (OSError, TypeError):
            return None
        return k, init
    return None


def _root_of(filename: str) -> str:
    parts = filename.replace(os.sep, "/").split("/")
    if "vllm" in parts:
        return "/".join(parts[: len(parts) - 1 - parts[::-1].index("vllm")]) or "/"
    return os.path.dirname(filename)


def construct(cls, *args, _overrides: dict | None = None, **kwargs):
    """``cls(*args, **kwargs)`` with ``cls.__init__`` run statement by statement
    (:func:`run_statements`); ``_overrides`` replaces module-level names for the body (device
    queries: ``num_compute_units`` -> ``num_sms``); returns ``(instance, log)``."""
    import inspect

    abstract = getattr(cls, "__abstractmethods__", frozenset())
    if abstract:  # an abstract runner class: its constructor still runs as written
        cls.__abstractmethods__ = frozenset()
    try:
        obj = cls.__new__(cls)
    finally:
        if abstract:
            cls.__abstractmethods__ = abstract
    init = cls.__init__
    sig = inspect.signature(init)
    bound = sig.bind(obj, *args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments.pop(next(iter(sig.parameters)))
    for name, p in sig.parameters.items():
        if p.kind == p.VAR_KEYWORD and name in arguments:
            pass
    owner = next(k for k in cls.__mro__ if "__init__" in k.__dict__)
    overrides = {"current_platform": DeviceQuery()}
    overrides.update(_overrides or {})
    return obj, run_statements(owner.__dict__["__init__"], owner, obj, arguments, overrides=overrides)


class DeviceQuery:
    """Stands in for ``current_platform`` in a traced constructor body: any question to it is a
    device query a CPU cannot answer for the deployment (compute capability, CUDA, ...), so the
    statement asking is skipped and the buffers it sizes stay ``read``."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise CapproofError(f"device query current_platform.{name} (a CPU cannot answer it for the deployment)")


# ------------------------------------------------------------------------------------------------
# configs

#: config names harness modules add (name -> the int of the real-tier deployment), e.g.
#: :data:`.harness_worker.EXTRA_NAMES`
EXTRA_VALUES: dict[str, int] = {}


def config_values(symbolic: bool = True, **overrides) -> dict:
    """The config names the harnesses read: SymInts named after themselves, or ints (a real
    DeepSeek-V3.2-like deployment: 256 requests, 8192 batched tokens, 163840 tokens, block 64)."""
    ints = dict(max_num_reqs=256, max_num_batched_tokens=8192, max_model_len=163840, block_size=64, dcp=1,
                num_speculative_tokens=3, hidden_size=7168, vocab_size=129280, num_sms=132, max_num_blocks=2560,
                num_heads=128, index_topk=2048, num_tokens=8192, top_k=8, num_experts=256, block_size_m=64,
                max_cudagraph_capture_size=512)
    ints.update({k: val for k, val in EXTRA_VALUES.items() if k not in ints})
    ints.update(overrides)
    if not symbolic:
        return ints
    return {k: SymInt.var(k) for k in ints}


# ------------------------------------------------------------------------------------------------
# harnesses: one function per class (or function) that builds it the way vLLM does

HARNESSES: dict[str, Callable[[dict, str], object]] = {}
#: the modules each harness imports (imported before the allocation calls are patched)
MODULES: dict[str, tuple[str, ...]] = {}
#: a note a harness attaches to the ``why`` of every entry it traces (stand-ins it used, fixed
#: config values), so a reader of the inventory sees what the traced shape rests on
NOTES: dict[str, str] = {}


#: harness -> owners whose classes it also builds with other arguments than the inventory's (e.g.
#: PCPManager's rank-local InputBuffers of 2 * max_num_reqs requests): their allocations made by
#: this harness are not this entry's shape, so neither the tracer nor the real tier reads them
FOREIGN_OWNERS: dict[str, set[str]] = {}


def harness(name: str, *modules: str):
    def deco(fn):
        HARNESSES[name] = fn
        MODULES[name] = modules
        return fn

    return deco


#: GPU-only packages vLLM modules import at the top (no CPU wheel): replaced by :class:`CudaOnly`
#: modules so the vLLM module itself loads; any use of them in a traced statement fails and the
#: statement's buffers stay ``read``.
CUDA_ONLY_PACKAGES = ("flashinfer", "deep_gemm", "flash_mla", "flash_attn", "vllm_flash_attn")


class CudaOnly:
    """A stand-in for a GPU-only package or any name imported from it: using it raises."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr not in ("__call__",):
            raise AttributeError(attr)
        return CudaOnly(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise CapproofError(f"CUDA-only call {self._name}() (no CPU build of its package)")

    def __mro_entries__(self, bases):  # `class X(flashinfer.Foo)`: a plain base
        return (object,)

    def __or__(self, other):  # annotations `flashinfer.Foo | None`
        return self

    __ror__ = __or__

    def __getitem__(self, item):  # annotations `Foo[...]`
        return self


def install_cuda_only(package: str) -> None:
    import importlib.machinery
    import types

    module = types.ModuleType(package)
    module.__spec__ = importlib.machinery.ModuleSpec(package, None)
    module.__path__ = []
    module.__file__ = None

    def attribute(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return CudaOnly(f"{package}.{attr}")

    module.__getattr__ = attribute
    sys.modules[package] = module


def prepare(name: str) -> None:
    """Import harness ``name``'s vLLM modules (outside the recording); a GPU-only package they
    import (:data:`CUDA_ONLY_PACKAGES`) is replaced by a :class:`CudaOnly` module."""
    import importlib

    for m in MODULES[name]:
        for _ in range(64):
            try:
                importlib.import_module(m)
                break
            except ModuleNotFoundError as exc:
                missing = exc.name or ""
                if missing.split(".")[0] not in CUDA_ONLY_PACKAGES or missing in sys.modules:
                    raise
                install_cuda_only(missing)


# ------------------------------------------------------------------------------------------------
# running

def _matches(rec: Recorded, sites: dict[tuple[str, int], object]):
    for frame in rec.stack:
        if frame in sites:
            return sites[frame]
    return None


#: Fork budget per harness (paths through its branches on symbolic config values).
FORK_BUDGET = 64


def _one_run(name: str, root: str):
    """Run harness ``name`` once on symbolic values: ``(records, skipped statements, error)``."""
    values = config_values(symbolic=True)
    rec = None
    logs: list[StepLog] = []
    error = None
    try:
        with tracing(), recording(root, "fake") as rec:
            result = HARNESSES[name](values, "cpu")
        logs = [x[1] for x in (result if isinstance(result, list) else [result])
                if isinstance(x, tuple) and isinstance(x[1], StepLog)]
    except Exception as exc:  # noqa: BLE001 - a harness that cannot run leaves entries read
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        error = re.sub(r"\S*?(vllm/\S+\.py:\d+)", r"\1", error)[:240]
    return (rec.records if rec is not None else []), [item for log in logs for item in log.skipped], error


def _facts():
    """What every config name satisfies (sizes >= 1, counts >= 0): prunes impossible branches."""
    import z3

    return ([z3.Int(n) >= 1 for n in POSITIVE] + [z3.Int(n) >= 0 for n in NONNEGATIVE])


def _explore_harness(name: str, root: str):
    """Run harness ``name`` on every path through its branches on symbolic values
    (:func:`capproof.symbolic.explore`, budget :data:`FORK_BUDGET`); without ``explore`` (older
    core), one run on which a branch on a symbolic value is a skipped statement.

    Returns ``(runs, complete)``: one ``(condition Z3 term, records, skipped, error)`` per path."""
    import z3

    try:
        from ...symbolic import explore
    except ImportError:  # pragma: no cover - a core without forking
        records, skipped, error = _one_run(name, root)
        return [(z3.BoolVal(True), records, skipped, error)], True
    exploration = explore(lambda: _one_run(name, root), budget=FORK_BUDGET, assume=_facts())
    runs = []
    for path in exploration.paths:
        if path.error is not None:
            runs.append((path.condition.term, [], [], f"{type(path.error).__name__}: {path.error}"[:240]))
            continue
        records, skipped, error = path.value
        runs.append((path.condition.term, records, skipped, error))
    return runs, exploration.complete


def condition_expression(term) -> str:
    """A Z3 Bool term in the shape expression language (comparisons joined by ``&``/``|``)."""
    import z3

    from ...inventory import ExpressionPrinter

    facts = [z3.Int(n) >= 1 for n in POSITIVE] + [z3.Int(n) >= 0 for n in NONNEGATIVE]
    return ExpressionPrinter(facts).show(z3.simplify(_simplest_equivalent(term, facts)))[0]


def _simplest_equivalent(term, facts, rlimit: int = 200000):
    """``term`` or a conjunction of at most two of its comparisons that is equivalent to it under
    ``facts`` (an ``unsat`` answer to ``facts & (term != candidate)``; anything else keeps
    ``term``). A disjunction of path conditions often reduces to the one switch that decides it."""
    import z3

    atoms: list = []
    seen: set = set()

    def walk(t):
        if z3.is_app(t) and t.decl().kind() in (z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT):
            for c in t.children():
                walk(c)
        elif t.get_id() not in seen:
            seen.add(t.get_id())
            atoms.append(t)

    walk(term)
    if len(atoms) <= 1 or len(atoms) > 24:
        return term
    literals = atoms + [z3.Not(a) for a in atoms]
    candidates = literals + [z3.And(a, b) for i, a in enumerate(literals) for b in literals[i + 1:]]
    for cand in candidates:
        solver = z3.Solver()
        solver.set("rlimit", rlimit)
        solver.add(*facts)
        solver.add(term != cand)
        if solver.check() == z3.unsat:
            return cand
    return term


def trace_all(version: str, root: str, allocations, names: list[str] | None = None):
    """Run every harness on symbolic config values; return ``(entries, problems, reasons)``:
    the traced :class:`~capproof.inventory.Entry` list, problems to warn about, and for each
    allocation id a harness failed to reach, why (``{id: why}``).

    Each harness runs once per path through its branches on symbolic values; an allocation's
    shape is the ``select`` over the paths' conditions of the shapes recorded on them. It is
    ``traced`` only when the exploration was complete; when only some paths allocate the buffer,
    ``why`` says on which condition it exists."""
    import z3

    _activate(root)
    register_generic(allocations)
    sites = {(a.file, a.line): a for a in allocations}
    traced: dict[str, Entry] = {}
    problems: list[str] = []
    reasons: dict[str, str] = {}
    for name in names or sorted(HARNESSES):
        try:
            prepare(name)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{name}: {type(exc).__name__}: {exc}"[:240])
            continue
        runs, complete = _explore_harness(name, root)
        # per allocation: [(path condition, record)] on the paths that made it
        found: dict[str, list] = {}
        for cond, records, skipped, error in runs:
            if os.environ.get("CAPPROOF_TRACE_DEBUG"):
                for item in skipped:
                    print(f"[{name}] ({cond}) skipped {item[3]}", file=sys.stderr)
            for file, lo, hi, why in skipped:
                for a in allocations:
                    if a.file == file and lo <= a.line <= hi:
                        reasons.setdefault(a.id, why)
            if error is not None:
                problems.append(f"{name}: stopped at {error}")
            seen: set[str] = set()
            for r in records:
                a = _matches(r, sites)
                if a is None or a.id in seen or r.untrusted or a.owner in FOREIGN_OWNERS.get(name, ()):
                    continue
                seen.add(a.id)
                found.setdefault(a.id, []).append((cond, r))
        if len(runs) > 1 and os.environ.get("CAPPROOF_TRACE_DEBUG"):
            print(f"[{name}] {len(runs)} paths, complete={complete}", file=sys.stderr)
        for aid, hits in found.items():
            if aid in traced:
                continue
            a = next(x for x in allocations if x.id == aid)
            if not complete:
                reasons[aid] = f"fork budget ({FORK_BUDGET} paths) exhausted before every branch of {name} was explored"
                continue
            ranks = {len(r.shape) for _, r in hits}
            dtypes = {r.dtype for _, r in hits}
            if len(ranks) > 1 or len(dtypes) > 1:
                reasons[aid] = f"rank or dtype differs between the paths of {name}"
                continue
            try:
                shape = []
                for d in range(ranks.pop()):
                    term = None
                    for cond, r in reversed(hits):
                        t = r.shape[d].term if isinstance(r.shape[d], SymInt) else z3.IntVal(int(r.shape[d]))
                        term = t if term is None else z3.If(cond, t, term)
                    shape.append(to_expression(term, positive=POSITIVE, nonnegative=NONNEGATIVE))
            except (SpecError, TypeError) as exc:
                reasons[aid] = f"traced shape not printable: {exc}"
                continue
            why = ""
            if len(hits) < len(runs):
                where = z3.Or(*[c for c, _ in hits]) if len(hits) > 1 else hits[0][0]
                why = f"allocated only when {condition_expression(where)}"
            if NOTES.get(name):
                why = f"{why}; {NOTES[name]}" if why else NOTES[name]
            params = sorted({n for x in shape for n in expression_names(x)})
            traced[aid] = Entry(id=a.id, file=a.file, line=a.line, owner=a.owner, attribute=a.attribute,
                                dtype=dtypes.pop(), shape=shape, how="traced", why=why, sized_by=classify(params),
                                params=params, verdicts={})
    return list(traced.values()), sorted(set(problems)), reasons


def _activate(root: str) -> None:
    from . import wheels

    if root not in sys.path:
        sys.path.insert(0, root)
    wheels.quiet()


@harness("InputBuffers", "vllm.v1.worker.gpu.input_batch")
def _v2_input_buffers(v: dict, device: str):
    from vllm.v1.worker.gpu.input_batch import InputBuffers

    # V2 runner: max_num_tokens = scheduler_config.max_num_batched_tokens (gpu/model_runner.py:231)
    return construct(InputBuffers, max_num_reqs=v["max_num_reqs"], max_num_tokens=v["max_num_batched_tokens"], device=device)


@harness("BlockTables", "vllm.v1.worker.gpu.block_table")
def _v2_block_tables(v: dict, device: str):
    from vllm.v1.worker.gpu.block_table import BlockTables

    return construct(BlockTables, block_sizes=[v["block_size"]], max_num_reqs=v["max_num_reqs"],
                       max_num_batched_tokens=v["max_num_batched_tokens"], max_num_blocks_per_group=[v["max_num_blocks"]],
                       device=device)


@harness("RequestState", "vllm.v1.worker.gpu.states")
def _v2_request_state(v: dict, device: str):
    from vllm.v1.worker.gpu.states import RequestState

    return construct(RequestState, max_num_reqs=v["max_num_reqs"], max_model_len=v["max_model_len"],
                        max_num_batched_tokens=v["max_num_batched_tokens"],
                        num_speculative_steps=v["num_speculative_tokens"], vocab_size=v["vocab_size"], device=device)


@harness("InputBatch", "vllm.v1.worker.gpu_input_batch")
def _v1_input_batch(v: dict, device: str):
    from vllm.v1.worker.gpu_input_batch import InputBatch

    return construct(InputBatch, max_num_reqs=v["max_num_reqs"], max_model_len=v["max_model_len"],
                      max_num_batched_tokens=v["max_num_batched_tokens"], device=device, vocab_size=v["vocab_size"],
                      block_sizes=[v["block_size"]], max_num_blocks_per_req=[v["max_num_blocks"]],
                      num_spec_tokens=v["num_speculative_tokens"])


class Config(SimpleNamespace):
    """A duck-typed vLLM config object: only the fields a harness gives; reading any other field
    raises AttributeError naming it (so the statement that reads it is reported, not guessed)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"duck-typed config has no field {name!r}")


def vllm_config(v: dict, **extra) -> Config:
    """The ``VllmConfig`` fields the traced constructors read, from config values ``v``."""
    hf = Config(index_topk=v["index_topk"], num_attention_heads=v["num_heads"], hidden_size=v["hidden_size"],
                vocab_size=v["vocab_size"], model_type="deepseek_v32")
    draft = Config(get_hidden_size=lambda: v["hidden_size"], get_inputs_embeds_size=lambda: v["hidden_size"],
                   get_vocab_size=lambda: v["vocab_size"], hf_config=hf, hf_text_config=hf, uses_mrope=False,
                   uses_xdrope_dim=0, max_model_len=v["max_model_len"], dtype=None)
    spec = Config(num_speculative_tokens=v["num_speculative_tokens"], method="eagle",
                  enable_adaptive_verification=False, use_eagle=lambda: True, draft_model_config=draft,
                  parallel_drafting=False, use_local_argmax_reduction=False, use_heterogeneous_vocab=False,
                  disable_padded_drafter_batch=False, draft_tensor_parallel_size=1)
    cfg = Config(
        scheduler_config=Config(max_num_seqs=v["max_num_reqs"], max_num_batched_tokens=v["max_num_batched_tokens"],
                                max_model_len=v["max_model_len"]),
        model_config=Config(max_model_len=v["max_model_len"], get_hidden_size=lambda: v["hidden_size"],
                            get_vocab_size=lambda: v["vocab_size"], dtype=None, use_mla=True,
                            is_encoder_decoder=False, hf_text_config=hf, hf_config=hf,
                            get_num_attention_heads=lambda parallel_config=None: v["num_heads"],
                            get_head_size=lambda: 576, use_fp64_gumbel=False, supports_multimodal_inputs=False,
                            uses_mrope=False, uses_xdrope_dim=0, get_vocab_size_=None),
        cache_config=Config(block_size=v["block_size"], cache_dtype="auto"),
        parallel_config=Config(decode_context_parallel_size=v["dcp"], tensor_parallel_size=1,
                               prefill_context_parallel_size=1, cp_kv_cache_interleave_size=1,
                               data_parallel_size=1, pipeline_parallel_size=1, data_parallel_rank=0),
        speculative_config=spec,
        num_speculative_tokens=v["num_speculative_tokens"],
        attention_config=Config(sparse_mla_prefill_workspace_factor=5, hisparse_config=None,
                                resolve_indexer_kv_dtype=lambda default: default),
        compilation_config=Config(cudagraph_mode=None, max_cudagraph_capture_size=v["max_cudagraph_capture_size"],
                                  cudagraph_capture_sizes=[], static_forward_context={}),
        offload_config=Config(), lora_config=None, load_config=Config(), observability_config=Config(),
        kv_transfer_config=None, ec_transfer_config=None,
    )
    cfg.model_config.runner_type = "generate"
    cfg.model_config.enable_prompt_embeds = False
    cfg.model_config.is_multimodal_raw_input_only_model = False
    cfg.model_config.get_inputs_embeds_size = lambda: v["hidden_size"]
    cfg.model_config.is_mm_prefix_lm = False
    cfg.model_config.logprobs_mode = "raw_logprobs"
    cfg.model_config.logits_processors = None
    cfg.parallel_config.distributed_executor_backend = "mp"
    cfg.scheduler_config.async_scheduling = False
    cfg.cache_config.kv_sharing_fast_prefill = False
    cfg.speculative_config.use_ngram_gpu = lambda: False
    cfg.speculative_config.rejection_sample_method = "strict"
    cfg.speculative_config.draft_sample_method = "greedy"
    cfg.model_config.model = "deepseek-ai/DeepSeek-V3.2"
    cfg.model_config.convert_type = "none"
    cfg.model_config.architectures = ["DeepseekV32ForCausalLM"]
    cfg.model_config.hf_config.architectures = ["DeepseekV32ForCausalLM"]
    try:
        import torch

        cfg.model_config.dtype = torch.bfloat16
        cfg.speculative_config.draft_model_config.dtype = torch.bfloat16
    except ImportError:  # pragma: no cover
        pass
    for k, val in extra.items():
        setattr(cfg, k, val)
    return cfg


def block_table_width_of(v: dict):
    """The runner's aligned block-table width: the name ``block_table_width`` when tracing, vLLM's
    own ``get_block_table_width(max_num_blocks, block_size)`` on ints."""
    if isinstance(v["max_num_blocks"], SymInt) or isinstance(v["block_size"], SymInt):
        return SymInt.var("block_table_width")
    from vllm.v1.worker.block_table import get_block_table_width

    return get_block_table_width(v["max_num_blocks"], v["block_size"])


def mla_spec(v: dict):
    import torch
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    return MLAAttentionSpec(block_size=64, num_kv_heads=1, head_size=576, dtype=torch.uint8, cache_dtype_str="fp8_ds_mla")


@harness("DeepseekV32IndexerMetadataBuilder", "vllm.v1.attention.backends.mla.indexer", "vllm.v1.kv_cache_interface")
def _indexer(v: dict, device: str):
    import torch
    from vllm.v1.attention.backends.mla.indexer import DeepseekV32IndexerMetadataBuilder as B

    return construct(B, mla_spec(v), ["model.layers.0.self_attn.indexer"], vllm_config(v), torch.device(device),
                     block_table_width=block_table_width_of(v),
                     _overrides={"num_compute_units": lambda index=None: v["num_sms"]})


@harness("FlashMLASparseMetadataBuilder", "vllm.v1.attention.backends.mla.flashmla_sparse", "vllm.v1.kv_cache_interface")
def _flashmla_sparse(v: dict, device: str):
    import torch
    from vllm.v1.attention.backends.mla.flashmla_sparse import FlashMLASparseMetadataBuilder as B

    return construct(B, mla_spec(v), ["model.layers.0.self_attn.attn"], vllm_config(v), torch.device(device),
                     _overrides={"num_compute_units": lambda index=None: v["num_sms"]})


@harness("FlashInferMetadataBuilder", "vllm.v1.attention.backends.flashinfer", "vllm.v1.kv_cache_interface")
def _flashinfer(v: dict, device: str):
    import torch
    from vllm.v1.attention.backends.flashinfer import FlashInferMetadataBuilder as B
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    spec = FullAttentionSpec(block_size=v["block_size"], num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
    return construct(B, spec, ["model.layers.0.self_attn.attn"], vllm_config(v), torch.device(device))


@harness("EagleProposer", "vllm.v1.spec_decode.eagle")
def _eagle(v: dict, device: str):
    import torch
    from vllm.v1.spec_decode.eagle import EagleProposer

    return construct(EagleProposer, vllm_config(v), torch.device(device))


@harness("DFlashProposer", "vllm.v1.spec_decode.dflash")
def _dflash(v: dict, device: str):
    import torch
    from vllm.v1.spec_decode.dflash import DFlashProposer

    cfg = vllm_config(v)
    cfg.speculative_config.method = "dflash"
    return construct(DFlashProposer, cfg, torch.device(device))


@harness("moe_align_block_size", "vllm.model_executor.layers.fused_moe.moe_align_block_size")
def _moe_align(v: dict, device: str):
    """vLLM's moe_align_block_size on a routing of ``num_tokens x top_k`` expert ids (its buffers
    are sized before the compiled op runs)."""
    import inspect

    import torch
    from vllm.model_executor.layers.fused_moe import moe_align_block_size as mod

    fn = mod.moe_align_block_size
    topk_ids = (FakeTensor((v["num_tokens"], v["top_k"]), torch.int32, device)
                if isinstance(v["num_tokens"], SymInt) else torch.zeros((v["num_tokens"], v["top_k"]), dtype=torch.int32))
    args = dict(topk_ids=topk_ids, block_size=v["block_size_m"], num_experts=v["num_experts"], expert_map=None,
                pad_sorted_ids=False, ignore_invalid_experts=False, return_scatter_idx=True)
    log = run_statements(fn, None, None, args)
    return (None, log)


def request_states(v: dict, device: str):
    """The V2 runner's request state as the logits processors read it (``RequestState`` fields)."""
    import torch

    n = v["max_num_reqs"]
    prompt_len = Config(np=FakeTensor((n,), torch.int32) if isinstance(n, SymInt) else torch.zeros(n, dtype=torch.int32).numpy())
    return Config(max_num_reqs=n, device=torch.device(device), vocab_size=v["vocab_size"], prompt_len=prompt_len,
                  max_model_len=v["max_model_len"], num_speculative_steps=v["num_speculative_tokens"])


@harness("SamplingStates", "vllm.v1.worker.gpu.sample.states")
def _sampling_states(v: dict, device: str):
    from vllm.v1.worker.gpu.sample.states import SamplingStates

    return construct(SamplingStates, max_num_reqs=v["max_num_reqs"], vocab_size=v["vocab_size"])


def _logits_processor(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        klass = getattr(importlib.import_module(module), cls)
        return construct(klass, vllm_config(v), request_states(v, device))

    return run


for _module, _cls in (("vllm.v1.worker.gpu.sample.logit_bias", "LogitBiasState"),
                      ("vllm.v1.worker.gpu.sample.penalties", "PenaltiesState"),
                      ("vllm.v1.worker.gpu.sample.bad_words", "BadWordsState")):
    harness(_cls, _module)(_logits_processor(_module, _cls))


def _speculator(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        return construct(klass, vllm_config(v), torch.device(device))

    return run


# the V2 runner's speculators: capproof/engines/vllm/harness_worker.py


def _generic_builder(module: str, cls: str, mla: bool):
    """An attention metadata builder constructed as the runner does:
    ``Builder(kv_cache_spec, layer_names, vllm_config, device)`` (``AttentionMetadataBuilder``)."""

    def run(v: dict, device: str):
        import importlib

        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        klass = getattr(importlib.import_module(module), cls)
        spec = mla_spec(v) if mla else FullAttentionSpec(block_size=v["block_size"], num_kv_heads=8, head_size=128,
                                                          dtype=torch.bfloat16)
        return construct(klass, spec, ["model.layers.0.self_attn.attn"], vllm_config(v), torch.device(device),
                         _overrides={"num_compute_units": lambda index=None: v["num_sms"]})

    return run


def _generic_proposer(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        return construct(klass, vllm_config(v), torch.device(device))

    return run


def register_generic(allocations) -> list[str]:
    """Harnesses for the scanned owners that follow vLLM's two common constructor signatures:
    attention metadata builders (``*MetadataBuilder`` under ``attention/backends``) and
    proposers/speculators (``(vllm_config, device)``). ROCm-only files are left out. Returns the
    names registered."""
    added = []
    for owner, file in sorted({(a.owner, a.file) for a in allocations}):
        if owner in HARNESSES or os.path.basename(file).startswith("rocm"):
            continue
        module = file[:-3].replace("/", ".")
        if owner.endswith("MetadataBuilder") and "/attention/backends/" in file:
            harness(owner, module, "vllm.v1.kv_cache_interface")(_generic_builder(module, owner, "/mla/" in file))
        elif (owner.endswith("Speculator") and "/worker/gpu/spec_decode/" in file) or (
                owner.endswith("Proposer") and "/v1/spec_decode/" in file):
            harness(owner, module)(_generic_proposer(module, owner))
        else:
            continue
        added.append(owner)
    return added

