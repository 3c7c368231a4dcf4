"""The runner block table: the TRTLLM-gen MLA kernel's alignment precondition, and vLLM 0.33.0's
three width derivations agreeing with each other and covering the slot-mapping reads.

The alignment claims are about the TRTLLM-gen MLA decode kernel only (``requires=("mla",)``:
``check-config`` applies them to models vLLM serves with MLA attention, ``ModelConfig.use_mla``);
a model with ordinary attention never calls that kernel, whatever its block size."""

from capproof import Choice, Range, all_of, claim, equal, less_than, obligation
from models.vllm.block_table import (
    TOKEN_ALIGNMENT,
    get_block_table_width,
    indexer_block_table_width,
    max_num_blocks_per_req,
    runner_block_table_width,
    runner_block_table_width_39324,
    slot_mapping_max_column,
)

MAX_MODEL_LEN = Range(1, 2**21)
DCP = Choice(1, 2, 4, 8)
#: Block sizes that divide 128, the domain the TRTLLM-gen MLA check was written for.
DIVISORS_OF_128 = Choice(16, 32, 64, 128)
#: Every multiple of 16 up to 256 (vLLM accepts such block sizes; 48, 80, … do not divide 128).
MULTIPLES_OF_16 = Choice(range(16, 257, 16))
KERNEL_BLOCK_SIZES = Choice(1, 16, 32, 64, 128, 256)


