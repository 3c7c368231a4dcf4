"""A runner buffer handed to a Python helper (capproof/engines/vllm/demand_helpers.py): the helper's
own slices and indexes are judged at the call site, so ``passed to <helper>`` no longer refuses a
request-row demand, and anything the reading cannot bound still does.

Fast tier: small wheels written to ``tmp_path`` (a runner, a helper module, an input batch); the
committed inventory's entries derived this way are re-derived from the real wheel by
``tests/test_demand.py::test_committed_request_rows_are_what_the_engine_derives_now`` (real tier).
"""

from __future__ import annotations

import pytest

from capproof.engines.tracing.accesses import accesses_in_file
from capproof.engines.vllm.demand import request_rows_accesses
from capproof.inventory import Entry

RUNNER = "vllm/v1/worker/gpu_model_runner.py"

_RUNNER_SRC = """\
from vllm.v1.spec_decode.helpers import copy_counts, trim, sync, stepped, reassign, deco, unpack, dup

class GPUModelRunner:
    def __init__(self, max_num_reqs):
        self.buf = torch.zeros(max_num_reqs)

    def propose(self, counts):
        CALL
"""

_HELPERS_SRC = """\
import torch


def copy_counts(buf, counts, batch_size):
    n = min(batch_size, counts.shape[0])
    if n <= 0:
        return
    buf[:n].copy_(counts[:n])
    x = buf.shape


def trim(buf, scheduler_output, req_id_to_index):
    for req_id in scheduler_output.req_ids:
        req_index = req_id_to_index.get(req_id)
        if req_index is None:
            continue
        v = int(buf[req_index].item())


def sync(input_batch, _buf):
    active = list(input_batch.req_id_to_index.values())
    n_active = len(active)
    _inner(_buf, n_active)


def _inner(vals_buf, n):
    vals = vals_buf[:n]


def stepped(buf, n):
    buf[:n:2] = 0


def reassign(buf, n):
    buf = buf[1:]
    buf[:n] = 0


@functools.cache
def deco(buf, n):
    buf[:n] = 0


def unpack(*args):
    args[0][:1] = 0


def dup(buf, n):
    buf[:n] = 0


if torch.cuda.is_available():
    def dup(buf, n):
        buf[: n + 5] = 0
"""

_BATCH_SRC = """\
class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids: list = []
        self.req_id_to_index = {}

    @property
    def num_reqs(self):
        return NUM_REQS

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
"""


def _wheel(tmp_path, call: str, num_reqs: str = "len(self.req_id_to_index)") -> Entry:
    (tmp_path / "vllm/v1/worker").mkdir(parents=True, exist_ok=True)
    (tmp_path / "vllm/v1/spec_decode").mkdir(parents=True, exist_ok=True)
    (tmp_path / RUNNER).write_text(_RUNNER_SRC.replace("CALL", call))
    (tmp_path / "vllm/v1/spec_decode/helpers.py").write_text(_HELPERS_SRC)
    (tmp_path / "vllm/v1/worker/gpu_input_batch.py").write_text(_BATCH_SRC.replace("NUM_REQS", num_reqs))
    found = accesses_in_file(str(tmp_path / RUNNER), RUNNER, "buf")
    return Entry(
        id=f"{RUNNER}::GPUModelRunner.buf",
        file=RUNNER,
        line=5,
        owner="GPUModelRunner",
        attribute="buf",
        dtype="int32",
        shape=["max_num_reqs"],
        how="traced",
        accesses=[a for a in found if a["line"] != 5],
    )


def test_a_helper_slice_by_min_of_the_request_count_is_bounded(tmp_path):
    """``copy_counts(self.buf, counts, self.input_batch.num_reqs)``: the helper slices
    ``buf[:min(batch_size, ...)]`` (the minimum is at most the unpadded count) and reads only
    metadata otherwise."""
    e = _wheel(tmp_path, "copy_counts(self.buf, counts, self.input_batch.num_reqs)")
    assert [a["op"] for a in e.accesses] == ["passed to copy_counts"]
    kinds, sites = request_rows_accesses(e, str(tmp_path), {})
    assert kinds == ["unpadded"]
    assert sites[0] == (
        "vllm/v1/spec_decode/helpers.py:8 slice [:n] in copy_counts "
        "(unpadded: min(self.input_batch.num_reqs,counts.shape[0]) in propose)"
    )
    assert sites[-1].startswith(f"{RUNNER}:8 passed to copy_counts (vllm/v1/spec_decode/helpers.py:4) as buf")


