"""A step's token count derived from vLLM's code (capproof/engines/vllm/demand_requests.py).

Fast tier: the scheduler's input-budget check, the capture-size check and the token-row linking on
small sources written here (one mutation each that must leave the fact unchecked or the entry
underived), and the expression helpers. Real tier (``@pytest.mark.real``): the padded token count
run through vLLM 0.33.0's own ``_determine_batch_execution_and_padding`` and the committed token
rows re-derived from the wheel.
"""

from __future__ import annotations

import os

import pytest

from capproof.engines.vllm import demand_requests as R
from capproof.inventory import Entry, evaluate, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INV = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json")

_SCHED = """\
class Scheduler:
    def schedule(self):
        num_scheduled_tokens = {}
        token_budget = self.max_num_scheduled_tokens
        spec = self.vllm_config.speculative_config
        draft_slots = spec.max_num_new_slots_for_drafting if spec is not None else 0
        input_budget = self.scheduler_config.max_num_batched_tokens
        for request in self.running:
            if preempt:
                restored = num_scheduled_tokens.pop(victim)
                token_budget += restored
                input_budget += restored + draft_slots
            num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens
            input_budget -= num_new_tokens + draft_slots
        total_num_scheduled_tokens = sum(num_scheduled_tokens.values())
        assert total_num_scheduled_tokens <= self.max_num_scheduled_tokens
        assert input_budget >= 0
"""
_SPEC = """\
class SpeculativeConfig:
    def max_num_new_slots_for_drafting(self):
        num_draft_tokens = self.num_speculative_tokens
        if self.parallel_drafting:
            return num_draft_tokens - 1
        return 0
"""


def _tree(tmp_path, sched=_SCHED, spec=_SPEC):
    (tmp_path / "vllm/v1/core/sched").mkdir(parents=True)
    (tmp_path / "vllm/config").mkdir(parents=True)
    (tmp_path / "vllm/v1/core/sched/scheduler.py").write_text(sched)
    (tmp_path / "vllm/v1/core/sched/interface.py").write_text("")
    (tmp_path / "vllm/config/speculative.py").write_text(spec)
    return str(tmp_path)


def test_scheduled_tokens_bound_checked_on_the_engines_budget(tmp_path):
    fact = R.scheduled_tokens_bound(_tree(tmp_path))
    assert fact["checked"] is True, fact["paths"]
    assert fact["fact"].startswith("num_tokens <= max_num_batched_tokens")
    assert any(
        ":13 (num_scheduled_tokens[...] = num_new_tokens, taken out" in p for p in fact["paths"]["checked (ast)"]
    )


@pytest.mark.parametrize(
    "old, new, why",
    [
        # tokens recorded without being taken out of the input budget
        (
            "            input_budget -= num_new_tokens + draft_slots\n",
            "",
            ":13 (num_scheduled_tokens[...] = num_new_tokens: not",
        ),
        # the budget starts from another quantity (the scheduled-token cap, which a flag may raise)
        (
            "input_budget = self.scheduler_config.max_num_batched_tokens",
            "input_budget = token_budget",
            "input_budget = max",
        ),
        # the final assert is gone: nothing stops a step past the budget
        ("        assert input_budget >= 0\n", "", "assert input_budget >= 0"),
        # a give-back larger than what was taken
        ("input_budget += restored + draft_slots", "input_budget += 2 * restored", "another change of input_budget"),
    ],
)
def test_scheduled_tokens_bound_unchecked_when_the_budget_is_broken(tmp_path, old, new, why):
    assert old in _SCHED
    fact = R.scheduled_tokens_bound(_tree(tmp_path, sched=_SCHED.replace(old, new)))
    assert fact["checked"] is False
    assert any(why in p for p in fact["paths"]["not checked"]), fact["paths"]["not checked"]


def test_negative_draft_slots_leave_the_token_bound_unchecked(tmp_path):
    spec = _SPEC.replace("return 0\n", "return -1\n")
    fact = R.scheduled_tokens_bound(_tree(tmp_path, spec=spec))
    assert fact["checked"] is False
    assert any("draft_slots" in p for p in fact["paths"]["not checked"])


