"""Regenerate capproof/engines/vllm/block_defaults.py: the KV-cache block size vLLM 0.33.0 picks
when ``vllm serve`` is given no ``--block-size``, per attention backend it may select.

Usage (in the real environment, the pinned wheel's sources extracted by
``python -m capproof.engines.vllm.wheels fetch``):

    .capproof/real-venv/bin/python real/extract_vllm_block_sizes.py > capproof/engines/vllm/block_defaults.py

What runs is vLLM's own code, imported from the wheel on a CPU (GPU-only packages such as
``flashinfer`` are stand-in modules so the backend modules load; nothing of theirs is called):

- ``vllm/platforms/cuda.py`` ``_get_backend_priorities(use_mla, DeviceCapability(major, minor),
  num_heads, kv_cache_dtype)``: the backends ``CudaPlatform.get_valid_backends`` tries, in order, per
  GPU of :data:`GPUS` (for num_heads <= 16 and > 16, BF16 and FP8 KV cache: the union is kept);
- ``AttentionBackend.is_sparse()`` of each (a DSA model selects sparse MLA backends only, others
  the dense ones: ``validate_configuration`` rejects the rest);
- ``get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)`` of each, outside any current vLLM
  config (``Platform.update_block_size_for_backend`` phase 1, ``vllm/platforms/interface.py:750-781``).

vLLM selects the first backend of that list that validates for the model (head size, dtype, ...),
which a CPU cannot decide; check-config therefore checks every candidate's preferred size.
"""

import sys

#: GPUs an operator can name with ``check-config --gpu`` and their compute capability
#: (as in real/extract_vllm_flags.py).
GPUS = {
    "A100": (8, 0),
    "L40S": (8, 9),
    "H100": (9, 0),
    "H200": (9, 0),
    "B200": (10, 0),
    "B300": (10, 3),
    "GB10": (12, 1),
}
#: GPU-only packages the backend modules import at the top.
STAND_INS = ("flashinfer", "flash_mla", "deep_gemm", "vllm._C_stable_libtorch")


def extract() -> dict:
    """{gpu: {"mla": ((backend, size), ...), "mla_sparse": (...), "dense": (...)}} from the wheel."""
    from capproof.engines.tracing.interpret import install_cuda_only
    from capproof.engines.vllm import wheels

    wheels.activate()
    import importlib

    for name in STAND_INS:
        try:
            importlib.import_module(name)
        except ImportError:
            install_cuda_only(name)
    from vllm.config.cache import CacheConfig
    from vllm.platforms.cuda import _get_backend_priorities
    from vllm.platforms.interface import DeviceCapability

    default = CacheConfig.DEFAULT_BLOCK_SIZE
    out: dict = {}
    for gpu, cap in GPUS.items():
        rows: dict[str, dict[str, int | str]] = {"dense": {}, "mla": {}, "mla_sparse": {}}
        for mla in (False, True):
            for heads in (8, 128):
                for kv in (None, "fp8"):
                    for backend in _get_backend_priorities(
                        mla, DeviceCapability(*cap), num_heads=heads, kv_cache_dtype=kv
                    ):
                        try:
                            cls = backend.get_class()
                            size = cls.get_preferred_block_size(default)
                            sparse = cls.is_sparse()
                        except Exception:  # noqa: BLE001 - its module needs a GPU to import
                            size, sparse = _from_source(backend.value, default)
                        kind = "dense" if not mla else "mla_sparse" if sparse else "mla"
                        if sparse is None and mla:  # unknown: listed under both MLA kinds
                            rows["mla"].setdefault(backend.name, size)
                            rows["mla_sparse"].setdefault(backend.name, size)
                        else:
                            rows[kind].setdefault(backend.name, size)
        out[gpu] = {k: tuple(v.items()) for k, v in rows.items()}
    return out, default


def _from_source(path: str, default: int) -> tuple[int | str, bool | None]:
    """A backend whose module does not import on a CPU (it calls CUDA at import, or imports names
    only defined on CUDA): its own ``get_supported_kernel_block_sizes`` (and ``is_sparse``) compiled
    from the wheel's source of its class, run with no current vLLM config, under vLLM's base-class
    ``get_preferred_block_size``. A class that overrides ``get_preferred_block_size`` or inherits
    from another backend is reported (a string), not guessed."""
    import ast
    import inspect
    import textwrap

    from vllm.v1.attention.backend import AttentionBackend, MultipleOf

    module, _, name = path.rpartition(".")
    file = inspect.getsourcefile(AttentionBackend).replace(
        "vllm/v1/attention/backend.py", module.replace(".", "/") + ".py"
    )
    with open(file, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    bases = [ast.unparse(b) for b in cls.bases]
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    if "get_preferred_block_size" in methods or any(
        "Backend" in b and b != "AttentionBackend" for b in bases if "MLA" not in b
    ):
        return f"{name}: overrides get_preferred_block_size or inherits another backend; not run", None
    namespace = {
        "MultipleOf": MultipleOf,
        "get_current_vllm_config_or_none": lambda: None,
        "staticmethod": staticmethod,
        "classmethod": classmethod,
    }
    body = {}
    for method in ("get_supported_kernel_block_sizes", "is_sparse"):
        if method in methods:
            code = textwrap.dedent(ast.unparse(methods[method]))
            exec(compile(code, f"{file}:{method}", "exec"), namespace)  # noqa: S102 - the wheel's own source
            fn = namespace[method]
            body[method] = (
                classmethod(fn)
                if any(ast.unparse(d) == "classmethod" for d in methods[method].decorator_list)
                else staticmethod(fn)
            )
    stand_in = type(name, (AttentionBackend,), body)
    return stand_in.get_preferred_block_size(default), stand_in.is_sparse()


def main() -> None:
    table, default = extract()
    w = sys.stdout.write
    w('"""The KV-cache block size vLLM 0.33.0 picks without ``--block-size`` (generated by\n')
    w("real/extract_vllm_block_sizes.py from the wheel's own code; do not edit).\n\n")
    w("Per GPU (``check-config --gpu`` names) and model kind (``dense`` attention, ``mla``, ``mla_sparse``\n")
    w("for DSA models): every attention backend ``CudaPlatform`` may select, in priority order, with\n")
    w("``get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)``; a string is why the backend's class\n")
    w("could not be asked on a CPU (its size is then unknown).\n")
    w('"""\n\n')
    w(f"DEFAULT_BLOCK_SIZE = {default!r}\n")
    w("PREFERRED_BLOCK_SIZES = {\n")
    for gpu, rows in table.items():
        w(f"    {gpu!r}: {{\n")
        for kind, entries in rows.items():
            w(f"        {kind!r}: {entries!r},\n")
        w("    },\n")
    w("}\n")


if __name__ == "__main__":
    main()
