"""V2 runner, the standalone draft model: the profile run's dummy batch and its token count (vLLM 0.33.0).

docs/findings.md, finding 12. ``profile_run`` (``vllm/v1/worker/gpu/model_runner.py:1022-1039``)
runs ``_dummy_run(max_num_batched_tokens, skip_attn=True, is_profile=True)``: no uniform decode, so
with a speculator ``_dummy_run`` takes ``num_reqs = min(num_tokens, max_num_reqs, max_num_tokens //
num_query_per_req)`` requests and ``min(num_tokens, max_num_tokens - num_reqs *
num_extra_query_per_req)`` tokens (``:862-879``, ``models/vllm/dummy_run.py``). The standalone
draft-model speculator (``StandaloneARSpeculator``, method ``draft_model``) has one query row and
one extra row per request (``spec_decode/standalone_ar/speculator.py:38``), so the dummy batch has
``max_num_batched_tokens - max_num_seqs`` tokens: **none** when the two budgets are equal.
``execute_model`` then returns at ``if batch_desc.num_tokens == 0`` (``:1850-1853``) before it
stores ``execute_model_state``, and ``_dummy_run`` fails ``assert self.execute_model_state is not
None`` (``:936``): the engine stops at startup (``Worker.determine_available_memory`` runs the
profile run in both arms, ``gpu_worker.py:656-700``).

The claim: the dispatch needs at least one token from a dummy run of the standalone draft model on
the V2 runner (``method`` 2 in the drafting-slot families' numbering, ``v2_runner`` 1); other
methods and the V1 runner need none here. The other V2 speculators' counts never reach 0 (their
``num_extra_query_per_req`` is 0, or their request cap leaves a token per request); that is checked
on the engine's own code by ``capproof/engines/vllm/fact_v2_dummy_tokens.py``, which also reproduces
the assert on the CPU. The real tier compares this model with vLLM's own statements.

Applies (check-config) to a line with a speculative config: ``method`` is pinned from it, and
``v2_runner`` from ``VLLM_USE_V2_MODEL_RUNNER`` and the features the V2 runner lacks
(``vllm/config/vllm.py:730-767, 3053-3087``).
"""

from capproof import Choice, Range, all_of, at_most, obligation, select
from models.vllm.dummy_run import speculator_dummy_counts

_V = "vllm==0.33.0 "

#: ``method``: the drafting-slot families' proposer kind (0 EAGLE/EAGLE3/MTP, 1 P-EAGLE, 2 draft
#: model, 3 PARD; spec/vllm_0_33_buffers.py); ``v2_runner``: 1 when vLLM runs the line on the V2
#: model runner.
DOMAIN = {
    "max_num_seqs": Range(1, 2**20),
    "max_num_batched_tokens": Range(1, 2**20),
    "method": Choice(0, 1, 2, 3),
    "v2_runner": Choice(0, 1),
}

FACTS = {
    "max_num_batched_tokens >= max_num_seqs (vllm/config/scheduler.py:331)": lambda max_num_batched_tokens, max_num_seqs: (
        max_num_batched_tokens >= max_num_seqs
    ),
    "max_num_batched_tokens > num_lookahead_tokens >= 1 (vllm/config/vllm.py:2371)": lambda max_num_batched_tokens: (
        max_num_batched_tokens >= 2
    ),
}


@obligation(
    domain=DOMAIN,
    assumptions=FACTS,
    expect="counterexample",
    engine="vllm",
    versions="==0.33.0",
    requires=("drafting_slots",),
    tags=("finding", "startup"),
    sources=[
        _V + "vllm/v1/worker/gpu/model_runner.py:1022-1039 (profile_run: _dummy_run(max_num_tokens, is_profile=True))",
        _V + "vllm/v1/worker/gpu/model_runner.py:862-879 (the dummy run's request and token counts)",
        _V + "vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py:38 (num_extra_query_per_req = 1)",
        _V + "vllm/v1/worker/gpu/model_runner.py:1850-1853 (zero tokens: return before execute_model_state)",
        _V + "vllm/v1/worker/gpu/model_runner.py:936 (assert self.execute_model_state is not None)",
        "docs/findings.md (finding 12)",
    ],
)
def v2_profile_run_dummy_batch_has_a_token(max_num_seqs, max_num_batched_tokens, method, v2_runner):
    """The V2 profile run's dummy batch has a token whenever the dispatch needs one (tokens: the
    standalone draft model's dummy batch, ``max_num_batched_tokens - max_num_seqs``)."""
    _, tokens = speculator_dummy_counts(max_num_batched_tokens, max_num_seqs, max_num_batched_tokens, 1, 1)
    standalone_on_v2 = all_of(method == 2, v2_runner == 1)
    return at_most(tokens_the_dispatch_needs=select(standalone_on_v2, 1, 0), dummy_tokens=tokens)
