"""Request rows of the V1 drafters' staging buffers (capproof/engines/vllm/demand_drafter_rows.py).

Fast tier: the source reader on small trees in the shape of vLLM 0.33.0's lines
(``vllm/v1/spec_decode/extract_hidden_states.py:330-336``); the unpadded-count fact is vLLM's own
reading (``demand.unpadded_requests_bound``) in the real tier, replaced here by its record form."""

from __future__ import annotations

import os

import pytest

from capproof.engines.vllm import demand as D
from capproof.engines.vllm import demand_drafter_rows as R
from capproof.inventory import Entry

_BATCH = """\
class InputBatch:
    @property
    def num_reqs(self) -> int:
        return len(self.req_id_to_index)
"""

_DRAFTER = """\
from vllm.v1.worker.gpu_input_batch import InputBatch


class ExtractHiddenStatesProposer:
    def prepare_next_token_ids_padded(self, requests, gpu_input_batch: InputBatch, other):
        num_reqs = gpu_input_batch.num_reqs
        for i in range(num_reqs):
            self.backup_next_token_ids.np[i] = requests[i]
        self.backup_next_token_ids.copy_to_gpu(num_reqs)
        backup_tokens_gpu = self.backup_next_token_ids.gpu[:num_reqs]
        n = other.shape[0]
        for j in range(n):
            self.backup_next_token_ids.np[j] = 0
        return backup_tokens_gpu
"""

FILE = R.DRAFTER_FILES[0]
FACT = {"fact": "num_reqs <= max_num_reqs (unpadded batch)", "checked": True, "paths": {}}


def _root(tmp_path, drafter=_DRAFTER):
    for rel, text in ((R.INPUT_BATCH, _BATCH), (FILE, drafter)):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp_path)


def _entry(accesses):
    return Entry(
        id=f"{FILE}::ExtractHiddenStatesProposer.backup_next_token_ids",
        file=FILE,
        line=1,
        owner="ExtractHiddenStatesProposer",
        attribute="backup_next_token_ids",
        dtype="int32",
        shape=["max_num_reqs"],
        accesses=[{"file": FILE, "how": "ast", "dim": 0, **a} for a in accesses],
    )


GOOD = [
    {"line": 8, "op": "index.np write", "extent": "i"},
    {"line": 9, "op": "copy_to_gpu (slice)", "extent": "num_reqs"},
    {"line": 10, "op": "slice.gpu read", "extent": "num_reqs"},
]


@pytest.fixture
def fact(monkeypatch):
    monkeypatch.setattr(D, "unpadded_requests_bound", lambda root: FACT)


def test_slices_and_loop_indices_by_the_persistent_batch_count_give_request_rows(tmp_path, fact):
    e = _entry(GOOD)
    assert R.derive_drafter_rows([e], _root(tmp_path)) == [e.id]
    (d,) = e.demands
    assert d["family"] == "request rows" and d["dim"] == 0 and d["facts"] == [FACT]
    assert d["extent"] == "select(num_reqs <= max_num_reqs, num_reqs, 0)"
    assert any("for i in range(num_reqs)" in s for s in d["from"])


def test_an_index_by_a_count_read_off_a_tensor_is_refused(tmp_path, fact):
    e = _entry([*GOOD, {"line": 13, "op": "index.np write", "extent": "j"}])
    reasons = {}
    assert R.derive_drafter_rows([e], _root(tmp_path), reasons) == [] and e.demands == []
    assert reasons[e.id] == "13 index.np 'j'"


def test_a_count_without_the_input_batch_annotation_or_import_is_refused(tmp_path, fact):
    for text in (
        _DRAFTER.replace("gpu_input_batch: InputBatch", "gpu_input_batch"),
        _DRAFTER.replace("from vllm.v1.worker.gpu_input_batch import InputBatch", "from x import InputBatch"),
        _DRAFTER.replace("        for i in range(num_reqs):\n", "        i = 7\n        for i in range(num_reqs):\n"),
    ):
        e = _entry(GOOD)
        assert R.derive_drafter_rows([e], _root(tmp_path, text)) == [], text


def test_an_unchecked_unpadded_fact_leaves_the_count_free(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "unpadded_requests_bound", lambda root: {**FACT, "checked": False})
    e = _entry(GOOD)
    R.derive_drafter_rows([e], _root(tmp_path))
    assert e.demands[0]["extent"] == "num_reqs"


@pytest.mark.real
def test_vllms_drafter_staging_rows_and_their_uses():
    """On vLLM 0.33.0's sources: both drafters' `backup_next_token_ids` get request rows from their
    accesses; the extract-hidden-states one has no unchecked use, the base proposer's keeps its
    local `.gpu` alias (handed whole to a Triton kernel) unchecked."""
    from capproof.engines.vllm import wheels
    from capproof.engines.vllm.foreign_uses import check_foreign_uses
    from capproof.inventory import load

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.isdir(os.path.join(root, "vllm", "v1", "spec_decode")):
        pytest.skip("vLLM 0.33.0's sources are not extracted")
    ents = [e for e in load("proofs/inventory/vllm-0.33.0.json") if e.file in R.DRAFTER_FILES]
    for e in ents:
        e.demands = []
        e.accesses = [a for a in e.accesses if a.get("file") in (None, e.file)]
    done = R.derive_drafter_rows(ents, root)
    extract = f"{R.DRAFTER_FILES[0]}::ExtractHiddenStatesProposer.backup_next_token_ids"
    base = f"{R.DRAFTER_FILES[1]}::SpecDecodeBaseProposer.backup_next_token_ids"
    assert {extract, base} <= set(done)
    lines = check_foreign_uses([e for e in ents if e.id in done], root, D.judge_request_rows)
    assert [ln.split(":")[0] for ln in lines] == [base.split(":")[0]] and "backup_tokens_gpu" in lines[0]
