"""vLLM DSA indexer decode path selection: which copy fills ``expanded_block_table_buffer``.

Source: vLLM 0.33.0 ``vllm/v1/attention/backends/mla/indexer.py``,
``DeepseekV32IndexerMetadataBuilder._prepare_decode_tensors``. Units: requests (``num_decodes``),
tokens (``*_decode_len``, ``num_decode_tokens``, which includes CUDA-graph padding).

- uniform route (Triton ``PrepareUniformDecodeKernel``): taken when ``not supports_varlen``,
  ``min_decode_len == max_decode_len`` and ``num_decodes * max_decode_len == num_decode_tokens``
  (adaptive verification off). It copies ``expanded_bt_stride`` columns, the *destination*
  width, so a width mismatch is never detected: rows are truncated or read from the neighbour
  row (vllm-project/vllm#48404).
- variable route: ``expanded_block_table_buffer[:actual_expanded] = repeat_interleave(...)``,
  a same-shape tensor assignment: a width mismatch raises ("expanded size 5469 vs existing 5470").
"""

from __future__ import annotations

from capproof import all_of, not_

__all__ = ["takes_uniform_decode_copy", "takes_variable_decode_copy"]


def takes_uniform_decode_copy(num_decodes, min_decode_len, max_decode_len, num_decode_tokens):
    """True when the batch takes the silent uniform Triton copy (``supports_varlen`` False)."""
    return all_of(min_decode_len == max_decode_len, num_decodes * max_decode_len == num_decode_tokens)


def takes_variable_decode_copy(num_decodes, min_decode_len, max_decode_len, num_decode_tokens):
    """True when the batch takes the raising ``repeat_interleave`` copy (``supports_varlen`` False)."""
    return not_(takes_uniform_decode_copy(num_decodes, min_decode_len, max_decode_len, num_decode_tokens))
