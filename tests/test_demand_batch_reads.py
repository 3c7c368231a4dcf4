"""Request rows judged through the persistent batch and past same-named fields of other objects
(``capproof/engines/vllm/batch_reads.py``, ``capproof.engines.vllm.demand``): a slice or index
bounded by the batch a function receives as an ``InputBatch`` parameter (``num_reqs``,
``len(req_ids)``, a ``req_id_to_index`` value, an ``enumerate``/``range`` loop index), an in-file
``range(num_reqs)`` loop index, and a subscript of another object's non-tensor field of the same
name. Every positive case has a negative twin one step past what the engine bounds.

Fast tier: small wheels written to ``tmp_path``; the committed inventory's entries derived this way
are re-derived from the real wheel by ``tests/test_demand.py`` (real tier).
"""

from __future__ import annotations

import ast
import os

import pytest

from capproof.engines.tracing.accesses import accesses_in_file
from capproof.engines.vllm.demand import judge_request_rows, request_rows_accesses
from capproof.engines.vllm.foreign_uses import foreign_uses, judge
from capproof.inventory import Entry

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
BATCH = "vllm/v1/worker/gpu_input_batch.py"
INV = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proofs", "inventory", "vllm-0.33.0.json"
)

_BATCH_SRC = """\
class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids: list = []
        self.req_id_to_index = {}
        self.buf = torch.zeros(max_num_reqs)

    @property
    def req_ids(self):
        return cast(list[str], self._req_ids)

    @property
    def num_reqs(self):
        return len(self.req_id_to_index)

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
        self.buf[req_index] = 0
"""

_USER_SRC = """\
from vllm.v1.worker.gpu_input_batch import InputBatch


def use(input_batch: "InputBatch", req_id, sampled):
    BODY
"""


def _batch_wheel(tmp_path, body: str) -> Entry:
    (tmp_path / "vllm/v1/worker").mkdir(parents=True, exist_ok=True)
    (tmp_path / "vllm/v1/attention").mkdir(parents=True, exist_ok=True)
    (tmp_path / BATCH).write_text(_BATCH_SRC)
    (tmp_path / "vllm/v1/attention/user.py").write_text(_USER_SRC.replace("BODY", body.replace("\n", "\n    ")))
    found = accesses_in_file(str(tmp_path / BATCH), BATCH, "buf")
    return Entry(
        id=f"{BATCH}::InputBatch.buf",
        file=BATCH,
        line=6,
        owner="InputBatch",
        attribute="buf",
        dtype="int32",
        shape=["max_num_reqs"],
        how="traced",
        accesses=[a for a in found if a["line"] != 6],
    )


@pytest.mark.parametrize(
    "body, kind",
    [
        ("num_reqs = len(input_batch.req_ids)\nx = input_batch.buf[:num_reqs]", "indexed"),
        ("num_reqs = len(input_batch.req_ids) + 1\nx = input_batch.buf[:num_reqs]", None),
        ("n = input_batch.num_reqs\nx = input_batch.buf[:n]", "unpadded"),
        ("for i in range(input_batch.num_reqs):\n    x = input_batch.buf[i]", "unpadded"),
        ("for i in range(input_batch.num_reqs + 1):\n    x = input_batch.buf[i]", None),
        ("index = input_batch.req_id_to_index[req_id]\nx = input_batch.buf[index]", "indexed"),
        ("index = input_batch.req_id_to_index[req_id] + 1\nx = input_batch.buf[index]", None),
        ("m = input_batch.req_id_to_index\nindex = m.get(req_id)\nx = input_batch.buf[index]", "indexed"),
        ("m = input_batch.req_id_to_index\nm[req_id] = 9\nindex = m.get(req_id)\nx = input_batch.buf[index]", None),
        ("index = input_batch.req_id_to_index.get(req_id, 7)\nx = input_batch.buf[index]", None),  # a default
        ("m = input_batch.req_id_to_index\nfor index in list(m.values()):\n    x = input_batch.buf[index]", "indexed"),
        (
            "v = list(input_batch.req_id_to_index.values())\nv.append(9)\nfor index in v:\n    x = input_batch.buf[index]",
            None,
        ),
        ("for index, r in enumerate(input_batch.req_ids):\n    x = input_batch.buf[index]", "indexed"),
        ("for i, s in enumerate(sampled):\n    x = input_batch.buf[i]", None),  # another list's length
        ("input_batch = other\nn = input_batch.num_reqs\nx = input_batch.buf[:n]", None),  # rebound
    ],
)
def test_a_use_through_the_batch_parameter_is_bounded_only_by_the_batch(tmp_path, body, kind):
    """In another file, a use of the batch's buffer through an ``InputBatch`` parameter is checked
    when its stop or index is the batch's count, its ``req_ids`` length, a map value or a loop index
    over them; one more row, another list's index or a rebound parameter is not."""
    e = _batch_wheel(tmp_path, body)
    uses = [u for u in foreign_uses(str(tmp_path), e) if u["file"] == "vllm/v1/attention/user.py"]
    assert len(uses) == 1
    got = judge(str(tmp_path), e, uses[0], "request rows", {}, judge_request_rows)
    assert (got[1] if got else None) == kind


