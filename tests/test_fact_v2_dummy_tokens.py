"""Can a V2 dummy run take execute_model's zero-token return (capproof/engines/vllm/fact_v2_dummy_tokens.py):
the count statements run on symbolic sizes and the statements read, on a stand-in tree shaped like vLLM
0.33.0's (fast; a changed statement flips the verdict), and on vLLM 0.33.0's own code (real tier)."""

from __future__ import annotations

import os
import shutil
import textwrap
from types import SimpleNamespace

import pytest

from capproof.engines.vllm import demand_slots as ds
from capproof.engines.vllm import fact_v2_dummy_tokens as F

GPU = "vllm/v1/worker/gpu"

# the statements of vLLM 0.33.0's model_runner.py the fact reads, trimmed to them
RUNNER = """
class GPUModelRunner:
    def _dummy_run(self, num_tokens, *args, skip_attn=False, uniform_decode=False, is_profile=False, **kwargs):
        if skip_attn and not is_profile:
            raise ValueError("skip_attn must only be True for initial memory profiling.")
        num_reqs = min(num_tokens, self.max_num_reqs)
        if uniform_decode:
            num_tokens = max(num_tokens, self.decode_query_len)
            num_reqs = num_tokens // self.decode_query_len
            assert num_tokens % self.decode_query_len == 0
        elif self.speculator is not None:
            num_reqs = min(
                num_reqs, self.max_num_tokens // self.speculator.num_query_per_req
            )
            num_tokens = min(
                num_tokens,
                self.max_num_tokens
                - num_reqs * self.speculator.num_extra_query_per_req,
            )
        assert num_tokens <= self.max_num_tokens, f"Dummy run with {num_tokens} tokens"
        num_tokens_per_request = [
            num_tokens // num_reqs + (i >= num_reqs - num_tokens % num_reqs)
            for i in range(num_reqs)
        ]
        assert sum(num_tokens_per_request) == num_tokens
        num_scheduled_tokens = {
            f"_dummy_req_{i}": n for i, n in enumerate(num_tokens_per_request)
        }
        dummy_scheduler_output = SchedulerOutput.make_empty()
        dummy_scheduler_output.total_num_scheduled_tokens = num_tokens
        dummy_scheduler_output.num_scheduled_tokens = num_scheduled_tokens
        self.execute_model(dummy_scheduler_output, dummy_run=True, is_profile=is_profile)
        assert self.execute_model_state is not None
        input_batch = self.execute_model_state.input_batch
        self.execute_model_state = None
        return None, None

    def gather_batch_req_state(self, scheduler_output, dummy_run):
        num_tokens_per_req = scheduler_output.num_scheduled_tokens
        num_reqs = len(num_tokens_per_req)
        num_toks = scheduler_output.total_num_scheduled_tokens
        max_query_len = max(scheduler_output.num_scheduled_tokens.values())
        if dummy_run:
            return None, num_toks // num_reqs
        return BatchReqState(num_tokens_per_req), None

    def execute_model(self, scheduler_output, dummy_run=False, is_profile=False):
        if not dummy_run:
            if scheduler_output.total_num_scheduled_tokens == 0:
                return None
        num_reqs = len(scheduler_output.num_scheduled_tokens)
        num_toks = scheduler_output.total_num_scheduled_tokens
        max_query_len: int | None = max(scheduler_output.num_scheduled_tokens.values())
        batch_req_state, uniform_tok_count = self.gather_batch_req_state(scheduler_output, dummy_run)
        if batch_req_state is not None:
            num_toks = batch_req_state.num_tokens
        batch_desc, dp_sync_state = dispatch_cg_and_sync_dp(
            self.cudagraph_manager, num_reqs, num_toks, uniform_tok_count, self.dp_size, self.dp_rank
        )
        if batch_desc.num_tokens == 0:
            return None
        self.execute_model_state = ExecuteModelState(input_batch=None)
        return None
"""

SPECULATORS = {
    "speculator.py": """
        class BaseSpeculator(ABC):
            num_query_per_req: int = 1
            num_extra_query_per_req: int = 0


        class DraftModelSpeculator(BaseSpeculator):
            pass
    """,
    "standalone_ar/speculator.py": """
        class StandaloneARSpeculator(DraftModelSpeculator):
            num_extra_query_per_req = 1
    """,
    "dflash/speculator.py": """
        class DFlashSpeculator(BaseSpeculator):
            def __init__(self, vllm_config):
                self.num_query_per_req = 1 + self.num_speculative_steps
    """,
}

