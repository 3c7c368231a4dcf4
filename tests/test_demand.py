"""Access sites (capproof/engines/tracing/accesses.py) and demands derived by running the engine's
code (capproof/engines/vllm/demand.py), with the inventory helpers that read them back.

Fast tier: the AST reader on a small source, the symbolic gcd, ``capproof.inventory.demand`` and
``bound_name`` on the committed inventory. Real tier (``@pytest.mark.real``, ``make verify-real``):
the committed derived expressions, evaluated at ints, equal what vLLM 0.33.0's own functions
return when called with those ints (the same agreement the traced shapes have).
"""

from __future__ import annotations

import os
import textwrap

import pytest
import z3

from capproof.engines.tracing.accesses import accesses_in_file, attribute_name
from capproof.engines.vllm.demand import symbolic_gcd
from capproof.errors import SpecError
from capproof.inventory import Entry, bound_name, demand, derived, load
from capproof.symbolic import SymInt, to_z3_int

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INV = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json")
BT = "vllm/v1/worker/block_table.py::BlockTable.block_table"


def test_accesses_record_dimension_extent_and_kind(tmp_path):
    src = tmp_path / "bt.py"
    src.write_text(
        textwrap.dedent("""
        class BlockTable:
            def append_row(self, block_ids, row_idx):
                start = self.n[row_idx]
                self.block_table.np[row_idx, start : start + len(block_ids)] = block_ids
            def commit(self, num_reqs):
                self.block_table.copy_to_gpu(num_reqs)
                kernel(self.block_table.gpu, num_reqs)
                return self.block_table.gpu[:num_reqs]
    """)
    )
    found = accesses_in_file(str(src), "vllm/x.py", "block_table")
    got = [(a["line"], a["dim"], a["extent"], a["op"]) for a in found]
    assert got == [
        (5, 0, "row_idx", "index.np write"),
        (5, 1, "start:start + len(block_ids)", "slice.np write"),
        (7, 0, "num_reqs", "copy_to_gpu (slice)"),
        (8, None, "whole", "passed to kernel"),
        (9, 0, "num_reqs", "slice.gpu read"),
    ]
    assert all(a["how"] == "ast" and a["file"] == "vllm/x.py" for a in found)
    assert attribute_name("_dcp_verify_buffers#2") == "_dcp_verify_buffers"
    assert attribute_name("input_batch.prev_sampled_token_ids") == "prev_sampled_token_ids"
    assert attribute_name("tables[]") == "tables"


def test_symbolic_gcd_equals_math_gcd_at_every_block_size():
    import math

    n = SymInt.var("n")
    g = symbolic_gcd(128, n)
    for value in range(1, 600):
        sub = z3.simplify(z3.substitute(to_z3_int(g), (z3.Int("n"), z3.IntVal(value))))
        assert sub.as_long() == math.gcd(128, value)
    assert symbolic_gcd(12, 18) == 6
    with pytest.raises(TypeError):
        symbolic_gcd(96, n)  # not a power of two: no exact chain