@obligation(
    domain={"max_model_len": MAX_MODEL_LEN, "block_size": DIVISORS_OF_128, "dcp": DCP},
    expect="counterexample",
    case="vllm-trtllm-mla-blocknum-align",
    sources=["vllm-project/vllm#39324", "flashinfer-ai/flashinfer#3915"],
    requires=("mla",),
    engine="vllm",
    versions="<0.21",
)
def trtllm_mla_block_num_aligned_before_39324(max_model_len, block_size, dcp):
    """Before #39324 the runner width was ``cdiv(L, bs * cp)``; the TRTLLM-gen MLA API requires
    ``block_num % (128 / block_size) == 0``. Kimi K2.5, L=9416, bs=32 -> 295 (needs 296)."""
    block_num = max_num_blocks_per_req(max_model_len, block_size, dcp)
    return claim(block_num % (TOKEN_ALIGNMENT // block_size) == 0, block_num=block_num)


@obligation(
    domain={"max_model_len": MAX_MODEL_LEN, "block_size": DIVISORS_OF_128, "dcp": DCP},
    expect="proved",
    case="vllm-trtllm-mla-blocknum-align",
    sources=["vllm-project/vllm#39324"],
    requires=("mla",),
    engine="vllm",
    versions=">=0.21",
)
def trtllm_mla_block_num_aligned_after_39324(max_model_len, block_size, dcp):
    """#39324 pads the runner width to a multiple of ``128 // block_size``: the check holds."""
    block_num = runner_block_table_width_39324(max_num_blocks_per_req(max_model_len, block_size, dcp), block_size)
    return claim(block_num % (TOKEN_ALIGNMENT // block_size) == 0, block_num=block_num)


@obligation(
    domain={"max_model_len": MAX_MODEL_LEN, "block_size": MULTIPLES_OF_16, "dcp": DCP},
    expect="counterexample",
    case="vllm-trtllm-mla-blocknum-align",
    sources=["vllm-project/vllm#39324", "vllm-project/vllm#50302"],
    requires=("mla",),
    engine="vllm",
    versions=">=0.21,<0.27",
)
def row_spans_128_tokens_39324_any_block_size(max_model_len, block_size, dcp):
    """#39324's ``128 // block_size`` assumes the block size divides 128: for block 48 a row does
    not span a multiple of 128 tokens. #50302 switched to ``128 // gcd(128, block_size)``."""
    width = runner_block_table_width_39324(max_num_blocks_per_req(max_model_len, block_size, dcp), block_size)
    return claim((width * block_size) % TOKEN_ALIGNMENT == 0, row_tokens=width * block_size)


@obligation(
    domain={"max_model_len": MAX_MODEL_LEN, "block_size": MULTIPLES_OF_16, "dcp": DCP},
    expect="proved",
    case="vllm-trtllm-mla-blocknum-align",
    sources=["vllm-project/vllm#50302", "vllm==0.33.0 vllm/v1/worker/block_table.py"],
    requires=("mla",),
    engine="vllm",
    versions=">=0.27",
)
def row_spans_128_tokens_v0_33(max_model_len, block_size, dcp):
    """vLLM 0.33.0 ``get_block_table_width`` (gcd alignment): every row spans whole 128-token units."""
    width = get_block_table_width(max_num_blocks_per_req(max_model_len, block_size, dcp), block_size)
    return claim((width * block_size) % TOKEN_ALIGNMENT == 0, row_tokens=width * block_size)


@obligation(
    domain={"max_model_len": MAX_MODEL_LEN, "block_size": MULTIPLES_OF_16, "dcp": DCP},
    expect="proved",
    case=None,
    sources=["vllm==0.33.0 vllm/v1/worker/block_table.py"],
    engine="vllm",
    versions=">=0.27",
    covers=["vllm/v1/worker/block_table.py::BlockTable.block_table"],
)
def slot_mapping_reads_within_runner_width_v0_33(max_model_len, block_size, dcp):
    """The slot-mapping kernel's largest column ``(L - 1) // (bs * dcp)`` is inside the runner table."""
    return less_than(
        column=slot_mapping_max_column(max_model_len, block_size, dcp),
        W_bt=runner_block_table_width(max_model_len, block_size, dcp),
    )


@obligation(
    domain={
        "max_model_len": MAX_MODEL_LEN,
        "block_size": MULTIPLES_OF_16,
        "dcp": DCP,
        "kernel_block_size": KERNEL_BLOCK_SIZES,
    },
    assumptions={
        "kernel_block_size divides block_size": lambda block_size, kernel_block_size: (
            block_size % kernel_block_size == 0
        )
    },
    expect="proved",
    case="vllm-dsa-ebt-128align",
    sources=["vllm-project/vllm#50302", "vllm==0.33.0 vllm/v1/worker/utils.py"],
    engine="vllm",
    versions=">=0.27",
    covers=["vllm/v1/worker/utils.py::AttentionGroup.kernel_block_table"],
)
def kernel_block_table_matches_runner_v0_33(max_model_len, block_size, dcp, kernel_block_size):
    """vLLM 0.33.0, decoder-only: the runner's width (path 1) times ``block_size // kernel_block_size``
    equals the builders' ``block_table_width`` (path 3) that sizes ``expanded_block_table_buffer``
    and ``kernel_block_table``, so whole-row copies agree."""
    return equal(
        W_bt_kernel=runner_block_table_width(max_model_len, block_size, dcp) * (block_size // kernel_block_size),
        W_buf=indexer_block_table_width(max_model_len, block_size, dcp, kernel_block_size),
    )


@obligation(
    domain={
        "max_model_len": MAX_MODEL_LEN,
        "max_encoder_len": MAX_MODEL_LEN,
        "block_size": MULTIPLES_OF_16,
        "dcp": DCP,
    },
    expect="proved",
    case=None,
    sources=[
        "vllm==0.33.0 vllm/v1/worker/gpu_model_runner.py:549-554 (max_encoder_len = max_num_encoder_input_tokens "
        "for encoder-decoder models)",
        "vllm==0.33.0 vllm/v1/worker/gpu_model_runner.py:6850 (block tables sized for max(max_model_len, "
        "max_encoder_len): the cross-attention KV of the encoder input)",
    ],
    engine="vllm",
    versions=">=0.27",
)
def encoder_slot_mapping_reads_within_runner_width_v0_33(max_model_len, max_encoder_len, block_size, dcp):
    """Encoder-decoder models: the encoder input can be longer than ``max_model_len``; the runner
    table is sized for the longer of the two, so the slot mapping of the last encoder token (column
    ``(max_encoder_len - 1) // (bs * dcp)``) and of the last decoder token are inside it."""
    width = runner_block_table_width(max_model_len, block_size, dcp, max_encoder_len)
    enc = slot_mapping_max_column(max_encoder_len, block_size, dcp)
    dec = slot_mapping_max_column(max_model_len, block_size, dcp)
    return claim(
        all_of(0 <= enc, enc < width, 0 <= dec, dec < width), encoder_column=enc, decoder_column=dec, W_bt=width
    )
