"""Request rows of the V1 drafters' per-request staging buffers, derived from their accesses.

A drafter (``vllm/v1/spec_decode/``, vLLM 0.33.0) keeps ``[max_num_seqs]`` CPU/GPU buffers it fills
per request of the runner's persistent batch, e.g. ``prepare_next_token_ids_padded``
(``extract_hidden_states.py:330-336``, ``llm_base_proposer.py:1062-1068``)::

    num_reqs = gpu_input_batch.num_reqs
    for i in range(num_reqs):
        self.backup_next_token_ids.np[i] = ...
    self.backup_next_token_ids.copy_to_gpu(num_reqs)
    backup_tokens_gpu = self.backup_next_token_ids.gpu[:num_reqs]

:func:`derive_drafter_rows` gives such a buffer its row demand when every recorded access is
bounded by a **batch count** (read, AST):

- a slice ``[:n]`` (``.np``/``.gpu``/``.cpu``, ``copy_to_gpu(n)``) whose stop ``n`` is, in its
  function, assigned only ``<p>.num_reqs`` with ``p`` a parameter annotated ``InputBatch`` that
  the file imports from ``vllm.v1.worker.gpu_input_batch`` (``InputBatch.num_reqs`` is
  ``len(self.req_id_to_index)``, checked in that file): the persistent batch's unpadded count,
  bounded by the checked fact :func:`.demand.unpadded_requests_bound`;
- an index ``[i]`` inside the body of ``for i in range(n)``, ``n`` a batch count, ``i`` bound by
  nothing else in the function;
- a whole-buffer operation (at most the allocation).

The extent is the unpadded request rows (``select(num_reqs <= max_num_reqs, num_reqs, 0)``: past
``max_num_reqs`` the scheduler's assert has stopped the engine), family ``request rows``, so
``spec/vllm_0_33_derived.py`` compares it with the capacity. Uses that leave the access reader's
sight (a local bound to ``.gpu``, a return, uses in other files) are judged afterwards by
:func:`.foreign_uses.check_foreign_uses`, which marks the demand ``unchecked_uses`` when one is not
checked. Errors: none raised; an entry whose accesses are not all of these forms gets no demand
(its reason in ``reasons``).
"""

from __future__ import annotations

import ast
import os

from ..tracing.accesses import compact_source as _src
from .batch_reads import batch_count, loop_index_bounded

__all__ = ["DRAFTER_FILES", "derive_drafter_rows", "batch_count", "loop_index_bounded"]

#: The drafter files whose ``[max_num_reqs]`` buffers are read here.
DRAFTER_FILES = (
    "vllm/v1/spec_decode/extract_hidden_states.py",
    "vllm/v1/spec_decode/llm_base_proposer.py",
)
INPUT_BATCH = "vllm/v1/worker/gpu_input_batch.py"
_SLICES = ("slice", "slice.np", "slice.cpu", "slice.gpu", "copy_to_gpu (slice)")
_WHOLE = ("copy_to_gpu", "fill_", "fill_.gpu", "fill_.cpu", "zero_", "copy_", "copy_.gpu", "copy_.cpu")


def _enclosing(tree, line: int):
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= line <= (fn.end_lineno or 0):
            if best is None or fn.lineno >= best.lineno:
                best = fn
    return best


def _num_reqs_is_batch_length(root: str) -> bool:
    """``InputBatch.num_reqs`` returns ``len(self.req_id_to_index)`` (``gpu_input_batch.py``)."""
    with open(os.path.join(root, INPUT_BATCH), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "InputBatch"), None)
    prop = next((f for f in (cls.body if cls else []) if isinstance(f, ast.FunctionDef) and f.name == "num_reqs"), None)
    return prop is not None and all(
        _src(r.value) == "len(self.req_id_to_index)" for r in ast.walk(prop) if isinstance(r, ast.Return)
    )


def derive_drafter_rows(entries: list, root: str, reasons: dict | None = None) -> list[str]:
    """Set the dimension-0 ``demands`` of every one-dimensional ``[max_num_reqs]`` buffer of
    :data:`DRAFTER_FILES` whose recorded accesses are all bounded by the persistent batch's count
    (module docstring). Returns the ids derived; ``reasons`` gets one line per entry refused."""
    from .demand import unpadded_requests_bound

    if not _num_reqs_is_batch_length(root):
        return []
    fact = None
    trees: dict = {}
    done = []
    for e in entries:
        if e.file not in DRAFTER_FILES or list(e.shape) != ["max_num_reqs"] or e.demands:
            continue
        if e.file not in trees:
            with open(os.path.join(root, e.file), encoding="utf-8") as fh:
                trees[e.file] = ast.parse(fh.read())
        tree = trees[e.file]
        sites, refused = [], None
        acc = [a for a in (e.accesses or []) if isinstance(a, dict)]
        for a in acc:
            op, ext, line = a.get("op", ""), str(a.get("extent", "")), int(a.get("line") or 0)
            op = op.rsplit(" ", 1)[0] if op.endswith((" read", " write")) else op
            fn = _enclosing(tree, line)
            if ext == "whole" and (op in _WHOLE or op in _SLICES):
                sites.append(f"{e.file}:{line} {op} (whole: at most the allocation)")
                continue
            if fn is None or a.get("dim") != 0 or a.get("how") != "ast":
                refused = f"{line} {op} {ext!r}"
                break
            if op in _SLICES:
                try:
                    stop = ast.parse(ext.rsplit(":", 1)[-1], mode="eval").body
                except SyntaxError:
                    refused = f"{line} {op} {ext!r}"
                    break
                why = batch_count(tree, fn, stop)
            elif op in ("index", "index.np", "index.cpu", "index.gpu"):
                why = loop_index_bounded(tree, fn, ext, line) if ext.isidentifier() else None
            else:
                why = None
            if why is None:
                refused = f"{line} {op} {ext!r}"
                break
            sites.append(f"{e.file}:{line} {op} [{ext}] in {fn.name}: {why}")
        if refused or not sites:
            if reasons is not None:
                reasons[e.id] = refused or "no access recorded"
            continue
        if fact is None:
            fact = unpadded_requests_bound(root)
        e.demands = [
            {
                "dim": 0,
                "how": "ast",
                "family": "request rows",
                "extent": "select(num_reqs <= max_num_reqs, num_reqs, 0)" if fact["checked"] else "num_reqs",
                "from": [
                    f"{INPUT_BATCH} InputBatch.num_reqs = len(self.req_id_to_index) (ast): the persistent batch's count",
                    *sites,
                ],
                "notes": [],
                "facts": [fact],
            }
        ]
        done.append(e.id)
    return done