def test_committed_block_table_demand_reads_back():
    """The committed derivation of the runner block table (vLLM 0.33.0): columns are
    cdiv(tokens, block_size * dcp) for a DCP-sharded spec, the width is vLLM's 128-token-aligned
    width; values from vLLM's formulas at the #50302 report's L = 350,000, bs = 64, dcp = 1."""
    ents = load(INV)
    rec = derived(ents, BT, 1)
    assert rec["how"] == "executed" and any("allocate_new_blocks" in f for f in rec["from"])
    names = dict(max_model_len=350_000, block_size=64, dcp=1, dcp_sharded=1)
    assert demand(ents, BT, 1, num_tokens_need_slot=350_000, **names) == 5469
    assert bound_name(ents, BT, 1, "block_table_width", **names) == 5470  # aligned to 128 tokens
    assert bound_name(ents, BT, 1, "block_table_width", **{**names, "dcp": 2, "max_model_len": 2**20}) == 8192
    rows = derived(ents, BT, 0)
    assert rows["facts"][0]["checked"] and not rows["facts"][0]["paths"]["not checked"]
    # FULL-graph uniform decode: min(padded tokens // (1 + K), max_num_reqs); unpadded: at most max_num_reqs
    # (beyond it the scheduler's assert has stopped the engine: no access)
    row = dict(max_num_reqs=256, num_reqs=3, num_tokens_padded=512, uniform_decode_query_len=4)
    assert demand(ents, BT, 0, full_uniform_decode=1, padded=1, **row) == 128
    assert demand(ents, BT, 0, full_uniform_decode=0, padded=1, **row) == 256
    assert demand(ents, BT, 0, full_uniform_decode=0, padded=0, **row) == 3
    assert demand(ents, BT, 0, full_uniform_decode=0, padded=0, **{**row, "num_reqs": 300}) == 0
    with pytest.raises(SpecError, match="no derived demand for dimension 5"):
        derived(ents, BT, 5)
    # the kernel block table (#50823's case: dcp 2, 1M context, bs 64 split into 32-token kernel blocks):
    # the runner's columns times 2 equal the layer-spec width times 2, both 16384
    kbt = "vllm/v1/worker/utils.py::AttentionGroup.kernel_block_table"
    names = dict(max_model_len=2**20, block_size=64, kernel_block_size=32, dcp=2, dcp_sharded=1)
    assert demand(ents, kbt, 2, **names) == bound_name(ents, kbt, 2, "width", **names) == 16384


# ------------------------------------------------------------------------------------------------
# real tier: the derivation agrees with vLLM's own functions on ints


@pytest.fixture(scope="module")
def vllm_code():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need


@pytest.mark.real
@pytest.mark.parametrize("sharded", [True, False])
def test_block_table_columns_agree_with_vllm_on_ints(vllm_code, sharded):
    from types import SimpleNamespace

    from vllm.v1.core.single_type_kv_cache_manager import FullAttentionManager
    from vllm.v1.kv_cache_interface import AttentionSpec
    from vllm.v1.worker.block_table import get_block_table_width

    from capproof.engines.vllm.demand import _BlockPool

    ents = load(INV)
    for L, bs, dcp, n in [(350_000, 64, 1, 350_000), (2**20, 64, 2, 2**20 - 5), (9416, 32, 4, 17), (4096, 48, 8, 4096)]:
        spec = SimpleNamespace(block_size=bs, dcp_sharded=sharded, sliding_window=None, attention_chunk_size=None)
        pool = _BlockPool()
        FullAttentionManager(spec, pool, False, 0, bs, dcp_world_size=dcp, pcp_world_size=1).allocate_new_blocks(
            "r", n, n
        )
        cfg = SimpleNamespace(parallel_config=SimpleNamespace(decode_context_parallel_size=dcp))
        width = get_block_table_width(AttentionSpec.max_num_blocks_per_req(spec, cfg, L), bs)
        names = dict(max_model_len=L, block_size=bs, dcp=dcp, dcp_sharded=int(sharded))
        assert demand(ents, BT, 1, num_tokens_need_slot=n, **names) == pool.asked
        assert bound_name(ents, BT, 1, "block_table_width", **names) == width


@pytest.mark.real
def test_committed_demands_are_what_the_engine_derives_now(vllm_code):
    """``capproof inventory --check`` compares the whole file; this names the derivation that went stale."""
    from capproof.engines.vllm.demand import DERIVATIONS
    from capproof.engines.vllm.wheels import _src

    # (the inventory's later pass over uses in other files adds ``unchecked_uses`` to a derived demand)
    added = ("unchecked_uses", "unchecked_uses_count")
    committed = {e.id: [{k: v for k, v in d.items() if k not in added} for d in e.demands] for e in load(INV)}
    for ident, derive in DERIVATIONS.items():
        assert derive(_src()) == committed[ident], ident


