"""A ``@triton.jit`` kernel of vLLM run on concrete CPU arrays, with a stand-in ``tl`` (numpy).

Without Triton, vLLM's placeholder ``triton.jit`` returns the kernel's Python function itself
(``vllm/triton_utils``). :class:`Launcher` replaces a module's kernel name so that the engine's
own host code launches it here: ``kernel[grid](*args, **kw)`` runs the function once per program
id (every point of ``grid``, in order), with ``tl`` rebound to :class:`ConcreteTL`:

- a tensor argument (a contiguous CPU ``torch.Tensor`` or numpy array) is a pointer (:class:`Ptr`:
  its flat numpy view plus an element offset; stores write the tensor);
- ``tl.program_id`` is the program's index, ``tl.arange`` a numpy range, ``tl.load``/``tl.store``
  index the view at the masked lanes and raise :class:`KernelOutOfBounds` for a lane outside the
  tensor; every stored element is recorded per argument (:attr:`Launcher.written`);
- ``tl.sum``/``where``/``maximum``/``minimum`` are numpy's; ``.to(dtype)`` keeps the value.

Running the programs one after another is the kernel's semantics when no program reads what
another writes (each caller states that of its kernel). Errors: :class:`KernelOutOfBounds`, and
``AttributeError`` for a ``tl`` function not modelled here (the run is then not a result).
"""

from __future__ import annotations

import inspect
import itertools
import types
from functools import lru_cache

__all__ = ["KernelOutOfBounds", "Ptr", "ConcreteTL", "Launcher"]


class KernelOutOfBounds(IndexError):
    """A load or store lane outside its tensor."""


@lru_cache(maxsize=1)
def _value_type():
    """A numpy array type with Triton's ``.to(dtype)`` (the value is kept: the kernels run here cast
    counts and indices that fit either type). Built on first use: numpy is the real tier's."""
    import numpy as np

    class V(np.ndarray):
        def to(self, *a, **k):
            return self

    return V


def _v(x):
    import numpy as np

    return np.asarray(x).view(_value_type())


class Ptr:
    """A tensor's flat numpy view (``name``: the kernel parameter) plus an element offset."""

    def __init__(self, arr, off, name: str):
        self.arr, self.off, self.name = arr, off, name

    def __add__(self, other):
        import numpy as np

        return Ptr(self.arr, self.off + np.asarray(other), self.name)

    __radd__ = __add__

    def to(self, *a, **k):
        return self


class ConcreteTL:
    """Stand-in ``triton.language`` for one program (module docstring)."""

    constexpr = object
    int1 = int8 = int16 = int32 = int64 = uint8 = uint32 = uint64 = "int"
    float16 = bfloat16 = float32 = float64 = "float"

    def __init__(self, pid: tuple, written: dict):
        self.pid, self.written = pid, written

    def program_id(self, axis):
        return self.pid[axis] if axis < len(self.pid) else 0

    def arange(self, lo, hi):
        import numpy as np

        return _v(np.arange(int(lo), int(hi)))

    def _lanes(self, ptr, mask, kind):
        import numpy as np

        off = np.asarray(ptr.off, dtype=np.int64)
        m = np.ones(off.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        off, m = np.broadcast_arrays(off, m)
        bad = m & ((off < 0) | (off >= ptr.arr.size))
        if bad.any():
            raise KernelOutOfBounds(f"{kind} of {ptr.name} at {int(off[bad].flat[0])} (size {ptr.arr.size})")
        return off, m

    def load(self, ptr, mask=None, other=0, **kw):
        import numpy as np

        off, m = self._lanes(ptr, mask, "load")
        vals = ptr.arr[np.where(m, off, 0)] if ptr.arr.size else np.zeros(off.shape, dtype=ptr.arr.dtype)
        return _v(np.where(m, vals, other))

    def store(self, ptr, value, mask=None, **kw):
        import numpy as np

        off, m = self._lanes(ptr, mask, "store")
        val = np.broadcast_to(np.asarray(value), off.shape)
        ptr.arr[off[m]] = val[m]
        self.written.setdefault(ptr.name, set()).update(int(i) for i in off[m].ravel())

    def sum(self, x, axis=None, **k):
        import numpy as np

        return _v(np.sum(x, axis=axis))

    def where(self, c, a, b):
        import numpy as np

        return _v(np.where(c, a, b))

    def maximum(self, a, b, **k):
        import numpy as np

        return _v(np.maximum(a, b))

    def minimum(self, a, b, **k):
        import numpy as np

        return _v(np.minimum(a, b))

    def cdiv(self, a, b):
        return -(-a // b)


class Launcher:
    """Replaces a module's kernel (module docstring). ``written`` maps each pointer parameter to
    the flat element indices the last launch stored; ``launches`` counts launches."""

    def __init__(self, fn):
        self.fn = getattr(fn, "fn", fn)
        self.written: dict[str, set[int]] = {}
        self.launches = 0

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)

        def launch(*args, **kw):
            import numpy as np

            self.launches += 1
            self.written = {}
            sig = inspect.signature(self.fn)
            kw = {k: v for k, v in kw.items() if k in sig.parameters}
            bound = sig.bind(*args, **kw)
            bound.apply_defaults()
            call = {}
            for k, v in bound.arguments.items():
                if isinstance(v, np.ndarray):
                    call[k] = Ptr(v.reshape(-1), 0, k)  # a view of a contiguous array: stores write it
                elif hasattr(v, "numpy") and hasattr(v, "view"):
                    call[k] = Ptr(v.view(-1).numpy(), 0, k)  # a CPU tensor's memory
                else:
                    call[k] = v
            for pid in itertools.product(*(range(int(g)) for g in grid)):
                g = dict(self.fn.__globals__)
                g["tl"] = ConcreteTL(pid, self.written)
                types.FunctionType(self.fn.__code__, g, self.fn.__name__, self.fn.__defaults__, self.fn.__closure__)(
                    **call
                )

        return launch
