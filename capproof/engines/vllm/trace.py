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
"""

from __future__ import annotations

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
            "kernel_block_size", "index_topk", "cp_kv_cache_interleave_size", "block_table_width")
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
    if len(args) == 1 and hasattr(args[0], "shape") and not isinstance(args[0], (int, SymInt)):
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

    numpy = cpu = cuda = pin_memory = contiguous = clone = detach = share_memory_ = _same
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
    #: capproof errors on symbolic values seen before this allocation (a caught SymbolicBranchError
    #: means the engine took a fallback path: later allocations are not trusted)
    misuse_before: int = 0


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

    def _misuse(self) -> int:
        from ...symbolic import _local

        trace = getattr(_local, "trace", None)
        return len(trace.misuse) if trace is not None else 0

    def _record(self, call: str, shape, dtype, real, args, kwargs, like=None):
        if self.mode == "real":
            result = real(*args, **kwargs)
            self.records.append(Recorded(tuple(int(d) for d in result.shape), _dtype_name(result.dtype), call,
                                         self._stack(), self._misuse()))
            return result
        if dtype is None and like is not None:
            dtype = getattr(like, "dtype", None)
        self.records.append(Recorded(tuple(shape), _dtype_name(dtype), call, self._stack(), self._misuse()))
        return FakeTensor(tuple(shape), dtype, kwargs.get("device"))

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
                    import torch

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


TORCH_FACTORIES = ("zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like")
NUMPY_FACTORIES = ("zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like")


@contextlib.contextmanager
def recording(root: str, mode: str = "fake") -> Iterator[Recorder]:
    """Patch the allocation calls of torch and numpy with a :class:`Recorder` while the body runs."""
    import numpy as np
    import torch

    rec = Recorder(root, mode)
    saved: list[tuple[object, str, object]] = []

    def patch(obj, name, value):
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    try:
        for target, attr, value in _engine_patches():
            patch(target, attr, value)
        for name in TORCH_FACTORIES:
            patch(torch, name, rec.factory("torch", name, getattr(torch, name)))
        for name in NUMPY_FACTORIES:
            patch(np, name, rec.factory("np", name, getattr(np, name)))
        for name in ("new_zeros", "new_empty", "new_full", "new_ones"):
            patch(torch.Tensor, name, rec.new_method(name, getattr(torch.Tensor, name)))
            patch(FakeTensor, name, rec.new_method(name, None))
        yield rec
    finally:
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)


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
            return real_width(max_num_blocks, block_size, token_alignment)

        out.append((mod, "get_block_table_width", width))
    return out


# ------------------------------------------------------------------------------------------------
# configs

def config_values(symbolic: bool = True, **overrides) -> dict:
    """The config names the harnesses read: SymInts named after themselves, or ints (a real
    DeepSeek-V3.2-like deployment: 256 requests, 8192 batched tokens, 163840 tokens, block 64)."""
    ints = dict(max_num_reqs=256, max_num_batched_tokens=8192, max_model_len=163840, block_size=64, dcp=1,
                num_speculative_tokens=3, hidden_size=7168, vocab_size=129280, num_sms=132, max_num_blocks=2560)
    ints.update(overrides)
    if not symbolic:
        return ints
    return {k: SymInt.var(k) for k in ints}


# ------------------------------------------------------------------------------------------------
# harnesses: one function per class (or function) that builds it the way vLLM does

HARNESSES: dict[str, Callable[[dict, str], object]] = {}
#: the modules each harness imports (imported before the allocation calls are patched)
MODULES: dict[str, tuple[str, ...]] = {}


def harness(name: str, *modules: str):
    def deco(fn):
        HARNESSES[name] = fn
        MODULES[name] = modules
        return fn

    return deco


def prepare(name: str) -> None:
    """Import harness ``name``'s vLLM modules (outside the recording)."""
    import importlib

    for m in MODULES[name]:
        importlib.import_module(m)


# ------------------------------------------------------------------------------------------------
# running

def _matches(rec: Recorded, sites: dict[tuple[str, int], object]):
    for frame in rec.stack:
        if frame in sites:
            return sites[frame]
    return None


