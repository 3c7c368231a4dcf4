"""vLLM 0.33.0's own code as the model: capproof symbolic ints pass straight through it.

Run only by ``make verify-real`` (it imports the real engine: ``capproof.engines.vllm.wheels``). ``max_model_len``
is a symbolic Z3 int handed to vLLM's ``MLAAttentionSpec``/``FullAttentionSpec.max_num_blocks_per_req``
(``cdiv`` inside), then to vLLM's ``get_block_table_width``. ``block_size`` and ``dcp`` are finite
domains, case-split, because the engine calls ``math.gcd(token_alignment, block_size)``, which needs a
concrete int.

``UniformTypeKVCacheSpecs.max_num_blocks_per_req`` collects its members' values in a ``set`` (hashing
a symbolic int is impossible: NotConcreteError). Split used instead: each member's real
``max_num_blocks_per_req`` runs on the symbolic length, the claim includes the method's own assertion
(all members equal) and uses that common value; ``tests/test_real_engine.py`` checks on ints that the
real method returns exactly that value.
"""

from capproof import Choice, Range, all_of, at_most, claim, equal, less_than, obligation
from capproof.engines.vllm import wheels as real

V = real.vllm()
MAX_MODEL_LEN = Range(1, 2**21)
BLOCK_SIZES = Choice(range(16, 257, 16))
DCP = Choice(1, 2, 4, 8)
SOURCES = ["vllm==0.33.0 vllm/v1/kv_cache_interface.py", "vllm==0.33.0 vllm/v1/worker/block_table.py"]


def runner_width(max_model_len, block_size, dcp, spec):
    """Path 1 with vLLM's own functions: ``get_block_table_width(spec.max_num_blocks_per_req(cfg, L), bs)``."""
    return V.get_block_table_width(spec.max_num_blocks_per_req(real.vllm_config(dcp=dcp), max_model_len), block_size)


@obligation(domain={"max_model_len": MAX_MODEL_LEN, "block_size": BLOCK_SIZES, "dcp": DCP},
            expect="proved", sources=SOURCES, engine="vllm", versions="==0.33.0")
def real_mla_block_table_holds_every_token(max_model_len, block_size, dcp):
    """vLLM 0.33.0's MLA block-table width × block × dcp ≥ max_model_len, for every config (real code)."""
    width = runner_width(max_model_len, block_size, dcp, real.mla_spec(block_size))
    return at_most(demand=max_model_len, capacity=width * block_size * dcp)


@obligation(domain={"max_model_len": MAX_MODEL_LEN, "block_size": BLOCK_SIZES, "dcp": DCP},
            expect="proved", sources=SOURCES, engine="vllm", versions="==0.33.0")
def real_full_attention_slot_mapping_within_width(max_model_len, block_size, dcp):
    """The slot-mapping kernel's last column ``(L - 1) // (bs * dcp)`` is inside vLLM's FullAttention table."""
    width = runner_width(max_model_len, block_size, dcp, real.full_attention_spec(block_size))
    return less_than(column=(max_model_len - 1) // (block_size * dcp), W_bt=width)


@obligation(domain={"max_model_len": MAX_MODEL_LEN, "block_size": BLOCK_SIZES, "dcp": DCP},
            expect="proved", sources=SOURCES, engine="vllm", versions="==0.33.0")
def real_row_spans_whole_128_token_units(max_model_len, block_size, dcp):
    """Every row of vLLM's block table spans a multiple of 128 tokens (the TRTLLM-gen MLA precondition)."""
    width = runner_width(max_model_len, block_size, dcp, real.mla_spec(block_size))
    return claim(width * block_size % 128 == 0, row_tokens=width * block_size)


@obligation(domain={"max_model_len": MAX_MODEL_LEN, "block_size": Choice(64), "dcp": DCP,
                    "kernel_block_size": Choice(1, 16, 32, 64)},
            expect="proved", case="vllm-dsa-ebt-dcp-uniformtype",
            sources=SOURCES + ["vllm-project/vllm#50823", "vllm==0.33.0 vllm/v1/worker/utils.py"],
            engine="vllm", versions="==0.33.0")
def real_indexer_buffer_width_equals_runner_width(max_model_len, block_size, dcp, kernel_block_size):
    """DSA's runner table (merged UniformType group, members split) equals the indexer's
    ``expanded_block_table_buffer`` width (MLA spec, path 3) times nothing lost: W_buf == W_bt × bs/kbs."""
    cfg = real.vllm_config(dcp=dcp)
    group = real.uniform_type_specs(block_size)
    members = [spec.max_num_blocks_per_req(cfg, max_model_len) for spec in group.kv_cache_specs.values()]
    agreed = all_of(*[m == members[0] for m in members[1:]])  # the method's own assert
    w_bt = V.get_block_table_width(members[0], block_size)
    w_buf = V.get_block_table_width(real.mla_spec(block_size).max_num_blocks_per_req(cfg, max_model_len), block_size)
    w_buf = w_buf * (block_size // kernel_block_size)
    return claim(all_of(agreed, w_buf == w_bt * (block_size // kernel_block_size)), W_buf=w_buf, W_bt_kernel=w_bt * (block_size // kernel_block_size))


@obligation(domain={"max_model_len": MAX_MODEL_LEN, "block_size": Choice(64), "dcp": DCP},
            expect="counterexample", case="vllm-dsa-ebt-128align",
            sources=SOURCES + ["vllm-project/vllm#46074", "vllm-project/vllm#50302"], engine="vllm", versions="==0.33.0")
def real_width_equals_pre_50302_indexer_width(max_model_len, block_size, dcp):
    """Kept to show the real code finds the A1 difference: vLLM 0.33.0's aligned width vs the old
    unaligned indexer width ``cdiv(L, bs * dcp)`` (vLLM's own ``cdiv``) differ for odd block counts."""
    return equal(W_buf=V.cdiv(max_model_len, block_size * dcp),
                 W_bt=runner_width(max_model_len, block_size, dcp, real.mla_spec(block_size)))
