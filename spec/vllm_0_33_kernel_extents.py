"""Capacity against the extents vLLM 0.33.0's kernels and guarded slices reach, per dimension.

Both sides come from the committed inventory (``proofs/inventory/vllm-0.33.0.json``): the
capacity is the allocation's traced shape, the demand is what ``capproof inventory`` derived by
running the engine's host code and the kernels' Python bodies on symbolic sizes
(``capproof/engines/vllm/kernel_extents.py``, ``capproof/engines/vllm/demand_drafting.py``; the
demands of family ``kernel extents``) or read from a builder's guard on every call site
(``capproof/engines/vllm/demand_backends.py``; family ``guarded slice``). No formula is written here; one obligation per entry and
dimension derived. ``make verify-real`` re-derives the records and fails when they are stale.
"""

from capproof import Range, at_most, obligation
from capproof.inventory import bound_name, capacity, demand, derived, load

INV = "proofs/inventory/vllm-0.33.0.json"
_ENTRIES = load(INV)

#: The domain of every name a kernel-extent expression may use.
NAMES = {
    "num_speculative_tokens": Range(0, 2**10),
    "max_num_reqs": Range(1, 2**12),
    "num_reqs": Range(1, 2**12),
    "num_tokens": Range(1, 2**17),
    "vocab_size": Range(1, 2**20),
    "max_decode_len": Range(0, 2**12),
    "num_decodes": Range(0, 2**12),
    "num_prefills": Range(0, 2**12),
    "max_cudagraph_capture_size": Range(1, 2**12),
    "decode_cudagraph_max_bs": Range(1, 2**12),
}
#: The demand families this file checks: kernel extents (Triton bodies run) and slices a
#: builder's guard bounds (the guard read on every call site).
FAMILIES = ("kernel extents", "guarded slice")


def _used(expr: str) -> list[str]:
    import re

    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expr))
    return [n for n in NAMES if n in words]


def _kernel_extent(entry, dim: int):
    ident = entry.id
    rec = derived(_ENTRIES, ident, dim)
    binds = rec.get("binds") or {}
    used = _used(rec["extent"]) + _used(entry.shape[dim])
    in_binds = []
    for expr in binds.values():
        in_binds += _used(expr)
    # a bound name is a parameter only where its own binding reads it (a shape left as that name)
    names = sorted((set(used) - set(binds)) | set(in_binds))

    def claim(**kw):
        # a capacity name the derivation bound (to the allocation's own traced size), evaluated here
        names = {**kw, **{name: bound_name(_ENTRIES, ident, dim, name, **kw) for name in binds}}
        return at_most(
            accessed=demand(_ENTRIES, ident, dim, **names),
            allocated=capacity(_ENTRIES, ident, dim, **names),
        )

    import inspect

    claim.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    attribute = ident.split("::", 1)[1]
    claim.__name__ = f"kernel_extent__{attribute.replace('.', '_').replace('#', '_')}__dim{dim}"
    claim.__doc__ = (
        f"Every access of `{attribute}` along dimension {dim} (kernel bodies run on symbolic sizes from "
        "the engine's own launches, or a slice on the paths its guard allows) lies within the allocation."
    )
    return obligation(
        domain={n: NAMES[n] for n in names},
        expect="proved",
        sources=[
            f"inventory: {INV}::{ident}",
            f"demand: {INV}::{ident}[{dim}]",
            *derived(_ENTRIES, ident, dim)["from"],
        ],
        covers=[ident],
        engine="vllm",
        versions="==0.33.0",
        tags=("inventory", "derived", "kernel"),
    )(claim)


KERNEL_EXTENTS = [
    _kernel_extent(e, d["dim"])
    for e in _ENTRIES
    for d in e.demands
    if isinstance(d, dict) and d.get("family") in FAMILIES
]