def test_substitute_replaces_whole_names_only():
    got = R._substitute(
        "maximum(num_tokens, num_tokens_other_rank)", {"num_tokens": "select(num_tokens <= m, num_tokens, 0)"}
    )
    assert got == "maximum(select(num_tokens <= m, num_tokens, 0), num_tokens_other_rank)"


def test_leaves_are_every_value_an_if_tree_returns():
    import z3

    a, b, c = z3.Ints("a b c")
    t = z3.If(a > b, z3.If(b > c, a, z3.IntVal(0)), c)
    assert sorted(str(x) for x in R.path_leaves(t)) == ["0", "a", "c"]


_RUNNER = """\
class GPUModelRunner:
    def __init__(self, scheduler_config):
        self.max_num_tokens = scheduler_config.max_num_batched_tokens

    def _prepare_inputs(self, scheduler_output):
        total_num_scheduled_tokens = scheduler_output.total_num_scheduled_tokens
        self.req_indices.np[:total_num_scheduled_tokens] = 0

    def execute_model(self, scheduler_output):
        (mode, batch_desc, ub) = self._determine_batch_execution_and_padding(num_tokens=1)
        num_tokens_padded = batch_desc.num_tokens
        self._mask(1, num_tokens_padded)

    def _mask(self, num_tokens_unpadded, num_tokens_padded):
        return self.is_padding[:num_tokens_padded]

    def _dummy_run(self, num_tokens):
        assert num_tokens <= self.max_num_tokens
        self._mask(0, num_tokens)
        self._mask(0, DUMMY)
"""


def _entry(attribute, accesses):
    return Entry(
        id=f"vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.{attribute}",
        file="vllm/v1/worker/gpu_model_runner.py",
        line=1,
        owner="GPUModelRunner",
        attribute=attribute,
        dtype="int32",
        shape=["max_num_batched_tokens"],
        how="traced",
        accesses=accesses,
    )


@pytest.mark.parametrize(
    "dummy, kinds",
    [
        ("num_tokens", ["padded"]),  # the dummy run's count, asserted before the call: joined with the padded one
        ("num_tokens + 1", None),  # not a bound count
        ("len(self.x)", None),
    ],
)
def test_token_rows_follow_every_call_site(tmp_path, dummy, kinds):
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_RUNNER.replace("DUMMY", dummy))
    e = _entry("is_padding", [{"line": 15, "dim": 0, "op": "slice read", "extent": "num_tokens_padded", "how": "ast"}])
    reasons: dict = {}
    got = R.token_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got[0] if got else None) == kinds
    if kinds is None:
        assert reasons[e.id] == "15 slice read 'num_tokens_padded'"


def test_token_rows_refuse_an_index_or_a_kernel(tmp_path):
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_RUNNER.replace("DUMMY", "num_tokens"))
    ok = {"line": 7, "dim": 0, "op": "slice.np write", "extent": "total_num_scheduled_tokens", "how": "ast"}
    assert R.token_rows_accesses(_entry("req_indices", [ok]), str(tmp_path), {})[0] == ["unpadded"]
    for bad in (
        {"line": 7, "dim": 0, "op": "index.gpu read", "extent": "logits_indices", "how": "ast"},
        {"line": 7, "dim": None, "op": "passed to kernel", "extent": "whole", "how": "ast"},
    ):
        assert R.token_rows_accesses(_entry("req_indices", [ok, bad]), str(tmp_path), {}) is None


def test_committed_token_rows_are_bounded_by_max_num_batched_tokens():
    """The committed extent evaluated at ints: at most max_num_batched_tokens whatever the counts
    (past the bound the checked facts make the engine stop), and the count itself below it."""
    rows = [e for e in load(INV) if any(d.get("family") == "token rows" for d in e.demands)]
    assert rows, "no token rows derived in the committed inventory"
    for e in rows:
        d = next(d for d in e.demands if d.get("family") == "token rows")
        assert d["how"] == "executed" and all(f["checked"] for f in d["facts"])
        base = dict.fromkeys(R.TOKEN_NAMES, 1)
        for mnbt, big in ((8192, 9000), (8192, 8192), (2048, 100)):
            names = {**base, "max_num_batched_tokens": mnbt, "num_tokens": big, "capture_size": big}
            got = evaluate(d["extent"], **names)
            assert got <= mnbt
            assert got == (big if big <= mnbt else 1)


