"""Per-batch buffers whose demand depends on the batch (C3, C5, C6c, E2, E4).

Batches are ``Vector(BATCH, …, length="num_reqs")`` parameters (one entry per request); scheduler
facts are named assumptions, so each proof's unsat core names the facts it rests on.
"""

from capproof import Choice, Range, Vector, all_of, at_most, claim, equal, implies, obligation, total
from models.lmdeploy.guided_decoding import (
    bitmask_rows_4456,
    bitmask_rows_before_4456,
    logits_rows,
    trtllm_bitmask_rows_15023,
    trtllm_bitmask_rows_before_15023,
    trtllm_logits_rows,
)
from models.trtllm.cuda_graph import forward_tokens, scheduled_tokens_16101, scheduled_tokens_before_16101
from models.vllm.gdn import state_index_column, state_index_column_fixed
from models.vllm.spec_decode import (
    last_token_row,
    mtp_reader_source_row_47238,
    mtp_reader_source_row_before_47238,
    uniform_decode_query_len,
)
from models.vllm_ascend.mtp_slot_mapping import (
    slot_mapping_capacity_14024,
    slot_mapping_capacity_before_14024,
    slot_mapping_demand,
)
from spec._batches import BATCH

# ---------------------------------------------------------------------------------------------
# C3 vllm-ascend-mtp-slot-mapping-capacity

_C3 = {
    "max_num_reqs": Range(1, BATCH),
    "max_num_batched_tokens": Range(1, 2**16),
    "num_speculative_tokens": Choice(range(1, 7)),
    "dcp": Choice(1, 2, 4, 8),
    "num_reqs": Range(1, BATCH),
    "query_lens": Vector(BATCH, Range(1, 2**16), length="num_reqs"),
}
_C3_FACTS = {
    "num_reqs <= max_num_reqs": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs,
    "sum of scheduled tokens <= max_num_batched_tokens": lambda query_lens, max_num_batched_tokens: (
        total(query_lens) <= max_num_batched_tokens
    ),
}


@obligation(
    domain=_C3,
    assumptions=_C3_FACTS,
    expect="counterexample",
    case="vllm-ascend-mtp-slot-mapping-capacity",
    sources=["vllm-project/vllm-ascend#14024", "vllm-project/vllm-ascend#13710"],
    engine="vllm-ascend",
    versions="<0.26.0rc1",
    witnesses={
        "every request a full MTP decode": lambda query_lens, num_reqs, num_speculative_tokens: all_of(
            *(
                implies(i < num_reqs, q == uniform_decode_query_len(num_speculative_tokens))
                for i, q in enumerate(query_lens)
            )
        )
    },
)
def slot_mapping_fits_before_14024(
    max_num_reqs, max_num_batched_tokens, num_speculative_tokens, dcp, num_reqs, query_lens
):
    """``mnbt + 2 * max_num_reqs`` vs ``tokens + (K - 1) * active requests`` with DCP and MTP on.

    DCP 4, MTP 5, max_num_reqs 12, mnbt 80: 104 entries. The smallest failing batch has 11
    requests (105 slots); 11 full MTP decodes (6 tokens each) give the reported 110. At ``K = 3``
    the appended ``K - 1 = 2`` equals the stale slack: no counterexample (the regression tests
    avoid that value). ``dcp`` enters only as ``dcp > 1``. Tagged for ``check-config --engine
    vllm-ascend``: releases before v0.26.0rc1 (assumed first release with the #14114 backport).
    """
    return at_most(
        demand=slot_mapping_demand(query_lens, num_reqs, num_speculative_tokens, dcp),
        capacity=slot_mapping_capacity_before_14024(max_num_batched_tokens, max_num_reqs),
    )


