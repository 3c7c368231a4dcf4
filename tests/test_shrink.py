"""Shrinking the first counterexample on ints (capproof.shrink) and the seeded minimisation it
feeds (capproof.minimize.minimize_point): every point the shrinker keeps replays as a counterexample, no
coordinate rises, and the minimised counterexample is the one the unseeded minimisation finds (on
real corpus cases the seed is certified least by one unsat query); a seed some point lies below
is not certified; when the minimisation's queries run out of rlimit the point reported is the
seed, replayed and labelled not minimised, not certified minimal, and never called smallest."""

from __future__ import annotations

import pytest

from capproof import Options, Verdict, minimize, prover
from capproof.encode import checked_domains
from capproof.loader import load_file
from capproof.prover import _padding_check, prove_obligation, replay
from capproof.shrink import shrink

HEADER = """
from capproof import Range, Choice, obligation, at_most, claim
from capproof.arith import total, all_of, maximum
from capproof.domain import Vector
"""

# E4's shape (vllm#47238, spec/per_batch_buffers.py), at 16 requests: draft step j reads row j of
# the step-0 rows but needs request j's last-token row (the prefix sum of the query lengths).
READER = (
    HEADER
    + """
from capproof.arith import select

def last_token_row(lens, j):
    return total(select(i <= j, q, 0) for i, q in enumerate(lens)) - 1

@obligation(domain={"j": Range(0, 15), "k": Range(2, 7), "mnbt": Range(1, 2**16),
                    "num_reqs": Range(1, 16), "lens": Vector(16, Range(1, 8), length="num_reqs")},
            assumptions={"j < num_reqs": lambda j, num_reqs: j < num_reqs,
                         "len <= 1 + k": lambda lens, k: all_of(*(q <= 1 + k for q in lens)),
                         "tokens <= mnbt": lambda lens, mnbt: total(lens) <= mnbt},
            expect="counterexample")
def reader_row(j, k, mnbt, num_reqs, lens):
    needed = last_token_row(lens, j)
    return claim(j == needed, source_row=j, needed_row=needed)
"""
)

# A case split (Choice) whose failing points lie in both cases: the seed lies in one of them.
SPLIT = (
    HEADER
    + """
@obligation(domain={"dcp": Choice(1, 2, 4), "n": Range(1, 1000), "cap": Range(1, 1000)},
            assumptions={"cap <= 900": lambda cap: cap <= 900},
            expect="counterexample")
def split_cases(dcp, n, cap):
    return at_most(demand=n * dcp, capacity=cap + 3)
"""
)


# dcp=1 never fails (n <= cap); dcp=2 fails from n=4, cap=4 on.
SPLIT_NOT_FIRST = (
    HEADER
    + """
@obligation(domain={"dcp": Choice(1, 2, 4), "n": Range(1, 1000), "cap": Range(1, 1000)},
            assumptions={"n <= cap": lambda n, cap: n <= cap},
            expect="counterexample")
def split_not_first(dcp, n, cap):
    return at_most(demand=n * dcp, capacity=cap + 3)
"""
)


def _only(path):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    return items[0]


def _fails(ob):
    def fails(params):
        try:
            holds, values, failed = replay(ob, params)
        except Exception:  # noqa: BLE001
            return False
        return not holds and not failed and _padding_check(ob, params, (holds, values, failed)) is None

    return fails


def _unseeded(monkeypatch):
    monkeypatch.setattr(prover._First, "seed", lambda self: None)


def test_shrink_keeps_a_failing_point_no_coordinate_higher(spec_file):
    ob = _only(spec_file(READER))
    finite, ranges, vectors = checked_domains(ob, {}, 20_000_000)
    corner = {"j": 15, "k": 7, "mnbt": 2**16, "num_reqs": 16, "lens": [8] * 16}
    assert _fails(ob)(corner)
    checked = []

    def fails(params):
        checked.append(params)
        return _fails(ob)(params)

    point, n = shrink(list(ob.params), corner, finite, ranges, vectors, fails)
    assert n == len(checked) > 0
    assert _fails(ob)(point)
    for name in ("j", "k", "mnbt", "num_reqs"):
        assert point[name] <= corner[name]
    assert len(point["lens"]) == point["num_reqs"]
    # every point handed to the check lies in the domain, each batch as long as its length
    for p in checked:
        assert all(ranges[name].contains(p[name]) for name in ranges)
        assert len(p["lens"]) == p["num_reqs"] and all(1 <= q <= 8 for q in p["lens"])
    # here it reaches the least counterexample (the one Z3's minimisation proves least)
    assert point == {"j": 0, "k": 2, "mnbt": 2, "num_reqs": 1, "lens": [2]}


