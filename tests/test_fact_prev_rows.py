"""The V1 runner's previous-step rows (``capproof/engines/vllm/fact_prev_rows.py``) and the request
rows they bound (``capproof.engines.vllm.demand``, ``demand_helpers``).

Fast tier: small wheels written to ``tmp_path``, each positive case with a negative twin one step
past what the engine bounds (a store of another value, another file naming the buffer, an index one
past the row). Real tier: the facts on vLLM 0.33.0's extracted source and the entry they derive.
"""

from __future__ import annotations

import ast

import pytest

from capproof.engines.tracing.accesses import accesses_in_file
from capproof.engines.vllm.demand import request_rows_accesses
from capproof.engines.vllm.fact_prev_rows import prev_map_values, prev_positions_values
from capproof.inventory import Entry

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
BATCH = "vllm/v1/worker/gpu_input_batch.py"

_UTILS = """\
class CpuGpuBuffer:
    def __init__(self, *size, dtype, device, with_numpy=True):
        self.cpu = torch.zeros(*size, dtype=dtype, device="cpu")
        self.gpu = torch.zeros_like(self.cpu, device=device)
        self.np = self.cpu.numpy()
"""

_BATCH = """\
class InputBatch:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self._req_ids: list = []
        self.req_id_to_index = {}
        self.prev_req_id_to_index: dict[str, int] | None = None

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

    def remove_request(self, req_id):
        if self.prev_req_id_to_index is not None:
            self.prev_req_id_to_index.pop(req_id, None)
"""

_HELPER = """\
@torch.compile(dynamic=True)
def correct(buf, prev_positions):
    gather_indices = GATHER
    x = buf[gather_indices]
    n = prev_positions.shape[0]
"""

_RUNNER = """\
from vllm.v1.spec_decode.helper import correct


class GPUModelRunner:
    def __init__(self, max_num_reqs):
        self.prev_positions = self._make_buffer(max_num_reqs, dtype=torch.int64)
        self.buf = self._make_buffer(max_num_reqs, dtype=torch.int32)

    def _make_buffer(self, *size, dtype, numpy=True):
        return CpuGpuBuffer(*size, dtype=dtype, device=self.device, with_numpy=numpy)

    def _sample(self):
        self.input_batch.prev_req_id_to_index = {
            req_id: i for i, req_id in enumerate(self.input_batch.req_ids) if i not in skip
        }

    def _bookkeep(self):
        prev_req_id_to_index: dict[str, int] = {}
        for i, req_id in enumerate(self.input_batch.req_ids):
            prev_req_id_to_index[req_id] = i
        self.input_batch.prev_req_id_to_index = prev_req_id_to_index

    def _compute_prev_positions(self, num_reqs):
        prev_req_id_to_index = self.input_batch.prev_req_id_to_index
        prev_positions = self.prev_positions.np[:num_reqs]
        if not prev_req_id_to_index:
            prev_positions.fill(-1)
            return
        for i, req_id in enumerate(self.input_batch.req_ids[:num_reqs]):
            prev_positions[i] = POSITION

    def _update_states(self, req_id):
        prev_req_index = (
            self.input_batch.prev_req_id_to_index.get(req_id)
            if self.input_batch.prev_req_id_to_index
            else None
        )
        if prev_req_index is not None:
            self.buf.np[INDEX] = 1

    def _prepare_inputs(self, num_reqs):
        self._compute_prev_positions(num_reqs)
        self.prev_positions.copy_to_gpu(num_reqs)
        correct(self.buf.gpu, self.prev_positions.gpu[:num_reqs])
"""


def _wheel(tmp_path, position="prev_req_id_to_index.get(req_id, -1)", index="prev_req_index", gather=None, extra=""):
    for d in ("vllm/v1/worker", "vllm/v1/spec_decode"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "vllm/v1/utils.py").write_text(_UTILS)
    (tmp_path / BATCH).write_text(_BATCH)
    (tmp_path / "vllm/v1/spec_decode/helper.py").write_text(
        _HELPER.replace("GATHER", gather or "prev_positions.clamp(min=0)")
    )
    src = _RUNNER.replace("POSITION", position).replace("INDEX", index) + extra
    (tmp_path / RUNNER).write_text(src)
    found = accesses_in_file(str(tmp_path / RUNNER), RUNNER, "buf")
    return Entry(
        id=f"{RUNNER}::GPUModelRunner.buf",
        file=RUNNER,
        line=7,
        owner="GPUModelRunner",
        attribute="buf",
        dtype="int32",
        shape=["max_num_reqs"],
        how="traced",
        accesses=[a for a in found if a["line"] != 7],
    )


def test_the_snippets_parse():
    """The wheels are Python (a typo would make every case refuse for the wrong reason)."""
    for src in (_UTILS, _BATCH, _HELPER.replace("GATHER", "x"), _RUNNER.replace("POSITION", "x").replace("INDEX", "x")):
        ast.parse(src)


def test_previous_rows_are_checked_on_every_store(tmp_path):
    """Both stores of the map (a comprehension over ``enumerate(req_ids)``, a dict filled in such a
    loop), the batch's ``None`` and ``pop``; the positions' ``fill(-1)``, ``get(req_id, -1)`` and
    GPU copy, its allocation by ``torch.zeros``: all found, nothing refused."""
    _wheel(tmp_path)
    why, refused = prev_map_values(str(tmp_path))
    assert refused == [] and f"{RUNNER}:13 {{req_id: i for i, req_id in enumerate(self.input_batch.req_ids)}}" in why
    assert "prev_req_id_to_index[...] = i in for i, _ in enumerate(self.input_batch.req_ids) (:20)" in why
    why, refused = prev_positions_values(str(tmp_path))
    assert refused == []
    for site in ("6 allocated (CpuGpuBuffer: torch.zeros)", "27 fill(-1)", "30 prev_req_id_to_index.get(req_id,-1)"):
        assert f"{RUNNER}:{site}" in why