def test_fake_tensors_record_the_subscripts_the_engine_makes(tmp_path):
    """A buffer allocated by "engine" code (any file under the recorder's root) records each
    subscript the engine makes of it, followed through ``.to(device)``; the inventory prints the
    terms (``executed_accesses``)."""
    import importlib.util
    from types import SimpleNamespace

    from capproof.engines.tracing.fake import recording
    from capproof.engines.tracing.run import executed_accesses

    eng = tmp_path / "eng"
    eng.mkdir()
    (eng / "mod.py").write_text(
        textwrap.dedent("""
        import numpy as np
        def build(n):
            buf = np.zeros((n, 4)).to("cpu")
            buf[:n - 1, 2] = 1
            return buf[n - 2]
    """)
    )
    spec = importlib.util.spec_from_file_location("eng_mod", eng / "mod.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with recording(str(tmp_path)) as rec:
        mod.build(SymInt.var("n"))
    got = executed_accesses(SimpleNamespace(POSITIVE=("n",), NONNEGATIVE=()), rec.records)
    assert [(a["file"], a["line"], a["dim"], a["extent"], a["op"], a["how"]) for a in got] == [
        ("eng/mod.py", 5, 0, "-1 + n", "slice write", "executed"),
        ("eng/mod.py", 5, 1, "2", "index write", "executed"),
        ("eng/mod.py", 6, 0, "-2 + n", "index read", "executed"),
    ]


_SCHED = """
class Scheduler:
    def __init__(self):
        self.max_num_running_reqs = self.scheduler_config.max_num_seqs
    def schedule(self):
        assert len(self.running) <= self.max_num_running_reqs
        assert len(scheduled_new_reqs) + len(scheduled_resumed_reqs) + len(scheduled_running_reqs) <= len(self.running)
"""
_RUNNER = """
class GPUModelRunner:
    def _update_states(self, out):
        for req_id in unscheduled_req_ids:
            self.input_batch.remove_request(req_id)
    def _dummy_run(self, num_tokens, mixed, uniform):
        max_num_reqs = self.scheduler_config.max_num_seqs
        if mixed:
            num_decode_tokens = min(max_num_reqs - 1, num_tokens // 2)
            num_reqs = num_decode_tokens + 1
        else:
            num_reqs = NUM_REQS
"""


@pytest.mark.parametrize("dummy, checked", [("min(num_tokens, max_num_reqs)", True), ("num_tokens", False)])
def test_unpadded_request_bound_is_checked_on_every_path_that_sets_it(tmp_path, dummy, checked):
    """The fact behind the block table's rows is checked only when every assignment of the
    dummy run's ``num_reqs`` is bounded by ``max_num_reqs`` (and the scheduler's asserts are there):
    a dummy run of ``num_tokens`` requests leaves it unchecked, naming the line."""
    from capproof.engines.vllm.demand import unpadded_requests_bound

    (tmp_path / "vllm/v1/core/sched").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/core/sched/scheduler.py").write_text(_SCHED)
    (tmp_path / "vllm/v1/core/sched/interface.py").write_text("")
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_RUNNER.replace("NUM_REQS", dummy))
    fact = unpadded_requests_bound(str(tmp_path))
    assert fact["checked"] is checked
    if not checked:
        assert fact["paths"]["not checked"] == [
            "vllm/v1/worker/gpu_model_runner.py:10,12 (_dummy_run: num_reqs = min(..., max_num_reqs)); not of that form: [12]"
        ]


# ------------------------------------------------------------------------------------------------
# request rows: every access of a per-request buffer bound (AST) to the step's request count

_ROW_RUNNER = """\
class GPUModelRunner:
    def _prepare_inputs(self, out):
        num_reqs = self.input_batch.num_reqs
        self.seq_lens[:num_reqs] = 1
        self._helper(num_reqs)
        self._helper(EXTENT)

    def _helper(self, num_reqs):
        self.prev[:num_reqs] = 0

    def execute_model(self, out):
        num_reqs = self.input_batch.num_reqs
        batch_desc = self.dispatch(num_reqs)
        num_reqs_padded = (
            batch_desc.num_reqs if batch_desc.num_reqs is not None else num_reqs
        )
        self._build(num_reqs=num_reqs, num_reqs_padded=num_reqs_padded)
        self._build(num_reqs=num_reqs)

    def _build(self, num_reqs, num_reqs_padded=None):
        num_reqs_padded = num_reqs_padded or num_reqs

        def nested():
            return self.seq_lens[:num_reqs_padded]
        return nested()
"""