def test_a_helper_index_by_a_req_id_to_index_value_is_bounded(tmp_path):
    """The helper indexes by ``req_id_to_index.get(...)`` with the runner's map bound at the call:
    every store into the map is a register-asserted index (the same fact the runner's own indexes use)."""
    e = _wheel(tmp_path, "trim(self.buf, counts, self.input_batch.req_id_to_index)")
    kinds, sites = request_rows_accesses(e, str(tmp_path), {})
    assert kinds == ["indexed"]
    assert "req_id_to_index values < max_num_reqs" in sites[0]


@pytest.mark.parametrize("num_reqs, derived", [("len(self.req_id_to_index)", True), ("len(self._req_ids) + 1", False)])
def test_a_count_of_the_batch_map_is_the_request_count_only_when_num_reqs_is_its_length(tmp_path, num_reqs, derived):
    """Handed on two calls deep: ``len(list(input_batch.req_id_to_index.values()))`` is the unpadded
    count only when ``InputBatch.num_reqs`` returns that length (read in its source)."""
    e = _wheel(tmp_path, "sync(self.input_batch, self.buf)", num_reqs)
    reasons: dict = {}
    got = request_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got is not None) is derived, reasons
    if derived:
        assert got[0] == ["unpadded"]
        assert any("_inner" in s and "len(list(self.input_batch.req_id_to_index.values()))" in s for s in got[1])
    else:
        assert "vals_buf[:n]" not in reasons[e.id] and "helpers.py:27 slice stop n" in reasons[e.id]


@pytest.mark.parametrize(
    "call, why",
    [
        ("copy_counts(self.buf, counts, len(counts))", "slice stop n not a bounded request count"),
        ("trim(self.buf, counts, counts)", "index [req_index] not a value of req_id_to_index"),
        ("stepped(self.buf, self.input_batch.num_reqs)", "a stepped slice"),
        ("reassign(self.buf, self.input_batch.num_reqs)", "reassign reassigns buf"),
        ("deco(self.buf, self.input_batch.num_reqs)", "deco is decorated"),
        ("unpack(self.buf)", "takes *args/**kwargs"),
        ("self.drafter.go(self.buf)", "self.drafter.go is not a module-level function"),
        ("print(self.buf)", "print is not a module-level function"),
        ("dup(self.buf, self.input_batch.num_reqs)", "dup is not a module-level function"),  # defined twice
    ],
)
def test_a_helper_the_reading_cannot_bound_refuses_the_entry(tmp_path, call, why):
    """Each refusal names the helper's line or the reason; the entry keeps no derived demand."""
    e = _wheel(tmp_path, call)
    reasons: dict = {}
    assert request_rows_accesses(e, str(tmp_path), {}, reasons) is None
    assert why in reasons[e.id]


_OFFSETS_RUNNER = """\
class GPUModelRunner:
    def __init__(self, max_num_reqs):
        self.query_start_loc = torch.zeros(max_num_reqs + 1)

    def _prepare_inputs(self, out):
        num_reqs = self.input_batch.num_reqs
        self.query_start_loc.np[0] = 0
        self.query_start_loc.np[1 : num_reqs + 1] = out
        return self.query_start_loc.gpu[: num_reqs + STOP]
"""


@pytest.mark.parametrize(
    "shape, stop, kinds",
    [
        ("1 + max_num_reqs", "1", ["index0", "plus1", "unpadded"]),
        ("1 + max_num_reqs", "2", None),  # past the extra row
        ("max_num_reqs", "1", None),  # a [max_num_reqs] row has no extra row
    ],
)
def test_an_offsets_row_takes_one_row_past_the_request_count(tmp_path, shape, stop, kinds):
    """A ``[1 + max_num_reqs]`` buffer sliced ``[1 : num_reqs + 1]`` and indexed ``[0]`` is bounded
    (kinds ``plus1``, ``index0``); a stop two past the count, or one past on a ``[max_num_reqs]``
    buffer, refuses."""
    (tmp_path / "vllm/v1/worker").mkdir(parents=True)
    (tmp_path / RUNNER).write_text(_OFFSETS_RUNNER.replace("STOP", stop))
    found = accesses_in_file(str(tmp_path / RUNNER), RUNNER, "query_start_loc")
    e = Entry(
        id=f"{RUNNER}::GPUModelRunner.query_start_loc",
        file=RUNNER,
        line=3,
        owner="GPUModelRunner",
        attribute="query_start_loc",
        dtype="int32",
        shape=[shape],
        how="traced",
        accesses=[a for a in found if a["line"] != 3],
    )
    got = request_rows_accesses(e, str(tmp_path), {})
    assert (got[0] if got else None) == kinds
    if kinds:
        assert f"{RUNNER}:8 slice.np [:num_reqs + 1] in _prepare_inputs (unpadded)" in got[1]