# ------------------------------------------------------------------------------------------------
# real tier


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
def test_padded_tokens_run_through_vllms_dispatch(vllm_code):
    """Every path of vLLM 0.33.0's ``_determine_batch_execution_and_padding`` returns the step's own
    count, the other DP rank's, or a capture size (the padding table's value): nothing else."""
    extent, notes = R.padded_tokens()
    assert extent == (
        "maximum(num_tokens, maximum(num_tokens_other_rank, maximum(capture_size, "
        "maximum(capture_size_dp, capture_size_other_rank))))"
    )
    assert any("stop at an engine assert" in n for n in notes)


@pytest.mark.real
def test_committed_token_rows_are_what_the_engine_derives_now(vllm_code):
    from capproof.engines.vllm.wheels import _src

    committed = {e.id: e.demands for e in load(INV)}
    fresh = load(INV)
    for e in fresh:
        if any(d.get("family") == "token rows" for d in e.demands):
            e.demands = []
    done = R.derive_token_rows(fresh, _src())
    assert sorted(done) == sorted(i for i, d in committed.items() if any(x.get("family") == "token rows" for x in d))
    for e in fresh:
        if e.id in done:
            assert e.demands == committed[e.id], e.id


_VIEWS = """\
class GPUModelRunner:
    def _build(self, num_reqs):
        m = self.lens_cpu.numpy()[:num_reqs].max()
        self.lens.copy_(self.lens_cpu, non_blocking=True)
        n = self.lens_cpu.numpy()[1:num_reqs]
        kernel(self.lens_cpu)
"""


def test_views_read_back_numpy_slices_and_copy_sources(tmp_path):
    """``.numpy()[:n]`` becomes the slice it is and a ``copy_`` source a whole-buffer read; a
    ``.numpy()`` slice with a start, or a kernel call, stays as recorded (the link then refuses it)."""
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / "vllm/v1/worker/gpu_model_runner.py").write_text(_VIEWS)
    acc = [
        {"line": 3, "dim": None, "op": "numpy", "extent": "whole", "how": "ast"},
        {"line": 4, "dim": None, "op": "passed to self.lens.copy_", "extent": "whole", "how": "ast"},
        {"line": 5, "dim": None, "op": "numpy", "extent": "whole", "how": "ast"},
        {"line": 6, "dim": None, "op": "passed to kernel", "extent": "whole", "how": "ast"},
    ]
    e = _entry("lens_cpu", acc)
    e.shape = ["max_num_reqs"]
    view = R._view_accesses(e, str(tmp_path))
    assert [(a["line"], a["dim"], a["extent"], a["op"]) for a in view.accesses] == [
        (3, 0, "num_reqs", "slice read"),
        (4, None, "whole", "copy_"),
        (5, None, "whole", "numpy"),
        (6, None, "whole", "passed to kernel"),
    ]
    assert e.accesses == acc  # the entry's own record is untouched


@pytest.mark.real
def test_committed_view_rows_are_what_the_engine_derives_now(vllm_code):
    from capproof.engines.vllm.wheels import _src

    committed = {e.id: e.demands for e in load(INV)}
    fresh = load(INV)
    for e in fresh:
        if any(d.get("via") == "views" for d in e.demands):
            e.demands = []
    done = R.derive_request_rows_views(fresh, _src())
    assert sorted(done) == sorted(i for i, d in committed.items() if any(x.get("via") == "views" for x in d))
    for e in fresh:
        if e.id in done:
            assert e.demands == committed[e.id], e.id


def test_dummy_run_bound_needs_the_one_assignment_of_max_num_tokens(tmp_path):
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    path = tmp_path / "vllm/v1/worker/gpu_model_runner.py"
    path.write_text(_RUNNER.replace("DUMMY", "num_tokens"))
    assert R._max_num_tokens_ok(str(tmp_path)) == [3]
    path.write_text(
        _RUNNER.replace("DUMMY", "num_tokens") + "\n    def grow(self):\n        self.max_num_tokens = 2**20\n"
    )
    assert R._max_num_tokens_ok(str(tmp_path)) == []
