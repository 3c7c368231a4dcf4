"""Request rows of FlashInfer's metadata builder under chunked local attention, derived from vLLM's code.

A layer with chunked local attention (an ``attention_chunk_size`` in the model's config: Llama 4)
builds its metadata through ``ChunkedLocalAttentionBuilder``
(``vllm/model_executor/layers/attention/chunked_local_attention.py:39-64``), which hands the
backend's builder the metadata ``make_local_attention_virtual_batches`` returns
(``vllm/v1/attention/backends/utils.py:543-684``): one **virtual** request per attention chunk a
request's scheduled tokens touch, ``num_reqs=len(seq_lens_cpu)``. FlashInfer's builder writes
``num_reqs`` rows into ``paged_kv_indptr`` (``[: num_reqs + 1]``, ``flashinfer.py:1527-1529``) and
``paged_kv_last_page_len`` (``[:num_reqs]``, ``:1545``), allocated for ``max_num_reqs`` requests.

:func:`virtual_rows` runs vLLM's own two statements that count a request's virtual requests
(``q_tokens_in_first_block = np.minimum(…)`` and ``local_blocks = 1 + cdiv(…)``, read from the
function's source and executed on capproof SymInts, with ``np.minimum`` the symbolic minimum and
``.astype`` a no-op on integers) for one request of ``query_len`` new tokens ending at ``seq_len``,
chunk ``attention_chunk_size``; and once more with one new token (a decode, or any request whose
new tokens stay in one chunk). :func:`derive_local_attention_rows` records, on the two entries, the
rows of a step of ``num_reqs`` requests of which one is that request and the others take one new
token each: ``(num_reqs - 1) * rows(1) + rows(query_len)`` (plus one for the indptr). This is one
batch the scheduler can form (any batch with a chunk-crossing prefill at ``max_num_seqs`` running
requests), not the largest: enough for a counterexample, never used for a proof.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

from ...symbolic import SymInt
from .demand import expression, function_def, run_paths, source_text

__all__ = ["UTILS", "ENTRIES", "virtual_rows", "derive_local_attention_rows"]

UTILS = "vllm/v1/attention/backends/utils.py"
FUNC = "make_local_attention_virtual_batches"
FI = "vllm/v1/attention/backends/flashinfer.py"
#: The FlashInfer builder's request-row buffers and how many rows past ``num_reqs`` each writes.
ENTRIES = {
    f"{FI}::FlashInferMetadataBuilder.paged_kv_indptr": 1,
    f"{FI}::FlashInferMetadataBuilder.paged_kv_last_page_len": 0,
}
#: Symbolic sizes of :func:`virtual_rows`.
NAMES = ("attention_chunk_size", "seq_len", "query_len")


class _NoCast(ast.NodeTransformer):
    """``x.astype(dtype)`` -> ``x`` (an integer cast of integers)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            return node.func.value
        return node


def _statements(root: str) -> tuple[list[ast.stmt], list[int]]:
    fn = function_def(root, UTILS, FUNC)
    if fn is None:
        raise RuntimeError(f"{UTILS}: {FUNC} not found")
    want = ("q_tokens_in_first_block", "local_blocks")
    stmts = [
        s for s in fn.body if isinstance(s, ast.Assign) and len(s.targets) == 1 and source_text(s.targets[0]) in want
    ]
    if [source_text(s.targets[0]) for s in stmts] != list(want):
        raise RuntimeError(f"{UTILS}: {FUNC} does not assign {want} once each, in that order")
    return stmts, [s.lineno for s in stmts]


def virtual_rows(root: str, query_len: str = "query_len") -> tuple[str, list[int]]:
    """``(extent, lines)``: the virtual requests vLLM's ``make_local_attention_virtual_batches``
    makes of one request (``local_blocks``), executed on SymInts over :data:`NAMES` (``query_len``
    may be an integer literal), on every path; ``lines`` the source lines of the two statements.
    Needs vLLM importable (its ``cdiv`` runs). Raises RuntimeError when the statements are not found."""
    import z3
    from vllm.v1.attention.backends import utils as vutils

    from ...arith import minimum

    stmts, lines = _statements(root)
    module = ast.Module(body=[_NoCast().visit(s) for s in stmts], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, UTILS, "exec")
    v = {n: SymInt.var(n) for n in NAMES}
    q = v["query_len"] if query_len == "query_len" else int(query_len)

    def run():
        scope = {"attn_chunk_size": v["attention_chunk_size"], "seq_lens_np": v["seq_len"], "q_seqlens": q}
        env = dict(vutils.__dict__)
        env["np"] = SimpleNamespace(minimum=minimum, int32=None)
        exec(code, env, scope)  # noqa: S102 - vLLM's own two statements
        return scope["local_blocks"]

    assume = [z3.Int(n) >= 1 for n in NAMES]
    assume.append(z3.Int("seq_len") >= (z3.Int("query_len") if query_len == "query_len" else int(query_len)))
    term, _ = run_paths(run, assume)
    return expression(term), lines


def derive_local_attention_rows(entries: list, root: str) -> list[str]:
    """Add to each entry of :data:`ENTRIES` a dimension-0 demand (family ``chunked local attention
    rows``, ``when`` the condition it applies under) from :func:`virtual_rows`; returns problem
    lines (an entry not in the inventory, a run that failed)."""
    try:
        one, lines = virtual_rows(root)
        decode, _ = virtual_rows(root, "1")
    except Exception as exc:  # noqa: BLE001 - one line: this demand is not derived
        return [f"chunked local attention rows not derived: {type(exc).__name__}: {exc}"[:300]]
    by_id = {e.id: e for e in entries}
    problems = []
    for ident, extra in ENTRIES.items():
        e = by_id.get(ident)
        if e is None:
            problems.append(f"demand: {ident} is not in the inventory")
            continue
        rows = f"(num_reqs - 1) * ({decode}) + ({one})"
        e.demands = [d for d in e.demands if d.get("family") != "chunked local attention rows"] + [
            {
                "dim": 0,
                "how": "executed",
                "family": "chunked local attention rows",
                "when": "a layer with chunked local attention (attention_chunk_size) on FlashInfer's native paged path",
                "extent": f"{rows} + {extra}" if extra else rows,
                "from": [
                    f"{UTILS}:{','.join(map(str, lines))} {FUNC}: q_tokens_in_first_block, local_blocks "
                    "(executed on symbolic sizes; np.minimum the symbolic minimum, .astype a no-op)",
                    f"{UTILS}:676 num_reqs=len(seq_lens_cpu) (one row per virtual request)",
                    "vllm/model_executor/layers/attention/chunked_local_attention.py:39-64 "
                    "(ChunkedLocalAttentionBuilder.build hands the virtual batch to the backend's builder)",
                    f"{FI}:1527-1529 (np.cumsum(..., out=self.paged_kv_indptr.np[1 : num_reqs + 1]))"
                    if extra
                    else f"{FI}:1545 (self.paged_kv_last_page_len.np[:num_reqs] = ...)",
                ],
                "notes": [
                    "one batch the scheduler can form: one request of query_len new tokens ending at seq_len, "
                    "num_reqs - 1 others of one new token each (a lower bound of the worst batch: for "
                    "counterexamples only)"
                ],
            }
        ]
    return problems
