"""The sampler shard's request count is a subset count (capproof/engines/vllm/fact_v2_shard.py): the
structural reading on a stand-in V2 tree shaped like vLLM 0.33.0's (fast), and on vLLM 0.33.0's own
source (real tier)."""

from __future__ import annotations

import os
import shutil
import textwrap

import pytest

from capproof.engines.vllm import demand_slots as ds
from capproof.engines.vllm.demand_v2_requests import CountJudge
from capproof.engines.vllm.fact_v2_shard import shard_count, slot_array_lengths

GPU = "vllm/v1/worker/gpu"

FILES = {
    "sample/batch_shard.py": """
        from dataclasses import replace
        import numpy as np

        class BatchSharder:
            def shard_sampler_inputs(self, input_batch, grammar_output):
                tp_rank = self.tp_rank
                tp_size = self.tp_size
                req_owner_np = input_batch.idx_mapping_np % tp_size
                local_req_indices_np = np.flatnonzero(req_owner_np == tp_rank)
                local_idx_mapping_np = input_batch.idx_mapping_np[local_req_indices_np]
                num_local_reqs = local_req_indices_np.shape[0]
                return replace(
                    input_batch,
                    num_reqs=num_local_reqs,
                    idx_mapping_np=local_idx_mapping_np,
                )
    """,
    "input_batch.py": """
        import numpy as np

        class InputBatch:
            @classmethod
            def make_dummy(cls, num_reqs, num_tokens):
                idx_mapping_np = np.arange(num_reqs, dtype=np.intp)
                return cls(num_reqs=num_reqs, idx_mapping_np=idx_mapping_np)
    """,
    "model_runner.py": """
        import numpy as np

        class GPUModelRunner:
            def gather_batch_req_state(self, scheduler_output):
                num_tokens_per_req = scheduler_output.num_scheduled_tokens
                num_reqs = len(num_tokens_per_req)
                idx_mapping_np = np.fromiter(iter(()), dtype=np.intp, count=num_reqs)
                return BatchReqState(idx_mapping_np=idx_mapping_np)

            def prepare_inputs(self, batch_req_state):
                idx_mapping_np = batch_req_state.idx_mapping_np
                return InputBatch(num_reqs=len(idx_mapping_np), idx_mapping_np=idx_mapping_np)
    """,
    "pcp_manager.py": """
        from dataclasses import replace

        class PCPManager:
            def partition_batch(self, input_batch):
                local = np.repeat(input_batch.idx_mapping_np, 2)
                return replace(input_batch, num_reqs=2 * input_batch.num_reqs, idx_mapping_np=local)
    """,
}
#: the V2 fact's checked paths a stand-in batch's own count may rest on
CHECKED = [f"{GPU}/input_batch.py:8"]


def _tree(tmp_path, edits=()):
    for rel, text in FILES.items():
        text = textwrap.dedent(text)
        for file, old, new in edits:
            if file == rel:
                assert old in text
                text = text.replace(old, new)
        path = tmp_path / GPU / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    ds.parsed_files.cache_clear()
    return str(tmp_path)


def _shard(root, checked=CHECKED):
    try:
        return shard_count(root, checked, CountJudge(root, True, induction=False))
    finally:
        ds.parsed_files.cache_clear()


def test_the_shard_is_a_subset_of_a_bounded_batch(tmp_path):
    root = _tree(tmp_path)
    assert _line(root, "input_batch.py", "return cls(") == 8
    result, why = _shard(root)
    assert result == "checked", why
    assert "a subset" in why and "pcp_manager.py" in why  # the PCP local batch is the one left out
    ok, bad, left = slot_array_lengths(root, CountJudge(root, True, induction=False), CHECKED)
    pcp = _line(root, "pcp_manager.py", "return replace(")
    assert not bad and len(ok) == 4 and [s.split(" ")[0] for s in left] == [f"{GPU}/pcp_manager.py:{pcp}"]


def _line(root, rel, text):
    with open(f"{root}/{GPU}/{rel}") as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


@pytest.mark.parametrize(
    "edit, refusal",
    [
        # not elementwise: the mask is longer than the slot array
        (
            (
                "sample/batch_shard.py",
                "np.flatnonzero(req_owner_np == tp_rank)",
                "np.flatnonzero(np.repeat(req_owner_np == tp_rank, 2))",
            ),
            "local_req_indices_np",
        ),
        # the count rebound after the subset
        (
            (
                "sample/batch_shard.py",
                "        return replace(",
                "        num_local_reqs += 1\n        return replace(",
            ),
            "num_local_reqs",
        ),
        # a batch given a slot array of another length
        (("model_runner.py", "idx_mapping_np=idx_mapping_np)\n", "idx_mapping_np=np.zeros(7))\n"), "model_runner.py"),
        # make_dummy's arange of a count that is not the batch's own
        (
            ("input_batch.py", "np.arange(num_reqs, dtype=np.intp)", "np.arange(num_tokens, dtype=np.intp)"),
            "input_batch.py",
        ),
    ],
)
def test_a_broken_link_leaves_the_shard_not_checked(tmp_path, edit, refusal):
    root = _tree(tmp_path, [edit])
    result, why = _shard(root)
    assert result == "not checked" and refusal in why


def test_the_dummy_batch_count_must_be_a_checked_path(tmp_path):
    """``np.arange(num_reqs)`` is as long as the batch's own count, which bounds it only where the
    V2 fact checked that construction."""
    root = _tree(tmp_path)
    result, why = _shard(root, checked=[])
    assert result == "not checked" and "input_batch.py" in why


# ------------------------------------------------------------------------------------------------
# real tier


def _real_root():
    from capproof.engines.vllm import wheels

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.exists(os.path.join(root, f"{GPU}/sample/batch_shard.py")):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    ds.parsed_files.cache_clear()
    return root


@pytest.mark.real
def test_vllm_0_33_shard_count_is_checked_and_a_changed_mask_is_refused(tmp_path):
    """On vLLM 0.33.0's source the shard's count is a subset of its input batch and every slot
    array a V2 batch is given is bounded (the PCP local batch left out); the same tree with the
    ownership mask widened is refused."""
    from capproof.engines.vllm.demand_v2_requests import v2_requests_fact

    root = _real_root()
    # the dummy batch make_dummy builds for the dummy sampler run is checked (no state is pending
    # when a profile run starts: capproof/engines/vllm/fact_v2_profile_state.py), so every
    # constructor path of idx_mapping_np is, whether or not the dummy is taken as its own state
    result, why = shard_count(root, [p.split(" ", 1)[0] for p in v2_requests_fact(root)["paths"]["checked (ast)"]])
    assert result == "checked" and "input_batch.py:194" in why, why
    fact = v2_requests_fact(root, own_state=True)
    checked = [p.split(" ", 1)[0] for p in fact["paths"]["checked (ast)"]]
    result, why = shard_count(root, checked)
    assert result == "checked", why
    assert "batch_shard.py:186,187,189" in why and "pcp_manager.py:688" in why
    shutil.copytree(os.path.join(root, "vllm/v1"), tmp_path / "vllm/v1")
    path = tmp_path / GPU / "sample/batch_shard.py"
    old = "np.flatnonzero(req_owner_np == tp_rank)"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, "np.flatnonzero(np.concatenate([req_owner_np, req_owner_np]) == tp_rank)"))
    ds.parsed_files.cache_clear()
    try:
        result, why = shard_count(str(tmp_path), checked)
    finally:
        ds.parsed_files.cache_clear()
    assert result == "not checked" and "local_req_indices_np" in why
