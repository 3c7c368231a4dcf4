"""The V2 profile run's pending state (fact_v2_profile_state), read from a small engine tree; and
the Triton-kernel rows of a slot-indexed state buffer (demand_slots.SlotJudge.kernel_row)."""

import os
import textwrap

import pytest

from capproof.engines.vllm import demand_slots as ds
from capproof.engines.vllm.fact_v2_profile_state import profile_state_fact

RUNNER = """
class GPUModelRunner:
    def __init__(self):
        self.execute_model_state: ExecuteModelState | None = None

    def execute_model(self, scheduler_output, dummy_run=False):
        if batch_desc.num_tokens == 0:
            return None
        self.execute_model_state = ExecuteModelState(input_batch=input_batch)

    def sample_tokens(self):
        state = self.execute_model_state
        self.execute_model_state = None

    def _dummy_run(self, num_tokens, is_profile=False):
        self.execute_model(None, dummy_run=True)
        if not self.is_last_pp_rank:
            return None, None
        assert self.execute_model_state is not None
        input_batch = self.execute_model_state.input_batch
        self.execute_model_state = None
        return hidden_states, hidden_states[input_batch.logits_indices]

    def _dummy_sampler_run(self, hidden_states):
        pass

    def profile_run(self):
        hidden_states, sample_hidden_states = self._dummy_run(self.max_num_tokens, is_profile=True)
        if self.is_last_pp_rank:
            self._dummy_sampler_run(sample_hidden_states)
"""

WORKER = """
class Worker:
    def determine_available_memory(self):
        self.model_runner.profile_run()
        return 0
"""

EXECUTOR = """
class Executor:
    def determine_available_memory(self):
        return self.collective_rpc("determine_available_memory")

    def compile_or_warm_up_model(self):
        return self.collective_rpc("compile_or_warm_up_model")
"""

CORE = """
class EngineCore:
    def __init__(self, vllm_config):
        self.model_executor = Executor(vllm_config)
        kv_cache_config = self._initialize_kv_caches(vllm_config)

    def _initialize_kv_caches(self, vllm_config):
        available = self.model_executor.determine_available_memory()
        self.model_executor.compile_or_warm_up_model()
        return available

    def step(self):
        return self.model_executor.execute_model(self.scheduler.schedule())
"""