def test_a_slice_by_the_batch_length_gives_the_entry_max_num_reqs_rows(tmp_path):
    """The whole entry: its own index (asserted below ``max_num_reqs``) and the other file's slice
    by ``len(req_ids)`` derive; the extent kinds are the index's."""
    e = _batch_wheel(tmp_path, "num_reqs = len(input_batch.req_ids)\nx = input_batch.buf[:num_reqs]")
    kinds, sites = request_rows_accesses(e, str(tmp_path), {})
    assert kinds == ["indexed"]
    assert any(s.startswith("vllm/v1/attention/user.py:6 slice read (slice stop num_reqs = len(") for s in sites)


_RUNNER_SRC = """\
from dataclasses import replace

from vllm.v1.core.sched.output import SchedulerOutput


class GPUModelRunner:
    def __init__(self, max_num_reqs):
        self.buf = torch.zeros(max_num_reqs)

    def step(self, scheduler_output: "SchedulerOutput", req_id):
        scheduler_output = replace(scheduler_output, buf={})
        num_reqs = self.input_batch.num_reqs
        self.buf[:num_reqs] = 0
        n = scheduler_output.buf[req_id]
        for i in range(STOP):
            self.buf[i] = 1
"""


def _runner_wheel(tmp_path, field: str, stop: str = "num_reqs") -> Entry:
    (tmp_path / "vllm/v1/worker").mkdir(parents=True, exist_ok=True)
    (tmp_path / "vllm/v1/core/sched").mkdir(parents=True, exist_ok=True)
    (tmp_path / BATCH).write_text(_BATCH_SRC)
    (tmp_path / RUNNER).write_text(_RUNNER_SRC.replace("STOP", stop))
    (tmp_path / "vllm/v1/core/sched/output.py").write_text(f"class SchedulerOutput:\n    buf: {field}\n")
    found = accesses_in_file(str(tmp_path / RUNNER), RUNNER, "buf")
    return Entry(
        id=f"{RUNNER}::GPUModelRunner.buf",
        file=RUNNER,
        line=8,
        owner="GPUModelRunner",
        attribute="buf",
        dtype="int32",
        shape=["max_num_reqs"],
        how="traced",
        accesses=[a for a in found if a["line"] != 8],
    )


@pytest.mark.parametrize(
    "field, stop, kinds",
    [
        ("dict[str, int]", "num_reqs", ["unpadded"]),
        ("torch.Tensor", "num_reqs", None),  # a tensor field may be the buffer itself
        ("dict[str, int]", "num_reqs + 1", None),  # a loop one row past the count
    ],
)
def test_another_objects_field_of_the_same_name_is_not_the_buffer(tmp_path, field, stop, kinds):
    """``scheduler_output.buf[req_id]`` (a parameter annotated with a class that declares ``buf`` a
    dict, rebound only by ``dataclasses.replace`` of itself) is not an access of the runner's
    ``buf``; a field annotated as a tensor is judged as the buffer's and refuses. The in-file
    ``for i in range(num_reqs)`` index is below the count; ``range(num_reqs + 1)`` refuses."""
    e = _runner_wheel(tmp_path, field, stop)
    reasons: dict = {}
    got = request_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got[0] if got else None) == kinds
    if kinds:
        assert any("14 index: not this buffer (scheduler_output: SchedulerOutput" in s for s in got[1])
        assert any("16 index [i] in step (for i in range(num_reqs)" in s for s in got[1])
    else:
        assert e.id in reasons