def _row_entry(attribute, accesses):
    from capproof.inventory import Entry

    return Entry(
        id=f"vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.{attribute}",
        file="vllm/v1/worker/gpu_model_runner.py",
        line=1,
        owner="GPUModelRunner",
        attribute=attribute,
        dtype="int32",
        shape=["max_num_reqs"],
        how="traced",
        accesses=accesses,
    )


@pytest.mark.parametrize("extent, kinds", [("num_reqs", ["unpadded"]), ("0", ["unpadded"]), ("len(self.x)", None)])
def test_request_rows_follow_parameters_to_every_call_site(tmp_path, extent, kinds):
    """A slice by a parameter is bound only when every call site in the file passes a request
    count (a literal 0 is no rows); one call with another expression leaves the entry underived."""
    from capproof.engines.vllm.demand import request_rows_accesses

    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_ROW_RUNNER.replace("EXTENT", extent))
    e = _row_entry("prev", [{"line": 9, "dim": 0, "op": "slice write", "extent": "num_reqs", "how": "ast"}])
    reasons: dict = {}
    got = request_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got[0] if got else None) == kinds
    if kinds is None:
        assert reasons[e.id] == "9 slice write 'num_reqs'"


def test_request_rows_padded_through_closure_and_or_fallback(tmp_path):
    """``num_reqs_padded or num_reqs`` with a ``None`` default, read in a nested function: the
    dispatcher's padded count or the unpadded one (the padded extent bounds both)."""
    from capproof.engines.vllm.demand import request_rows_accesses

    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_ROW_RUNNER.replace("EXTENT", "num_reqs"))
    e = _row_entry(
        "seq_lens",
        [
            {"line": 4, "dim": 0, "op": "slice write", "extent": "num_reqs", "how": "ast"},
            {"line": 24, "dim": 0, "op": "slice read", "extent": "num_reqs_padded", "how": "ast"},
        ],
    )
    kinds, sites = request_rows_accesses(e, str(tmp_path), {})
    assert kinds == ["padded", "unpadded"]
    assert sites[1].endswith("[:num_reqs_padded] in nested (padded)")


@pytest.mark.parametrize(
    "access",
    [
        {"line": 4, "dim": None, "op": "numpy", "extent": "whole", "how": "ast"},  # an alias the tracer does not follow
        {"line": 4, "dim": None, "op": "passed to self.drafter.x", "extent": "whole", "how": "ast"},
        {"line": 4, "dim": 0, "op": "index write", "extent": "req_index", "how": "ast"},
    ],
)
def test_request_rows_refuse_an_access_they_cannot_bound(tmp_path, access):
    from capproof.engines.vllm.demand import request_rows_accesses

    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_ROW_RUNNER.replace("EXTENT", "num_reqs"))
    e = _row_entry("seq_lens", [{"line": 4, "dim": 0, "op": "slice write", "extent": "num_reqs", "how": "ast"}, access])
    assert request_rows_accesses(e, str(tmp_path), {}) is None


