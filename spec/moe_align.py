"""Family B: MoE token-to-expert alignment buffers for every routing (corpus B0-B4).

Only the proved vLLM 0.33.0 sizing is tagged ``engine="vllm"`` (``check-config`` applies it with
``--model-config``'s ``n_routed_experts``); the broken-fact obligations are what-ifs, not
properties of a deployment.

A routing is the vector of per-expert token counts ``counts`` (``cnt_e``), one entry per expert
(``num_experts`` up to 1024). The routing facts are named assumptions, so each proof lists the
facts it rests on (assumptions used) and dropping one gives a counterexample:

- (a) "every routed id is counted once": ``sum(counts) == numel`` over the buckets used for sizing;
- (b) sizing and counting use the same expert count;
- (c) every consumer tiles ``sorted_token_ids`` with the align ``block_size_m``.
"""

from capproof import Choice, PowersOfTwo, Range, Vector, all_of, at_most, claim, less_than, obligation, total
from models.moe_align import (
    align_writes,
    ck_workspace_index,
    ck_workspace_index_6242,
    deepep_v2_sorted_ids_capacity,
    expert_ids_capacity,
    gemm_max_read_offset,
    num_tokens_post_pad,
    sglang_sorted_ids_capacity,
    splitk_sentinel_row,
    splitk_sorted_size,
    vllm_sorted_ids_capacity,
)

NUMEL = Range(1, 2**20)  # topk_ids.numel() = num_tokens * topk, in routed slots
ALIGN_BLOCKS = Choice(16, 64)  # fused_moe config["BLOCK_SIZE_M"], passed to moe_align_block_size as block_size
COUNTED_ONCE = {"every routed id is counted once": lambda counts, numel: total(counts) == numel}


@obligation(
    domain={
        "numel": NUMEL,
        "num_experts": Choice(8, 64, 256, 1024),
        "block_size_m": ALIGN_BLOCKS,
        "pad_sorted_ids": Choice(0, 1),
        "counts": Vector(1024, Range(0, 2**20), length="num_experts"),
    },
    assumptions=COUNTED_ONCE,
    expect="proved",
    case="moe-align-capacity",
    sources=["vllm 0.33.0 vllm/model_executor/layers/fused_moe/moe_align_block_size.py", "vllm-project/vllm#43351"],
    rlimit=400_000_000,
    engine="vllm",
    covers=["vllm/model_executor/layers/fused_moe/moe_align_block_size.py::moe_align_block_size.sorted_ids"],
)
def vllm_sorted_ids_fit_every_routing(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    """vLLM 0.33.0: ``sum_e round_up(cnt_e, block_size_m)`` fits ``len(sorted_token_ids)`` for every
    routing over up to 1024 experts, including the small-``numel`` ``min``. Rests on fact (a)."""
    return at_most(
        num_tokens_post_pad=num_tokens_post_pad(counts, block_size_m),
        capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids),
    )


@obligation(
    domain={
        "numel": NUMEL,
        "num_experts": Choice(8, 64),
        "block_size_m": ALIGN_BLOCKS,
        "pad_sorted_ids": Choice(0, 1),
        "buckets": Vector(65, Range(0, 2**20), length="num_buckets"),
        "num_buckets": Choice(9, 65),
    },
    assumptions={
        **{"every routed id is counted once": lambda buckets, numel: total(buckets) == numel},
        "one extra bucket for filtered (-1) ids": lambda num_buckets, num_experts: num_buckets == num_experts + 1,
    },
    expect="counterexample",
    case="ck-moe-sorting-negative-topk",
    sources=["sgl-project/sglang#12701", "ROCm/rocm-libraries#6242"],
)
def vllm_sizing_with_filtered_ids_counted(numel, num_experts, block_size_m, pad_sorted_ids, buckets, num_buckets):
    """Fact (a) broken: ``-1`` ids of filtered experts counted in an extra bucket (as SGLang's kernel
    does) while the buffer is sized for ``num_experts`` buckets (vLLM's formula) overflows."""
    return at_most(
        num_tokens_post_pad=num_tokens_post_pad(buckets, block_size_m),
        capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids),
    )


