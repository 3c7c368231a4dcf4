"""The DSA indexer's ``expanded_block_table_buffer`` width vs the runner's block table (Family A).

Family obligation: ``W_buf == W_bt`` for every configuration. A difference in either direction
is a defect: the variable-length copy raises, the uniform Triton copy corrupts rows silently.
"""

from capproof import Choice, Range, all_of, equal, obligation
from models.vllm.block_table import (
    get_block_table_width_50302,
    indexer_block_table_width_before_50302,
    max_num_blocks_per_req,
    runner_block_table_width_39324,
    uniform_type_max_num_blocks_per_req_before_50823,
)
from models.vllm.indexer import takes_uniform_decode_copy, takes_variable_decode_copy
from models.vllm.spec_decode import uniform_decode_query_len

#: ``max_model_len`` up to 2**21 tokens (2M context), well past every report (<= 1M).
MAX_MODEL_LEN = Range(1, 2**21)
BLOCK_SIZES = Choice(16, 32, 64, 128, 256)
DCP = Choice(1, 2, 4, 8)
KERNEL_BLOCK_SIZES = Choice(1, 16, 32, 64, 128, 256)
KERNEL_SPLITS = {
    "kernel_block_size divides block_size": lambda block_size, kernel_block_size: block_size % kernel_block_size == 0
}


@obligation(
    domain={"max_model_len": MAX_MODEL_LEN, "block_size": BLOCK_SIZES, "dcp": DCP},
    expect="counterexample",
    case="vllm-dsa-ebt-128align",
    sources=[
        "vllm-project/vllm#46074",
        "vllm-project/vllm#39324",
        "vllm-project/vllm#50050",
        "vllm-project/vllm#48404",
    ],
    engine="vllm",
    requires=("dsa_indexer",),
    versions=">=0.21,<0.27",
)
def ebt_width_matches_runner_before_50302(max_model_len, block_size, dcp):
    """Between #39324 and #50302 the runner aligned its width to 128 tokens; the indexer did not.

    With block 64 the widths differ by one column exactly when ``cdiv(L, 64 * dcp)`` is odd:
    L=350000 -> 5469 vs 5470 (reported crash), L=300000 -> equal (reported stable).
    """
    n = max_num_blocks_per_req(max_model_len, block_size, dcp)
    return equal(
        W_buf=indexer_block_table_width_before_50302(max_model_len, block_size, dcp),
        W_bt=runner_block_table_width_39324(n, block_size),
    )


@obligation(
    domain={
        "max_model_len": MAX_MODEL_LEN,
        "block_size": BLOCK_SIZES,
        "dcp": DCP,
        "kernel_block_size": KERNEL_BLOCK_SIZES,
    },
    assumptions=KERNEL_SPLITS,
    expect="counterexample",
    case="vllm-dsa-ebt-dcp-uniformtype",
    sources=["vllm-project/vllm#50825", "vllm-project/vllm#50302", "vllm-project/vllm#48404"],
    engine="vllm",
    requires=("dsa_indexer",),
    versions=">=0.27,<0.28",
)
def ebt_width_matches_runner_before_50823(max_model_len, block_size, dcp, kernel_block_size):
    """After #50302, before #50823: the indexer's MLA spec divides by dcp, DSA's merged group does not.

    L=1048576, block 64, dcp 2 -> 8192 vs 16384 (GLM-5.2 TP8 DCP2 1M context report).
    """
    return equal(
        W_buf=get_block_table_width_50302(
            max_num_blocks_per_req(max_model_len, block_size, dcp), block_size, kernel_block_size
        ),
        W_bt=get_block_table_width_50302(
            uniform_type_max_num_blocks_per_req_before_50823(max_model_len, block_size, dcp),
            block_size,
            kernel_block_size,
        ),
    )


