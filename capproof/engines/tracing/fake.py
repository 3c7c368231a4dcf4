"""Fake tensors with symbolic shapes and the allocation recorder (engine-neutral).

A **recording stand-in** replaces the allocation calls while an engine's constructors run:
``torch.zeros/empty/full/ones/arange/*_like``, ``Tensor.new_*`` and the numpy equivalents record
``(shape terms, dtype, the caller's file:line)`` and return a :class:`FakeTensor` that supports
what the constructors do next (``.numpy()``, ``.stride()``, slicing, ``.to()``...). Shapes are
ints or capproof :class:`~capproof.symbolic.SymInt` terms. Only calls made from files under the
recorder's ``root`` (the extracted engine sources) are recorded; torch's and numpy's own internals
get the real functions.

``mode="real"`` calls the real functions with plain ints and records the real shapes (the
comparison tests of each engine's tracer).

The engine-specific parts (the stand-ins an engine needs while recording, the facts its config
names satisfy) are passed to :func:`recording` (see :mod:`capproof.engines.tracing`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ...errors import CapproofError
from ...symbolic import SymInt

__all__ = [
    "FakeShape",
    "FakeTensor",
    "Recorded",
    "Recorder",
    "recording",
    "active",
    "TORCH_FACTORIES",
    "NUMPY_FACTORIES",
]


def _dtype_name(dtype) -> str:
    if dtype is None:
        return ""
    text = str(dtype)
    if text.startswith("torch."):
        return text[len("torch.") :]
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
        if (
            isinstance(other, (int, float, SymInt))
            or other is self
            or (
                isinstance(other, FakeTensor)
                and len(other.shape) == len(self.shape)
                and all(_same_dim(a, b) for a, b in zip(self.shape, other.shape))
            )
        ):
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
        moved = FakeTensor(tuple(self.shape), dtype or self.dtype, kwargs.get("device", self.device))
        if "_recorded" in self.__dict__:  # ``.to(device)`` keeps the buffer: its accesses are the allocation's
            moved._recorded = self._recorded
        return moved

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

    def _accessed(self, key, write: bool) -> None:
        """Record ``self[key]`` on the allocation this fake stands for (``Recorded.accesses``):
        the engine frame's ``file:line`` and per dimension the index or slice stop, as terms."""
        rec = self.__dict__.get("_recorded")
        if rec is None or _ACTIVE is None:
            return
        caller = _engine_caller(_ACTIVE.root)
        if caller is None:
            return
        root = os.path.abspath(_ACTIVE.root) + os.sep
        where = (os.path.abspath(caller.f_code.co_filename)[len(root) :].replace(os.sep, "/"), caller.f_lineno)
        items = key if isinstance(key, tuple) else (key,)
        dims = []
        for d, k in enumerate(items):
            if isinstance(k, slice):
                dims.append((d, "slice", k.stop))
            elif isinstance(k, (int, SymInt)) and not isinstance(k, bool):
                dims.append((d, "index", k))
            else:
                dims.append((d, "index", None))  # a tensor or list index: its values are not computed
        rec.accesses.append((where, "write" if write else "read", dims))

    def __getitem__(self, key):
        self._accessed(key, False)
        # a view: keep the buffer's trailing shape; slicing the first dimension keeps the fake
        if isinstance(key, tuple) and len(key) >= 1 and all(isinstance(k, slice) for k in key):
            return self
        if (
            isinstance(key, slice)
            and key.start is None
            and key.step is None
            and isinstance(key.stop, int)
            and key.stop < 0
            and self.shape
        ):
            # ``x[:-c]`` (e.g. ``query_start_loc[:-1]``): c fewer rows, never fewer than none
            from ...arith import maximum

            n = self.shape[0] + key.stop
            return FakeTensor(
                (
                    maximum(n, 0)
                    if isinstance(n, SymInt) and not _provably_nonnegative(n)
                    else max(n, 0)
                    if isinstance(n, int)
                    else n,
                )
                + tuple(self.shape[1:]),
                self.dtype,
                self.device,
            )
        if isinstance(key, slice):
            return self
        if isinstance(key, int) and len(self.shape) > 1:
            return FakeTensor(tuple(self.shape[1:]), self.dtype, self.device)
        return FakeTensor(tuple(self.shape[1:]) if len(self.shape) > 1 else (), self.dtype, self.device)

    def __setitem__(self, key, value):
        self._accessed(key, True)
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
    """Whether ``n >= 0`` follows from the facts the active recording's engine states about its
    config names (every size >= 1, every count >= 0; :attr:`Recorder.facts`)."""
    import z3

    s = z3.Solver()
    s.add(*(_ACTIVE.facts() if _ACTIVE is not None and _ACTIVE.facts is not None else []), n.term < 0)
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
    #: subscripts of the fake while the engine ran: ``((file, line), "read"|"write", [(dim, "index"|"slice", term)])``
    accesses: list = field(default_factory=list)


