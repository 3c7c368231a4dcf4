"""The recording stand-in of capproof/engines/vllm/trace.py.

Fast tier: a small hand-written class shaped like vLLM's constructors (no wheel needed).
Real tier (``@pytest.mark.real``, ``make verify-real``): vLLM 0.33.0's own constructors traced on
symbolic config values, then built again with plain ints and the real torch/numpy; every traced
shape expression evaluated at those ints must equal the real tensor's shape.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

np = pytest.importorskip("numpy")
try:
    import torch
except ImportError:  # the fast-tier venv has numpy but not torch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is only in the real venv")

from capproof import inventory as inv  # noqa: E402
from capproof.engines.vllm import harnesses  # noqa: E402,F401 - registers every harness into tr.HARNESSES
from capproof.engines.vllm import trace as tr  # noqa: E402
from capproof.engines.vllm.scan import scan  # noqa: E402
from capproof.symbolic import SymInt  # noqa: E402

TOY = textwrap.dedent("""
    import numpy as np
    import torch

    def cdiv(a, b):
        return -(a // -b)

    class CpuGpuBuffer:  # named like vLLM's wrapper: its body is not an entry, its call is
        def __init__(self, *size, dtype):
            self.cpu = torch.zeros(*size, dtype=dtype)
            self.gpu = torch.zeros_like(self.cpu)
            self.np = self.cpu.numpy()

    class Toy:
        def __init__(self, max_num_reqs, max_model_len, block_size, num_speculative_tokens):
            self.block_table = CpuGpuBuffer(max_num_reqs, cdiv(max_model_len, block_size), dtype=torch.int32)
            self.query_start_loc = torch.zeros(max_num_reqs + 1, dtype=torch.int32)
            self.arange = torch.arange(max_num_reqs * (1 + num_speculative_tokens), dtype=torch.int32)
            self.flags = np.zeros((max_num_reqs, 2), dtype=np.bool_)
            self.lens = self.query_start_loc.new_zeros(max_num_reqs)
            self.stride = self.block_table.cpu.stride(0)
    """)


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    pkg = tmp_path / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    (tmp_path / "vllm" / "__init__.py").write_text("")
    (tmp_path / "vllm" / "v1" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("vllm.v1.worker.toy", None)
    import importlib

    mod = importlib.import_module("vllm.v1.worker.toy")
    yield str(tmp_path), mod
    for m in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        if getattr(sys.modules[m], "__file__", "") and str(tmp_path) in (sys.modules[m].__file__ or ""):
            del sys.modules[m]


def _by_site(root, records):
    sites = {(a.file, a.line): a for a in scan(root, scope=("vllm/v1/worker",))}
    out = {}
    for r in records:
        a = tr._matches(r, sites)
        if a is not None and a.attribute not in out:
            out[a.attribute] = r
    return out


@needs_torch
def test_recorder_on_a_hand_written_class(toy):
    root, mod = toy
    names = ["max_num_reqs", "max_model_len", "block_size", "num_speculative_tokens"]
    sym = {n: SymInt.var(n) for n in names}
    with tr.recording(root, "fake") as rec:
        obj = mod.Toy(**sym)
    got = _by_site(root, rec.records)
    assert set(got) == {"block_table", "query_start_loc", "arange", "flags", "lens"}
    shapes = {
        k: [inv.to_expression(d, positive=tr.POSITIVE, nonnegative=tr.NONNEGATIVE) for d in r.shape]
        for k, r in got.items()
    }
    assert shapes == {
        "block_table": ["max_num_reqs", "cdiv(max_model_len, block_size)"],  # the wrapper's call line
        "query_start_loc": ["1 + max_num_reqs"],
        "arange": ["max_num_reqs * (1 + num_speculative_tokens)"],
        "flags": ["max_num_reqs", "2"],
        "lens": ["max_num_reqs"],
    }
    assert {k: r.dtype for k, r in got.items()} == {
        "block_table": "int32",
        "query_start_loc": "int32",
        "arange": "int32",
        "flags": "bool",
        "lens": "int32",
    }
    assert isinstance(obj.block_table.np, tr.FakeTensor)
    assert isinstance(obj.stride, SymInt)  # stride(0) of [R, W] is W, symbolically

    # the same constructor on ints with the real torch/numpy: the traced expressions give the real shapes
    ints = dict(max_num_reqs=7, max_model_len=1001, block_size=16, num_speculative_tokens=3)
    with tr.recording(root, "real") as real:
        obj = mod.Toy(**ints)
    real_got = _by_site(root, real.records)
    for k, exprs in shapes.items():
        assert tuple(inv.evaluate(e, **ints) for e in exprs) == real_got[k].shape, k
    assert tuple(obj.block_table.cpu.shape) == (7, 63)
    # outside the recording, torch is torch again
    assert isinstance(torch.zeros(2), torch.Tensor)


@needs_torch
def test_allocations_outside_the_engine_are_not_intercepted(toy):
    root, _ = toy
    with tr.recording(root, "fake") as rec:
        t = torch.zeros(3)  # called from this test file, not from the engine's sources
    assert isinstance(t, torch.Tensor) and rec.records == []


NUMPY_TOY = textwrap.dedent("""
    import numpy as np

    class Sampler:
        def __init__(self, max_num_reqs, num_speculative_tokens, device_query):
            self.free = list(range(max_num_reqs))                       # needs a concrete int: skipped
            self.first_free = self.free[0]                              # reads a skipped name: skipped
            self.num_tokens = np.zeros(max_num_reqs, dtype=np.int32)    # traced
            self.draft = np.zeros((max_num_reqs, num_speculative_tokens), dtype=np.int64)
            self.window = max(max_num_reqs, 2 * num_speculative_tokens)  # builtin max on symbolic ints
            self.arange = np.arange(self.window + 1, dtype=np.int32)
            try:
                big = max_num_reqs > 8 and 2 or 1                       # a branch the engine catches
            except TypeError:
                big = 1
            self.fallback = np.zeros(big * max_num_reqs, dtype=np.int32)  # after a caught error: not trusted
            self.head = np.full(self.first_free + 1, -1, dtype=np.int32)  # reads a poisoned attribute
    """)


def test_statement_level_construction_numpy_only(tmp_path, monkeypatch):
    """run_statements: statements that cannot run on symbolic values are skipped and poison what
    they assign; allocations in the others are recorded exactly (numpy only, fast tier)."""
    from capproof.symbolic import tracing

    pkg = tmp_path / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    (pkg / "sampler_toy.py").write_text(NUMPY_TOY)
    import importlib.util

    spec = importlib.util.spec_from_file_location("sampler_toy", pkg / "sampler_toy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root = str(tmp_path)
    sym = {"max_num_reqs": SymInt.var("max_num_reqs"), "num_speculative_tokens": SymInt.var("num_speculative_tokens")}
    with tracing(), tr.recording(root, "fake") as rec:
        obj, log = tr.construct(mod.Sampler, device_query=None, **sym)
    skipped = {line: why for _, line, _, why in log.skipped}
    lines = NUMPY_TOY.splitlines()
    line_of = {
        key: next(i + 1 for i, text in enumerate(lines) if key in text)
        for key in ("self.free =", "self.first_free", "try:", "self.head")
    }
    assert "NotConcreteError" in skipped[line_of["self.free ="]]
    assert (
        "reads free" in skipped[line_of["self.first_free"]] or "reads self.free" in skipped[line_of["self.first_free"]]
    )
    assert "reads self.first_free" in skipped[line_of["self.head"]]
    assert "caught by the engine" in skipped[line_of["try:"]]
    assert isinstance(obj.free, tr.Poisoned)
    got = {}
    for r in rec.records:
        if r.untrusted:
            continue
        line = r.stack[0][1]
        got[lines[line - 1].strip().split(" =")[0]] = [
            inv.to_expression(d, positive=tr.POSITIVE, nonnegative=tr.NONNEGATIVE) for d in r.shape
        ]
    assert got == {
        "self.num_tokens": ["max_num_reqs"],
        "self.draft": ["max_num_reqs", "num_speculative_tokens"],
        "self.arange": [
            "1 + select(2 * num_speculative_tokens <= max_num_reqs, max_num_reqs, 2 * num_speculative_tokens)"
        ],
    }
    # the same constructor on ints and the real numpy: the traced expressions give the real shapes
    ints = {"max_num_reqs": 5, "num_speculative_tokens": 3}
    real = mod.Sampler(device_query=None, **ints)
    assert real.arange.shape == (inv.evaluate(got["self.arange"][0], **ints),)
    assert real.draft.shape == tuple(inv.evaluate(e, **ints) for e in got["self.draft"])


# ------------------------------------------------------------------------------------------------
# real tier: vLLM 0.33.0's constructors


@pytest.fixture(scope="module")
def vllm_root():
    from capproof.engines.vllm import wheels

    try:
        wheels.fetch(download=False)
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    return wheels.source_root("vllm", wheels.PINNED["vllm"])


@pytest.fixture(scope="module")
def traced(vllm_root):
    allocations = scan(vllm_root)
    entries, problems, reasons = tr.trace_all("0.33.0", vllm_root, allocations)
    return {e.id: e for e in entries}, allocations


CASES = [
    # a DeepSeek-V3.2-like deployment (config_values' defaults) and a small odd one
    tr.config_values(symbolic=False),
    tr.config_values(
        symbolic=False,
        max_num_reqs=5,
        max_num_batched_tokens=37,
        max_model_len=1001,
        block_size=16,
        dcp=2,
        num_speculative_tokens=1,
        hidden_size=64,
        vocab_size=1000,
        num_sms=8,
        max_num_blocks=63,
        num_heads=16,
        index_topk=64,
        num_tokens=3,
        top_k=2,
        num_experts=8,
        block_size_m=16,
    ),
]


def _harness_names():
    """The hand-written harnesses and the generic ones for the owners of the committed inventory
    (a JSON read: collection stays cheap)."""
    from conftest import ROOT

    from capproof import inventory as inventory_mod

    path = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json")
    if os.path.exists(path):
        tr.register_generic(inventory_mod.load(path))
    return sorted(tr.HARNESSES)


@pytest.mark.real
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("name", _harness_names())
def test_traced_shapes_equal_real_int_construction(traced, vllm_root, name, case):
    """Build the class with ints and the real torch/numpy; each traced entry's expression evaluated
    at those ints equals the shape of the tensor the real constructor allocated at that line."""
    entries, allocations = traced
    ints = dict(CASES[case])
    sites = {(a.file, a.line): a for a in allocations}
    try:
        tr.prepare(name)
    except ImportError as exc:  # a CUDA-only module the stand-ins do not cover: its entries stay read
        pytest.skip(f"{name}: {exc}")
    with tr.recording(vllm_root, "real") as rec:
        try:
            tr.HARNESSES[name](ints, "cpu")
        except Exception:  # noqa: BLE001 - the int run may stop where the symbolic one stopped
            pass
    compared = 0
    seen = set()
    for r in rec.records:
        a = tr._matches(r, sites)
        if a is None or a.id in seen or a.id not in entries or a.owner in tr.FOREIGN_OWNERS.get(name, ()):
            continue
        seen.add(a.id)
        e = entries[a.id]
        names = dict(ints)
        # config names of the attention harnesses, at the ints those harnesses used
        from capproof.engines.vllm import harness_attention

        for k in e.params:
            if k not in names and k != "block_table_width":
                names[k] = harness_attention.int_value(k)
        if "block_table_width" in e.params:
            from vllm.v1.worker.block_table import get_block_table_width

            names["block_table_width"] = get_block_table_width(ints["max_num_blocks"], ints["block_size"])
        assert tuple(inv.evaluate(x, **names) for x in e.shape) == r.shape, (a.id, e.shape)
        assert e.dtype == r.dtype, a.id
        compared += 1
    if compared == 0:
        pytest.skip(f"{name}: the symbolic run stopped before its first allocation (entries stay read)")


def _real_run_ids(vllm_root, allocations, ints) -> set[str]:
    """Ids of the scanned allocations the harnesses' real int runs (real torch/numpy) allocate."""
    sites = {(a.file, a.line): a for a in allocations}
    ids = set()
    for name in _harness_names():
        try:
            tr.prepare(name)
        except ImportError:
            continue
        with tr.recording(vllm_root, "real") as rec:
            try:
                tr.HARNESSES[name](dict(ints), "cpu")
            except Exception:  # noqa: BLE001 - as in the comparison test
                pass
        ids.update(a.id for a in (tr._matches(r, sites) for r in rec.records) if a is not None)
    return ids


WORKER_DIRS = (
    "vllm/v1/worker/",
    "vllm/v1/spec_decode/",
    "vllm/model_executor/layers/fused_moe/moe_align_block_size.py",
)


@pytest.mark.real
def test_every_traced_worker_entry_is_compared_on_ints(traced, vllm_root):
    """Every traced entry under vllm/v1/worker/, vllm/v1/spec_decode/ and moe_align_block_size.py
    is allocated by the real int run of some harness in one of the CASES (a buffer allocated only
    when ``dcp > 1`` in the second), so ``test_traced_shapes_equal_real_int_construction`` compared
    its expression with a real shape (an entry traced only symbolically would be unchecked)."""
    entries, allocations = traced
    want = {i for i, e in entries.items() if e.file.startswith(WORKER_DIRS)}
    assert len(want) > 100
    compared = set()
    for ints in CASES:
        compared |= _real_run_ids(vllm_root, allocations, ints)
    missing = sorted(want - compared)
    assert not missing, "\n".join(missing)
