"""Chunked local attention hands an attention builder more requests than the scheduler's cap
(docs/findings.md, "Chunked local attention: virtual requests vs FlashInfer's request rows").

Real tier: runs vLLM 0.33.0's own ``make_local_attention_virtual_batches`` and FlashInfer
builder method on the CPU. Only ``async_tensor_h2d`` (a host-to-device copy that pins memory, which
needs an accelerator) is replaced by a plain ``torch.as_tensor`` of the same values, and
``flashinfer`` (no CPU build) is a stand-in module while the backend module is imported, and
the page-copy Triton kernel launched after the row writes runs nothing."""

import pytest

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def vllm_code():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need


def _virtual_batches(monkeypatch, seq_lens, query_lens, chunk, block):
    import torch
    import vllm.v1.attention.backends.utils as utils
    from vllm.v1.attention.backend import CommonAttentionMetadata

    monkeypatch.setattr(
        utils, "async_tensor_h2d", lambda data, device=None, dtype=None, **kw: torch.as_tensor(data, dtype=dtype)
    )
    qsl = torch.tensor([0, *torch.tensor(query_lens).cumsum(0).tolist()], dtype=torch.int32)
    n = len(seq_lens)
    width = max(seq_lens) // block + 1
    cm = CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl,
        seq_lens=torch.tensor(seq_lens, dtype=torch.int32),
        num_reqs=n,
        num_actual_tokens=int(qsl[-1]),
        max_query_len=max(query_lens),
        max_seq_len=max(seq_lens),
        block_table_tensor=torch.arange(n * width, dtype=torch.int32).view(n, width),
        slot_mapping=torch.arange(int(qsl[-1])),
    )
    local, _ = utils.make_local_attention_virtual_batches(chunk, cm, block)
    return local


class _NoKernel:
    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


def _flashinfer_rows(monkeypatch, local, max_num_reqs, block):
    """vLLM's ``FlashInferMetadataBuilder._compute_flashinfer_kv_metadata`` on buffers sized as its
    constructor sizes them (``max_num_reqs + 1`` and ``max_num_reqs`` rows, flashinfer.py:1116-1124)."""
    from types import SimpleNamespace

    import torch
    import vllm.v1.utils as v1_utils
    from vllm.v1.utils import CpuGpuBuffer

    from capproof.engines.vllm.harness_attention import stand_ins

    monkeypatch.setattr(v1_utils, "PIN_MEMORY", False)

    with stand_ins("flashinfer", "flashinfer.decode", "flashinfer.prefill", "flashinfer.utils"):
        from vllm.v1.attention.backends import flashinfer
    # the page-copy kernel (Triton, GPU) is launched after the row writes: a stand-in that runs nothing
    monkeypatch.setattr(flashinfer, "_copy_page_indices_kernel", _NoKernel())
    FlashInferMetadataBuilder = flashinfer.FlashInferMetadataBuilder
    builder = SimpleNamespace(
        paged_kv_indptr=CpuGpuBuffer(max_num_reqs + 1, dtype=torch.int32, device="cpu", pin_memory=False),
        paged_kv_indices=torch.zeros(1024, dtype=torch.int32),
        paged_kv_last_page_len=CpuGpuBuffer(max_num_reqs, dtype=torch.int32, device="cpu", pin_memory=False),
    )
    seq_np = local.seq_lens.numpy()
    return FlashInferMetadataBuilder._compute_flashinfer_kv_metadata(
        builder, (seq_np + block - 1) // block, seq_np, local.block_table_tensor, local.num_reqs, block
    )


def test_one_scheduled_request_becomes_two_virtual_requests(vllm_code, monkeypatch):
    """The smallest case: one request (``--max-num-seqs 1``) whose scheduled chunk of 5000 tokens
    (a 10000-token prompt under ``--max-num-batched-tokens 5000``) crosses the 8192-token attention
    chunk: vLLM makes two virtual requests, and FlashInfer's native paged path writes 2 rows into a
    buffer of 1 (numpy raises before any kernel runs)."""
    local = _virtual_batches(monkeypatch, [10000], [5000], chunk=8192, block=16)
    assert local.num_reqs == 2
    with pytest.raises(ValueError, match="wrong size"):
        _flashinfer_rows(monkeypatch, local, max_num_reqs=1, block=16)


def test_batch_within_the_cap_passes(vllm_code, monkeypatch):
    """The control: the same request with room for its virtual requests runs through."""
    local = _virtual_batches(monkeypatch, [10000], [5000], chunk=8192, block=16)
    indices = _flashinfer_rows(monkeypatch, local, max_num_reqs=2, block=16)
    assert indices.shape[0] > 0


def test_decodes_add_no_virtual_requests(vllm_code, monkeypatch):
    """Decode rows (one query token) stay one virtual request each: only a prefill that crosses a
    chunk boundary adds rows, so a full batch of decodes plus one such prefill is what overflows."""
    local = _virtual_batches(monkeypatch, [9000, 300, 20000], [1, 1, 1], chunk=8192, block=16)
    assert local.num_reqs == 3


def test_derived_rows_match_vllms_virtual_batches(vllm_code, monkeypatch):
    """The demand the inventory records (vLLM's two statements run on symbolic sizes,
    capproof/engines/vllm/demand_local_attention.py) equals the ``num_reqs`` vLLM's own
    ``make_local_attention_virtual_batches`` returns, on batches of one long request and
    ``num_reqs - 1`` one-token requests, across chunk boundaries."""
    from capproof.engines.vllm import wheels
    from capproof.engines.vllm.demand_local_attention import ENTRIES, derive_local_attention_rows
    from capproof.inventory import Entry, evaluate

    entries = [
        Entry(
            id=i,
            file=i.split("::")[0],
            line=1,
            owner="FlashInferMetadataBuilder",
            attribute=i.split(".")[-1],
            shape=["max_num_reqs"],
            dtype="int32",
        )
        for i in ENTRIES
    ]
    assert derive_local_attention_rows(entries, wheels.source_root("vllm", "0.33.0")) == []
    rows = {e.id: e.demands[0]["extent"] for e in entries}
    for chunk, block in ((8192, 16), (64, 16)):
        for seq_len, query_len in ((10000, 5000), (8193, 2), (8192, 2), (3 * chunk + 5, 2 * chunk + 3), (17, 17)):
            for others in (0, 2):
                local = _virtual_batches(
                    monkeypatch, [seq_len] + [chunk + 7] * others, [query_len] + [1] * others, chunk=chunk, block=block
                )
                names = dict(num_reqs=1 + others, query_len=query_len, seq_len=seq_len, attention_chunk_size=chunk)
                for ident, extra in ENTRIES.items():
                    assert evaluate(rows[ident], **names) == local.num_reqs + extra, (ident, names)