def test_shrink_stops_at_its_budget_with_a_failing_point(spec_file):
    ob = _only(spec_file(READER))
    finite, ranges, vectors = checked_domains(ob, {}, 20_000_000)
    corner = {"j": 15, "k": 7, "mnbt": 2**16, "num_reqs": 16, "lens": [8] * 16}
    point, n = shrink(list(ob.params), corner, finite, ranges, vectors, _fails(ob), evaluations=3)
    assert n == 3 and _fails(ob)(point)
    assert point != {"j": 0, "k": 2, "mnbt": 2, "num_reqs": 1, "lens": [2]}  # stopped on the way


@pytest.mark.parametrize("source", [READER, SPLIT], ids=["batch", "case-split"])
def test_seeded_minimisation_finds_the_unseeded_least_counterexample(spec_file, monkeypatch, source):
    ob = _only(spec_file(source))
    seeded = prove_obligation(ob)
    assert seeded.verdict is Verdict.COUNTEREXAMPLE and seeded.counterexample.minimized
    with monkeypatch.context() as m:
        _unseeded(m)
        plain = prove_obligation(ob)
    assert plain.counterexample.params == seeded.counterexample.params
    assert plain.counterexample.values == seeded.counterexample.values
    assert plain.message == seeded.message


def test_a_seed_from_another_case_is_not_used_there(spec_file, monkeypatch):
    """A seed is checked against the case's own solver before any query is skipped: a point that
    fails only at dcp=4, handed to the dcp=2 case, is dropped there, and the least point is the
    unseeded one (minimised)."""
    ob = _only(spec_file(SPLIT_NOT_FIRST))
    foreign = {"dcp": 4, "n": 2, "cap": 2}  # 8 > 5 at dcp=4; at dcp=2, 4 <= 5 holds
    assert _fails(ob)(foreign) and not _fails(ob)({**foreign, "dcp": 2})
    monkeypatch.setattr(prover._First, "seed", lambda self: (dict(foreign), {}))
    seeded = prove_obligation(ob)
    _unseeded(monkeypatch)
    plain = prove_obligation(ob)
    assert seeded.counterexample.params == plain.counterexample.params == {"dcp": 2, "n": 4, "cap": 4}
    assert seeded.counterexample.minimized and plain.counterexample.minimized


def test_an_exhausted_minimisation_reports_the_seed_replayed_not_minimised(spec_file, monkeypatch):
    """Every minimisation query gets rlimit 1: each search is unknown at once, and the point shown
    is the shrunk seed (the least here), replayed on ints and labelled not minimised."""
    ob = _only(spec_file(READER))
    monkeypatch.setattr(prover, "SEEDED_MINIMISATION_SHARE", 10**9)
    result = prove_obligation(ob)
    assert result.verdict is Verdict.COUNTEREXAMPLE
    cx = result.counterexample
    assert not cx.minimized and "not minimised" in result.message
    holds, values, failed = replay(ob, {"j": 0, "k": 2, "mnbt": 2, "num_reqs": 1, "lens": [2]})
    assert not holds and not failed
    shown = {k: v for k, v in cx.params.items()}
    assert shown["j"] == 0 and shown["k"] == 2 and shown["mnbt"] == 2 and shown["num_reqs"] == 1
    # unseeded, the same budget-free run minimises fully: the seed only bounds the queries
    _unseeded(monkeypatch)
    assert prove_obligation(ob).counterexample.minimized


def test_the_seed_skips_the_queries_it_answers(spec_file, monkeypatch):
    """j and k sit at their lower bounds in the seed: fixed with no query; the other searches start
    from the seed's values. Fewer minimisation searches, the same least point."""
    ob = _only(spec_file(READER))
    calls = []
    real = minimize.minimize_term

    def counted(s, model, term, lo, best=None):
        calls.append(str(term))
        return real(s, model, term, lo, best)

    monkeypatch.setattr(minimize, "minimize_term", counted)
    seeded = prove_obligation(ob)
    seeded_calls = list(calls)
    calls.clear()
    _unseeded(monkeypatch)
    plain = prove_obligation(ob)
    assert seeded.counterexample.params == plain.counterexample.params
    assert "j" in calls and "k" in calls and "j" not in seeded_calls and "k" not in seeded_calls
    assert len(seeded_calls) < len(calls)