@dataclass
class Recorder:
    """The recording stand-in for torch/numpy allocation calls (see the module docstring).

    ``mode="fake"``: return :class:`FakeTensor` (symbolic shapes allowed); ``mode="real"``: call
    the real function and record the real shape (ints only; for the comparison tests).
    """

    root: str
    mode: str = "fake"
    records: list[Recorded] = field(default_factory=list)
    #: the Z3 facts the engine's config names satisfy (sizes >= 1, counts >= 0), or None
    facts: Callable[[], list] | None = None

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
                out.append((fn[len(root) :].replace(os.sep, "/"), f.f_lineno))
            f = f.f_back
        return out

    def _record(self, call: str, shape, dtype, real, args, kwargs, like=None):
        if self.mode == "real":
            # pinned host memory needs an accelerator; pinning does not change the shape or dtype
            kwargs = {k: val for k, val in kwargs.items() if k != "pin_memory"}
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs = {**kwargs, "device": "cpu"}  # a shape does not depend on the device
            result = real(*args, **kwargs)
            self.records.append(
                Recorded(tuple(int(d) for d in result.shape), _dtype_name(result.dtype), call, self._stack())
            )
            self._remember(result)
            return result
        if dtype is None and like is not None:
            dtype = getattr(like, "dtype", None)
        self.records.append(Recorded(tuple(shape), _dtype_name(dtype), call, self._stack()))
        result = FakeTensor(tuple(shape), dtype, kwargs.get("device"))
        result._recorded = self.records[-1]
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
        if (
            not kwargs
            and len(items) >= 1
            and any(isinstance(x, SymInt) for x in items)
            and all(isinstance(x, (int, SymInt)) and not isinstance(x, bool) for x in items)
        ):
            return (maximum if which == "max" else minimum)(*items)
        return real(*args, **kwargs)

    return fn


TORCH_FACTORIES = ("zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like")
NUMPY_FACTORIES = ("zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like")


_ABSENT = object()


@contextlib.contextmanager
def recording(
    root: str, mode: str = "fake", patches: Callable[[], list] | None = None, facts: Callable[[], list] | None = None
) -> Iterator[Recorder]:
    """Patch the allocation calls of torch and numpy with a :class:`Recorder` while the body runs.

    ``patches()`` returns the engine's stand-ins ``[(object, attribute, value)]``, set for the
    body's duration (both modes); ``facts()`` the Z3 facts its config names satisfy."""
    import numpy as np

    try:
        import torch
    except ImportError:  # numpy-only code (the fast-tier tests) needs no torch
        torch = None

    global _ACTIVE
    rec = Recorder(root, mode, facts=facts)
    previous = _ACTIVE
    _ACTIVE = rec
    saved: list[tuple[object, str, object]] = []

    def patch(obj, name, value):
        saved.append((obj, name, getattr(obj, name, _ABSENT)))
        setattr(obj, name, value)

    try:
        for target, attr, value in patches() if patches is not None else []:
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


def active() -> "Recorder | None":
    """The recorder of the innermost :func:`recording` in progress, or None."""
    return _ACTIVE