@pytest.mark.real
def test_committed_request_rows_are_what_the_engine_derives_now(vllm_code):
    """The request-row demands (``derive_request_rows``) re-derived from the wheel's source equal the
    committed ones, and every entry the committed inventory marks verified by them is re-derived."""
    from capproof.engines.vllm.demand import derive_request_rows
    from capproof.engines.vllm.wheels import _src

    committed = {e.id: e.demands for e in load(INV)}
    fresh = load(INV)
    for e in fresh:
        if any(d.get("family") == "request rows" for d in e.demands):
            e.demands = []
        # the accesses in other files the inventory's later pass appended (foreign_uses) are not
        # what derive_request_rows reads: it runs before that pass
        e.accesses = [a for a in e.accesses if a.get("file") in (None, e.file)]
    done = derive_request_rows(fresh, _src())
    # request rows of the same family derived by other passes, each with its own real-tier test:
    # the V2 slot rows (demand_slots, tests/test_fact_slots.py) and the V1 drafters' staging rows
    # (demand_drafter_rows, tests/test_vllm_drafter_rows.py)
    others = (
        "vllm/v1/worker/gpu/states.py RequestState slots",
        "vllm/v1/worker/gpu_input_batch.py InputBatch.num_reqs = len",
    )

    def by_this_pass(x: dict) -> bool:
        first = x.get("from") or [""]
        return x.get("family") == "request rows" and x.get("via") != "views" and not str(first[0]).startswith(others)

    assert sorted(done) == sorted(i for i, d in committed.items() if any(by_this_pass(x) for x in d))
    assert len(done) >= 10
    for e in fresh:
        if e.id in done:
            assert e.demands == committed[e.id], e.id


_ROW_BATCH = """\
class InputBatch:
    def _register_add_request(self, request):
        new_req_index = self.num_reqs
        assert new_req_index < self.max_num_reqs
        return new_req_index

    def add_request(self, request):
        req_index = self._register_add_request(request)
        self.flags[req_index] = True
        other = request.index
        self.flags[other] = False

    @property
    def num_reqs(self):
        return len(self.req_id_to_index)
"""


@pytest.mark.parametrize("line, derived_ok", [(9, True), (11, False)])
def test_request_rows_index_bounded_only_by_the_engines_assert(tmp_path, line, derived_ok):
    """An index is bounded when it comes from ``_register_add_request``, whose assert is found; an
    index from anywhere else refuses the entry. An executed subscript is re-read from its line."""
    from capproof.engines.vllm.demand import request_rows_accesses
    from capproof.inventory import Entry

    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_input_batch.py").write_text(_ROW_BATCH)
    e = Entry(
        id="vllm/v1/worker/gpu_input_batch.py::InputBatch.flags",
        file="vllm/v1/worker/gpu_input_batch.py",
        line=1,
        owner="InputBatch",
        attribute="flags",
        dtype="bool",
        shape=["max_num_reqs"],
        how="traced",
        accesses=[{"line": line, "dim": 0, "op": "index", "extent": "0", "how": "executed"}],
    )
    got = request_rows_accesses(e, str(tmp_path), {})
    assert (got is not None) is derived_ok
    if derived_ok:
        assert got[0] == ["indexed"] and "assert at vllm/v1/worker/gpu_input_batch.py:4" in got[1][0]


# ------------------------------------------------------------------------------------------------
# engine-neutral derivation helpers and SGLang's graph-row classification (fast: no engine import)


def _padded(raw_size, buckets):
    assert raw_size <= buckets[-1], f"size {raw_size} exceeds max captured bucket {buckets[-1]}"
    import bisect

    return buckets[bisect.bisect_left(buckets, raw_size)]


def test_without_assert_messages_runs_a_failing_assert_path_as_a_stop():
    """An f-string assert message would format a symbolic size (NotConcreteError); recompiled
    without it, the failing path is an AssertionError, which all_paths counts as extent 0."""
    import z3

    from capproof.engines.tracing.derive import all_paths, without_assert_messages
    from capproof.symbolic import SymInt

    raw, top = SymInt.var("raw"), SymInt.var("top")
    assume = [z3.Int("raw") >= 1, z3.Int("top") >= 2]
    with pytest.raises(RuntimeError, match="NotConcreteError"):
        all_paths(lambda: _padded(raw, [1, top]), assume)
    pad = without_assert_messages(_padded)
    value, notes = all_paths(lambda: pad(raw, [1, top]), assume)
    s = z3.Solver()
    s.add(
        *assume,
        z3.Not(
            z3.If(z3.Int("raw") > z3.Int("top"), value == 0, z3.And(value >= z3.Int("raw"), value <= z3.Int("top")))
        ),
    )
    assert s.check() == z3.unsat
    assert notes and "stop at an engine assert" in notes[0]


