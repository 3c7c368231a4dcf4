"""The V2 slot facts on vLLM 0.33.0: the batch sharder run on the CPU, and the rows they derive."""

import os

import pytest

pytestmark = pytest.mark.real

SMALL = {"max_num_reqs": (1, 2, 3), "tp_size": (1, 2), "logits_per_req": ((1,), (2, 3, 1))}


def _root():
    from capproof.engines.vllm import demand_slots as ds
    from capproof.engines.vllm import wheels

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.exists(os.path.join(root, "vllm/v1/worker/gpu/sample/batch_shard.py")):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    ds.parsed_files.cache_clear()
    return root


def test_the_batch_sharder_stores_every_local_slot():
    """vLLM's ``shard_sampler_inputs`` with its ``_build_shard_plan_kernel`` run on the CPU: every
    element of the local slot arrays is stored and holds a slot of the batch."""
    from capproof.engines.vllm.fact_slots import batch_shard_sweep

    _root()
    runs, failures = batch_shard_sweep(SMALL)
    # every ordered choice of distinct slots (1 + 4 + 15 batches), 3 (TP size, rank) pairs, 2 logits patterns
    assert runs == (1 + (2 + 2) + (3 + 6 + 6)) * (1 + 2) * 2
    assert failures == []


def test_the_sharding_kernel_leaves_slots_unwritten_when_the_batch_outgrows_its_block():
    """The check bites: vLLM's kernel launched for 4 requests with ``PADDED_NUM_REQS = 2`` (a batch
    larger than the ``max_num_reqs`` the sharder was built for) counts the last request's local
    position from a truncated block, so it overwrites position 2 and position 3 stays unwritten."""
    import torch

    from capproof.engines.vllm import wheels
    from capproof.engines.vllm.kernel_concrete import Launcher

    _root()
    wheels.vllm()
    from vllm.v1.worker.gpu.sample import batch_shard as m

    k = Launcher(m._build_shard_plan_kernel)

    def i32(*v):
        return torch.tensor(v, dtype=torch.int32)

    def zeros(n, dtype=torch.int32):
        return torch.zeros(n, dtype=dtype)

    local = torch.full((4,), -5, dtype=torch.int32)
    cu = i32(0, 1, 2, 3, 4)
    k[(4,)](
        i32(0, 1, 2, 3),
        cu,
        cu,
        i32(7, 7, 7, 7),
        zeros(4, torch.int64),
        zeros(4, torch.int64),
        local,
        zeros(5),
        zeros(4, torch.int64),
        zeros(4),
        zeros(4),
        zeros(4),
        4,
        0,
        4,
        TP_SIZE=1,
        TP_RANK=0,
        PADDED_NUM_REQS=2,
        PADDED_NUM_LOGITS_PER_REQ=1,
    )
    assert k.written["local_idx_mapping_ptr"] == {0, 1, 2}
    assert local.tolist() == [0, 1, 3, -5]


def test_the_slot_facts_are_checked_and_derive_the_slot_indexed_rows():
    """With the sharder run, the slot fact and the slot-array fact are checked on every path (the
    dummy batch's ``arange(num_reqs)``, ``input_batch.py:198-200``, through every ``make_dummy``
    count, the dummy sampler run's included), and the per-request buffers whose every use is a
    slot or slot-array index (a Triton kernel's loaded slot included) get rows ``max_num_reqs``."""
    from capproof.engines.vllm.demand_v2_requests import derive_slot_rows
    from capproof.engines.vllm.fact_slots import shard_paths
    from capproof.inventory import load

    root = _root()
    ran = shard_paths(root, SMALL)
    assert sorted(ran) == [
        "vllm/v1/worker/gpu/sample/batch_shard.py:233",
        "vllm/v1/worker/gpu/sample/batch_shard.py:235",
    ]
    assert all(ok for ok, _ in ran.values())
    entries = [e for e in load("proofs/inventory/vllm-0.33.0.json") if e.file.startswith("vllm/v1/worker/gpu/")]
    for e in entries:
        e.demands = []
    facts: list = []
    done = derive_slot_rows(entries, root, facts=facts, executed=ran)
    assert [f["checked"] for f in facts] == [True, False, True]  # slots, V2 request count, slot arrays
    dummy = [p for p in facts[2]["paths"]["checked (ast)"] if p.startswith("vllm/v1/worker/gpu/input_batch.py:")]
    assert len(dummy) == 3 and all("every make_dummy call's count checked" in p for p in dummy)
    assert {
        "vllm/v1/worker/gpu/states.py::RequestState.max_seq_len",
        "vllm/v1/worker/gpu/states.py::RequestState.num_computed_prefill_tokens",
        "vllm/v1/worker/gpu/pp_utils.py::PPHandler.req_idx_gen_np",
        # call sites that cannot bind add_request(req_id, req_idx, ...) or are another class's are not its
        "vllm/v1/worker/gpu/sample/prompt_logprob.py::PromptLogprobsWorker.num_prompt_logprobs",
        "vllm/v1/worker/gpu/sample/prompt_logprob.py::PromptLogprobsWorker.uses_prompt_logprobs",
        # written by add_request (the dummy sampler run's range(num_reqs) included), read by a kernel
        "vllm/v1/worker/gpu/sample/penalties.py::PenaltiesState.repetition_penalty",
    } <= set(done)
    rep = next(e for e in entries if e.id.endswith("PenaltiesState.repetition_penalty")).demands[0]
    assert any("_penalties_kernel: repetition_penalty_ptr[req_state_idx]" in s for s in rep["from"])
    d = next(e for e in entries if e.id.endswith("PPHandler.req_idx_gen_np")).demands[0]
    assert d["extent"] == "max_num_reqs" and "vllm/v1/worker/gpu/pp_utils.py:102" in d["judged_uses"]