@obligation(
    domain={
        "numel": NUMEL,
        "num_experts": Choice(8, 64, 256),
        "block_size_m": ALIGN_BLOCKS,
        "buckets": Vector(257, Range(0, 2**20), length="num_buckets"),
        "num_buckets": Choice(9, 65, 257),
    },
    assumptions={
        "every routed id is counted once": lambda buckets, numel: total(buckets) == numel,
        "one extra bucket for filtered (-1) ids": lambda num_buckets, num_experts: num_buckets == num_experts + 1,
    },
    expect="proved",
    case="moe-align-capacity",
    sources=["sglang 0.5.23 sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py"],
    rlimit=100_000_000,
)
def sglang_sorted_ids_fit_with_filtered_bucket(numel, num_experts, block_size_m, buckets, num_buckets):
    """SGLang 0.5.23 sizes for ``E + 1`` buckets and rounds to 4: the ``-1`` bucket always fits."""
    return at_most(
        num_tokens_post_pad=num_tokens_post_pad(buckets, block_size_m),
        capacity=sglang_sorted_ids_capacity(numel, num_experts, block_size_m),
    )


@obligation(
    domain={
        "numel": NUMEL,
        "num_experts": Choice(8, 64),
        "block_size_m": ALIGN_BLOCKS,
        "pad_sorted_ids": Choice(0, 1),
        "counts": Vector(64, Range(0, 2**20), length="num_experts"),
    },
    assumptions=COUNTED_ONCE,
    expect="proved",
    case="vllm-moe-align-kernel-oob-static",
    sources=["vllm-project/vllm#27917", "vllm 0.33.0 moe_align_block_size.py"],
    rlimit=100_000_000,
    covers=[
        "vllm/model_executor/layers/fused_moe/moe_align_block_size.py::moe_align_block_size.sorted_ids",
        "vllm/model_executor/layers/fused_moe/moe_align_block_size.py::moe_align_block_size.expert_ids",
    ],
)
def vllm_write_positions_within_sorted_ids(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    """Every ``rank_post_pad`` write (each expert's padded prefix + its rank) is below
    ``len(sorted_token_ids)`` and every block index below ``len(expert_ids)``, for every routing.

    So the #27917 state (index 492 into 492 entries) needs a broken routing fact: with
    ``cumsum[7] = 488`` the padded total is at least ``488 + 16 > 492``.
    """
    capacity = vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids)
    post_pad, last_write = align_writes(counts, num_experts, block_size_m)
    return claim(
        all_of(last_write < capacity, post_pad // block_size_m <= expert_ids_capacity(capacity, block_size_m)),
        last_write=last_write,
        capacity=capacity,
    )


_WNA16 = {
    "numel": NUMEL,
    "num_experts": Choice(8, 64),
    "block_size_m": ALIGN_BLOCKS,
    "wna16_block_size_m": Choice(16, 32, 64, 128),
    "counts": Vector(64, Range(0, 2**20), length="num_experts"),
}


def _wna16_read_claim(numel, num_experts, block_size_m, wna16_block_size_m, counts):
    """The wna16 grid's last ``sorted_token_ids`` read vs the buffer (no ``pad_sorted_ids``)."""
    return less_than(
        offset_m=gemm_max_read_offset(num_tokens_post_pad(counts, block_size_m), wna16_block_size_m),
        capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, 0),
    )


@obligation(
    domain=_WNA16,
    assumptions=COUNTED_ONCE,
    expect="counterexample",
    case="vllm-moe-wna16-sorted-ids-oob",
    sources=["vllm-project/vllm#45496", "vllm-project/vllm#45539"],
)
def wna16_reads_within_sorted_ids(numel, num_experts, block_size_m, wna16_block_size_m, counts):
    """``moe_wna16_gemm`` reads ``sorted_token_ids`` up to ``cdiv(post_pad, BLOCK_SIZE_M) *
    BLOCK_SIZE_M - 1`` with no length check: fact (c) broken when its tile exceeds the align block."""
    return _wna16_read_claim(numel, num_experts, block_size_m, wna16_block_size_m, counts)


@obligation(
    domain=_WNA16,
    assumptions={
        **COUNTED_ONCE,
        "GEMM tile == align block_size_m": lambda block_size_m, wna16_block_size_m: wna16_block_size_m == block_size_m,
    },
    expect="proved",
    case="vllm-moe-wna16-sorted-ids-oob",
    sources=["vllm-project/vllm#45496"],
    rlimit=100_000_000,
)
def wna16_reads_within_sorted_ids_same_tile(numel, num_experts, block_size_m, wna16_block_size_m, counts):
    """With fact (c) the wna16 grid stays inside ``sorted_token_ids``."""
    return _wna16_read_claim(numel, num_experts, block_size_m, wna16_block_size_m, counts)