def _grid_tier(total, grid):
    if total > grid[-1]:
        raise ValueError(f"total {total} exceeds max grid tier {grid[-1]}")
    import bisect

    return grid[bisect.bisect_left(grid, total)]


def test_without_assert_messages_drops_raise_messages_when_asked():
    """SGLang's round_up_grid raises ValueError(f"total {total} ..."): with ``raises`` the message is
    dropped, the same class is raised on the same path, and the other path still returns a tier."""
    from capproof.engines.tracing.derive import without_assert_messages
    from capproof.errors import NotConcreteError
    from capproof.symbolic import SymInt

    with pytest.raises(NotConcreteError):
        f"{SymInt.var('total')}"  # formatting a symbolic size is refused, hence the option
    tier = without_assert_messages(_grid_tier, raises=True)
    with pytest.raises(ValueError) as exc:
        tier(9, [2, 4])
    assert exc.value.args == ()
    assert tier(3, [2, 4]) == 4
    assert without_assert_messages(_grid_tier)(3, [2, 4]) == 4


RUNNER_SRC = """
class R:
    def capture_one_shape(self, size, forward):
        num_seqs = size
        buffers = self.buffers
        num_tokens = num_seqs * self.captured_req_width
        a = buffers.seq_lens[:num_seqs]
        b = buffers.positions[:num_tokens]

    def execute(self, forward_batch):
        buffers = self.buffers
        raw_bs = forward_batch.batch_size
        raw_num_token = raw_bs * self.captured_req_width
        bs = self._pad_to_bucket(raw_bs, self.capture_bs)
        buffers.seq_lens.fill_(1)
        buffers.seq_lens[:raw_bs].copy_(forward_batch.seq_lens)
        buffers.positions[:raw_num_token].copy_(forward_batch.positions)
        forward_batch.seq_lens = buffers.seq_lens[:bs]
        if buffers.extra is not None:
            buffers.extra[:bs].zero_()
        buffers.bad[raw_bs] = 0
"""


def test_graph_rows_classify_every_use_of_a_runner_buffer():
    import ast

    from capproof.engines.sglang.demand import _Reject, graph_uses

    tree = ast.parse(RUNNER_SRC)
    uses = graph_uses(tree, "buffers.seq_lens", 1)
    assert sorted(k for _, (k,) in uses if k) == [
        ("rows", "captured", False),
        ("rows", "padded", False),
        ("rows", "raw", False),
    ]
    assert {k for _, (k,) in graph_uses(tree, "buffers.positions", 1)} == {
        ("tokens", "captured", False),
        ("tokens", "raw", False),
    }
    assert [k for _, (k,) in graph_uses(tree, "buffers.extra", 1)] == [("rows", "padded", False)]
    with pytest.raises(_Reject, match="not a slice from 0"):
        graph_uses(tree, "buffers.bad", 1)  # an index by the raw batch: not derived


def test_graph_rows_reject_a_raw_slice_before_the_padding():
    import ast

    from capproof.engines.sglang.demand import _Reject, graph_uses

    src = RUNNER_SRC.replace(
        "        bs = self._pad_to_bucket(raw_bs, self.capture_bs)\n        buffers.seq_lens.fill_(1)\n",
        "        buffers.seq_lens.fill_(1)\n        x = buffers.early[:raw_bs]\n        bs = self._pad_to_bucket(raw_bs, self.capture_bs)\n",
    )
    with pytest.raises(_Reject):
        graph_uses(ast.parse(src), "buffers.early", 1)


_INPUT_BATCH = """
class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids: list = []
        self.temperature_cpu_tensor = torch.empty((max_num_reqs,))
        self.temperature_cpu = self.temperature_cpu_tensor.numpy()

    def _register_add_request(self, request):
        new_req_index = self.num_reqs
        assert new_req_index < self.max_num_reqs
        return new_req_index

    def add_request(self, request):
        req_index = self._register_add_request(request)
        if req_index == len(self._req_ids):
            self._req_ids.append(request.req_id)
        else:
            self._req_ids[req_index] = request.req_id
        self.temperature_cpu[req_index] = request.temperature

    def swap_states(self, i1, i2):
        old = self._req_ids[i1], self._req_ids[i2]
        GUARD
        self.temperature_cpu[i1], self.temperature_cpu[i2] = self.temperature_cpu[i2], self.temperature_cpu[i1]
"""