@obligation(
    domain={
        "max_model_len": MAX_MODEL_LEN,
        "block_size": BLOCK_SIZES,
        "dcp": DCP,
        "kernel_block_size": KERNEL_BLOCK_SIZES,
    },
    assumptions=KERNEL_SPLITS,
    expect="proved",
    case="vllm-dsa-ebt-dcp-uniformtype",
    sources=["vllm-project/vllm#50823", "vllm-project/vllm#50302"],
    engine="vllm",
    requires=("dsa_indexer",),
    versions=">=0.28",
    covers=["vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer"],
)
def ebt_width_matches_runner_after_50823(max_model_len, block_size, dcp, kernel_block_size):
    """After #50302 and #50823 both sides use ``get_block_table_width(cdiv(L, bs * dcp), bs)``.

    This also discharges vllm-dsa-ebt-128align (#50302 fixed its alignment axis).
    """
    return equal(
        W_buf=get_block_table_width_50302(
            max_num_blocks_per_req(max_model_len, block_size, dcp), block_size, kernel_block_size
        ),
        W_bt=get_block_table_width_50302(
            max_num_blocks_per_req(max_model_len, block_size, dcp), block_size, kernel_block_size
        ),
    )


# A4: why a static width mismatch fails only for some batches. The batch is symbolic: how many
# decode requests, their shortest and longest decode length (1 + accepted drafts, at most
# 1 + num_speculative_tokens) and the token count after CUDA-graph padding.
_BATCH = {
    "num_decodes": Range(1, 1024),
    "min_decode_len": Range(1, 6),
    "max_decode_len": Range(1, 6),
    "num_decode_tokens": Range(1, 8192),
}
_BATCH_FACTS = {
    "min_decode_len <= max_decode_len": lambda min_decode_len, max_decode_len: min_decode_len <= max_decode_len,
    "decode length <= 1 + num_speculative_tokens": lambda max_decode_len, num_speculative_tokens: (
        max_decode_len <= uniform_decode_query_len(num_speculative_tokens)
    ),
    "tokens cover the decodes (padding only adds)": lambda num_decodes, min_decode_len, max_decode_len, num_decode_tokens: (
        all_of(
            num_decode_tokens >= num_decodes * min_decode_len + (max_decode_len - min_decode_len),
            num_decode_tokens <= num_decodes * max_decode_len + 512,
        )
    ),
}


def _widths_before_50302(max_model_len, dcp, block_size=64):
    """(W_buf, W_bt) between #39324 and #50302 at DSA's CUDA block size 64."""
    return (
        indexer_block_table_width_before_50302(max_model_len, block_size, dcp),
        runner_block_table_width_39324(max_num_blocks_per_req(max_model_len, block_size, dcp), block_size),
    )


@obligation(
    # num_speculative_tokens 0 is serving without drafts (every decode is 1 token long): the width
    # mismatch is static, so such a deployment is decided by the same claim
    domain={"max_model_len": MAX_MODEL_LEN, "dcp": DCP, "num_speculative_tokens": Range(0, 5), **_BATCH},
    assumptions=_BATCH_FACTS,
    witnesses={
        "raises (variable-length flatten copy)": takes_variable_decode_copy,
        "corrupts silently (uniform Triton copy)": takes_uniform_decode_copy,
    },
    expect="counterexample",
    case="vllm-44827-indexer-prob",
    sources=["vllm-project/vllm#44827", "vllm-project/vllm#46074", "vllm-project/vllm#48404"],
    engine="vllm",
    requires=("dsa_indexer",),
    versions=">=0.21,<0.27",
)
def ebt_width_matches_runner_for_every_batch_before_50302(
    max_model_len, dcp, num_speculative_tokens, num_decodes, min_decode_len, max_decode_len, num_decode_tokens
):
    """With the A1 width mismatch (block 64) the decode copy is wrong for every batch, but how it
    fails depends on the batch. The trigger witnesses give, at the counterexample's config, the
    smallest batch that takes each path: the variable-length ``repeat_interleave`` copy raises a
    shape error (decode lengths that differ, or CUDA-graph padding); the uniform Triton copy moves
    ``W_buf`` columns per row and silently truncates or mixes rows. That is why the failure looks
    intermittent. Presumed mechanism of the #44827 report (unconfirmed there).
    """
    w_buf, w_bt = _widths_before_50302(max_model_len, dcp)
    return equal(W_buf=w_buf, W_bt=w_bt)
