"""The real engines on a CPU: fetch the pinned wheels, put their sources on ``sys.path``, call them.

``make verify-real`` uses this module; the default test run and ``make verify`` never do.

- **Wheels:** ``vllm==0.33.0`` and ``sglang==0.5.23`` are fetched once with ``pip download
  --no-deps`` into ``.capproof/wheels`` (git-ignored); only their ``.py`` files are extracted into
  ``.capproof/src``. Offline after that. ``python -m capproof.engines.vllm.wheels fetch`` prints one line and
  exits :data:`EXIT_NO_WHEELS` (3) when the wheels cannot be had.
- **Imports:** the real modules import with a CPU build of torch and the light packages listed in
  ``real/requirements.txt`` (vLLM 0.33.0 reference §12). Nothing is stubbed: a function called
  here is the engine's own code object, loaded from the wheel.
- **Configs:** the engine functions take ``VllmConfig``-shaped objects; :func:`vllm_config` builds
  a duck-typed one with only the fields they read (``parallel_config.decode_context_parallel_size``,
  ``model_config.max_model_len``, ``attention_config.sparse_mla_prefill_workspace_factor``).
  Fields may be capproof symbolic ints.
"""

from __future__ import annotations

import glob
import logging
import os
import subprocess
import sys
import warnings
import zipfile
from functools import lru_cache
from types import SimpleNamespace

__all__ = [
    "PINNED",
    "EXIT_NO_WHEELS",
    "WheelsUnavailable",
    "cache_dir",
    "fetch",
    "fetch_version",
    "source_root",
    "activate",
    "vllm",
    "vllm_config",
    "mla_spec",
    "full_attention_spec",
    "uniform_type_specs",
]

#: The engine versions ``make verify-real`` checks.
PINNED = {"vllm": "0.33.0", "sglang": "0.5.23"}
#: Exit code of ``python -m capproof.engines.vllm.wheels fetch`` when the wheels cannot be had.
EXIT_NO_WHEELS = 3


class WheelsUnavailable(RuntimeError):
    """The pinned wheels are neither cached nor downloadable."""


def cache_dir() -> str:
    """``$CAPPROOF_CACHE`` or ``<project>/.capproof`` (the project root is capproof's parent)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return os.environ.get("CAPPROOF_CACHE") or os.path.join(root, ".capproof")


def _wheel(name: str, version: str) -> str | None:
    found = sorted(glob.glob(os.path.join(cache_dir(), "wheels", f"{name}-{version}-*.whl")))
    return found[0] if found else None


def _src() -> str:
    return os.path.join(cache_dir(), "src")


def _marker(name: str, version: str) -> str:
    return os.path.join(_src(), f".extracted-{name}-{version}")


def source_root(name: str, version: str) -> str:
    """Where the ``.py`` files of ``name==version`` are extracted: ``.capproof/src`` for the pinned
    versions (shared with the tests), ``.capproof/src-<name>-<version>`` for any other release."""
    if PINNED.get(name) == version:
        return _src()
    return os.path.join(cache_dir(), f"src-{name}-{version}")


def fetch_version(name: str, version: str, download: bool = True) -> str:
    """Make sure ``name==version``'s wheel is cached (``pip download --no-deps`` into
    ``.capproof/wheels``) and its package's ``.py`` files extracted under :func:`source_root`;
    return the wheel's path. Raises :class:`WheelsUnavailable` (one line) when it cannot be had."""
    os.makedirs(os.path.join(cache_dir(), "wheels"), exist_ok=True)
    path = _wheel(name, version)
    if path is None and download:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            f"{name}=={version}",
            "-d",
            os.path.join(cache_dir(), "wheels"),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        path = _wheel(name, version)
        if path is None:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise WheelsUnavailable(f"cannot fetch {name}=={version} with pip download --no-deps: {last}")
    if path is None:
        raise WheelsUnavailable(
            f"{name}=={version} is not in {os.path.join(cache_dir(), 'wheels')} (run `make verify-real` online once)"
        )
    root = source_root(name, version)
    marker = os.path.join(root, f".extracted-{name}-{version}")
    if not os.path.exists(marker):
        with zipfile.ZipFile(path) as zf:
            for member in zf.namelist():
                if member.endswith(".py") and member.split("/", 1)[0] == name:
                    zf.extract(member, root)
        open(marker, "w").close()
    return path


def fetch(download: bool = True) -> dict[str, str]:
    """Make sure every pinned wheel is cached and extracted; return ``{name: wheel path}``.

    Raises :class:`WheelsUnavailable` (one line) when a wheel is missing and cannot be downloaded.
    """
    return {name: fetch_version(name, version, download) for name, version in PINNED.items()}


