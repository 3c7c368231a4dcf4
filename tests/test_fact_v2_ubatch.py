"""The V2 micro-batch request counts (capproof/engines/vllm/fact_v2_ubatch.py): the count
statements cut from a function's source, and vLLM 0.33.0's own code run on symbolic sizes."""

from __future__ import annotations

import pytest

from capproof.engines.vllm import fact_v2_ubatch as U


def _slice(batch, ubatch_slice, query_start_loc_buf, seq_lens_buf):
    req_start = ubatch_slice.start
    req_stop = ubatch_slice.stop
    num_reqs_padded = req_stop - req_start
    num_reqs = max(0, min(req_stop, batch.num_reqs) - req_start)
    query_start_loc_buf[: num_reqs_padded + 1] = 0
    return replace(batch, num_reqs=num_reqs, num_reqs_after_padding=num_reqs_padded)  # noqa: F821


def _rebinds(batch, ubatch_slice, seq_lens_buf):
    num_reqs_padded = ubatch_slice.stop - ubatch_slice.start
    num_reqs = num_reqs_padded
    seq_lens_buf[:num_reqs_padded] = 0
    num_reqs = num_reqs + 1
    return replace(batch, num_reqs=num_reqs, num_reqs_after_padding=num_reqs_padded)  # noqa: F821


def test_count_prefix_runs_the_statements_before_the_first_buffer():
    from types import SimpleNamespace

    counts, kept = U._count_prefix(_slice)
    assert kept == 4
    assert counts(SimpleNamespace(num_reqs=3), slice(1, 5), None, None) == (4, 2)


def test_count_prefix_refuses_a_count_rebound_after_the_cut():
    with pytest.raises(TypeError, match="rebound"):
        U._count_prefix(_rebinds)


@pytest.fixture(scope="module")
def vllm_code():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need

    return wheels._src()


@pytest.mark.real
def test_micro_batch_counts_are_proved_from_vllms_code(vllm_code):
    read, missing = U.lemmas(vllm_code)
    assert missing == [] and len(read) == len(U.V1_START) + 1 + len(U.NONEMPTY)
    run = U.ubatch_counts(vllm_code)
    assert run["proved"]
    # without a request in the batch the clamp starts at -1: one row more than the padded count
    assert run["empty"] == (3, 1)