_EXPERT_ID = {"expert_id": Range(-1, 1023), "num_experts": Choice(8, 64, 256, 1024)}


@obligation(
    domain=_EXPERT_ID,
    assumptions={"ids below num_experts": lambda expert_id, num_experts: expert_id < num_experts},
    expect="counterexample",
    case="ck-moe-sorting-negative-topk",
    sources=["ROCm/rocm-libraries#6242", "sgl-project/sglang#12701"],
)
def ck_sorting_slot_in_range_before_6242(expert_id, num_experts):
    """An idle EP rank replays the batch-1 graph: every top-k id is ``-1``, which the CK sorting
    kernel used as a workspace slot."""
    slot = ck_workspace_index(expert_id)
    return all_of(slot >= 0, slot < num_experts)


@obligation(
    domain=_EXPERT_ID,
    assumptions={"ids below num_experts": lambda expert_id, num_experts: expert_id < num_experts},
    expect="proved",
    case="ck-moe-sorting-negative-topk",
    sources=["ROCm/rocm-libraries#6242"],
)
def ck_sorting_slot_in_range_after_6242(expert_id, num_experts):
    """After #6242 ids outside ``[0, num_experts)`` are skipped, ``-1`` included."""
    slot = ck_workspace_index_6242(expert_id, num_experts)
    return all_of(slot >= 0, slot < num_experts)


def _splitk_proposed_claim(token_num, topk, num_experts, block_m):
    """The sentinel row vs #2547's ``min(numel * block_m, len(sorted_token_ids))`` rows."""
    numel = token_num * topk
    rows = splitk_sorted_size(token_num, topk, block_m, vllm_sorted_ids_capacity(numel, num_experts, block_m, 0))
    return less_than(row=splitk_sentinel_row(token_num, topk), rows=rows)


_SPLITK = {
    "token_num": Range(1, 2**16),
    "topk": Range(1, 10),
    "num_experts": Choice(8, 64, 256),
}


@obligation(
    domain={**_SPLITK, "block_m": Choice(16, 32, 64, 128)},
    assumptions={"topk <= num_experts": lambda topk, num_experts: topk <= num_experts},
    expect="counterexample",
    case="aiter-ck-moe-stage1-splitk-outbuf",
    sources=["ROCm/aiter#2547", "ROCm/aiter#2508"],
)
def splitk_padding_row_within_output(token_num, topk, num_experts, block_m):
    """The split-K output has ``token_num * topk`` rows; a padding entry scatters to row
    ``token_num * topk + topk``: out of range for every batch with padding."""
    return less_than(row=splitk_sentinel_row(token_num, topk), rows=token_num * topk)


@obligation(
    domain={**_SPLITK, "block_m": PowersOfTwo(1, 256)},
    assumptions={"topk <= num_experts": lambda topk, num_experts: topk <= num_experts},
    expect="counterexample",
    case="aiter-ck-moe-stage1-splitk-outbuf",
    sources=["ROCm/aiter#2547"],
)
def splitk_padding_row_within_proposed_output(token_num, topk, num_experts, block_m):
    """#2547's proposal allocates ``min(numel * block_m, len(sorted_token_ids))`` rows (sized here
    with vLLM's formula for ``block_m``, an assumption: aiter's own sizing is not recorded). A
    residual overflow remains for tiles of 1 or 2 rows; see the next obligation for real tiles."""
    return _splitk_proposed_claim(token_num, topk, num_experts, block_m)


@obligation(
    domain={**_SPLITK, "block_m": Choice(16, 32, 64, 128)},
    assumptions={"topk <= num_experts": lambda topk, num_experts: topk <= num_experts},
    expect="proved",
    case="aiter-ck-moe-stage1-splitk-outbuf",
    sources=["ROCm/aiter#2547"],
)
def splitk_padding_row_within_proposed_output_real_tiles(token_num, topk, num_experts, block_m):
    """With tiles of 16..128 rows the #2547 allocation holds the sentinel row."""
    return _splitk_proposed_claim(token_num, topk, num_experts, block_m)


