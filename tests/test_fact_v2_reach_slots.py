"""The PCP local batch's may-reach reading with checked slot facts: an index whose values are
request slots (the local batch's ``idx_mapping`` is a subset of the global batch's) does not meet
the local count; a slice by the count still does (small engine tree, AST)."""

import textwrap

import pytest

from capproof.engines.vllm import demand_slots as ds
from capproof.engines.vllm.fact_v2_reach import _flow, _Index, entry_reach

GPU = "vllm/v1/worker/gpu"

FILES = {
    "pcp_manager.py": """
        from dataclasses import replace

        class PCPManager:
            def partition_batch(self, input_batch):
                n = 2 * input_batch.num_reqs
                sel = np.arange(n) // 2
                local = replace(input_batch, num_reqs=n, idx_mapping=input_batch.idx_mapping[sel])
                return local
    """,
    "lora.py": """
        import torch

        class LoraState:
            def __init__(self, max_num_reqs):
                self.lora_ids = torch.zeros(max_num_reqs)
                self.lora_rows = torch.zeros(max_num_reqs, 4)
                self.reset = torch.zeros(max_num_reqs)

            def apply(self, input_batch):
                ids = self.lora_ids[input_batch.idx_mapping]
                row = self.lora_rows[input_batch.idx_mapping_np[0]]
                row[:2] = 0
                self.reset.index_fill_(0, input_batch.idx_mapping, 0)
                return ids

            def apply_sliced(self, input_batch):
                row = self.lora_rows[input_batch.idx_mapping_np[0]]
                row[: input_batch.num_reqs] = 0
    """,
    "model_runner.py": """
        class GPUModelRunner:
            def __init__(self):
                self.pcp_manager = PCPManager()
                self.lora_state = LoraState(self.max_num_reqs)

            def execute_model(self, so):
                input_batch = make(so)
                if self.pcp_manager is not None:
                    input_batch = self.pcp_manager.partition_batch(input_batch)
                self.lora_state.apply(input_batch)
                {extra}
    """,
}


def _tree(tmp_path, extra="pass"):
    for rel, text in FILES.items():
        path = tmp_path / GPU / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).replace("{extra}", extra))
    ds.parsed_files.cache_clear()
    return str(tmp_path)


def _entry(attr, shape):
    return {
        "id": f"{GPU}/lora.py::LoraState.{attr}",
        "file": f"{GPU}/lora.py",
        "owner": "LoraState",
        "attribute": attr,
        "shape": shape,
    }


ENTRIES = [
    _entry("lora_ids", ["max_num_reqs"]),
    _entry("lora_rows", ["max_num_reqs", "4"]),
    _entry("reset", ["max_num_reqs"]),
]


def _met(root, slots):
    ix = _Index(root)
    with open(f"{root}/{GPU}/pcp_manager.py") as fh:
        line = next(i for i, t in enumerate(fh, 1) if "replace(" in t and "import" not in t)
    flow = _flow(ix, f"{GPU}/pcp_manager.py", line)
    return {k.rsplit(".", 1)[1]: v for k, v in entry_reach(ix, flow, ENTRIES, slots).items()}


def test_without_slot_facts_a_slot_array_field_of_the_local_batch_meets_the_buffer(tmp_path):
    met = _met(_tree(tmp_path), None)
    assert met["lora_ids"][0] and "indexed by input_batch.idx_mapping" in met["lora_ids"][1]
    assert met["reset"][0]


def test_with_checked_slot_facts_slot_indices_do_not_meet_the_local_count(tmp_path):
    root = _tree(tmp_path)
    met = _met(root, ds.SlotJudge(root, arrays_ok=True))
    for attr in ("lora_ids", "lora_rows", "reset"):
        hit, why = met[attr]
        assert not hit, (attr, why)
        assert "indexed by a request slot or slot array" in why


@pytest.mark.parametrize("arrays_ok", [True, False])
def test_a_row_at_a_slot_sliced_by_the_count_still_meets(tmp_path, arrays_ok):
    """``self.lora_rows[slot]`` is one row (a view); slicing that row by the local count meets it."""
    root = _tree(tmp_path, extra="self.lora_state.apply_sliced(input_batch)")
    met = _met(root, ds.SlotJudge(root, arrays_ok=arrays_ok))
    hit, why = met["lora_rows"]
    assert hit and "num_reqs" in why
    # without the slot-array fact no index by a slot array is judged a slot
    assert met["lora_ids"][0] is (not arrays_ok)