@pytest.mark.parametrize(
    "extra, refused",
    [
        ("\n    def bad(self, r):\n        self.input_batch.prev_req_id_to_index[r] = 5\n", f"{RUNNER}:47"),
        ("\n    def bad(self, r):\n        self.input_batch.prev_req_id_to_index.update({r: 5})\n", f"{RUNNER}:47"),
        (
            "\n    def bad(self, other):\n        self.input_batch.prev_req_id_to_index = "
            "{r: i for i, r in enumerate(other)}\n",
            f"{RUNNER}:47 stored otherwise",
        ),
        (
            "\n    def bad(self, r):\n        m = self.input_batch.prev_req_id_to_index\n        m[r] = 5\n",
            f"{RUNNER}:47",
        ),
    ],
)
def test_a_store_of_another_value_into_the_map_is_refused(tmp_path, extra, refused):
    """A value stored by subscript, ``update``, a comprehension over another list or through a local
    alias: the map's values are no longer rows of ``req_ids``."""
    _wheel(tmp_path, extra=extra)
    why, bad = prev_map_values(str(tmp_path))
    assert why is None and any(b.startswith(refused) for b in bad)


@pytest.mark.parametrize(
    "position, extra",
    [
        ("prev_req_id_to_index.get(req_id, 7)", ""),  # another default
        ("prev_req_id_to_index.get(req_id, -1)", "\n    def bad(self):\n        self.prev_positions.np[0] = 9\n"),
        ("prev_req_id_to_index.get(req_id, -1)", "\n    def bad(self):\n        self.prev_positions.np[:2][0] = 9\n"),
        (
            "prev_req_id_to_index.get(req_id, -1)",
            "\n    def bad(self):\n        p = self.prev_positions.np[:2]\n        p += 1\n",
        ),
    ],
)
def test_a_store_of_another_value_into_the_positions_is_refused(tmp_path, position, extra):
    """A default other than ``-1``, a store by subscript of the view, an in-place add through an alias."""
    _wheel(tmp_path, position=position, extra=extra)
    why, bad = prev_positions_values(str(tmp_path))
    assert why is None and bad


def test_another_file_naming_prev_positions_is_refused(tmp_path):
    _wheel(tmp_path)
    (tmp_path / "vllm/v1/spec_decode/other.py").write_text("def f(runner):\n    runner.prev_positions.np[0] = 9\n")
    why, bad = prev_positions_values(str(tmp_path))
    assert why is None and bad == ["vllm/v1/spec_decode/other.py:2 names .prev_positions"]


@pytest.mark.parametrize(
    "index, gather, kinds",
    [
        ("prev_req_index", None, ["indexed"]),
        ("prev_req_index + 1", None, None),  # one past a previous row
        ("prev_req_index", "prev_positions + 1", None),  # the helper's index one past
        ("prev_req_index", "prev_positions.clamp(min=1)", None),  # not the clamp the fact reads
    ],
)
def test_the_buffer_indexed_by_previous_rows_gets_request_rows(tmp_path, index, gather, kinds):
    """The runner's own index by a ``prev_req_id_to_index.get`` value and the helper's index by
    ``prev_positions.clamp(min=0)`` are rows below ``max_num_reqs`` (kind ``indexed``); one more, or
    an index the facts do not bound, leaves the entry without a demand."""
    e = _wheel(tmp_path, index=index, gather=gather)
    reasons: dict = {}
    got = request_rows_accesses(e, str(tmp_path), {}, reasons)
    assert (got[0] if got else None) == kinds
    if kinds:
        assert any("prev_req_index = self.input_batch.prev_req_id_to_index.get(req_id)" in s for s in got[1])
        assert any("gather_indices = prev_positions.clamp(min=0)" in s for s in got[1])
    else:
        assert e.id in reasons


# ------------------------------------------------------------------------------------------------
# real tier


@pytest.fixture(scope="module")
def vllm_src():
    from capproof.engines.vllm import wheels

    try:
        return wheels.source_root("vllm", "0.33.0")
    except Exception as exc:  # noqa: BLE001 - no wheel here: the real tier is skipped
        pytest.skip(str(exc))


@pytest.mark.real
def test_vllm_previous_rows_are_checked(vllm_src):
    """On vLLM 0.33.0 both facts hold with the stores the module docstring cites."""
    why, refused = prev_map_values(vllm_src)
    assert refused == [] and "gpu_model_runner.py:3515" in why and "gpu_model_runner.py:4574" in why
    why, refused = prev_positions_values(vllm_src)
    assert refused == [] and "gpu_model_runner.py:1738" in why and "gpu_model_runner.py:1734 fill(-1)" in why


@pytest.mark.real
def test_vllm_prev_num_draft_tokens_rows_are_derived(vllm_src):
    """``GPUModelRunner.prev_num_draft_tokens`` (indexed by a previous row at
    ``gpu_model_runner.py:1376`` and by ``prev_positions.clamp(min=0)`` in
    ``update_num_computed_tokens_for_batch_change``) gets request rows from its recorded accesses."""
    from capproof.inventory import load

    e = next(
        x
        for x in load("proofs/inventory/vllm-0.33.0.json")
        if x.id == f"{RUNNER}::GPUModelRunner.prev_num_draft_tokens"
    )
    e.demands = []
    got = request_rows_accesses(e, vllm_src, {})
    assert got is not None and got[0] == ["indexed"]