SCHEDULER = """
class SchedulerConfig:
    def _verify_args(self):
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError("max_num_batched_tokens must be >= max_num_seqs")
"""


def _tree(tmp_path, edits=()):
    files = {f"{GPU}/model_runner.py": RUNNER, F.SCHEDULER_CONFIG: SCHEDULER}
    files.update({f"{F.SPEC_DIR}/{rel}": text for rel, text in SPECULATORS.items()})
    for rel, text in files.items():
        text = textwrap.dedent(text)
        for file, old, new in edits:
            if rel.endswith(file):
                assert old in text, (file, old)
                text = text.replace(old, new)
        path = tmp_path / rel
        os.makedirs(path.parent, exist_ok=True)
        path.write_text(text)
    ds.parsed_files.cache_clear()
    F.dummy_return_fact.cache_clear()
    return str(tmp_path)


def test_the_count_prefix_runs_vllms_statements_up_to_the_per_request_split(tmp_path):
    from types import SimpleNamespace

    counts, kept = F.count_prefix(_tree(tmp_path))
    assert kept == 4
    me = SimpleNamespace(max_num_reqs=4, max_num_tokens=4, decode_query_len=2, speculator=None)
    assert counts(me, 4) == (4, 4)
    assert counts(me, 4, uniform_decode=True) == (4, 2)
    with pytest.raises(AssertionError):  # 3 tokens are no uniform batch of 2-token queries: the engine's assert
        counts(me, 3, uniform_decode=True)
    ar = SimpleNamespace(num_query_per_req=1, num_extra_query_per_req=1)
    assert counts(SimpleNamespace(max_num_reqs=4, max_num_tokens=4, decode_query_len=2, speculator=ar), 4) == (0, 4)
    assert counts(SimpleNamespace(max_num_reqs=4, max_num_tokens=6, decode_query_len=2, speculator=ar), 6) == (2, 4)


def test_the_count_prefix_refuses_a_count_rebound_after_the_cut(tmp_path):
    root = _tree(
        tmp_path,
        [("model_runner.py", "assert sum(num_tokens_per_request) == num_tokens", "num_tokens = 1")],
    )
    with pytest.raises(TypeError, match="rebinds num_tokens"):
        F.count_prefix(root)


def test_speculator_attributes_are_read_through_the_classes_bases(tmp_path):
    found = {s["cls"]: (s["num_query_per_req"], s["num_extra_query_per_req"]) for s in F.speculators(_tree(tmp_path))}
    assert found == {
        "BaseSpeculator": (1, 0),
        "DraftModelSpeculator": (1, 0),
        "StandaloneARSpeculator": (1, 1),
        "DFlashSpeculator": (None, 0),  # computed in __init__: left free
    }


def test_an_extra_query_slot_per_request_empties_the_dummy_batch(tmp_path):
    """The standalone draft model's extra slot makes ``max_num_tokens - num_reqs`` tokens, 0 when
    ``max_num_batched_tokens == max_num_seqs``; the witness is profile_run's call."""
    run = F.dummy_counts(_tree(tmp_path))
    assert not run["proved"]
    (c,) = run["counterexamples"]
    assert c["speculator"] == ["StandaloneARSpeculator"] and c["uniform_decode"] is False
    v = c["values"]
    assert v["num_tokens_after"] == 0 and v["num_reqs_after"] >= 1
    assert v["max_num_reqs"] == v["max_num_tokens"] == v["num_tokens"] == 2


def test_without_the_extra_slot_every_dummy_run_with_a_request_has_a_token(tmp_path):
    root = _tree(
        tmp_path, [("standalone_ar/speculator.py", "num_extra_query_per_req = 1", "num_extra_query_per_req = 0")]
    )
    fact = F.dummy_return_fact(root, sweep=False)
    counts = next(p for p in fact["paths"] if p["sets"].startswith("_dummy_run's num_tokens"))
    assert counts["result"] == "checked" and counts["how"] == "executed"
    # the dispatch sweep was not run here: the fact is not checked on that path
    assert not fact["checked"] and "sweep not run" in fact["why"]


