"""Independent exhaustive oracle in numpy (slow tier).

The block-table width formulas are re-written here from the corpus (shared/corpus/cases.md,
Family A) with numpy's vectorised floor division (``//`` on int64 floors like Python's), without
importing models/. For every finite case of an obligation and *every* ``max_model_len`` in
1..2**21, numpy decides whether the claim fails; the prover, pinned to that case, must agree:
a counterexample at exactly the smallest failing ``max_model_len``, or a proof when numpy finds
none. Where it fails, the exact failure density must equal numpy's count; for the slot-mapping
claim the certified worst demand of ``capproof bound`` must equal numpy's maximum.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import obligation_named, prove

from capproof import Verdict
from capproof.bound import bound_obligation

pytestmark = [pytest.mark.slow, pytest.mark.sweep]

L = np.arange(1, 2**21 + 1, dtype=np.int64)


def cdiv(a, b):
    return -(-a // b)


def aligned(n, block_size):
    """get_block_table_width: round n up to a multiple of 128 // gcd(128, block_size) blocks."""
    a = 128 // np.gcd(128, block_size)
    return cdiv(n, a) * a


def runner_39324(n, block_size):
    if block_size <= 128:
        a = 128 // block_size
        return cdiv(n, a) * a
    return n


def _agree(spec, name, fails, **case):
    """The pinned prover verdict, counterexample and density agree with numpy's ``fails`` mask."""
    result = prove(spec, name, **case)
    if not fails.any():
        assert result.verdict is Verdict.PROVED, (case, result.message)
        return 0
    first = int(L[fails][0])
    assert result.verdict is Verdict.COUNTEREXAMPLE, (case, result.message)
    assert result.counterexample.params["max_model_len"] == first, case
    (axis,) = [a for a in result.density["axes"] if a["param"] == "max_model_len"]
    assert (axis["failing"], axis["admitted"]) == (int(fails.sum()), L.size), (case, axis)
    return 1


@pytest.mark.parametrize("block_size", [16, 32, 64, 128, 256])
@pytest.mark.parametrize("dcp", [1, 2, 4, 8])
def test_a1_unaligned_indexer_width(block_size, dcp):
    w_buf = cdiv(L, block_size * dcp)
    w_bt = runner_39324(cdiv(L, block_size * dcp), block_size)
    found = _agree(
        "spec/vllm_dsa_indexer.py",
        "ebt_width_matches_runner_before_50302",
        w_buf != w_bt,
        block_size=block_size,
        dcp=dcp,
    )
    assert found == (block_size < 128)  # alignment 128 // bs > 1 only below 128


def test_a1_block64_dcp1_parity_is_exactly_half():
    fails = cdiv(L, 64) % 2 == 1
    assert int(fails.sum()) == 2**20
    assert _agree(
        "spec/vllm_dsa_indexer.py",
        "ebt_width_matches_runner_before_50302",
        cdiv(L, 64) != runner_39324(cdiv(L, 64), 64),
        block_size=64,
        dcp=1,
    )


@pytest.mark.parametrize("block_size,kernel_block_size", [(64, 64), (64, 1), (16, 16), (256, 64), (128, 32)])
@pytest.mark.parametrize("dcp", [1, 2, 8])
def test_a2_dcp_divisor_on_one_side(block_size, kernel_block_size, dcp):
    def width(n):
        return aligned(n, block_size) * block_size // kernel_block_size

    fails = width(cdiv(L, block_size * dcp)) != width(cdiv(L, block_size))
    assert _agree(
        "spec/vllm_dsa_indexer.py",
        "ebt_width_matches_runner_before_50823",
        fails,
        block_size=block_size,
        dcp=dcp,
        kernel_block_size=kernel_block_size,
    ) == (dcp > 1)


@pytest.mark.parametrize("block_size", [16, 32, 64, 128])
@pytest.mark.parametrize("dcp", [1, 4])
def test_a5_trtllm_alignment_before_and_after(block_size, dcp):
    n = cdiv(L, block_size * dcp)
    _agree(
        "spec/vllm_block_table.py",
        "trtllm_mla_block_num_aligned_before_39324",
        n % (128 // block_size) != 0,
        block_size=block_size,
        dcp=dcp,
    )
    _agree(
        "spec/vllm_block_table.py",
        "trtllm_mla_block_num_aligned_after_39324",
        runner_39324(n, block_size) % (128 // block_size) != 0,
        block_size=block_size,
        dcp=dcp,
    )


@pytest.mark.parametrize("block_size", [16, 48, 80, 112, 128, 176, 256])
@pytest.mark.parametrize("dcp", [1, 2, 8])
def test_v0_33_rows_span_128_tokens_and_slot_mapping_bound(block_size, dcp):
    n = cdiv(L, block_size * dcp)
    _agree(
        "spec/vllm_block_table.py",
        "row_spans_128_tokens_v0_33",
        aligned(n, block_size) * block_size % 128 != 0,
        block_size=block_size,
        dcp=dcp,
    )
    if block_size % 32:  # 39324's 128 // bs misses for bs not dividing 128
        _agree(
            "spec/vllm_block_table.py",
            "row_spans_128_tokens_39324_any_block_size",
            runner_39324(n, block_size) * block_size % 128 != 0,
            block_size=block_size,
            dcp=dcp,
        )
    column = (L - 1) // (block_size * dcp)
    width = aligned(n, block_size)
    _agree(
        "spec/vllm_block_table.py",
        "slot_mapping_reads_within_runner_width_v0_33",
        column >= width,
        block_size=block_size,
        dcp=dcp,
    )
    (case,) = bound_obligation(
        obligation_named("spec/vllm_block_table.py", "slot_mapping_reads_within_runner_width_v0_33"),
        {"block_size": block_size, "dcp": dcp},
    ).cases
    slack = width - 1 - column
    assert case.max_demand == int(column.max())
    assert case.demand_point["max_model_len"] == int(L[column == column.max()][0])
    assert case.min_slack == int(slack.min())