@pytest.mark.parametrize(
    "guard, derived",
    [
        ("pass", True),  # the list subscripts above raise IndexError before the buffer is touched
        ("i1 = i1 + 1", False),  # reassigned after the guard: no longer bounded by the list
        ("self._req_ids.extend(old)", False),  # the list grows otherwise: its length fact fails
    ],
)
def test_request_rows_through_numpy_alias_and_list_guard(tmp_path, guard, derived):
    """``self.x = self.x_tensor.numpy()`` is followed; ``buf[i]`` after ``self._req_ids[i]`` is
    bounded by the list, whose only growth is the register-asserted append."""
    from capproof.engines.tracing.accesses import accesses_in_file
    from capproof.engines.vllm.demand import request_rows_accesses

    f = "vllm/v1/worker/gpu_input_batch.py"
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / f).write_text(_INPUT_BATCH.replace("GUARD", guard))
    e = Entry(
        id=f"{f}::InputBatch.temperature_cpu_tensor",
        file=f,
        line=6,
        owner="InputBatch",
        attribute="temperature_cpu_tensor",
        dtype="float32",
        shape=["max_num_reqs"],
        accesses=accesses_in_file(str(tmp_path / f), f, "temperature_cpu_tensor"),
    )
    reasons = {}
    got = request_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got is not None) is derived, reasons
    if derived:
        assert got[0] == ["indexed"]
        assert any("IndexError past the list" in s and ".numpy()" in s for s in got[1])


_MAP_BATCH = """
class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids: list = []
        self.req_id_to_index = {}
        self.lora = torch.empty((max_num_reqs,))

    def _register_add_request(self, request):
        new_req_index = self.num_reqs
        assert new_req_index < self.max_num_reqs
        return new_req_index

    def add_request(self, request):
        req_index = self._register_add_request(request)
        if req_index == len(self._req_ids):
            self._req_ids.append(request.req_id)
        else:
            self._req_ids[req_index] = request.req_id
        self.req_id_to_index[request.req_id] = req_index

    def remove_request(self, req_id):
        req_index = self.req_id_to_index.pop(req_id, None)
        self.lora[req_index] = 0

    def condense(self, last_req_index, empty):
        while empty:
            empty_index = empty.pop()
            if empty_index >= last_req_index:
                break
            req_id = self._req_ids[last_req_index]
            self.req_id_to_index[req_id] = STORED
"""


@pytest.mark.parametrize("stored, derived", [("empty_index", True), ("last_req_index + 1", False)])
def test_request_rows_index_by_a_req_id_to_index_value(tmp_path, stored, derived):
    """``buf[self.req_id_to_index.pop(...)]`` is bounded when every store into the map is a
    register-asserted index, a swap, or an index below a list-guarded one; any other store refuses."""
    from capproof.engines.tracing.accesses import accesses_in_file
    from capproof.engines.vllm.demand import request_rows_accesses

    f = "vllm/v1/worker/gpu_input_batch.py"
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / f).write_text(_MAP_BATCH.replace("STORED", stored))
    e = Entry(
        id=f"{f}::InputBatch.lora",
        file=f,
        line=7,
        owner="InputBatch",
        attribute="lora",
        dtype="int32",
        shape=["max_num_reqs"],
        accesses=[a for a in accesses_in_file(str(tmp_path / f), f, "lora") if a["line"] != 7],
    )
    reasons = {}
    got = request_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got is not None) is derived, reasons
    if derived:
        assert got[0] == ["indexed"]
        assert any("req_id_to_index values < max_num_reqs" in s and "(swap)" not in s for s in got[1])
