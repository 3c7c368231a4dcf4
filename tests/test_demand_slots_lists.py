"""Slots reached through a map parameter, an element of a slot array and a list of slots (V2
runner, read from a small engine tree): the rules of ``SlotJudge.slot_map``, ``slot_list`` and
``slot_list_attr``, each with a change that breaks it."""

import os
import textwrap

import pytest
from test_demand_slots import RUNNER, STATES

from capproof.engines.vllm import demand_slots as ds
from capproof.engines.vllm.demand_v2_requests import derive_slot_rows
from capproof.inventory import Entry

NO_COUNT = {"checked": False, "paths": {}}


def _tree(tmp_path, runner_extra: str, files: dict | None = None) -> str:
    base = tmp_path / "vllm" / "v1" / "worker" / "gpu"
    os.makedirs(base)
    (base / "states.py").write_text(textwrap.dedent(STATES))
    runner = RUNNER + textwrap.indent(textwrap.dedent(runner_extra), "    ")
    (base / "model_runner.py").write_text(textwrap.dedent(runner))
    for name, text in (files or {}).items():
        (base / name).write_text(textwrap.dedent(text))
    ds.parsed_files.cache_clear()
    return str(tmp_path)


def _prompt_len():
    return Entry(
        id="vllm/v1/worker/gpu/states.py::RequestState.prompt_len",
        file="vllm/v1/worker/gpu/states.py",
        line=7,
        owner="RequestState",
        attribute="prompt_len",
        dtype="int32",
        shape=["max_num_reqs"],
    )


MAP_PARAM = """
def encoders(self, req_ids):
    set_loras(self.req_states, req_id_to_index={arg}, req_ids=req_ids)


def set_loras(req_states, req_id_to_index, req_ids):
    for req_id in req_ids:
        req_idx = req_id_to_index.get(req_id)
        if req_idx is None:
            continue
        req_states.prompt_len.np[req_idx] = 0
"""


@pytest.mark.parametrize(
    "arg, derived",
    [("self.req_states.req_id_to_index", True), ("dict(self.req_states.req_id_to_index)", False), ("{}", False)],
)
def test_get_on_a_map_parameter_is_a_slot_only_when_every_call_passes_the_slot_map(tmp_path, arg, derived):
    # set_loras is module-level: put it after the class (dedented)
    extra = MAP_PARAM.format(arg=arg)
    method, func = extra.split("\n\n\ndef set_loras")
    root = _tree(tmp_path, method, {"lora.py": "def set_loras" + func})
    e, reasons = _prompt_len(), {}
    got = derive_slot_rows([e], root, requests_fact=NO_COUNT, reasons=reasons)
    assert (got == [e.id]) is derived, reasons
    if derived:
        assert any("[req_idx] in set_loras (a slot)" in s for s in e.demands[0]["from"])
    else:
        assert "index req_idx is not a slot" in reasons[e.id]


ELEMENT = """
def recompute(self, input_batch):
    req_idx_list = input_batch.{field}.tolist()
    for batch_idx in range(len(req_idx_list)):
        req_idx = req_idx_list[batch_idx]
        self.req_states.prompt_len.np[req_idx] = 0
"""


@pytest.mark.parametrize("field, derived", [("idx_mapping_np", True), ("seq_lens_np", False)])
def test_an_element_of_a_slot_array_is_a_slot_and_needs_the_slot_array_fact(tmp_path, field, derived):
    root = _tree(tmp_path, ELEMENT.format(field=field))
    e, reasons = _prompt_len(), {}
    got = derive_slot_rows([e], root, requests_fact=NO_COUNT, reasons=reasons)
    assert (got == [e.id]) is derived, reasons
    if derived:
        # the element rule leans on the slot-array fact: the demand names it
        assert any("(a slot array) element" in s for s in e.demands[0]["from"])
        assert [f["fact"] for f in e.demands[0]["facts"]][1].startswith("every V2 slot array")
    else:
        assert "index req_idx is not a slot" in reasons[e.id]


THINKING = """
import torch


class ThinkingState:
    def __init__(self, max_num_reqs):
        self.cached = torch.zeros(max_num_reqs, dtype=torch.int32)
        self._reset_reqs: list[int] = []

    def add_request(self, req_idx):
        self._reset_reqs.{append}

    def apply_staged_writes(self):
        if self._reset_reqs:
            idx = async_tensor_h2d(self._reset_reqs, dtype=torch.int64, device="cpu")
            self.cached.{method}(0, idx, -1)
            self._reset_reqs.clear()
"""

THINKING_RUNNER = """
def add(self, req_id):
    req_index = self.req_states.req_id_to_index[req_id]
    self.thinking.add_request(req_index)
"""


