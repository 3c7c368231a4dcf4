"""The V2 runner's slot facts as engine facts (vLLM 0.33.0), and the batch sharder's slot arrays, run.

Two facts of :mod:`.demand_slots` carry the V2 per-request buffers' rows:

1. **every request slot is < max_num_reqs** (:func:`.demand_slots.slot_fact`, AST): the free-slot
   allocator of ``RequestState`` and every mutation of its two containers in ``vllm/v1/``;
2. **every slot array holds slots** (:func:`.demand_slots.slot_array_fact`, AST): every value
   stored into a field or keyword ``idx_mapping``/``idx_mapping_np``/``expanded_idx_mapping``
   under ``vllm/v1/worker/gpu/``, and every in-place write of such a field. Two stores are
   tensors that a Triton kernel fills (``batch_shard.py``: ``new_empty`` filled by
   ``_build_shard_plan_kernel``); they are **executed** here (:func:`batch_shard_sweep`).

:func:`slot_facts` returns both as fact records (:mod:`capproof.facts`) for ``capproof inventory``
to write to the facts file. They name no assumption of ``spec/`` (nothing there states them): the
demands derived from them (:func:`.demand_v2_requests.derive_slot_rows`) carry them.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from ...facts import fact_record, path_record

__all__ = ["SHARD_DOMAIN", "batch_shard_sweep", "shard_paths", "slot_facts"]

SHARD = "vllm/v1/worker/gpu/sample/batch_shard.py"
V2_SCOPE = ("vllm/v1/worker/gpu/",)

#: The batches :func:`batch_shard_sweep` shards: ``max_num_seqs`` (the slot range), TP sizes
#: (every rank), logits per request (1 without drafts, up to 1 + K with K draft tokens).
SHARD_DOMAIN = {"max_num_reqs": (1, 2, 3, 4), "tp_size": (1, 2, 3), "logits_per_req": ((1,), (2, 3, 1))}


def _batch(slots, logits, torch, np, input_batch_cls):
    """A V2 ``InputBatch`` holding what ``shard_sampler_inputs`` reads (the other fields None)."""
    import dataclasses

    n = len(slots)
    cu = np.concatenate([[0], np.cumsum(logits)]).astype(np.int32)
    fields = {f.name: None for f in dataclasses.fields(input_batch_cls)}
    fields.update(
        req_ids=[f"r{i}" for i in range(n)],
        num_reqs=n,
        num_reqs_after_padding=n,
        idx_mapping_np=np.array(slots, dtype=np.int32),
        idx_mapping=torch.tensor(slots, dtype=torch.int32),
        expanded_idx_mapping=torch.tensor(np.repeat(slots, logits), dtype=torch.int32),
        expanded_local_pos=torch.tensor([j for c in logits for j in range(c)], dtype=torch.int32),
        cu_num_logits_np=cu,
        cu_num_logits=torch.tensor(cu, dtype=torch.int32),
        query_start_loc=torch.tensor(cu, dtype=torch.int32),
        seq_lens=torch.full((n,), 7, dtype=torch.int32),
        seq_lens_cpu_upper_bound=torch.full((n,), 7, dtype=torch.int32),
        num_draft_tokens=0,
    )
    return input_batch_cls(**fields)


def batch_shard_sweep(domain: dict | None = None) -> tuple[int, list[str]]:
    """Run vLLM's ``BatchSharder`` (``__init__`` with the TP group a stand-in giving rank and size,
    then ``shard_sampler_inputs``) on every batch of :data:`SHARD_DOMAIN`: every ordered choice of
    distinct slots in ``range(max_num_reqs)`` (a batch holds each running request's slot once, at
    most ``max_num_reqs`` of them: the V2 request-count fact), each logits pattern, every TP rank.
    ``_build_shard_plan_kernel`` runs with a concrete ``tl`` (:mod:`.kernel_concrete`; its programs
    read only inputs and write disjoint elements, so running them in order is its semantics).

    Checks, per run: no load or store outside a tensor; every element of the local batch's
    ``idx_mapping`` and ``expanded_idx_mapping`` (``new_empty``: uninitialised) was stored by the
    kernel; every value is a slot of the batch. Returns ``(runs, failures)``."""
    import numpy as np
    import torch

    from . import wheels

    wheels.vllm()  # vLLM's package and configs first: importing the V2 runner first meets an import cycle
    from vllm.v1.worker.gpu.input_batch import InputBatch
    from vllm.v1.worker.gpu.sample import batch_shard as m

    from .kernel_concrete import Launcher

    dom = domain or SHARD_DOMAIN
    from ...inventory import next_power_of_2

    saved = (m._build_shard_plan_kernel, m.get_tp_group, m.triton)
    runs, failures = 0, []
    try:
        launcher = Launcher(saved[0])
        m._build_shard_plan_kernel = launcher
        # vLLM's placeholder ``triton`` (no Triton installed) has no host helpers
        m.triton = SimpleNamespace(next_power_of_2=next_power_of_2)
        for max_reqs, tp, pattern in itertools.product(dom["max_num_reqs"], dom["tp_size"], dom["logits_per_req"]):
            max_logits = max(pattern)
            for rank in range(tp):
                m.get_tp_group = lambda r=rank, t=tp: SimpleNamespace(rank_in_group=r, world_size=t)
                sharder = m.BatchSharder(max_reqs, max_logits, torch.device("cpu"), False)
                for n in range(1, max_reqs + 1):
                    for slots in itertools.permutations(range(max_reqs), n):
                        logits = [pattern[i % len(pattern)] for i in range(n)]
                        ib = _batch(list(slots), logits, torch, np, InputBatch)
                        runs += 1
                        where = f"max_num_reqs={max_reqs} tp={tp} rank={rank} slots={slots} logits={logits}"
                        try:
                            local, _, _, meta = sharder.shard_sampler_inputs(ib, None)
                        except Exception as exc:  # noqa: BLE001 - a failure of the run is a failure of the check
                            failures.append(f"{where}: {type(exc).__name__}: {exc}"[:200])
                            continue
                        for field, param in (
                            ("idx_mapping", "local_idx_mapping_ptr"),
                            ("expanded_idx_mapping", "local_expanded_idx_mapping_ptr"),
                        ):
                            arr = getattr(local, field)
                            written = launcher.written.get(param, set())
                            if set(range(arr.numel())) - written:
                                failures.append(f"{where}: local {field} has elements the kernel did not store")
                            if not set(arr.tolist()) <= set(slots):
                                failures.append(f"{where}: local {field} holds {arr.tolist()}, not slots of {slots}")
                        if not set(local.idx_mapping_np.tolist()) <= set(slots):
                            failures.append(f"{where}: local idx_mapping_np is not a subset of the slots")
    finally:
        m._build_shard_plan_kernel, m.get_tp_group, m.triton = saved
    return runs, failures


_SWEEPS: dict = {}


def shard_paths(root: str, domain: dict | None = None) -> dict[str, tuple[bool, str]]:
    """``{"<SHARD>:<line>": (checked, why)}`` for the two ``new_empty`` stores of ``batch_shard.py``
    (the local ``idx_mapping`` and ``expanded_idx_mapping``), judged by :func:`batch_shard_sweep`."""
    import ast
    import os

    with open(os.path.join(root, SHARD), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    lines = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and n.targets[0].id in ("local_idx_mapping", "local_expanded_idx_mapping")
    ]
    dom = domain or SHARD_DOMAIN
    key = (root, repr(sorted(dom.items())))
    if key not in _SWEEPS:  # the inventory's derivation and its facts ask for the same run
        _SWEEPS[key] = batch_shard_sweep(dom)
    runs, failures = _SWEEPS[key]
    ok = bool(runs) and not failures
    why = (
        f"executed (concrete): vLLM's BatchSharder.shard_sampler_inputs with _build_shard_plan_kernel run on "
        f"{runs} batches (max_num_seqs {dom['max_num_reqs']}, every ordered choice of distinct slots, TP "
        f"{dom['tp_size']}, every rank, logits per request {dom['logits_per_req']}): every element stored, every "
        "value a slot of the batch"
        if ok
        else f"executed (concrete): {len(failures)} of {runs} runs failed, e.g. {failures[0] if failures else 'no run'}"
    )
    return {f"{SHARD}:{line}": (ok, why) for line in lines}


def _records(fact: dict, how_of=lambda p: "ast") -> list[dict]:
    out = []
    for key, result in (("checked (ast)", "checked"), ("not checked", "not checked")):
        for p in fact["paths"].get(key, []):
            site, _, what = p.partition(" ")
            how = how_of(p)
            why = what.split(" (", 1)[1].rstrip(")") if " (" in what else ""
            out.append(path_record(site, what[:120], how, result, why[:300]))
    return out


def slot_facts(root: str) -> list[dict]:
    """The two slot facts (module docstring) over the sources under ``root`` (vLLM importable)."""
    from .demand_slots import slot_array_fact, slot_fact
    from .demand_v2_requests import v2_requests_fact

    slots = slot_fact(root)
    executed = shard_paths(root)
    arrays = slot_array_fact(root, v2_requests_fact(root), executed)
    return [
        fact_record(
            "V2 request slots (RequestState.req_id_to_index values) < max_num_reqs", [], V2_SCOPE, _records(slots)
        ),
        fact_record(
            "V2 slot arrays (idx_mapping_np, idx_mapping, expanded_idx_mapping) hold slots < max_num_reqs",
            [],
            V2_SCOPE,
            _records(arrays, lambda p: "executed" if "executed (concrete)" in p else "ast"),
        ),
    ]