def test_a_request_count_not_bounded_by_the_tokens_gives_a_dummy_run_without_one(tmp_path):
    root = _tree(
        tmp_path,
        [
            ("model_runner.py", "num_reqs = min(num_tokens, self.max_num_reqs)", "num_reqs = self.max_num_reqs"),
            ("standalone_ar/speculator.py", "num_extra_query_per_req = 1", "num_extra_query_per_req = 0"),
        ],
    )
    run = F.dummy_counts(root)
    assert not run["proved"]
    assert ["(no speculator)"] in [c["speculator"] for c in run["counterexamples"]]


def test_the_statements_that_carry_the_count_to_the_dispatch_are_read(tmp_path):
    read, missing = F.lemmas(_tree(tmp_path))
    assert missing == [] and len(read) == 12
    store = _line(tmp_path, "self.execute_model_state = ExecuteModelState(")
    zero = _line(tmp_path, "if batch_desc.num_tokens == 0:") + 1
    assert F.zero_returns(str(tmp_path), store) == ([zero], [])
    # a return after the store is no early return; one before it outside the zero-token test is another
    assert F.zero_returns(str(tmp_path), store + 2) == ([zero], [store + 1])


@pytest.mark.parametrize(
    "old, new, missing",
    [
        (
            "        if dummy_run:\n            return None,",
            "        if False:\n            return None,",
            "returns (None",
        ),
        (
            "num_toks = scheduler_output.total_num_scheduled_tokens\n        max_query_len: int",
            "num_toks = 1\n        max_query_len: int",
            "before the dispatch: num_toks=",
        ),
        (
            "        if batch_req_state is not None:\n            num_toks",
            "        num_toks = 7\n        if batch_req_state is not None:\n            num_toks",
            "rebinds num_toks",
        ),
        (
            "self.execute_model(dummy_scheduler_output, dummy_run=True",
            "self.execute_model(dummy_scheduler_output, dummy_run=False",
            "dummy_run=True",
        ),
    ],
)
def test_a_changed_statement_on_the_way_to_the_dispatch_is_refused(tmp_path, old, new, missing):
    read, gone = F.lemmas(_tree(tmp_path, [("model_runner.py", old, new)]))
    assert any(missing in g for g in gone), gone


def test_the_scheduler_configs_check_is_a_hypothesis_read(tmp_path):
    root = _tree(tmp_path, [("scheduler.py", "if self.max_num_batched_tokens < self.max_num_seqs:", "if False:")])
    _read, missing = F.lemmas(root)
    assert missing == [f"{F.SCHEDULER_CONFIG}: if self.max_num_batched_tokens < self.max_num_seqs: (raises)"]


def _line(tmp_path, text):
    with open(tmp_path / GPU / "model_runner.py", encoding="utf-8") as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


# ------------------------------------------------------------------------------------------------
# vLLM 0.33.0's own code


@pytest.fixture(scope="module")
def vllm_code():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need

    return wheels._src()


@pytest.mark.real
def test_vllm_0_33_standalone_draft_model_dummy_run_takes_the_zero_token_return(vllm_code):
    """Part 1 refuted for the standalone draft model only; parts 2 and 3 hold; the fact names it."""
    run = F.dummy_counts(vllm_code)
    assert [c["speculator"] for c in run["counterexamples"]] == [["StandaloneARSpeculator"]]
    v = run["counterexamples"][0]["values"]
    assert v["max_num_reqs"] == v["max_num_tokens"] and v["num_tokens_after"] == 0
    read, missing = F.lemmas(vllm_code)
    assert missing == [] and len(read) == 12
    assert F.zero_returns(vllm_code, 2123) == ([1853], [])
    runs, bad = F.dispatch_sweep()
    assert runs > 10_000 and bad == []
    fact = F.dummy_return_fact(vllm_code)
    assert not fact["checked"]
    assert [p["result"] for p in fact["paths"]] == ["counterexample", "checked", "checked"]
    assert "StandaloneARSpeculator" in fact["why"]


