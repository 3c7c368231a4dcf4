"""A Triton kernel body run on concrete arrays with the numpy stand-in ``tl`` (no Triton needed)."""

from __future__ import annotations

import numpy as np
import pytest

from capproof.engines.vllm.kernel_concrete import KernelOutOfBounds, Launcher


def gather_kernel(src_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: F821 - tl is bound per launch
    """Program i stores src[idx[i]] at out[i]; the block lanes past ``n`` are masked."""
    i = tl.program_id(0)  # noqa: F821
    j = tl.load(idx_ptr + i)  # noqa: F821
    tl.store(out_ptr + i, tl.load(src_ptr + j))  # noqa: F821
    lanes = tl.arange(0, BLOCK)  # noqa: F821
    total = tl.sum(tl.where(lanes < n, tl.load(idx_ptr + lanes, mask=lanes < n, other=0), 0))  # noqa: F821
    if i == 0:
        tl.store(out_ptr + n, total.to(tl.int64))  # noqa: F821


def test_every_program_runs_and_the_stored_elements_are_recorded():
    src = np.array([10, 20, 30, 40])
    idx = np.array([3, 0, 2])
    out = np.full(4, -7)
    k = Launcher(gather_kernel)
    k[(3,)](src, idx, out, 3, BLOCK=4)
    assert out.tolist() == [40, 10, 30, 5]  # 5 = 3 + 0 + 2: the masked lane (index 3) is not read
    assert k.written["out_ptr"] == {0, 1, 2, 3}
    assert k.launches == 1


def test_a_lane_outside_the_tensor_raises_and_fewer_programs_leave_elements_unwritten():
    src = np.array([10, 20])
    with pytest.raises(KernelOutOfBounds, match="load of src_ptr at 5"):
        Launcher(gather_kernel)[(1,)](src, np.array([5]), np.zeros(2, dtype=np.int64), 1, BLOCK=1)
    out = np.full(4, -7)
    k = Launcher(gather_kernel)
    k[(2,)](np.array([1, 2, 3]), np.array([0, 1, 2]), out, 3, BLOCK=4)
    assert k.written["out_ptr"] == {0, 1, 3}  # program 2 never ran: out[2] is not written
    assert out[2] == -7
