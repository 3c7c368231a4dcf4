"""Import SGLang 0.5.23's modules on a CPU: stand-ins for the packages a CPU machine does not have.

SGLang's ``sglang/srt/utils/common.py`` imports ``triton`` unconditionally, and the modules the
inventory traces pull in (through ``sglang.srt.layers.moe``, ``sglang.srt.configs``, the
multimodal processors) ``orjson``, ``IPython``, ``torchvision``, ``sentencepiece``, ``dill``,
``compressed_tensors``, ``gguf``, ``sgl_kernel``, ``flash_mla``... (reference §12). None of them
sizes a buffer. :func:`activate` makes them importable **for SGLang's own modules only**:

- a meta-path finder answers an import of one of :data:`STAND_IN_PACKAGES` that is not installed
  with a stand-in module when the importing frame is a file of the extracted SGLang sources (torch and transformers, which
  probe for triton/torchvision themselves, still see them missing and take their no-GPU paths).
  In a stand-in module a capitalised name is an empty class (``triton.Config``,
  ``compressed_tensors.QuantizationStrategy``: usable as a base, in ``isinstance`` and as a dict
  key), any other name a :class:`Anything` (a decorator returns the function unchanged:
  ``@triton.jit`` leaves the Python function; a call returns another stand-in). Calling a stand-in
  kernel in a traced statement does nothing: the statement's allocations are still the engine's
  own, and its kernels never run;
- an import SGLang guards itself (in the body of a ``try`` with an ``except ImportError``, such as
  ``aiter_backend.py``'s ``from aiter import ...``) gets no stand-in: it fails as on a machine
  without the package and SGLang takes its own fallback (:func:`guarded`);
- ``dill`` is :mod:`pickle` under that name (SGLang's custom logit processors serialise classes
  at import time);
- ``vllm`` is not importable from SGLang's files (the extracted vLLM sources share the directory;
  SGLang deployments have no vLLM);
- ``sglang/kernels/jit/include`` and ``csrc`` exist (empty: the extraction keeps ``.py`` files
  only, and ``sglang.kernels.jit`` checks the directories at import).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import pickle
import sys
import types

__all__ = ["STAND_IN_PACKAGES", "Anything", "activate", "guarded"]

#: Packages SGLang imports that have no CPU build here (or are not installed in the real venv).
STAND_IN_PACKAGES = frozenset(
    {
        "triton",
        "orjson",
        "IPython",
        "torchvision",
        "sentencepiece",
        "compressed_tensors",
        "gguf",
        "sgl_kernel",
        "flash_mla",
        "flashinfer",
        "deep_gemm",
        "flash_attn",
        "aiter",
        "cuda",
        "nvtx",
        "xgrammar",
        "outlines",
        "sgl_fa4",
        "tilelang",
        "cutlass",
        "kt_kernel",
        "quack",
        "mooncake",
        "nixl",
        "mscclpp",
        "pynvml",
        "decord",
        "soundfile",
        "av",
        "timm",
        "einops_exts",
        "numba",
        "cuda_bindings",
        "zmq_stub",
        "hf_transfer",
        "openai_harmony",
        "partial_json_parser",
        "llguidance",
        "blobfile",
        "interegular",
        "modelscope",
    }
)
#: Packages SGLang's files must not import (another engine's sources share the extraction directory).
BLOCKED = frozenset({"vllm"})


class Anything:
    """A stand-in value: attributes and calls give more stand-ins; a one-argument call on a function
    returns it (a decorator); iterating gives nothing; it is false."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Anything(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Anything):
            return args[0]
        return Anything(f"{self._name}()")

    def __mro_entries__(self, bases):
        return (object,)

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __getitem__(self, item):
        return self

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __repr__(self):
        return f"<stand-in {self._name}>"


class _StandInClass(type):
    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Anything(f"{cls.__name__}.{attr}")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __or__