@obligation(
    domain=_C3,
    assumptions=_C3_FACTS,
    expect="proved",
    case="vllm-ascend-mtp-slot-mapping-capacity",
    sources=["vllm-project/vllm-ascend#14024", "vllm-project/vllm-ascend#14114"],
    engine="vllm-ascend",
    versions=">=0.26.0rc1",
)
def slot_mapping_fits_14024(max_num_reqs, max_num_batched_tokens, num_speculative_tokens, dcp, num_reqs, query_lens):
    """``mnbt + max(K - 1, 0) * max_num_reqs`` (#14024): rests on both scheduler facts (tokens
    within the budget, active requests within ``max_num_reqs``)."""
    return at_most(
        demand=slot_mapping_demand(query_lens, num_reqs, num_speculative_tokens, dcp),
        capacity=slot_mapping_capacity_14024(max_num_batched_tokens, max_num_reqs, num_speculative_tokens),
    )


_C3_PAIR = {k: _C3[k] for k in ("max_num_reqs", "max_num_batched_tokens", "num_speculative_tokens")}


@obligation(
    domain=_C3_PAIR,
    expect="counterexample",
    case="vllm-ascend-mtp-slot-mapping-capacity",
    sources=["vllm-project/vllm-ascend#14024", "vllm-project/vllm-ascend#14114"],
)
def slot_mapping_pair_equal_one_side_fixed(max_num_reqs, max_num_batched_tokens, num_speculative_tokens):
    """The copy between ``BlockTable.slot_mapping`` and the proposer's ``slot_mapping_group``
    (``aclnnInplaceCopy``) needs equal sizes. Enlarging only the block table breaks the pair:
    8208 vs 8200 at mnbt 8192, 4 requests, K 5 (Eagle3 full-graph warm-up; the three inputs are
    derived from the two sizes, unconfirmed)."""
    return equal(
        block_table=slot_mapping_capacity_14024(max_num_batched_tokens, max_num_reqs, num_speculative_tokens),
        slot_mapping_group=slot_mapping_capacity_before_14024(max_num_batched_tokens, max_num_reqs),
    )


@obligation(
    domain=_C3_PAIR,
    expect="proved",
    case="vllm-ascend-mtp-slot-mapping-capacity",
    sources=["vllm-project/vllm-ascend#14024", "vllm-project/vllm-ascend#14114"],
    engine="vllm-ascend",
    versions=">=0.26.0rc1",
)
def slot_mapping_pair_equal_both_fixed(max_num_reqs, max_num_batched_tokens, num_speculative_tokens):
    """Both sides use the #14024 formula: equal sizes for every configuration."""
    return equal(
        block_table=slot_mapping_capacity_14024(max_num_batched_tokens, max_num_reqs, num_speculative_tokens),
        slot_mapping_group=slot_mapping_capacity_14024(max_num_batched_tokens, max_num_reqs, num_speculative_tokens),
    )


# ---------------------------------------------------------------------------------------------
# C5 vllm-gdn-num-accepted-minus-one: the column of ssm_state_indices read for a request.

_C5 = {"num_speculative_tokens": Range(1, 6), "num_accepted_tokens": Range(0, 7)}
_C5_FACTS = {
    "num_accepted_tokens <= 1 + num_speculative_tokens": lambda num_accepted_tokens, num_speculative_tokens: (
        num_accepted_tokens <= uniform_decode_query_len(num_speculative_tokens)
    )
}


def _in_row(column, num_speculative_tokens):
    return claim(
        all_of(column >= 0, column <= num_speculative_tokens), column=column, last_column=num_speculative_tokens
    )


@obligation(
    domain=_C5,
    assumptions=_C5_FACTS,
    expect="counterexample",
    case="vllm-gdn-num-accepted-minus-one",
    sources=["vllm-project/vllm#50021", "vllm-project/vllm#48475", "vllm-project/vllm#41190"],
)
def gdn_state_column_in_row(num_speculative_tokens, num_accepted_tokens):
    """``i_t = num_accepted - 1`` with ``num_accepted = 0`` (stale/padding row, D2H race) reads
    column -1: the previous row's last entry, or memory before the tensor for row 0."""
    return _in_row(state_index_column(num_accepted_tokens), num_speculative_tokens)


