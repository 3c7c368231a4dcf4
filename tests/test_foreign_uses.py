"""Uses of a derived buffer outside its allocating file (capproof/engines/vllm/foreign_uses.py).

A small vllm/ tree written to tmp_path stands for the wheel's sources: the reader is a pure AST
reading, so no vLLM import is needed."""

import textwrap

from capproof.coverage import derived_dims
from capproof.engines.vllm.demand import judge_request_rows
from capproof.engines.vllm.foreign_uses import check_foreign_uses, foreign_uses, holder_names
from capproof.inventory import Entry

BATCH = """
class InputBatch:
    def __init__(self, max_num_reqs):
        self.temperature = torch.empty(max_num_reqs)

    @property
    def num_reqs(self):
        return len(self.req_id_to_index)
"""

RUNNER = """
from vllm.v1.worker.gpu_input_batch import InputBatch
from vllm.v1.worker.mixin import Mixin

class GPUModelRunner(Mixin):
    def __init__(self):
        self.input_batch = InputBatch(8)
"""

MIXIN = """
class Mixin:
    def step(self):
        num_reqs = self.input_batch.num_reqs
        self.input_batch.temperature[:num_reqs].fill_(1.0)
        n = self.input_batch.temperature.shape[0]
"""

PROPOSER = """
from vllm.v1.worker.gpu_input_batch import InputBatch

def propose(input_batch: InputBatch, req_index):
    ib = input_batch
    ib.temperature[req_index] = 0.0
"""

V2 = """
from vllm.v1.worker.gpu.input_batch import InputBatch

def other(input_batch: InputBatch):
    return input_batch.temperature[0]
"""


def _tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(tmp_path)


def _entry():
    return Entry(
        id="vllm/v1/worker/gpu_input_batch.py::InputBatch.temperature",
        file="vllm/v1/worker/gpu_input_batch.py",
        line=4,
        owner="InputBatch",
        attribute="temperature",
        dtype="float32",
        shape=["max_num_reqs"],
        demands=[{"dim": 0, "how": "ast", "family": "request rows", "extent": "num_reqs", "from": []}],
    )


def test_uses_through_holders_mixins_and_aliases_are_found_and_another_class_is_not(tmp_path):
    root = _tree(
        tmp_path,
        {
            "vllm/v1/worker/gpu_input_batch.py": BATCH,
            "vllm/v1/worker/gpu_model_runner.py": RUNNER,
            "vllm/v1/worker/mixin.py": MIXIN,
            "vllm/v1/spec_decode/proposer.py": PROPOSER,
            "vllm/v1/worker/gpu/other.py": V2,
        },
    )
    assert holder_names(root, "vllm/v1/worker/gpu_input_batch.py", "InputBatch") == {"input_batch"}
    uses = {(u["file"], u["line"], u["op"]) for u in foreign_uses(root, _entry())}
    assert uses == {
        ("vllm/v1/worker/mixin.py", 5, "slice read"),
        ("vllm/v1/worker/mixin.py", 6, "metadata .shape"),
        ("vllm/v1/spec_decode/proposer.py", 6, "index write"),
    }


def test_an_unchecked_use_elsewhere_takes_verified_away_and_is_listed(tmp_path):
    root = _tree(
        tmp_path,
        {
            "vllm/v1/worker/gpu_input_batch.py": BATCH,
            "vllm/v1/worker/gpu_model_runner.py": RUNNER,
            "vllm/v1/worker/mixin.py": MIXIN,
            "vllm/v1/spec_decode/proposer.py": PROPOSER,
        },
    )
    e = _entry()
    lines = check_foreign_uses([e], root, judge_request_rows)
    assert len(lines) == 1 and "1 uses not checked" in lines[0]
    (d,) = e.demands
    # the slice by the batch's count and the .shape read are judged; the index by a parameter is not
    assert d["unchecked_uses_count"] == 1
    assert d["unchecked_uses"][0].startswith("vllm/v1/spec_decode/proposer.py:6 index write")
    assert derived_dims(e.to_dict()) == set()
    assert {a["file"] for a in e.accesses} == {"vllm/v1/worker/mixin.py", "vllm/v1/spec_decode/proposer.py"}