def _module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)

    def attribute(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr[:1].isupper():
            value = _StandInClass(
                attr,
                (),
                {
                    "__init__": lambda self, *a, **k: None,
                    "__module__": name,
                    "__getattr__": lambda self, a: Anything(a),
                },
            )
        else:
            value = Anything(f"{name}.{attr}")
        setattr(module, attr, value)
        return value

    module.__getattr__ = attribute
    if name == "triton":
        # the integer helpers Triton's Python package defines (triton/__init__.py): sizes use them
        module.cdiv = lambda x, y: (x + y - 1) // y
        module.next_power_of_2 = lambda n: 1 << (int(n) - 1).bit_length()
    return module


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root: str):
        self.root = os.path.abspath(root) + os.sep

    def _importer(self):
        """The frame of the file that runs the import statement (past importlib's own frames)."""
        f = sys._getframe(2)
        while f is not None and ("importlib" in f.f_code.co_filename or f.f_code.co_filename.startswith("<frozen")):
            f = f.f_back
        return f

    def _from_sglang(self, f) -> bool:
        return f is not None and os.path.abspath(f.f_code.co_filename).startswith(self.root + "sglang" + os.sep)

    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top not in STAND_IN_PACKAGES and top not in BLOCKED:
            return None
        f = self._importer()
        if not self._from_sglang(f):
            return None
        if top not in BLOCKED and guarded(f.f_code.co_filename, f.f_lineno):
            return None  # SGLang handles the package's absence itself (``except ImportError``): let it
        if top not in BLOCKED and "." not in name and importlib.machinery.PathFinder.find_spec(name) is not None:
            return None  # installed: the real package
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        if spec.name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(
                f"No module named {spec.name!r} (not importable from SGLang's sources here)", name=spec.name
            )
        return _module(spec.name)

    def exec_module(self, module):
        return None


_ACTIVE: "_Finder | None" = None
_GUARDED: dict = {}


def guarded(filename: str, line: int) -> bool:
    """Whether line ``line`` of ``filename`` is in the body of a ``try`` with an ``except ImportError``
    (or ``ModuleNotFoundError``) handler: SGLang's own fallback for a machine without the package
    (``aiter_backend.py``'s ``try: from aiter import ... except ImportError``), taken as on such a
    machine rather than answered with a stand-in."""
    spans = _GUARDED.get(filename)
    if spans is None:
        import ast

        spans = []
        try:
            with open(filename, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if not isinstance(node, ast.Try) or not node.body:
                continue
            caught = set()
            for h in node.handlers:
                for t in h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]:
                    if isinstance(t, ast.Name):
                        caught.add(t.id)
            if caught & {"ImportError", "ModuleNotFoundError"}:
                spans.append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno))
        _GUARDED[filename] = spans
    return any(lo <= line <= hi for lo, hi in spans)


def activate(root: str) -> None:
    """Put the extracted sources ``root`` first on ``sys.path`` and install the stand-ins (once)."""
    global _ACTIVE
    if root not in sys.path:
        sys.path.insert(0, root)
    for sub in ("include", "csrc"):
        os.makedirs(os.path.join(root, "sglang", "kernels", "jit", sub), exist_ok=True)
    if _ACTIVE is not None:
        return
    # torch and transformers decide once whether triton/torchvision exist: let them decide before
    # any stand-in is importable
    import torch.utils._triton as torch_triton

    torch_triton.has_triton_package()
    torch_triton.has_triton()
    import torch._dynamo  # noqa: F401
    import torch._inductor.codecache  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401
    import torch.utils.flop_counter  # noqa: F401,E501

    try:
        import transformers.utils.import_utils as hf_imports

        for probe in ("is_torchvision_available", "is_triton_available", "is_vision_available"):
            getattr(hf_imports, probe, lambda: None)()
    except ImportError:  # pragma: no cover - transformers is in the real venv
        pass
    if "dill" not in sys.modules:
        try:
            import dill  # noqa: F401
        except ImportError:
            dill = types.ModuleType("dill")
            dill.__dict__.update({k: v for k, v in pickle.__dict__.items() if not k.startswith("__")})
            dill.extend = lambda use_dill=True: None
            dill.__spec__ = importlib.machinery.ModuleSpec("dill", None)
            sys.modules["dill"] = dill
    _ACTIVE = _Finder(root)
    sys.meta_path.insert(0, _ACTIVE)
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("sglang").setLevel(logging.ERROR)