@obligation(
    domain=_C5,
    assumptions=_C5_FACTS,
    expect="proved",
    case="vllm-gdn-num-accepted-minus-one",
    sources=["vllm-project/vllm#50021", "vllm==0.33.0 vllm/v1/worker/mamba_utils.py"],
)
def gdn_state_column_in_row_fixed(num_speculative_tokens, num_accepted_tokens):
    """``max(num_accepted - 1, 0)`` stays in ``[0, K]``; rests on ``num_accepted <= 1 + K``."""
    return _in_row(state_index_column_fixed(num_accepted_tokens), num_speculative_tokens)


# ---------------------------------------------------------------------------------------------
# C6c trtllm-cudagraph-bs-vs-buffers: the scheduler's budget vs the forward pass's tokens.

_C6C = {
    "max_num_tokens": Range(1, 2**17),
    "runtime_draft_len": Choice(range(0, 8)),
    "num_context_tokens": Range(0, 2**17),
    "num_generation_requests": Range(0, 4096),
}


@obligation(
    domain=_C6C,
    expect="counterexample",
    case="trtllm-cudagraph-bs-vs-buffers",
    sources=["NVIDIA/TensorRT-LLM#16101"],
    assumptions={
        "the scheduler admits the batch (before #16101)": lambda max_num_tokens, num_context_tokens, num_generation_requests, runtime_draft_len: (
            scheduled_tokens_before_16101(num_context_tokens, num_generation_requests, runtime_draft_len)
            <= max_num_tokens
        )
    },
)
def forward_fits_max_num_tokens_before_16101(
    max_num_tokens, runtime_draft_len, num_context_tokens, num_generation_requests
):
    """c) One-model MTP: the scheduler charged 1 token per generation request, the forward pass
    builds ``1 + runtime_draft_len``: ``total_num_tokens > max_num_tokens`` trips the assertion
    under load (counts not recorded)."""
    return at_most(
        demand=forward_tokens(num_context_tokens, num_generation_requests, runtime_draft_len), capacity=max_num_tokens
    )


@obligation(
    domain=_C6C,
    expect="proved",
    case="trtllm-cudagraph-bs-vs-buffers",
    sources=["NVIDIA/TensorRT-LLM#16101"],
    assumptions={
        "the scheduler admits the batch (#16101)": lambda max_num_tokens, num_context_tokens, num_generation_requests, runtime_draft_len: (
            scheduled_tokens_16101(num_context_tokens, num_generation_requests, runtime_draft_len) <= max_num_tokens
        )
    },
)
def forward_fits_max_num_tokens_16101(max_num_tokens, runtime_draft_len, num_context_tokens, num_generation_requests):
    """c) The scheduler reserves the draft tokens: rests on its admission check."""
    return at_most(
        demand=forward_tokens(num_context_tokens, num_generation_requests, runtime_draft_len), capacity=max_num_tokens
    )


# ---------------------------------------------------------------------------------------------
# E2 lmdeploy-bitmask-vs-logits-rows: bitmask rows must equal logits rows for every batch.

_E2 = {"num_reqs": Range(1, BATCH), "generating": Vector(BATCH, Range(0, 1), length="num_reqs")}


@obligation(
    domain=_E2, expect="counterexample", case="lmdeploy-bitmask-vs-logits-rows", sources=["InternLM/lmdeploy#4453"]
)
def bitmask_rows_equal_logits_rows_before_4456(num_reqs, generating):
    """Matchers cover every request, finished ones still waiting included; logits only the
    generating ones. Any batch with a finished request aborts (no row counts were reported)."""
    return equal(
        bitmask_rows=bitmask_rows_before_4456(generating, num_reqs), logits_rows=logits_rows(generating, num_reqs)
    )