def activate() -> str:
    """Put the extracted engine sources first on ``sys.path`` (no download); quiet their logs."""
    for name, version in PINNED.items():
        if not os.path.exists(_marker(name, version)):
            raise WheelsUnavailable(
                f"{name}=={version} sources are not extracted: run `python -m capproof.engines.vllm.wheels fetch`"
            )
    src = _src()
    if src not in sys.path:
        sys.path.insert(0, src)
    quiet()
    return src


def quiet() -> None:
    """Quiet vLLM's logs and warnings (before its first import)."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    warnings.filterwarnings("ignore", module="vllm")
    logging.getLogger("vllm").setLevel(logging.ERROR)


@lru_cache(maxsize=None)
def vllm() -> SimpleNamespace:
    """The real vLLM 0.33.0 functions that capproof's models transcribe."""
    activate()
    import vllm as pkg
    from vllm.config.compilation import CompilationConfig
    from vllm.model_executor.layers.fused_moe import moe_align_block_size as moe_align
    from vllm.utils import math_utils
    from vllm.utils.argparse_utils import human_readable_int, human_readable_int_or_auto
    from vllm.v1 import kv_cache_interface as kvi
    from vllm.v1.attention.backends.mla import indexer
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
    from vllm.v1.worker import block_table

    return SimpleNamespace(
        package=pkg,
        cdiv=math_utils.cdiv,
        round_up=math_utils.round_up,
        get_block_table_width=block_table.get_block_table_width,
        kv=kvi,
        get_max_prefill_buffer_size=indexer.get_max_prefill_buffer_size,
        split_indexer_prefill_chunks=indexer.DeepseekV32IndexerMetadataBuilder._split_indexer_prefill_chunks,
        CompilationConfig=CompilationConfig,
        CudagraphDispatcher=CudagraphDispatcher,
        moe_align=moe_align,
        human_readable_int=human_readable_int,
        human_readable_int_or_auto=human_readable_int_or_auto,
    )


def vllm_config(dcp=1, max_model_len=None, prefill_workspace_factor=None) -> SimpleNamespace:
    """A duck-typed ``VllmConfig`` with just the fields the called functions read (any may be symbolic)."""
    return SimpleNamespace(
        parallel_config=SimpleNamespace(decode_context_parallel_size=dcp),
        model_config=SimpleNamespace(max_model_len=max_model_len),
        attention_config=SimpleNamespace(sparse_mla_prefill_workspace_factor=prefill_workspace_factor),
    )


def mla_spec(block_size: int):
    """A real ``MLAAttentionSpec`` as DSA's MLA/indexer layers declare it (576-wide latent, 1 head)."""
    import torch

    return vllm().kv.MLAAttentionSpec(
        block_size=block_size, num_kv_heads=1, head_size=576, dtype=torch.uint8, cache_dtype_str="fp8_ds_mla"
    )


def full_attention_spec(block_size: int):
    """A real ``FullAttentionSpec`` (8 KV heads of 128, bf16)."""
    import torch

    return vllm().kv.FullAttentionSpec(block_size=block_size, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)


def uniform_type_specs(block_size: int):
    """A real ``UniformTypeKVCacheSpecs`` merging an MLA layer and an indexer-like MLA layer (DSA's group)."""
    import torch

    kv = vllm().kv
    specs = {
        "model.layers.0.self_attn.attn": mla_spec(block_size),
        "model.layers.0.self_attn.indexer.k_cache": kv.MLAAttentionSpec(
            block_size=block_size, num_kv_heads=1, head_size=132, dtype=torch.uint8
        ),
    }
    return kv.UniformTypeKVCacheSpecs(block_size=block_size, kv_cache_specs=specs)


def _main(argv: list[str]) -> int:
    if argv[:1] != ["fetch"]:
        print("usage: python -m capproof.engines.vllm.wheels fetch [--offline]", file=sys.stderr)
        return 2
    try:
        wheels = fetch(download="--offline" not in argv)
    except WheelsUnavailable as exc:
        print(f"capproof: real engine unavailable: {exc}", file=sys.stderr)
        return EXIT_NO_WHEELS
    print(
        "real engines ready: "
        + ", ".join(f"{n}=={PINNED[n]} ({os.path.getsize(p) // 2**20} MiB wheel)" for n, p in wheels.items())
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))


def py_files(root: str, top: str = "vllm"):
    """Every ``.py`` file under ``root/top`` (an unpacked wheel's source tree), in a stable order:
    ``(path relative to root with "/", absolute path)`` pairs."""
    for dirpath, dirs, files in os.walk(os.path.join(root, top)):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                yield os.path.relpath(path, root).replace(os.sep, "/"), path
