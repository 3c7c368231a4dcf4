"""Token rows of vLLM 0.33.0's runner buffers against the step's token count, derived from vLLM's code.

Each obligation compares the capacity the inventory traced (``max_num_batched_tokens`` rows) with
the demand ``capproof inventory`` derived (``capproof/engines/vllm/demand_requests.py``): the
largest token count of a step on any path, i.e. the scheduler's ``total_num_scheduled_tokens``
(its input budget, read in ``Scheduler.schedule``), the padded count
``_determine_batch_execution_and_padding`` returns (run on every path: CUDA-graph padding, DP
padding) and the dummy run's asserted counts. A buffer gets a demand only when every access the
inventory recorded is a slice whose stop is one of these counts (or touches the whole buffer).
The facts the demand rests on are the derivation's records: a checked fact bounds its quantity in
the extent; a fact not checked becomes a named assumption here, listed as **assumed** in
proofs/coverage.md. No formula is written here.
"""

from capproof import Range, at_most, obligation
from capproof.inventory import capacity, demand, derived, expression_names, load

INV = "proofs/inventory/vllm-0.33.0.json"
_ENTRIES = load(INV)

TOKEN_DOMAIN = {
    "max_num_batched_tokens": Range(1, 2**17),
    "num_tokens": Range(1, 2**17),
    "num_tokens_other_rank": Range(1, 2**17),
    "capture_size": Range(1, 2**17),
    "capture_size_other_rank": Range(1, 2**17),
    "capture_size_dp": Range(1, 2**17),
    "max_cudagraph_capture_size": Range(1, 2**17),
    "num_tokens_dummy": Range(1, 2**17),
}


def _chain(text: str):
    """An assumption ``a <= b [<= c]`` over the names of a fact's text (before its `` (``)."""
    import inspect

    names = [n.strip() for n in text.split(" (")[0].split(" <= ")]

    def fact(**kw):
        from capproof import all_of

        return all_of(*(kw[a] <= kw[b] for a, b in zip(names, names[1:])))

    fact.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in dict.fromkeys(names)]
    )
    return fact


def _facts(entry_id: str) -> dict:
    return {
        f"assumed: {f['fact']}": _chain(f["fact"])
        for f in derived(_ENTRIES, entry_id, 0).get("facts", [])
        if not f.get("checked")
    }


def _token_rows(entry_id: str):
    attribute = entry_id.split("::", 1)[1]
    names = sorted(set(expression_names(derived(_ENTRIES, entry_id, 0)["extent"])) | {"max_num_batched_tokens"})
    domain = {n: TOKEN_DOMAIN[n] for n in names}

    def claim(**kw):
        return at_most(
            tokens=demand(_ENTRIES, entry_id, 0, **kw),
            max_num_batched_tokens=capacity(_ENTRIES, entry_id, 0, max_num_batched_tokens=kw["max_num_batched_tokens"]),
        )

    import inspect

    claim.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    claim.__name__ = "token_rows_fit__" + attribute.replace(".", "_")
    claim.__doc__ = (
        f"The rows every recorded access of `{attribute}` slices (a step's token count: scheduled, "
        "padded for CUDA graphs and DP, or a dummy run's; derived) fit its `max_num_batched_tokens` rows."
    )
    return obligation(
        domain=domain,
        assumptions=_facts(entry_id),
        expect="proved",
        sources=[
            f"inventory: {INV}::{entry_id}",
            f"demand: {INV}::{entry_id}[0]",
            *derived(_ENTRIES, entry_id, 0)["from"],
        ],
        covers=[entry_id],
        engine="vllm",
        versions="==0.33.0",
        tags=("inventory", "derived"),
    )(claim)


TOKEN_ROWS = [
    _token_rows(e.id)
    for e in _ENTRIES
    if any(isinstance(d, dict) and d.get("family") == "token rows" for d in e.demands)
]