@obligation(domain=_E2, expect="proved", case="lmdeploy-bitmask-vs-logits-rows", sources=["InternLM/lmdeploy#4456"])
def bitmask_rows_equal_logits_rows_4456(num_reqs, generating):
    """Slicing the bitmask to the logits batch size: equal for every batch (rests on the vector's
    domain: at most ``num_reqs`` requests generate)."""
    return equal(bitmask_rows=bitmask_rows_4456(generating, num_reqs), logits_rows=logits_rows(generating, num_reqs))


_E2T = {"num_generation_requests": Range(1, BATCH), "max_draft_len": Range(0, 7), "runtime_draft_len": Range(0, 7)}
_E2T_FACTS = {
    "runtime_draft_len <= max_draft_len": lambda runtime_draft_len, max_draft_len: runtime_draft_len <= max_draft_len
}


@obligation(
    domain=_E2T,
    assumptions=_E2T_FACTS,
    expect="counterexample",
    case="lmdeploy-bitmask-vs-logits-rows",
    sources=["NVIDIA/TensorRT-LLM#15022"],
)
def trtllm_bitmask_rows_equal_logits_rows_before_15023(num_generation_requests, max_draft_len, runtime_draft_len):
    """TensorRT-LLM with a ``draft_len_schedule`` reaching 0: the bitmask follows the configured
    draft length, the logits the runtime one."""
    return equal(
        bitmask_rows=trtllm_bitmask_rows_before_15023(num_generation_requests, max_draft_len, runtime_draft_len),
        logits_rows=trtllm_logits_rows(num_generation_requests, runtime_draft_len),
    )


@obligation(
    domain=_E2T,
    assumptions=_E2T_FACTS,
    expect="proved",
    case="lmdeploy-bitmask-vs-logits-rows",
    sources=["NVIDIA/TensorRT-LLM#15023"],
)
def trtllm_bitmask_rows_equal_logits_rows_15023(num_generation_requests, max_draft_len, runtime_draft_len):
    """#15023 passes ``runtime_draft_len`` to ``add_batch``: equal rows (exact formula not recorded)."""
    return equal(
        bitmask_rows=trtllm_bitmask_rows_15023(num_generation_requests, max_draft_len, runtime_draft_len),
        logits_rows=trtllm_logits_rows(num_generation_requests, runtime_draft_len),
    )


# ---------------------------------------------------------------------------------------------
# E4 vllm-topk-indices-buffer-mtp-layout: draft step 0 writes topk_indices_buffer rows grouped per
# request (a0 … aK, b0 …); draft steps 1 … K-1 read row j and need request j's last-token row.

_E4 = {
    "j": Range(0, BATCH - 1),
    "num_speculative_tokens": Range(2, 7),
    "max_num_batched_tokens": Range(1, 2**16),
    "num_reqs": Range(1, BATCH),
    "query_lens": Vector(BATCH, Range(1, 8), length="num_reqs"),
}
_E4_FACTS = {
    "j < num_reqs (a reader row)": lambda j, num_reqs: j < num_reqs,
    "step-0 query length <= 1 + num_speculative_tokens": lambda query_lens, num_speculative_tokens: all_of(
        *(q <= uniform_decode_query_len(num_speculative_tokens) for q in query_lens)
    ),
    "sum of step-0 rows <= max_num_batched_tokens": lambda query_lens, max_num_batched_tokens: (
        total(query_lens) <= max_num_batched_tokens
    ),
}


def _reads_last_token_row(source_row, query_lens, j, max_num_batched_tokens):
    needed = last_token_row(query_lens, j)
    return claim(
        all_of(source_row == needed, source_row < max_num_batched_tokens), source_row=source_row, needed_row=needed
    )