def _cached():
    return Entry(
        id="vllm/v1/worker/gpu/thinking.py::ThinkingState.cached",
        file="vllm/v1/worker/gpu/thinking.py",
        line=7,
        owner="ThinkingState",
        attribute="cached",
        dtype="int32",
        shape=["max_num_reqs"],
    )


@pytest.mark.parametrize(
    "append, method, derived, why",
    [
        ("append(req_idx)", "index_fill_", True, None),
        ("append(req_idx + 1)", "index_fill_", False, "call self.cached.index_fill_(0,idx,-1)"),
        ("insert(0, req_idx)", "index_fill_", False, "call self.cached.index_fill_(0,idx,-1)"),
        ("append(req_idx)", "masked_fill_", False, "call self.cached.masked_fill_(0,idx,-1)"),
    ],
)
def test_index_fill_by_a_list_of_slots(tmp_path, append, method, derived, why):
    runner = THINKING_RUNNER
    files = {"thinking.py": THINKING.format(append=append, method=method)}
    root = _tree(tmp_path, runner, files)
    # the runner holds the state (an attribute constructed from the class)
    path = os.path.join(root, "vllm/v1/worker/gpu/model_runner.py")
    text = (
        open(path)
        .read()
        .replace(
            "self.req_states = RequestState(max_num_reqs=self.max_num_reqs)\n",
            "self.req_states = RequestState(max_num_reqs=self.max_num_reqs)\n"
            "        self.thinking = ThinkingState(self.max_num_reqs)\n",
        )
    )
    open(path, "w").write(text)
    ds.parsed_files.cache_clear()
    e, reasons = _cached(), {}
    got = derive_slot_rows([e], root, requests_fact=NO_COUNT, reasons=reasons)
    assert (got == [e.id]) is derived, reasons
    if derived:
        assert any("index_fill_(0, idx) in apply_staged_writes (a slot array)" in s for s in e.demands[0]["from"])
    else:
        assert reasons[e.id].endswith(why), reasons[e.id]


@pytest.mark.real
def test_vllm_0_33_lora_ids_and_the_thinking_caches_are_rows_at_slots():
    """On vLLM 0.33.0's source: ``LoraState.lora_ids`` (``lora_state.lora_ids[req_idx]`` with
    ``req_idx = req_id_to_index.get(req_id)``, ``mm/lora.py:37-41``, the runner passing
    ``self.req_states.req_id_to_index``) and the three thinking-budget caches
    (``index_fill_(0, idx, ...)`` with ``idx = async_tensor_h2d(self._reset_reqs, ...)``,
    ``sample/thinking_budget.py:101-108``, ``_reset_reqs`` only appended slots in ``add_request``)
    get rows ``max_num_reqs`` from the slot facts."""
    import json

    from capproof.engines.vllm import wheels
    from capproof.engines.vllm.fact_slots import shard_paths

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.exists(os.path.join(root, "vllm/v1/worker/gpu/sample/thinking_budget.py")):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    names = {
        "vllm/v1/worker/gpu/lora_utils.py::LoraState.lora_ids",
        "vllm/v1/worker/gpu/sample/thinking_budget.py::ThinkingBudgetState.cached_last_end",
        "vllm/v1/worker/gpu/sample/thinking_budget.py::ThinkingBudgetState.cached_last_start",
        "vllm/v1/worker/gpu/sample/thinking_budget.py::ThinkingBudgetState.cached_scan_pos",
    }
    inv = os.path.join(os.path.dirname(__file__), "..", "proofs", "inventory", "vllm-0.33.0.json")
    with open(inv, encoding="utf-8") as fh:
        rows = [e for e in json.load(fh)["entries"] if e["id"] in names]
    entries = [
        Entry(
            id=e["id"],
            file=e["file"],
            line=e["line"],
            owner=e["owner"],
            attribute=e["attribute"],
            dtype=e["dtype"],
            shape=e["shape"],
        )
        for e in rows
    ]
    assert len(entries) == len(names)
    ds.parsed_files.cache_clear()
    reasons: dict = {}
    done = derive_slot_rows(entries, root, reasons=reasons, executed=shard_paths(root))
    assert set(done) == names, reasons
    by_id = {e.id: e for e in entries}
    lora = by_id["vllm/v1/worker/gpu/lora_utils.py::LoraState.lora_ids"].demands[0]
    assert any("mm/lora.py:41 [req_idx] in set_active_mm_loras (a slot)" in s for s in lora["from"])
    cache = by_id["vllm/v1/worker/gpu/sample/thinking_budget.py::ThinkingBudgetState.cached_scan_pos"].demands[0]
    assert any("index_fill_(0, idx) in apply_staged_writes (a slot array)" in s for s in cache["from"])
    assert all(f["checked"] for f in cache["facts"])