def test_checked_uses_elsewhere_keep_the_demand(tmp_path):
    root = _tree(
        tmp_path,
        {
            "vllm/v1/worker/gpu_input_batch.py": BATCH,
            "vllm/v1/worker/gpu_model_runner.py": RUNNER,
            "vllm/v1/worker/mixin.py": MIXIN,
        },
    )
    e = _entry()
    assert check_foreign_uses([e], root, judge_request_rows) == []
    assert "unchecked_uses" not in e.demands[0]
    assert derived_dims(e.to_dict()) == {0}


def test_a_checked_use_elsewhere_must_be_covered_by_the_extent():
    """A use bounded by the dispatcher's padded count is covered only by an extent with the padded
    select; an index below max_num_reqs only by an extent that takes max_num_reqs."""
    from capproof.engines.vllm.foreign_uses import covers

    plain = "select(num_reqs <= max_num_reqs, num_reqs, 0)"
    padded = f"select(padded == 1, rows, {plain})"
    assert covers(plain, "unpadded") and covers(plain, "whole")
    assert not covers(plain, "padded") and covers(padded, "padded")
    assert not covers(padded, "indexed")
    assert covers(f"maximum({padded}, max_num_reqs)", "indexed") and covers("max_num_reqs", "indexed")
    assert not covers("max_num_reqs", "padded")


def test_a_buffer_returned_or_aliased_in_its_own_file_is_not_verified(tmp_path):
    """The access reader records subscripts and calls; a ``return self.buf`` or ``x = self.buf``
    hands the buffer on unread, so the derived demand is marked."""
    root = _tree(
        tmp_path,
        {
            "vllm/v1/worker/gpu_input_batch.py": BATCH + "\n    def view(self):\n        return self.temperature\n",
            "vllm/v1/worker/gpu_model_runner.py": RUNNER,
        },
    )
    e = _entry()
    (line,) = check_foreign_uses([e], root, judge_request_rows)
    assert "return" in e.demands[0]["unchecked_uses"][0] and derived_dims(e.to_dict()) == set()


def test_a_use_the_derivation_judged_itself_is_checked_once_per_judged_use(tmp_path):
    """The V2 slot rows judge every use under ``vllm/v1/worker/gpu/`` themselves and list them in
    ``judged_uses``; a use at such a site is then checked here, but a second use on the same line
    (or a site not listed) is not."""
    root = _tree(
        tmp_path,
        {
            "vllm/v1/worker/gpu_input_batch.py": BATCH,
            "vllm/v1/worker/gpu_model_runner.py": RUNNER,
            "vllm/v1/spec_decode/proposer.py": PROPOSER,
        },
    )
    e = _entry()
    e.demands[0]["judged_uses"] = ["vllm/v1/spec_decode/proposer.py:6"]
    assert check_foreign_uses([e], root, judge_request_rows) == []
    assert derived_dims(e.to_dict()) == {0}

    twice = PROPOSER.replace("ib.temperature[req_index] = 0.0", "ib.temperature[req_index] = ib.temperature[0]")
    root = _tree(
        tmp_path / "b",
        {
            "vllm/v1/worker/gpu_input_batch.py": BATCH,
            "vllm/v1/worker/gpu_model_runner.py": RUNNER,
            "vllm/v1/spec_decode/proposer.py": twice,
        },
    )
    e = _entry()
    e.demands[0]["judged_uses"] = ["vllm/v1/spec_decode/proposer.py:6"]
    assert len(check_foreign_uses([e], root, judge_request_rows)) == 1
    assert derived_dims(e.to_dict()) == set()