@obligation(
    domain=_E4,
    assumptions=_E4_FACTS,
    expect="counterexample",
    case="vllm-topk-indices-buffer-mtp-layout",
    sources=["vllm-project/vllm#47238", "vllm-project/vllm-ascend#15759"],
)
def mtp_reader_row_is_last_token_before_47238(j, num_speculative_tokens, max_num_batched_tokens, num_reqs, query_lens):
    """Reader row ``j`` reads writer row ``j``: row 0 gets ``a0`` instead of ``aK``, later rows get
    other tokens of request ``a``. With every request ``1 + K`` rows, row ``j`` needs
    ``j * (1 + K) + K``. Silent (acceptance drops)."""
    return _reads_last_token_row(
        mtp_reader_source_row_before_47238(query_lens, j), query_lens, j, max_num_batched_tokens
    )


@obligation(
    domain=_E4,
    assumptions=_E4_FACTS,
    expect="proved",
    case="vllm-topk-indices-buffer-mtp-layout",
    sources=[
        "vllm-project/vllm#47238",
        "vllm==0.33.0 vllm/v1/spec_decode/llm_base_proposer.py",
        "vllm==0.33.0 vllm/model_executor/models/deepseek_mtp.py",
    ],
)
def mtp_reader_row_is_last_token_47238(j, num_speculative_tokens, max_num_batched_tokens, num_reqs, query_lens):
    """#47238 (0.33.0): ``compact_topk_indices(query_start_loc[1:] - 1)`` moves each request's
    last-token row to the front, for uniform and ragged step-0 batches alike, and the source row
    lies inside the ``(mnbt, index_topk)`` buffer (rests on the token budget and ``j < num_reqs``)."""
    return _reads_last_token_row(mtp_reader_source_row_47238(query_lens, j), query_lens, j, max_num_batched_tokens)


# ---------------------------------------------------------------------------------------------
# two-sided claims and the MTP-off boundary for C3 and C5.


@obligation(
    domain={**_C3, "num_speculative_tokens": Choice(0)},
    assumptions=_C3_FACTS,
    expect="proved",
    case="vllm-ascend-mtp-slot-mapping-capacity",
    sources=[
        "vllm-project/vllm-ascend#14024",
        "vllm-project/vllm-ascend#14114",
    ],  # MTP off only: not applied by check-config
)
def slot_mapping_mtp_off_is_the_token_budget_14024(
    max_num_reqs, max_num_batched_tokens, num_speculative_tokens, dcp, num_reqs, query_lens
):
    """MTP off (``num_speculative_tokens = 0``: the domains above start at 1): the
    #14024 capacity is exactly ``max_num_batched_tokens`` (``max(K - 1, 0) = 0``: no reserve) and a
    step prepares exactly its scheduled tokens, with or without DCP (no appended position), so they
    fit."""
    capacity = slot_mapping_capacity_14024(max_num_batched_tokens, max_num_reqs, num_speculative_tokens)
    demand = slot_mapping_demand(query_lens, num_reqs, num_speculative_tokens, dcp)
    return claim(
        all_of(capacity == max_num_batched_tokens, demand == total(query_lens), demand <= capacity),
        demand=demand,
        capacity=capacity,
    )


@obligation(
    domain=_C5,
    assumptions=_C5_FACTS,
    expect="proved",
    case="vllm-gdn-num-accepted-minus-one",
    sources=[
        "vllm-project/vllm#50021",
        "vllm==0.33.0 vllm/v1/worker/mamba_utils.py:522-534 "
        "(src_off = tl.maximum(num_accepted - 1, 0): the accepted-token bias)",
    ],
)
def gdn_state_column_is_the_last_accepted_token_fixed(num_speculative_tokens, num_accepted_tokens):
    """Two-sided (``gdn_state_column_in_row_fixed`` only bounds the column): the column
    read is exactly the last accepted token's, ``num_accepted - 1``, when a token was accepted, and
    column 0 (the request's first state slot) for a stale or padding row with none."""
    column = state_index_column_fixed(num_accepted_tokens)
    return claim(
        all_of(
            implies(num_accepted_tokens >= 1, column == num_accepted_tokens - 1),
            implies(num_accepted_tokens == 0, column == 0),
        ),
        column=column,
        num_accepted_tokens=num_accepted_tokens,
    )