@pytest.mark.real
def test_vllm_0_33_profile_run_fails_its_state_assert_after_the_zero_token_return(vllm_code):
    """vLLM's own _dummy_run and execute_model on the CPU as profile_run calls them: with
    max_num_batched_tokens == max_num_seqs the dummy batch has no token, execute_model returns at
    :1853 and _dummy_run fails ``assert self.execute_model_state is not None`` (:936); one token
    more and the run goes on past the dispatch."""
    assert F.profile_run_reproduction(4, 4) == {
        "raised": "AssertionError",
        "line": 936,
        "reached_dispatch_return": True,
    }
    past = F.profile_run_reproduction(4, 5)
    assert past["reached_dispatch_return"] is False and past["line"] > 1853


@pytest.mark.real
def test_vllm_0_33_dummy_sampler_link_holds_without_the_extra_slot(vllm_code, tmp_path):
    """On vLLM 0.33.0's source the dummy sampler chain holds (the zero-token return ends at the
    assert: no state pending at a profile run); on a copy without the engine core it is refused
    at that return, naming the standalone draft model; with its extra slot removed it holds."""
    from capproof.engines.vllm.demand_v2_requests import CountJudge, dummy_sampler_rows

    # on the whole source the chain holds: the zero-token return ends at _dummy_run's assert
    assert dummy_sampler_rows(CountJudge(vllm_code, True)) is None
    no_core = tmp_path / "no_core"
    shutil.copytree(os.path.join(vllm_code, "vllm/v1/worker"), no_core / "vllm/v1/worker")
    ds.parsed_files.cache_clear()
    try:
        # without the engine core (vllm/v1/engine/) the profile run's pending state cannot be read
        why = dummy_sampler_rows(CountJudge(str(no_core), True))
    finally:
        ds.parsed_files.cache_clear()
    assert "returns at :1853 before storing ExecuteModelState" in why and "StandaloneARSpeculator" in why
    # a fresh tree for the mutant: what was read of the first one is cached by its root
    tmp_path = tmp_path / "mutant"
    shutil.copytree(os.path.join(vllm_code, "vllm/v1/worker"), tmp_path / "vllm/v1/worker")
    os.makedirs(tmp_path / "vllm/config")
    shutil.copy(os.path.join(vllm_code, F.SCHEDULER_CONFIG), tmp_path / F.SCHEDULER_CONFIG)
    path = tmp_path / F.SPEC_DIR / "standalone_ar/speculator.py"
    text = path.read_text()
    assert text.count("num_extra_query_per_req = 1") == 1
    path.write_text(text.replace("num_extra_query_per_req = 1", "num_extra_query_per_req = 0"))
    ds.parsed_files.cache_clear()
    try:
        assert dummy_sampler_rows(CountJudge(str(tmp_path), True)) is None
    finally:
        ds.parsed_files.cache_clear()


@pytest.mark.real
def test_the_specs_dummy_run_model_is_vllms_statements_on_ints(vllm_code):
    """models/vllm/dummy_run.py (check-config's obligation for finding 12) against vLLM 0.33.0's
    own ``_dummy_run`` count statements, run on ints with every V2 speculator's query rows, on a
    grid of budgets around equality (non-uniform, as profile_run calls it)."""
    from models.vllm.dummy_run import speculator_dummy_counts

    counts, _ = F.count_prefix(vllm_code)
    kinds = {(s["num_query_per_req"], s["num_extra_query_per_req"]) for s in F.speculators(vllm_code)}
    kinds = {k for k in kinds if None not in k}
    assert (1, 1) in kinds  # the standalone draft model
    compared = 0
    for q, x in sorted(kinds):
        for max_num_reqs in (1, 2, 3, 4, 7, 256):
            for max_num_tokens in range(max_num_reqs, 2 * max_num_reqs + 3):
                for num_tokens in (1, max_num_reqs, max_num_tokens):
                    me = SimpleNamespace(
                        max_num_reqs=max_num_reqs,
                        max_num_tokens=max_num_tokens,
                        decode_query_len=1,
                        speculator=SimpleNamespace(num_query_per_req=q, num_extra_query_per_req=x),
                    )
                    tokens, reqs = counts(me, num_tokens, uniform_decode=False)
                    assert speculator_dummy_counts(num_tokens, max_num_reqs, max_num_tokens, q, x) == (reqs, tokens)
                    compared += 1
    assert compared > 500