_EP = {
    "numel": NUMEL,
    "local_num_experts": Choice(8, 32),
    "ep_size": Choice(2, 4),
    "block_size_m": ALIGN_BLOCKS,
    "buckets": Vector(128, Range(0, 2**20), length="num_buckets"),
    "num_buckets": Choice(8, 16, 32, 64, 128),
}
_VALID_ROUTES = {
    "valid routes counted once: sum(buckets) <= numel": lambda buckets, numel: total(buckets) <= numel,
}


@obligation(
    domain=_EP,
    assumptions={
        **_VALID_ROUTES,
        "buckets are this rank's local experts": lambda num_buckets, local_num_experts: (
            num_buckets == local_num_experts
        ),
    },
    expect="proved",
    case="moe-align-capacity",
    sources=["vllm 0.33.0 vllm/model_executor/layers/fused_moe/fused_globalize_align_block_size.py"],
    rlimit=100_000_000,
)
def deepep_v2_sorted_ids_fit_local_routing(numel, local_num_experts, ep_size, block_size_m, buckets, num_buckets):
    """DeepEP v2 sizes with the local expert count and counts this rank's routes only: fits for
    every routing in which valid routes are at most ``numel`` (padding slots are not counted)."""
    return at_most(
        num_tokens_post_pad=num_tokens_post_pad(buckets, block_size_m),
        capacity=deepep_v2_sorted_ids_capacity(numel, local_num_experts, block_size_m),
    )


@obligation(
    domain=_EP,
    assumptions={
        **_VALID_ROUTES,
        "buckets are every rank's experts (global ids)": lambda num_buckets, local_num_experts, ep_size: (
            num_buckets == local_num_experts * ep_size
        ),
    },
    expect="counterexample",
    case="moe-align-capacity",
    sources=["vllm 0.33.0 vllm/model_executor/layers/fused_moe/fused_globalize_align_block_size.py"],
    rlimit=100_000_000,
)
def local_sizing_with_global_counts(numel, local_num_experts, ep_size, block_size_m, buckets, num_buckets):
    """Fact (b) broken: sized for the local experts, counted over global ids (as a path that
    forgot to filter other ranks' experts would): more non-empty buckets than the sizing allows."""
    return at_most(
        num_tokens_post_pad=num_tokens_post_pad(buckets, block_size_m),
        capacity=deepep_v2_sorted_ids_capacity(numel, local_num_experts, block_size_m),
    )


# -- the closed forms no obligation called (moe_align_demand_bound, the older vLLM capacity,
# max_write_position), each checked against the kernel's walk or the current sizing. Pinned small
# routings decided on ints: checks of the models, not of a deployment (no engine/versions: check-config
# does not apply them). Imported here, not at the top, so that the line links above stay.

import itertools  # noqa: E402

from capproof import implies  # noqa: E402
from models.moe_align import max_write_position, moe_align_demand_bound, vllm_sorted_ids_capacity_before_small_numel_min  # noqa: E402

#: per-expert token counts of the enumerated routings (0: an empty expert), and align block sizes
_ROUTING_COUNTS = range(0, 6)
_SMALL_BLOCKS = Choice(1, 2, 4)


def _routings(num_experts):
    """Every routing of ``num_experts`` experts over ``_ROUTING_COUNTS`` tokens each."""
    return [list(c) for c in itertools.product(_ROUTING_COUNTS, repeat=num_experts)]


