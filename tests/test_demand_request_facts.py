"""The request-count facts of vLLM 0.33.0 (capproof/engines/vllm/fact_requests.py, facts.py).

Fast tier: the source readers on small trees written here (the shapes of vLLM's own lines), and the
provider registry's one-line failure. Real tier (``@pytest.mark.real``): vLLM's dispatcher, micro-batch
slicer, chunked-local and PCP code run on the CPU, and the committed facts file equals what the
engine's code gives now."""

from __future__ import annotations

import json
import os

import pytest

from capproof import facts as F
from capproof.engines.vllm import fact_requests as R
from capproof.engines.vllm.facts import engine_facts

ROOT = os.path.dirname(os.path.dirname(__file__))
FACTS = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.facts.json")

_DISPATCHER = """\
class CudagraphDispatcher:
    def _create_padded_batch_descriptor(self, num_tokens):
        num_reqs = min(num_tokens, self.max_num_seqs)
        return BatchDescriptor(num_tokens=num_tokens, num_reqs=num_reqs)

    def dispatch(self, num_tokens):
        return BatchDescriptor(num_tokens)
"""

_ELSEWHERE = """\
def f(batch_desc, n):
    a = replace(batch_desc, num_reqs=None)
    b = replace(batch_desc, num_reqs=n)
    c = replace(config, num_reqs=n)
    return BatchDescriptor(num_tokens=4, num_reqs=n)
"""


def _tree(tmp_path, files: dict):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp_path)


def test_descriptor_sites_accept_only_the_dispatchers_count_or_none(tmp_path):
    root = _tree(tmp_path, {R.DISPATCHER: _DISPATCHER, "vllm/other.py": _ELSEWHERE})
    paths = {p["site"]: p for p in R._descriptor_sites(root)}
    assert paths[f"{R.DISPATCHER}:4"]["result"] == "checked"  # the padded descriptor's own count
    assert paths[f"{R.DISPATCHER}:7"]["result"] == "checked"  # num_reqs absent: None
    assert paths["vllm/other.py:2"]["result"] == "checked"  # replace(..., num_reqs=None)
    assert paths["vllm/other.py:3"]["result"] == "not checked"  # a count set elsewhere
    assert "vllm/other.py:4" not in paths  # replace of something that is not a descriptor
    assert paths["vllm/other.py:5"]["result"] == "not checked"


def test_metadata_copy_follows_a_local_name_but_not_a_parameter():
    import ast

    tree = ast.parse(
        "def f(common_attn_metadata, k):\n"
        "    num_reqs = common_attn_metadata.num_reqs\n"
        "    CommonAttentionMetadata(num_reqs=num_reqs)\n"
        "    CommonAttentionMetadata(num_reqs=k)\n"
    )
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "CommonAttentionMetadata"]
    calls.sort(key=lambda c: c.lineno)
    assert R._metadata_copy(tree, calls[0], calls[0].keywords[0].value)
    assert not R._metadata_copy(tree, calls[1], calls[1].keywords[0].value)


def test_a_failing_provider_is_one_line_and_no_fact():
    facts, problems = engine_facts("/nonexistent", ("capproof.engines.vllm.fact_requests:no_such_function",))
    assert facts == [] and len(problems) == 1 and "not checked: AttributeError" in problems[0]