def test_an_unknown_verdict_reports_the_probe_point_shrunk_on_ints(spec_file):
    """rlimit 1: the solver is unknown, the probe's corner (16 requests of 8 tokens) is a
    counterexample; the one reported is that point shrunk on ints (1 request), replayed, labelled
    not minimised. With minimisation off it is the probe's point as found."""
    ob = _only(spec_file(READER))
    r = prove_obligation(ob, Options(rlimit=1, density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and not r.counterexample.minimized, r.message
    first, cx = r.first_counterexample.params, r.counterexample
    assert "shrunk on ints" in r.message and "not minimised" in r.message
    assert cx.params == {"j": 0, "k": 2, "mnbt": 2, "num_reqs": 1, "lens": [2]} != first
    holds, values, failed = replay(ob, cx.params)
    assert not holds and not failed and values == cx.values
    off = prove_obligation(ob, Options(rlimit=1, density="off", minimize=False))
    assert off.counterexample.params == first and "shrunk" not in off.message


# Least points as proofs/ shows them (per_batch_buffers.md, vllm_dsa_indexer.md, moe_align.md).
CORPUS_LEAST = {
    "spec/per_batch_buffers.py::gdn_state_column_in_row": {"num_speculative_tokens": 1, "num_accepted_tokens": 0},
    "spec/per_batch_buffers.py::trtllm_bitmask_rows_equal_logits_rows_before_15023": {
        "num_generation_requests": 1,
        "max_draft_len": 1,
        "runtime_draft_len": 0,
    },
    "spec/per_batch_buffers.py::mtp_reader_row_is_last_token_before_47238": {
        "j": 0,
        "num_speculative_tokens": 2,
        "max_num_batched_tokens": 2,
        "num_reqs": 1,
        "query_lens": [2],
    },
    "spec/vllm_dsa_indexer.py::ebt_width_matches_runner_for_every_batch_before_50302": {
        "max_model_len": 1,
        "dcp": 1,
        "num_speculative_tokens": 0,
        "num_decodes": 1,
        "min_decode_len": 1,
        "max_decode_len": 1,
        "num_decode_tokens": 1,
    },
}


def _corpus(oid):
    from capproof.loader import load

    path, name = oid.split("::")
    items, errors = load([path], name)
    assert not errors
    return next(ob for ob in items if ob.id == oid)


def _certificates(monkeypatch):
    """The answers of minimize_point's certification queries, one per call that had a seed."""
    answers = []
    real = prover.minimize_point

    def recorded(*args, **kw):
        out = real(*args, **kw)
        answers.append(minimize.LAST_CERTIFICATE[0])
        return out

    monkeypatch.setattr(prover, "minimize_point", recorded)
    return answers


@pytest.mark.parametrize("oid", sorted(CORPUS_LEAST), ids=lambda oid: oid.split("::")[1])
def test_certified_seed_is_the_least_point_the_search_finds_on_corpus_cases(monkeypatch, oid):
    """On real corpus counterexamples the int-shrunk seed is certified least by one unsat query
    (no binary search), and it is the point the unseeded minimisation finds and proofs/ shows."""
    ob = _corpus(oid)
    opts = Options(density="off", contracts=False)
    answers = _certificates(monkeypatch)
    certified = prove_obligation(ob, opts)
    assert "unsat" in answers
    _unseeded(monkeypatch)
    searched = prove_obligation(ob, opts)
    assert certified.counterexample.minimized and searched.counterexample.minimized
    assert certified.counterexample.params == searched.counterexample.params == CORPUS_LEAST[oid]
    assert certified.counterexample.values == searched.counterexample.values
    assert certified.message == searched.message
    # the least point was in hand when the shrink ended, before any Z3 work
    assert certified.smallest_seconds is not None and certified.smallest_seconds < certified.seconds


def test_a_seed_below_which_a_point_fails_is_not_certified(spec_file, monkeypatch):
    """A seed that fails but is not the least: the certification query is sat, the searches run,
    and the point reported is the least one (the seed is never called the smallest); the time
    to it is the whole run, not the shrink's."""
    ob = _only(spec_file(SPLIT))
    seed = {"dcp": 1, "n": 950, "cap": 900}  # 950 > 903: fails, far above the least point (1, 5, 1)
    assert _fails(ob)(seed)
    monkeypatch.setattr(prover._First, "seed", lambda self: (dict(seed), {}))
    answers = _certificates(monkeypatch)
    seeded = prove_obligation(ob)
    assert answers[0] == "sat"
    cx = seeded.counterexample
    assert cx.minimized and cx.params == {"dcp": 1, "n": 5, "cap": 1} != seed
    assert seeded.smallest_seconds is not None  # the whole run: the seed was not the point certified
    monkeypatch.setattr(prover._First, "seed", lambda self: None)
    assert cx.params == prove_obligation(ob).counterexample.params


def test_an_uncertified_seed_is_not_called_smallest(spec_file, monkeypatch):
    """Every query out of rlimit: the certification is unknown and so is every search. The point
    shown is the int-shrunk seed (a counterexample, replayed), labelled not certified minimal in
    the message and in the report, with no time to a least point."""
    from capproof.report import _obligation_md

    ob = _only(spec_file(READER))
    monkeypatch.setattr(prover, "SEEDED_MINIMISATION_SHARE", 10**9)
    answers = _certificates(monkeypatch)
    result = prove_obligation(ob)
    assert "unknown" in answers and "unsat" not in answers
    cx = result.counterexample
    assert result.verdict is Verdict.COUNTEREXAMPLE and not cx.minimized
    assert "not certified minimal" in result.message and result.smallest_seconds is None
    holds, values, failed = replay(ob, cx.params)
    assert not holds and not failed and values == cx.values
    page = "\n".join(_obligation_md(result.to_json()))
    assert "smallest" not in page.split("Counterexample")[1].splitlines()[0]
    assert "not certified minimal" in page