def test_the_source_snippets_parse():
    """The wheels above are Python (a typo would make every case refuse for the wrong reason)."""
    for src in (_BATCH_SRC, _RUNNER_SRC.replace("STOP", "n"), _USER_SRC.replace("BODY", "pass")):
        ast.parse(src)


_ARANGE_RUNNER = """\
class GPUModelRunner:
    def __init__(self, max_num_reqs):
        self.arange_np = np.arange(max_num_reqs + 1)

    def _prepare_inputs(self, counts):
        num_reqs = self.input_batch.num_reqs
        req_indices = np.repeat(self.arange_np[:STOP], counts)
        x = self.input_batch.buf[req_indices]
        WRITE
"""


@pytest.mark.parametrize(
    "stop, write, kind",
    [
        ("num_reqs", "pass", "unpadded"),
        ("num_reqs + 1", "pass", None),  # one entry past the count
        ("num_reqs", "self.arange_np[0] = 7", None),  # the entries are no longer their index
        ("num_reqs", "f(self.arange_np)", None),  # handed on: not read here
    ],
)
def test_a_repeat_of_the_arange_prefix_indexes_below_the_count(tmp_path, stop, write, kind):
    """``buf[np.repeat(self.arange_np[:num_reqs], counts)]`` indexes rows below ``num_reqs`` while
    the runner's ``arange_np`` is ``np.arange`` and nothing writes it or hands it on."""
    e = _batch_wheel(tmp_path, "pass")
    (tmp_path / RUNNER).write_text(_ARANGE_RUNNER.replace("STOP", stop).replace("WRITE", write))
    uses = [u for u in foreign_uses(str(tmp_path), e) if u["file"] == RUNNER]
    assert len(uses) == 1
    got = judge(str(tmp_path), e, uses[0], "request rows", {}, judge_request_rows)
    assert (got[1] if got else None) == kind


@pytest.mark.real
@pytest.mark.parametrize(
    "attribute, kinds, site",
    [
        (
            "gpu_model_runner.py::GPUModelRunner.num_scheduled_tokens",
            ["unpadded"],
            "vllm/v1/worker/gpu_model_runner.py:2549 index: not this buffer (scheduler_output: SchedulerOutput, "
            "which declares num_scheduled_tokens: dict[str,int])",
        ),
        (
            "gpu_input_batch.py::InputBatch.num_computed_tokens_cpu_tensor",
            ["indexed", "padded", "unpadded"],
            "vllm/v1/worker/gpu_model_runner.py:1958 index read (req_indices = np.repeat(self.arange_np[:num_reqs]",
        ),
        (
            "gpu_input_batch.py::InputBatch.num_prompt_tokens_cpu_tensor",
            ["indexed", "padded", "unpadded"],
            "vllm/v1/spec_decode/suffix_decoding.py:68 index read (index index = input_batch.req_id_to_index[req_id]",
        ),
    ],
)
def test_the_wheel_s_runner_and_batch_rows_derive_through_these_reads(attribute, kinds, site):
    """On vLLM 0.33.0's own source, the three V1 entries these readings unlock derive request rows
    with every recorded access (and every use in other files) judged, the site that refused each
    before among them."""
    from capproof.engines.vllm import wheels
    from capproof.inventory import load

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.isdir(os.path.join(root, "vllm", "v1", "worker")):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    e = next(x for x in load(INV) if x.id == f"vllm/v1/worker/{attribute}")
    e.demands = []
    e.accesses = [a for a in e.accesses if a.get("file") in (None, e.file)]
    reasons: dict = {}
    got = request_rows_accesses(e, root, {}, reasons)
    assert got is not None, reasons.get(e.id)
    assert got[0] == kinds
    assert any(s.startswith(site) for s in got[1]), got[1]
