"""Machine integers: offsets declared int32/uint32/int64 are checked to fit, and a
counterexample shows the value the kernel computes (two's complement, ``capproof.arith.wrap``).

Real numbers: corpus B6 (``moe-int32-index-space``: DeepSeek-R1 hidden 7168, top-8, 56K-token
prompt, ``7168 * 448000 = 3,211,264,000 > 2**31 - 1``, vllm-project/vllm#13693,
sgl-project/sglang#4727) and the UltraQuant decode kernel of vLLM 0.33.0
(``flydsl_kernels/ultraquant_decode_hd256.py:450-455``: a 32-bit voffset wraps past 4 GiB).
The wrap itself is checked against Python, Z3 and numpy in tests/test_semantics.py.
"""

from __future__ import annotations

import pytest
from conftest import assert_counterexample, assert_proved, obligation_named, prove

from capproof import Options, Range, Verdict, fits, less_than, obligation
from capproof.arith import int32, uint32
from capproof.bound import bound_obligation
from capproof.prover import prove_obligation, replay

K = "spec/kernel_offsets.py"


def test_fits_proves_an_offset_that_stays_below_2_31():
    @obligation(domain={"rows": Range(0, 2**15 - 1)})
    def row_offset(rows):
        return fits("int32", offset=rows * 2**16 + (2**16 - 1))  # at most 2**31 - 1

    r = prove_obligation(row_offset, Options(density="off"))
    assert r.verdict is Verdict.PROVED, r.message


def test_fits_refutes_an_offset_past_2_31_and_shows_the_wrapped_value():
    @obligation(domain={"rows": Range(0, 2**16)}, expect="counterexample")
    def row_offset(rows):
        return fits("int32", offset=rows * 2**16)

    r = prove_obligation(row_offset, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.counterexample.params == {"rows": 2**15}  # the smallest row that overflows
    assert r.counterexample.values == {"offset": 2**31, "offset_int32": -(2**31)}
    assert "offset fits int32 fails: offset=2147483648, offset_int32=-2147483648" in r.message


def test_a_uint32_byte_offset_past_4_gib_wraps_to_a_small_offset():
    @obligation(domain={"block": Range(0, 2**20)}, expect="counterexample")
    def byte_offset(block):
        return less_than(byte=block * 2**20 + 7, cache_bytes=2**40, dtype="uint32")

    r = prove_obligation(byte_offset, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.counterexample.params == {"block": 4096}
    assert r.counterexample.values == {"byte": 2**32 + 7, "cache_bytes": 2**40, "byte_uint32": 7}
    assert "0 <= byte < cache_bytes in uint32 fails" in r.message


def test_an_unknown_dtype_is_an_error_naming_it():
    @obligation(domain={"x": Range(0, 4)})
    def odd(x):
        return fits("int31", offset=x)

    r = prove_obligation(odd, Options(density="off"))
    assert r.verdict is Verdict.ERROR and "unknown integer dtype 'int31'" in r.message


def test_fused_moe_offset_before_13693_overflows_int32_at_the_reported_config():
    """Corpus B6: DeepSeek-R1 (hidden 7168, top-8) with a 56K-token prompt. The last row's
    offset is 3,211,256,832 (+ column), past 2**31 - 1: the int32 kernel stores at a negative
    offset. The smallest failing step has 37,450 tokens (the reports: crashes above ~32-40K)."""
    ob = obligation_named(K, "fused_moe_c_offset_int32_before_13693")
    point = {"num_tokens": 56000, "top_k": 8, "N": 7168, "offs_token": 56000 * 8 - 1, "offs_cn": 0}
    holds, values, failed = replay(ob, point)
    assert not holds and not failed
    assert values["offset"] == 7168 * 447999 == 3_211_256_832
    assert values["offset_int32"] == int32(3_211_256_832) == 3_211_256_832 - 2**32 < 0

    r = prove(K, "fused_moe_c_offset_int32_before_13693", top_k=8, N=7168)
    assert_counterexample(r, offset=2**31, offset_int32=-(2**31))
    assert r.counterexample.params["num_tokens"] == 37450  # ceil(2**31 / (7168 * 8))
    # the same step in vLLM 0.33.0 (int64): proved at the reported config
    assert_proved(prove(K, "fused_moe_c_offset_v0_33", top_k=8, N=7168, num_tokens=56000))


def test_ultraquant_voffset_with_the_block_base_wraps_past_4_gib():
    r = prove(K, "ultraquant_byte_offset_uint32_with_block_base", block_size=64, num_kv_heads=2)
    block = 64 * 2 * 272  # bytes per block
    assert_counterexample(r)
    v = r.counterexample.values
    assert v["byte"] >= 2**32 > v["cache_bytes"] - block  # the first block past 4 GiB
    assert v["byte_uint32"] == uint32(v["byte"]) == v["byte"] - 2**32
    assert_proved(prove(K, "ultraquant_in_block_byte_offset_v0_33"))


def test_ultraquant_k_code_loads_tile_the_slot_codes():
    """The 8 16-byte K-code loads of one (token, head) slot (chunk 0..3 of LANE_CODE_BYTES = 32,
    half 0..1; vLLM 0.33.0 ultraquant_decode_hd256.py:55) end at bytes 15, 31, ..., 127 of the
    slot: the 256 4-bit codes, no gap, no overlap; slot s of head h starts at (s * heads + h) * 272."""
    from models.vllm.kernel_offsets import ultraquant_in_block_byte_offset

    for slot, head, heads in [(0, 0, 1), (5, 1, 2), (63, 7, 8)]:
        ends = sorted(
            ultraquant_in_block_byte_offset(slot, head, c, half, heads, 272) for c in range(4) for half in range(2)
        )
        start = (slot * heads + head) * 272
        assert ends == [start + 16 * k + 15 for k in range(8)]


def test_bound_of_a_claim_in_int32_caps_the_capacity_at_the_type():
    """``less_than(..., dtype="int32")`` holds iff ``index <= min(capacity - 1, 2**31 - 1)``:
    bound reports the int32 overflow as an insufficient capacity even where the buffer is large."""
    b = bound_obligation(obligation_named(K, "fused_moe_c_offset_int32_before_13693"), {"top_k": 8, "N": 7168})
    assert b.status == "bounded" and b.insufficient == 1 and b.ok, b.message
    (case,) = b.cases
    assert case.min_slack == 2**31 - 1 - case.max_demand < 0
    assert bound_obligation(obligation_named(K, "fused_moe_c_offset_v0_33"), {"top_k": 8, "N": 7168}).insufficient == 0


@pytest.mark.parametrize(
    "name",
    ["slot_mapping_row_offset_fits_int32_v0_33", "fused_moe_c_offset_v0_33", "ultraquant_in_block_byte_offset_v0_33"],
)
def test_vllm_0_33_offsets_are_proved(name):
    assert_proved(prove(K, name))
