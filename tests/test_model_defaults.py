"""Models called on ints the way engine code calls them: default arguments and errors.

Every obligation passes each parameter explicitly, so a default value (``dcp=1``: the engine
without decode context parallelism) or an input rejected with an error is never exercised by
``capproof prove``; ``make mutation`` found the changed defaults and error conditions surviving
(docs/soundness.md). Values are the corpus's reported ones where there is one
(/work/shared/corpus/cases.md: vllm-trtllm-mla-blocknum-align, vllm-dsa-ebt-128align).
"""

import pytest

from models.vllm import block_table as bt

# vllm-trtllm-mla-blocknum-align: Kimi K2.5, L = 9416, block 32 -> 295 blocks, 296 after #39324.
KIMI = (9416, 32)
# vllm-dsa-ebt-128align: GLM-5.2-FP8, L = 350000, block 64, dcp 1 -> buffer 5469, runner 5470.
GLM = (350000, 64)


def test_block_counts_default_to_no_dcp():
    assert bt.max_num_blocks_per_req(*KIMI) == 295
    assert bt.max_num_blocks_per_req(*GLM) == 5469
    assert bt.indexer_block_table_width_before_50302(*GLM) == 5469
    assert bt.uniform_type_max_num_blocks_per_req_before_50823(*GLM) == 5469
    assert bt.slot_mapping_max_column(*KIMI) == 294


def test_runner_and_indexer_widths_default_to_no_dcp_and_no_encoder():
    assert bt.runner_block_table_width(*KIMI) == 296
    assert bt.runner_block_table_width(*GLM) == 5470
    assert bt.indexer_block_table_width(*GLM) == 5470  # no kernel block size: the runner's width
    assert bt.runner_block_table_width_39324(bt.max_num_blocks_per_req(*GLM), 64) == 5470


def test_get_block_table_width_default_alignment_is_128_tokens():
    assert bt.get_block_table_width(295, 32) == 296
    assert bt.get_block_table_width(295, 32, token_alignment=None) == 295
    assert bt.get_block_table_width(295, 32, token_alignment=1) == 295  # the smallest accepted alignment


@pytest.mark.parametrize("token_alignment", [0, -128])
def test_get_block_table_width_rejects_a_non_positive_alignment(token_alignment):
    with pytest.raises(ValueError, match="^token_alignment must be positive$"):
        bt.get_block_table_width(295, 32, token_alignment=token_alignment)