@obligation(
    domain={"num_experts": Choice(1, 2, 3), "block_size_m": _SMALL_BLOCKS},
    expect="proved",
    case="moe-align-capacity",
    sources=[
        "vllm 0.33.0 vllm/model_executor/layers/fused_moe/moe_align_block_size.py:137-143",
        "vLLM csrc/moe/moe_align_sum_kernels.cu (each expert's run padded to a whole block; corpus B0)",
    ],
)
def moe_align_demand_bound_is_tight(num_experts, block_size_m):
    """Two-sided, on every routing of ``num_experts`` experts over 0..5 tokens each: the corpus's
    closed form ``numel + min(numel, E) * (block_size - 1)`` bounds the entries the align kernel
    fills (``num_tokens_post_pad``), with equality when every non-empty expert holds one token past
    a whole number of blocks (``cnt % block_size == 1``, or any count at block size 1) and
    ``min(numel, E)`` experts are non-empty; and it is at most the older vLLM capacity (without the
    small-``numel`` ``min``). Counts of the routings that break each, 0 when kept."""
    over = not_tight = 0
    for counts in _routings(num_experts):
        numel, active = sum(counts), sum(1 for c in counts if c)
        post_pad, bound = (
            num_tokens_post_pad(counts, block_size_m),
            moe_align_demand_bound(numel, num_experts, block_size_m),
        )
        over += post_pad > bound or bound > vllm_sorted_ids_capacity_before_small_numel_min(
            numel, num_experts, block_size_m, 0
        )
        worst = active == min(numel, num_experts) and all(c % block_size_m == 1 % block_size_m for c in counts if c)
        not_tight += worst and post_pad != bound
    return claim(
        over + not_tight == 0,
        routings=len(_routings(num_experts)),
        routings_over_the_bound=over,
        worst_routings_not_attaining_it=not_tight,
    )


@obligation(
    domain={
        "numel": NUMEL,
        "num_experts": Range(1, 1024),
        "block_size_m": Choice(1, 16, 64),
        "pad_sorted_ids": Choice(0, 1),
    },
    expect="proved",
    case="moe-align-capacity",
    sources=[
        "vllm 0.33.0 vllm/model_executor/layers/fused_moe/moe_align_block_size.py:137-143 "
        "(the small-numel min at lines 140-143; without it, older vLLM)"
    ],
)
def vllm_sorted_ids_small_numel_min_only_shrinks(numel, num_experts, block_size_m, pad_sorted_ids):
    """Two-sided: the older capacity (no ``numel < num_experts`` ``min``) equals vLLM 0.33.0's when
    ``numel >= num_experts``, and is strictly larger below it (``numel * block_size`` is then
    smaller) whenever ``block_size > 1``; at block size 1 both are ``numel + 0`` rounded by 1. With
    ``pad_sorted_ids`` both are multiples of ``block_size``."""
    old = vllm_sorted_ids_capacity_before_small_numel_min(numel, num_experts, block_size_m, pad_sorted_ids)
    new = vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids)
    return claim(
        all_of(
            implies(numel >= num_experts, old == new),
            implies(numel < num_experts, implies(block_size_m > 1, old > new)),
            implies(block_size_m == 1, old == numel),
            implies(pad_sorted_ids == 1, old % block_size_m == 0),
        ),
        older_capacity=old,
        capacity=new,
    )


@obligation(
    domain={"num_experts": Choice(1, 2, 3), "block_size_m": _SMALL_BLOCKS},
    expect="proved",
    case="vllm-moe-align-kernel-oob-static",
    sources=["vllm-project/vllm#27917 (count_and_sort_expert_tokens_kernel: cumsum_buffer[expert] + rank)"],
)
def moe_align_last_writes_are_block_aligned_runs(num_experts, block_size_m):
    """On every routing of ``num_experts`` experts over 0..5 tokens each: a non-empty expert's run
    of writes ``[max_write_position - cnt + 1, max_write_position]`` starts on a block boundary,
    after the previous non-empty expert's last write, and ends below the entries filled
    (``num_tokens_post_pad``); an empty expert's ``max_write_position`` is its padded prefix minus
    one (a block boundary minus one, not below the previous run, below the entries filled); and the fold ``align_writes`` reports the
    largest of them. Counts of the routings that break each, 0 when kept."""
    misplaced = not_largest = 0
    for counts in _routings(num_experts):
        post_pad, last = align_writes(counts, num_experts, block_size_m)
        ends = [max_write_position(counts, e, block_size_m) for e in range(num_experts)]
        previous = -1
        for c, end in zip(counts, ends):
            first = end - c + 1
            aligned = first % block_size_m == 0 if c else (end + 1) % block_size_m == 0
            misplaced += (
                not (aligned and previous < first and end < post_pad)
                if c
                else not (aligned and previous <= end < post_pad)
            )
            previous = end if c else previous
        not_largest += last != max(ends)
    return claim(
        misplaced + not_largest == 0,
        routings=len(_routings(num_experts)),
        misplaced_runs=misplaced,
        routings_last_write_not_the_largest=not_largest,
    )