def trace_all(version: str, root: str, allocations, names: list[str] | None = None):
    """Run every harness on symbolic config values; return ``(entries, problems, reasons)``:
    the traced :class:`~capproof.inventory.Entry` list, problems to warn about, and for each
    allocation id a harness failed to reach, why (``{id: why}``)."""
    from . import wheels

    _activate(root)
    sites = {(a.file, a.line): a for a in allocations}
    traced: dict[str, Entry] = {}
    problems: list[str] = []
    reasons: dict[str, str] = {}
    for name in names or sorted(HARNESSES):
        values = config_values(symbolic=True)
        rec = None
        try:
            prepare(name)
            with tracing() as trace, recording(root, "fake") as rec:
                HARNESSES[name](values, "cpu")
            error = f"caught by the engine: {trace.misuse[0]}" if trace.misuse else None
        except Exception as exc:  # noqa: BLE001 - a harness that cannot run leaves entries read
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            error = re.sub(r"\S*?(vllm/\S+\.py:\d+)", r"\1", error)[:240]
        if rec is None:
            problems.append(f"{name}: {error}")
            continue
        for r in rec.records:
            a = _matches(r, sites)
            if a is None or a.id in traced:
                continue
            if r.misuse_before:
                # after a capproof error the engine caught (try/except), the path may be a fallback
                continue
            try:
                shape = [to_expression(d, positive=POSITIVE, nonnegative=NONNEGATIVE) for d in r.shape]
            except (SpecError, TypeError) as exc:
                reasons[a.id] = f"traced shape not printable: {exc}"
                continue
            params = sorted({n for s in shape for n in expression_names(s)})
            traced[a.id] = Entry(id=a.id, file=a.file, line=a.line, owner=a.owner, attribute=a.attribute,
                                 dtype=r.dtype, shape=shape, how="traced", why="", sized_by=classify(params),
                                 params=params, verdicts={})
        if error is not None:
            problems.append(f"{name}: stopped at {error}")
            for a in allocations:
                if a.owner == name and a.id not in traced:
                    reasons[a.id] = f"constructor not traced past: {error}"
    return list(traced.values()), problems, reasons


def _activate(root: str) -> None:
    from . import wheels

    if root not in sys.path:
        sys.path.insert(0, root)
    wheels.quiet()


@harness("InputBuffers", "vllm.v1.worker.gpu.input_batch")
def _v2_input_buffers(v: dict, device: str):
    from vllm.v1.worker.gpu.input_batch import InputBuffers

    # V2 runner: max_num_tokens = scheduler_config.max_num_batched_tokens (gpu/model_runner.py:231)
    return InputBuffers(max_num_reqs=v["max_num_reqs"], max_num_tokens=v["max_num_batched_tokens"], device=device)


@harness("BlockTables", "vllm.v1.worker.gpu.block_table")
def _v2_block_tables(v: dict, device: str):
    from vllm.v1.worker.gpu.block_table import BlockTables

    return BlockTables(block_sizes=[v["block_size"]], max_num_reqs=v["max_num_reqs"],
                       max_num_batched_tokens=v["max_num_batched_tokens"], max_num_blocks_per_group=[v["max_num_blocks"]],
                       device=device)


@harness("RequestState", "vllm.v1.worker.gpu.states")
def _v2_request_state(v: dict, device: str):
    from vllm.v1.worker.gpu.states import RequestState

    return RequestState(max_num_reqs=v["max_num_reqs"], max_model_len=v["max_model_len"],
                        max_num_batched_tokens=v["max_num_batched_tokens"],
                        num_speculative_steps=v["num_speculative_tokens"], vocab_size=v["vocab_size"], device=device)


@harness("InputBatch", "vllm.v1.worker.gpu_input_batch")
def _v1_input_batch(v: dict, device: str):
    from vllm.v1.worker.gpu_input_batch import InputBatch

    return InputBatch(max_num_reqs=v["max_num_reqs"], max_model_len=v["max_model_len"],
                      max_num_batched_tokens=v["max_num_batched_tokens"], device=device, vocab_size=v["vocab_size"],
                      block_sizes=[v["block_size"]], max_num_blocks_per_req=[v["max_num_blocks"]],
                      num_spec_tokens=v["num_speculative_tokens"])