def _tree(tmp_path, runner=RUNNER, worker=WORKER, core=CORE, extra=None):
    files = {
        "vllm/v1/worker/gpu/model_runner.py": runner,
        "vllm/v1/worker/gpu_worker.py": worker,
        "vllm/v1/executor/abstract.py": EXECUTOR,
        "vllm/v1/engine/core.py": core,
        **(extra or {}),
    }
    for rel, text in files.items():
        path = tmp_path / rel
        os.makedirs(path.parent, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    ds.parsed_files.cache_clear()
    profile_state_fact.cache_clear()
    return str(tmp_path)


def test_the_profile_run_starts_with_no_state_pending(tmp_path):
    fact = profile_state_fact(_tree(tmp_path))
    assert fact["checked"], fact["why"]
    assert any("_initialize_kv_caches" in p and "no step before it" in p for p in fact["paths"])
    assert any(p.endswith("_dummy_sampler_run in profile_run") for p in fact["paths"])


@pytest.mark.parametrize(
    "where, old, new, refusal",
    [
        (
            "runner",
            "        self.execute_model_state: ExecuteModelState | None = None\n",
            "        self.execute_model_state = make_state()\n",
            "__init__ does not set self.execute_model_state = None",
        ),
        (
            "runner",
            "        assert self.execute_model_state is not None\n",
            "",
            "without asserting it first",
        ),
        (
            "runner",
            "            return None, None\n",
            "            return None, None\n        if self.skip:\n            return None, None\n",
            "before clearing its state",
        ),
        (
            "core",
            "        self.model_executor = Executor(vllm_config)\n",
            "        self.model_executor = Executor(vllm_config)\n        self.model_executor.execute_model(None)\n",
            "runs a step before _initialize_kv_caches",
        ),
        (
            "core",
            "        return self.model_executor.execute_model(self.scheduler.schedule())\n",
            "        self.model_executor.determine_available_memory()\n",
            "names determine_available_memory in step",
        ),
        (
            "worker",
            "        return 0\n",
            "        return 0\n\n    def reprofile(self):\n        self.model_runner.profile_run()\n",
            "calls profile_run in reprofile",
        ),
    ],
)
def test_a_broken_link_leaves_the_fact_not_checked(tmp_path, where, old, new, refusal):
    texts = {"runner": RUNNER, "worker": WORKER, "core": CORE}
    assert old in texts[where]
    texts[where] = texts[where].replace(old, new)
    fact = profile_state_fact(_tree(tmp_path, **texts))
    assert not fact["checked"]
    assert refusal in fact["why"]


def test_a_re_warm_after_a_dummy_run_is_accepted_and_one_after_a_step_is_not(tmp_path):
    """Elastic EP's re-warm names compile_or_warm_up_model while serving: accepted only right after
    a ``_dummy_run`` (which clears the state) with no step between."""
    rewarm = """
    class Elastic:
        def warm_and_capture(self):
            runner = self.worker.model_runner
            with self.guard():
                runner._dummy_run(runner.max_num_tokens, is_profile=True)
                self.worker.compile_or_warm_up_model()
    """
    fact = profile_state_fact(_tree(tmp_path, extra={"vllm/distributed/elastic.py": rewarm}))
    assert fact["checked"], fact["why"]
    assert any("after a _dummy_run in the same block" in p for p in fact["paths"])

    stepped = rewarm.replace(
        "                self.worker.compile_or_warm_up_model()\n",
        "                runner.execute_model(None)\n                self.worker.compile_or_warm_up_model()\n",
    )
    other = tmp_path / "other"
    os.makedirs(other)
    fact = profile_state_fact(_tree(other, extra={"vllm/distributed/elastic.py": stepped}))
    assert not fact["checked"]
    assert "names compile_or_warm_up_model in warm_and_capture" in fact["why"]


# ---------------------------------------------------------------------------------------------
# Triton kernels that index a state buffer by a slot loaded from a slot array

PENALTIES = """
import torch
from vllm.triton_utils import tl, triton


class PenaltiesState:
    def __init__(self, max_num_reqs):
        self.repetition_penalty = UvaBackedTensor(max_num_reqs)

    def apply(self, logits, ctx):
        apply_penalties(logits, ctx.expanded_idx_mapping, self.repetition_penalty.gpu)


@triton.jit
def _penalties_kernel(logits_ptr, expanded_idx_mapping_ptr, repetition_penalty_ptr):
    token_idx = tl.program_id(0).to(tl.int64)
    req_state_idx = tl.load(expanded_idx_mapping_ptr + token_idx)
    rep_penalty = tl.load(repetition_penalty_ptr + req_state_idx)
    tl.store(logits_ptr + token_idx, rep_penalty)


def apply_penalties(logits, expanded_idx_mapping, repetition_penalty):
    num_tokens = logits.shape[0]
    _penalties_kernel[(num_tokens,)](logits, expanded_idx_mapping, repetition_penalty)
"""


def _kernel_rows(tmp_path, text):
    from capproof.inventory import Entry

    base = tmp_path / "vllm" / "v1" / "worker" / "gpu" / "sample"
    os.makedirs(base)
    (base / "penalties.py").write_text(textwrap.dedent(text))
    ds.parsed_files.cache_clear()
    entry = Entry(
        id="vllm/v1/worker/gpu/sample/penalties.py::PenaltiesState.repetition_penalty",
        file="vllm/v1/worker/gpu/sample/penalties.py",
        line=9,
        owner="PenaltiesState",
        attribute="repetition_penalty",
        dtype="float32",
        shape=["max_num_reqs"],
    )
    reasons: dict = {}
    try:
        sites = ds.slot_rows_uses(entry, str(tmp_path), ds.SlotJudge(str(tmp_path), arrays_ok=True), reasons)
    finally:
        ds.parsed_files.cache_clear()
    return sites, reasons.get(entry.id, "")


def test_a_kernel_that_reads_a_state_row_at_a_loaded_slot_is_a_slot_access(tmp_path):
    sites, why = _kernel_rows(tmp_path, PENALTIES)
    assert sites is not None, why
    (site,) = sites
    assert "_penalties_kernel: repetition_penalty_ptr[req_state_idx]" in site
    assert "ctx.expanded_idx_mapping" in site and site.endswith("(a slot array)")


@pytest.mark.parametrize(
    "old, new",
    [
        # the row is the slot plus one: past the last slot's row
        (
            "tl.load(repetition_penalty_ptr + req_state_idx)",
            "tl.load(repetition_penalty_ptr + req_state_idx + 1)",
        ),
        # the row comes from a tensor that is not a slot array
        ("apply_penalties(logits, ctx.expanded_idx_mapping,", "apply_penalties(logits, ctx.input_ids,"),
        # a masked load of the slot: masked-out lanes get `other`, not a slot
        (
            "tl.load(expanded_idx_mapping_ptr + token_idx)",
            "tl.load(expanded_idx_mapping_ptr + token_idx, mask=token_idx < 4, other=-1)",
        ),
        # the buffer handed on to a helper, not a kernel launch
        (
            "    _penalties_kernel[(num_tokens,)](logits, expanded_idx_mapping, repetition_penalty)\n",
            "    helper(repetition_penalty)\n",
        ),
    ],
)
def test_a_kernel_row_that_is_not_a_loaded_slot_is_refused(tmp_path, old, new):
    assert old in PENALTIES
    sites, why = _kernel_rows(tmp_path, PENALTIES.replace(old, new))
    assert sites is None
    assert "repetition_penalty" in why