def test_committed_facts_name_the_family_assumption_and_their_status():
    """The committed file (written by `capproof inventory --write`): the V1 step count is checked on
    every path; the attention-metadata count is refuted on the chunked-local path (finding 9) for the
    builders it reaches and on the V2 runner's PCP path for the MLA builders, and the
    V2 count on the PCP path (finding 10); the drafters' count is assumed (sizes read off tensors
    are not followed); each names the spec/ family's assumption."""
    if not os.path.exists(FACTS):
        pytest.skip("no committed facts file")
    from spec._families import PADDED_REQS_FIT

    (label,) = PADDED_REQS_FIT
    # the file holds every provider's facts (the token facts too); the request-count ones name the label
    named = [f for f in F.read(FACTS) if label in f["assumptions"]]
    facts = {f["fact"].split(" ")[0] + " " + f["fact"].split(" ")[1]: f for f in named}
    assert all(f["assumptions"] == [label] for f in named)
    assert set(facts) == {"V1 step", "attention-metadata request", "V1 drafting", "V2 request"}, sorted(facts)
    v1 = facts["V1 step"]
    assert F.status(v1) == "checked" and {p["how"] for p in v1["paths"]} == {"executed", "ast"}
    # split by what the chunked-local wrapper reaches (tests/test_vllm_fact_attention.py): none checked
    attention = [f for f in named if f["fact"].startswith("attention-metadata")]
    assert len(attention) == 3 and "checked" not in {F.status(f) for f in attention}
    drafting = facts["V1 drafting"]
    assert F.status(drafting) == "assumed" and all(p["how"] == "ast" for p in F.unchecked_paths(drafting))
    # split per inventory entry by what the PCP local batch can meet (capproof/engines/vllm/fact_v2_reach.py):
    # disjoint scopes; every group the PCP local batch meets is refuted by it (finding 10), each entry
    # with the reason; the sampler shard's count is a subset of its input batch's (fact_v2_shard.py),
    # checked, the dummy batch the dummy sampler run sizes (model_runner.py:996) included: no state
    # is pending when a profile run starts (fact_v2_profile_state.py)
    v2 = [f for f in named if f["fact"].startswith("V2 request count")]
    scopes = [set(f["scope"]) for f in v2]
    assert sum(len(s) for s in scopes) == len(set().union(*scopes))
    pcp = [f for f in v2 if any(p["result"] == "counterexample" for p in f["paths"])]
    assert pcp and all(F.status(f) == "refuted" for f in pcp)
    site = "vllm/v1/worker/gpu/pcp_manager.py:688"
    for f in pcp:
        assert f["reach_entries"] and all(why[site].startswith("meets: ") for why in f["reach_entries"].values())
    assert any(F.status(f) == "checked" for f in v2)
    dummy = "vllm/v1/worker/gpu/model_runner.py:996"
    shard = [p for f in v2 for p in f["paths"] if p["site"].startswith("vllm/v1/worker/gpu/sample/batch_shard.py")]
    assert shard and all(p["result"] == "checked" and "a subset" in p["why"] for p in shard)
    dummies = [p for f in v2 for p in f["paths"] if p["site"] == dummy]
    assert dummies and {p["result"] for p in dummies} == {"checked"}
    for f in pcp:
        assert [c["values"] for c in f["counterexamples"]] == [{"max_num_reqs": 1, "num_reqs": 2}]
    ubatch = [p for f in v2 for p in f["paths"] if p["site"].startswith("vllm/v1/worker/gpu/ubatch_utils.py")]
    assert ubatch and {p["result"] for p in ubatch} == {"checked"}
    assert ("executed", "checked") in {(p["how"], p["result"]) for p in ubatch}


# ------------------------------------------------------------------------------------------------
# real tier


@pytest.fixture(scope="module")
def vllm_code():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need


@pytest.mark.real
def test_vllms_dispatcher_never_pads_past_max_num_seqs(vllm_code):
    small = {**R.DISPATCH_DOMAIN, "max_num_seqs": (1, 3), "num_speculative_tokens": (0, 2)}
    runs, bad = R.dispatcher_sweep(small)
    assert runs == 2 * 2 * len(small["capture_sizes"]) * 2 * 4 and bad == []


@pytest.mark.real
def test_micro_batches_stay_within_the_padded_count_where_the_engine_micro_batches(vllm_code):
    runs, bad = R.ubatch_sweep(max_reqs=3, max_tokens_per_req=2)
    assert runs > 0 and bad == []


@pytest.mark.real
def test_chunked_local_and_pcp_counts_exceed_max_num_reqs_through_vllms_code(vllm_code):
    local = R.local_attention_counterexample()
    assert local["values"] == {"max_num_reqs": 1, "num_reqs": 2} and local["reproduced"]
    pcp = R.pcp_local_requests()
    assert pcp["values"] == {"max_num_reqs": 1, "num_reqs": 2}


@pytest.mark.real
def test_committed_facts_are_what_the_engine_gives_now(vllm_code):
    from capproof.engines.vllm.wheels import _src

    with open(FACTS, encoding="utf-8") as fh:
        committed = json.load(fh)["facts"]
    by_name = {f["fact"]: f for f in committed}
    with open(FACTS.replace(".facts.json", ".json"), encoding="utf-8") as fh:
        entries = [{k: e[k] for k in ("id", "file", "owner", "attribute", "shape")} for e in json.load(fh)["entries"]]
    for fresh in R.request_facts(_src(), entries):
        assert by_name.get(fresh["fact"]) == fresh, fresh["fact"]


_WARMUP = """\
def warm(model_runner):
    num_reqs = min(model_runner.scheduler_config.max_num_seqs, 100)
    num_reqs = min(num_reqs, 7)
    req_ids = [str(i) for i in range(num_reqs)]

    def step(indices):
        out = SchedulerOutput()
        counts: dict[str, int] = {}
        for i in indices:
            counts[req_ids[i]] = 1
        out.num_scheduled_tokens = counts
{extra}
"""


def test_a_dict_keyed_by_a_bounded_lists_elements_is_bounded(tmp_path):
    rel = "vllm/v1/worker/gpu/warmup.py"
    root = _tree(tmp_path, {rel: _WARMUP.replace("{extra}", "")})
    assert "keys are elements of req_ids" in R.dict_of_list_keys(root, rel, 11)
    # another way in (update), a key not from the list, or an unbounded list: not checked
    for extra in ("        counts.update(other)", "        counts['x'] = 2"):
        root = _tree(tmp_path, {rel: _WARMUP.replace("{extra}", extra)})
        assert R.dict_of_list_keys(root, rel, 11) is None, extra
    root = _tree(tmp_path, {rel: _WARMUP.replace("{extra}", "").replace("max_num_seqs, 100", "max_model_len, 100")})
    assert R.dict_of_list_keys(root, rel, 11) is None
