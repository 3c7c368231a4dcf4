"""The int probe (capproof.probe): the first counterexample on ints at the domain's structured
points, before any Z3 work. It is sound (a reported point lies in the domain, satisfies every
assumption on ints and violates the claim), it never decides a verdict (the minimised
counterexample still comes from Z3, and is the same with the probe off), and a bug away from
the corners still gets its counterexample from the solver."""

from __future__ import annotations

import pytest

from capproof import Options, Verdict
from capproof.encode import checked_domains
from capproof.loader import load_file
from capproof.probe import probe
from capproof.prover import prove_obligation, replay

HEADER = """
from capproof import Range, Choice, obligation, at_most, claim
from capproof.arith import total, all_of, maximum
from capproof.domain import Vector
"""

# The C2 shape (vllm-ascend#16316, spec/specdec_graphs.py), small: an arange of
# max(max_num_seqs + 1, mnbt) entries must cover total(decode_lens) + 1; short exactly when a
# saturated batch fills the token budget (mnbt > max_num_seqs).
SATURATED = (
    HEADER
    + """
@obligation(domain={"max_num_seqs": Range(1, 16), "mnbt": Range(1, 4096), "k": Range(1, 7),
                    "num_reqs": Range(1, 16), "lens": Vector(16, Range(1, 8), length="num_reqs")},
            assumptions={"num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
                         "decode length <= 1 + k": lambda lens, k: all_of(*(d <= 1 + k for d in lens)),
                         "tokens <= mnbt": lambda lens, mnbt: total(lens) <= mnbt},
            expect="counterexample")
def arange_covers_tokens(max_num_seqs, mnbt, k, num_reqs, lens):
    return at_most(demand=total(lens) + 1, capacity=maximum(max_num_seqs + 1, mnbt))
"""
)


def _only(path):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    return items[0]


def _probe(ob, **pins):
    return probe(ob, *checked_domains(ob, pins, 20_000_000), max_points=10_000, max_seconds=5.0)


def _same_result(a, b) -> dict:
    """The two results' JSON without timings and the first counterexample (what the probe adds)."""
    drop = ("seconds", "first_counterexample")
    x = {k: v for k, v in a.to_json().items() if k not in drop}
    y = {k: v for k, v in b.to_json().items() if k not in drop}
    return {k: (x[k], y.get(k)) for k in x if x[k] != y.get(k)}


def test_saturated_batch_bug_found_by_the_probe_is_the_bug_the_solver_minimises(spec_file):
    ob = _only(spec_file(SATURATED))
    hit = _probe(ob)
    assert hit is not None
    holds, values, failed = replay(ob, hit.params)  # a replay on ints: every assumption holds, the claim fails
    assert (holds, failed) == (False, []) and values == hit.values
    assert values["demand"] == values["capacity"] + 1  # a saturated batch one entry past the arange

    with_probe = prove_obligation(ob, Options(density="off"))
    without = prove_obligation(ob, Options(density="off", probe=False))
    assert with_probe.verdict is Verdict.COUNTEREXAMPLE
    first = with_probe.first_counterexample
    assert first.source == "int probe" and first.params == hit.params and first.seconds > 0
    assert with_probe.to_json()["first_counterexample"]["source"] == "int probe"
    # the minimised counterexample (and everything else reported) does not depend on the probe
    assert _same_result(with_probe, without) == {}
    cex = with_probe.counterexample
    assert cex.params == {"max_num_seqs": 1, "mnbt": 2, "k": 1, "num_reqs": 1, "lens": [2]}
    assert replay(ob, cex.params)[0] is False
    # the same violation: the minimised point fails the claim the probe's point fails
    assert cex.values["demand"] == cex.values["capacity"] + 1
    # without the probe the first counterexample is the solver's (replayed on ints)
    assert without.first_counterexample.source == "solver"
    assert replay(ob, without.first_counterexample.params)[:3:2] == (False, [])


def test_a_point_violating_an_assumption_is_never_reported(spec_file):
    # every corner but the all-low one violates the claim, and every such corner violates the
    # assumption too: the claim is the assumption, restated; proved
    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"x": Range(0, 1000), "y": Range(0, 1000), "n": Range(1, 8), "v": Vector(8, Range(0, 500), length="n")},
            assumptions={"fits": lambda x, y, v: x + y + total(v) <= 1000})
def fits(x, y, n, v):
    return at_most(demand=x + y + total(v), capacity=1000)
"""
        )
    )
    assert _probe(ob) is None
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.PROVED and r.first_counterexample is None


def test_a_model_raising_on_ints_is_skipped_not_a_counterexample(spec_file):
    # at x = 0 the claim divides by zero; the assumption excludes that point, and evaluate runs
    # the assumptions first: the probe skips it (no crash), proves nothing, and Z3 proves the claim
    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"x": Range(0, 64), "y": Range(0, 64)}, assumptions={"x >= 1": lambda x: x >= 1})
def quotient_bounded(x, y):
    return at_most(demand=y // x, capacity=64)
"""
        )
    )
    assert _probe(ob) is None
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.PROVED and r.first_counterexample is None


def test_a_bug_off_the_corners_still_gets_its_counterexample_from_the_solver(spec_file):
    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"x": Range(0, 1000), "y": Range(0, 1000)}, expect="counterexample")
def one_bad_residue(x, y):
    return claim((7 * x + y) % 1000 != 123, r=(7 * x + y) % 1000)
"""
        )
    )
    assert _probe(ob) is None  # 123 is no corner, no repaired or pushed point
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE
    assert r.counterexample.params == {"x": 0, "y": 123}
    first = r.first_counterexample
    assert first.source == "solver" and first.points > 0  # the probe ran and found nothing
    holds, values, failed = replay(ob, first.params)
    assert (holds, failed) == (False, []) and values == {"r": 123}


def test_pins_bound_the_probe(spec_file):
    # the bug needs b = 1 (a corner); pinned to b = 2 the claim holds everywhere
    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"b": Choice(1, 2, 4), "x": Range(0, 100)})
def needs_b_above_one(b, x):
    return at_most(demand=x, capacity=(b - 1) * 100)
"""
        )
    )
    assert _probe(ob) is not None
    assert _probe(ob, b=2) is None
    r = prove_obligation(ob, Options(density="off", pins={"b": 2}))
    assert r.verdict is Verdict.PROVED and r.first_counterexample is None


def test_a_model_whose_result_depends_on_its_earlier_calls_is_an_error(spec_file):
    # the probe's own calls move the counter: the point it evaluated first gives another result
    # when evaluated again, so no verdict (the solver would now see the moved state) is trusted
    source = (
        HEADER
        + """
_calls = [0]

def width(n):
    _calls[0] += 1
    return n + (1 if _calls[0] > 2 else 0)

@obligation(domain={"n": Range(0, 20)})
def counter_width(n):
    return at_most(demand=width(n), capacity=n)
"""
    )
    ob = _only(spec_file(source, "counter_a.py"))
    stats: dict = {}
    assert probe(ob, *checked_domains(ob, {}, 20_000_000), stats=stats) is None
    assert "at {'n': 0} it gave claim True" in stats["unstable"]
    ob = _only(spec_file(source, "counter_b.py"))  # a fresh counter
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.ERROR and "not a function of its parameters on ints" in r.message


def test_a_probe_counterexample_the_verdict_excludes_is_an_error(spec_file, monkeypatch):
    """Guard of the two semantics: if a point the probe reports (in the domain, assumptions true on
    ints, claim false on ints) met a ``proved`` verdict, the verdict is ``error``, never proved.
    No spec obligation disagrees (the whole suite runs with the probe on), so the probe's answer
    is replaced here by a point of the domain that the claim fails only on ints."""
    import capproof.prover as prover
    from capproof.probe import ProbeHit

    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"x": Range(0, 10)})
def holds(x):
    return at_most(demand=x, capacity=10)
"""
        )
    )
    monkeypatch.setattr(prover, "probe", lambda *a, **k: ProbeHit({"x": 10}, {"demand": 11, "capacity": 10}, 1))
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.ERROR
    assert "the int probe found a counterexample at {'x': 10}" in r.message and "disagree" in r.message


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["spec/vllm_block_table.py", "spec/per_batch_buffers.py"])
def test_real_spec_results_are_the_same_with_and_without_the_probe(spec):
    """Proved obligations unchanged, counterexamples the same minimised point (the whole of
    proofs/ is checked by ``make verify``; two spec files here, fast)."""
    items = load_file(spec)
    obligations = [ob for ob in items if hasattr(ob, "domain")]
    assert obligations
    for ob in obligations:
        a = prove_obligation(ob, Options(density="off", verdict_only=True))
        b = prove_obligation(ob, Options(density="off", verdict_only=True, probe=False))
        assert _same_result(a, b) == {}, ob.id
        if a.verdict is Verdict.PROVED:
            assert a.first_counterexample is None, ob.id
        if a.verdict is Verdict.COUNTEREXAMPLE:
            first = a.first_counterexample
            assert first is not None and replay(ob, first.params)[::2] == (False, []), ob.id


def test_an_unknown_verdict_with_a_probe_counterexample_is_that_counterexample_not_minimised(spec_file):
    """The solver runs out of rlimit (``unknown``) on an obligation whose bug sits at a saturated
    batch: the probe's point, in the domain, every assumption holding and the claim false on ints,
    makes the verdict a counterexample, labelled not minimised; with the probe off it stays
    unknown (unknown is never proved, and never hides a replayed counterexample)."""
    ob = _only(spec_file(SATURATED))
    off = prove_obligation(ob, Options(rlimit=1, probe=False, density="off"))
    assert off.verdict is Verdict.UNKNOWN, off.message
    on = prove_obligation(ob, Options(rlimit=1, density="off"))
    assert on.verdict is Verdict.COUNTEREXAMPLE, on.message
    cex = on.counterexample
    assert cex is not None and cex.minimized is False
    assert "int probe" in on.message and "not minimised" in on.message and "unknown" in on.message
    holds, values, failed = replay(ob, cex.params)
    assert not holds and not failed and values == cex.values
    # the probe's point (here a saturated batch where every single-coordinate move leaves the
    # failing set, so the shrinker keeps it; tests/test_shrink.py has one it shrinks)
    assert cex.params == on.first_counterexample.params and "shrunk" not in on.message


def test_a_replayed_solver_point_before_a_later_unknown_is_that_counterexample(spec_file, monkeypatch):
    """the solver's first model of a failing case, replayed on ints, is recorded
    as the first counterexample; if the run's verdict still ends ``unknown`` (a Choice length decided
    as a Range and then case by case, say), that replayed point is a counterexample like a probe
    point: reported, labelled not minimised. The later unknown is forced here (no spec obligation
    reaches it); the point is the solver's real one (the probe is off)."""
    import capproof.prover as prover

    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"x": Range(0, 1000), "y": Range(0, 1000)}, expect="counterexample")
def one_bad_residue(x, y):
    return claim((7 * x + y) % 1000 != 123, r=(7 * x + y) % 1000)
"""
        )
    )
    real = prover._prove_obligation

    def later_unknown(ob, options, first):
        r = real(ob, options, first)
        r.verdict, r.counterexample, r.message = Verdict.UNKNOWN, None, "1 of 1 cases unknown (forced)"
        return r

    monkeypatch.setattr(prover, "_prove_obligation", later_unknown)
    r = prove_obligation(ob, Options(density="off", probe=False))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.first_counterexample.source == "solver"
    assert "the solver found (replayed)" in r.message and "not minimised" in r.message
    cex = r.counterexample
    assert cex.minimized is False and cex.params == r.first_counterexample.params
    holds, values, failed = replay(ob, cex.params)
    assert not holds and not failed and values == cex.values and values["r"] == 123


def test_a_counterexample_with_minimisation_off_is_labelled_not_minimised(spec_file):
    """``Options(minimize=False)`` (the mutation oracle's setting): the solver's point is reported
    as found, and labelled not minimised with that reason, not as a minimised counterexample."""
    ob = _only(
        spec_file(
            HEADER
            + """
@obligation(domain={"x": Range(0, 1000), "y": Range(0, 1000)}, expect="counterexample")
def one_bad_residue(x, y):
    return claim((7 * x + y) % 1000 != 123, r=(7 * x + y) % 1000)
"""
        )
    )
    off = prove_obligation(ob, Options(density="off", minimize=False))
    on = prove_obligation(ob, Options(density="off"))
    assert off.verdict is on.verdict is Verdict.COUNTEREXAMPLE
    assert on.counterexample.minimized is True and on.counterexample.params == {"x": 0, "y": 123}
    assert off.counterexample.minimized is False and "not minimised: minimisation off" in off.message
    holds, _, failed = replay(ob, off.counterexample.params)
    assert not holds and not failed


def test_an_assumption_whose_value_depends_on_its_earlier_calls_gives_no_hit(spec_file):
    """The probe computes each assumption once per argument values (a memo), so a hit's
    assumptions may come from an earlier call; the final re-check runs them again without the
    memo. Here ``x`` above 4 is admitted only the first time the assumption sees it: the hit (the
    high corner) is admitted once, then excluded, so it is no counterexample and no hit is given
    (and ``prove`` gives no verdict)."""
    source = (
        HEADER
        + """
_seen = set()

def first_time(x):
    new = x not in _seen
    _seen.add(x)
    return x < 5 or new

@obligation(domain={"x": Range(0, 10)}, assumptions={"first time": first_time})
def below_five(x):
    return at_most(demand=x, capacity=4)
"""
    )
    ob = _only(spec_file(source, "first_time_a.py"))
    stats: dict = {}
    assert probe(ob, *checked_domains(ob, {}, 20_000_000), stats=stats) is None
    assert "at {'x': 10} it gave claim False" in stats["unstable"] and "['first time'] false" in stats["unstable"]
    ob = _only(spec_file(source, "first_time_b.py"))  # a fresh set
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.ERROR and "not a function of its parameters on ints" in r.message


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_order_a_conjunction_is_checked_in_does_not_change_the_search(spec_file, monkeypatch, seed):
    """Moves check the assumptions a coordinate changes cheapest first, by the time each took:
    with those times replaced by random ones (any order), the probe visits the same points and
    finds the same counterexample (a conjunction's value does not depend on its order; one that
    raises counts as false in any order)."""
    import random

    import capproof.probe as probe_module

    ob = _only(spec_file(SATURATED))
    stats: dict = {}
    hit = probe(ob, *checked_domains(ob, {}, 20_000_000), stats=stats)
    assert hit is not None
    clock = random.Random(seed)
    monkeypatch.setattr(probe_module.time, "perf_counter", clock.random)
    again_stats: dict = {}
    again = probe(ob, *checked_domains(ob, {}, 20_000_000), stats=again_stats)
    monkeypatch.undo()
    assert (again.params, again.values, again.points, again.how) == (hit.params, hit.values, hit.points, hit.how)
    assert again_stats["points"] == stats["points"]


def _in_domain(ob, params) -> bool:
    """``params`` lies in ``ob``'s declared domain: scalars in theirs, each batch as long as its
    length parameter says (or its size) with every entry in the entry range."""
    from capproof.domain import Vector

    for p, dom in ob.domain.items():
        v = params[p]
        if isinstance(dom, Vector):
            n = params[dom.length] if dom.length else dom.size
            if len(v) != n or not all(dom.elem.contains(e) for e in v):
                return False
        elif not dom.contains(v):
            return False
    return True


@pytest.mark.slow
def test_the_probe_finds_every_counterexample_of_spec_in_the_domain_and_it_replays():
    """The probe's point order (corners, then each base point with its moves, saturated batches
    first; the coordinates a push moved tried first; assumptions memoised): with the budget
    ``capproof prove`` gives it, it finds a counterexample for every ``expect="counterexample"``
    obligation of spec/ and none on a proved one; each lies in the declared domain, satisfies every
    assumption and violates the claim on ints, with its batches padded and alone (the same
    values), and is re-found at the same point by a second run (the search is counted, not timed)."""
    from capproof.loader import load

    items, _ = load(["spec"])
    found, expected = set(), set()
    for ob in (ob for ob in items if hasattr(ob, "domain")):
        if ob.expect == "counterexample":
            expected.add(ob.id)
        domains = checked_domains(ob, {}, 20_000_000)
        hit = probe(ob, *domains)
        if hit is None:
            continue
        found.add(ob.id)
        assert _in_domain(ob, hit.params), (ob.id, hit.params)
        holds, values, failed = replay(ob, hit.params)
        assert (holds, failed) == (False, []) and values == hit.values, ob.id
        assert replay(ob, hit.params, padding=False) == (False, values, []), ob.id
        again = probe(ob, *domains)
        assert (again.params, again.points, again.how) == (hit.params, hit.points, hit.how), ob.id
    # the probe is a structured search, not an enumeration: the one counterexample it misses fails
    # only mid-range (5, 9-13, 17-21, ... requests of 1-64, a padded size not a multiple of 1 + K),
    # and its corners and repairs (1, 40 requests) hold; the solver finds it (tests/test_specdec_numbers.py)
    # The SGLang req_to_token row: its facts tie max_context_len to context_len plus the extra columns
    # exactly, an equality the probe's structured points and moves rarely meet; the solver finds it.
    # The DFlash dummy runs: a point must be a default capture size, its spec-rounded size, the
    # largest kept size and their request counts at once (four membership predicates tied by
    # equalities), which the probe's points rarely meet; the solver finds it (the real tier checks
    # the verdict against vLLM's own dummy runs).
    missed = {
        "spec/vllm_0_33_today.py::cudagraph_uniform_decode_padding_unrounded_before_28207",
        "spec/sglang_0_5_23_buffers.py::sglang_decode_alloc_row__ReqToTokenPool_req_to_token",
        "spec/vllm_0_33_dflash_dummy_runs.py::dflash_dummy_run_query_rows_fit_input_ids",
        "spec/vllm_0_33_dflash_dummy_runs.py::dflash_dummy_run_query_rows_fit_positions",
    }
    assert found == expected - missed and missed <= expected


def test_the_first_counterexample_is_timed_after_the_probe_rechecks_its_hit(spec_file, monkeypatch):
    """A probe hit is a counterexample once re-checked without the memo: ``first_counterexample
    .seconds`` runs from the call's start to the end of that re-check (a fake CPU clock the
    re-check moves by 100 s), not to the moment the point was first seen. The garbage collector,
    paused from the call's start to the probe's end, is enabled again (and left alone when the
    caller had disabled it)."""
    import gc
    import time

    from capproof import probe as probe_module

    ob = _only(spec_file(SATURATED))
    clock = [0.0]
    monkeypatch.setattr(time, "process_time", lambda: clock[0])
    recheck = probe_module._Prober.recheck

    def slow_recheck(self):
        seen_enabled.append(gc.isenabled())
        clock[0] += 100.0
        return recheck(self)

    seen_enabled: list[bool] = []
    monkeypatch.setattr(probe_module._Prober, "recheck", slow_recheck)
    assert gc.isenabled()
    result = prove_obligation(ob, Options(density="off"))
    first = result.first_counterexample
    assert first.source == "int probe" and first.seconds >= 100.0
    assert seen_enabled == [False] and gc.isenabled()
    gc.disable()
    try:
        assert prove_obligation(ob, Options(density="off")).first_counterexample.source == "int probe"
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_batch_obligation_evaluates_its_saturated_corner_first(spec_file):
    """With a batch, the probe evaluates every parameter high (batches saturated) before every
    parameter low: a bug at saturation is found at the first point (and is then its own re-check
    reference: one evaluation again, not two); the later order does not change. Without a batch
    the low corner stays first."""
    source = (
        HEADER
        + """
CALLS = []

@obligation(domain={"num_reqs": Range(1, 8), "lens": Vector(8, Range(1, 4), length="num_reqs")},
            expect="counterexample")
def saturated_only(num_reqs, lens):
    CALLS.append((num_reqs, tuple(lens)))
    return at_most(demand=total(lens), capacity=31)

@obligation(domain={"n": Range(0, 9)}, expect="counterexample")
def scalar_high(n):
    CALLS.append((n,))
    return at_most(demand=n, capacity=8)
"""
    )
    path = spec_file(source, "corners.py")
    from capproof.loader import load_file

    batch, scalar = load_file(path)
    calls = batch.func.__globals__["CALLS"]
    hit = _probe(batch)
    assert hit is not None and hit.points == 1 and hit.how == "every parameter at its high bound (batches saturated)"
    assert hit.params == {"num_reqs": 8, "lens": [4] * 8}
    assert [c[0] for c in calls] == [8, 8]  # the saturated point, then its re-check (the reference is the hit)
    calls.clear()
    hit = _probe(scalar)
    assert hit is not None and hit.points == 2 and calls[:2] == [(0,), (9,)]  # low corner first, then high


def test_a_saturated_point_pushes_its_widest_scalar_first(spec_file):
    """At a saturated point where the assumptions hold, the moves push the scalars of the
    assumptions widest range first, and the low corner waits for its own moves' first turn (a token budget of 1..4096 before a speculative length of 1..7):
    on the C2 shape the budget pushed down to the batch's total is the bug, found without checking
    the per-request bound at another value of ``k`` (its only calls: the two corners and the two
    points the re-check evaluates again)."""
    source = SATURATED.replace(
        '"decode length <= 1 + k": lambda lens, k: all_of(*(d <= 1 + k for d in lens))',
        '"decode length <= 1 + k": per_request',
    ).replace(
        "@obligation(",
        """
CALLS = []

def per_request(lens, k):
    CALLS.append(k)
    return all_of(*(d <= 1 + k for d in lens))

@obligation(""",
        1,
    )
    ob = _only(spec_file(source, "widest.py"))
    calls = ob.func.__globals__["CALLS"]
    hit = _probe(ob)
    assert (
        hit is not None
        and hit.how == "every parameter at its high bound (batches saturated); mnbt pushed to a derived value"
    )
    assert hit.params["mnbt"] == 128 and hit.values == {"demand": 129, "capacity": 128}
    # the high corner; the re-check: its reference (the high corner) and the hit. The low corner
    # (k = 1) is not evaluated: the saturated corner's moves come first whatever it gives, and the
    # first of them hits
    assert calls == [7, 7, 7] and hit.points == 2


def test_the_low_corner_evaluated_late_gives_the_same_points(spec_file):
    """When the saturated corner's first move does not hit, the low corner is evaluated at its own
    moves' first turn, and its moves run (here the bug needs a batch of one request: the
    saturated corner's moves cannot find it, the low corner's do)."""
    source = SATURATED.replace(
        "capacity=maximum(max_num_seqs + 1, mnbt))", "capacity=maximum(max_num_seqs + 1, mnbt) + 4096 * (num_reqs - 1))"
    )
    ob = _only(spec_file(source, "late_low.py"))
    from capproof import probe as probe_module

    seen: list = []
    evaluate = probe_module._Prober.evaluate

    def logged(self, scalars, shapes, how):
        seen.append((tuple(sorted(scalars.items())), tuple(sorted(shapes.items()))))
        return evaluate(self, scalars, shapes, how)

    probe_module._Prober.evaluate = logged
    try:
        stats: dict = {}
        hit = probe(ob, *checked_domains(ob, {}, 20_000_000), stats=stats)
    finally:
        probe_module._Prober.evaluate = evaluate
    assert hit is not None and replay(ob, hit.params)[::2] == (False, [])
    low = (tuple(sorted({"max_num_seqs": 1, "mnbt": 1, "k": 1, "num_reqs": 1}.items())), (("lens", (1, 1)),))
    assert low in seen and seen.index(low) > 1  # evaluated, after the saturated corner's first move


def test_a_push_over_four_derived_values_tries_the_farthest_first(spec_file):
    """A push from a point where the assumptions hold, with 2**k derived values between the point
    and the far end (here 4: the limit 1024 and its neighbours, and 2), checks the farthest first:
    when it holds (the assumption binds beyond every derived value) the push needs one check
    instead of bisection's three, and reaches the same point (the page-table shape of
    spec/specdec_graphs.py, ``page_table_copy_round0``: a request just past ``context_len``)."""
    source = (
        HEADER
        + """
from capproof.arith import max_of

CALLS = []

def fits(seq_lens, limit):
    CALLS.append(max_of(seq_lens))
    return max_of(seq_lens) <= limit + 4

@obligation(domain={"limit": Range(1024, 2**20), "num_reqs": Range(1, 4),
                    "seq_lens": Vector(4, Range(1, 2**21), length="num_reqs")},
            assumptions={"the row holds the request": fits}, expect="counterexample")
def copy_fits(limit, num_reqs, seq_lens):
    return at_most(demand=max_of(seq_lens), capacity=limit)
"""
    )
    ob = _only(spec_file(source, "farthest.py"))
    calls = ob.func.__globals__["CALLS"]
    hit = _probe(ob)
    assert hit is not None and hit.params == {"limit": 1024, "num_reqs": 1, "seq_lens": [1025]}
    assert hit.how == "every parameter at its low bound; seq_lens.base pushed to a derived value"
    # the saturated corner (excluded), the low corner, the far end (2**21, excluded), the farthest
    # derived value 1025 (holds: the push), the hit alone (no padding), then the re-check's two
    # points; bisection of the four would have checked 1023 and 1024 before 1025
    assert calls == [2**21, 1, 2**21, 1025, 1025, 2**21, 1025]


def test_a_budget_push_tries_the_batch_total_and_its_neighbour_first(spec_file):
    """A scalar pushed from a point where the assumptions hold (a token budget from a saturated
    batch's corner) tries the derived value equal to the batch's total first, then the next one
    toward the far end: two checks when the limit lies between them, and then no check of the far
    end (int17 checked it, 1, then bisected the ten derived values: 16, 128, 127), and the same
    point (the arange shape of spec/specdec_graphs.py,
    ``arange_covers_token_query_start_loc_before_16316``)."""
    source = (
        HEADER
        + """
CALLS = []

def budget(lens, mnbt):
    CALLS.append(mnbt)
    return total(lens) <= mnbt

@obligation(domain={"max_num_seqs": Range(1, 16), "mnbt": Range(1, 4096), "k": Range(1, 7),
                    "num_reqs": Range(1, 16), "lens": Vector(16, Range(1, 8), length="num_reqs")},
            assumptions={"num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
                         "decode length <= 1 + k": lambda lens, k: all_of(*(d <= 1 + k for d in lens)),
                         "tokens <= mnbt": budget},
            expect="counterexample")
def arange_covers_tokens(max_num_seqs, mnbt, k, num_reqs, lens):
    return at_most(demand=total(lens) + 1, capacity=maximum(max_num_seqs + 1, mnbt))
"""
    )
    ob = _only(spec_file(source, "total_first.py"))
    calls = ob.func.__globals__["CALLS"]
    hit = _probe(ob)
    assert hit is not None and hit.params == {"max_num_seqs": 16, "mnbt": 128, "k": 7, "num_reqs": 16, "lens": [8] * 16}
    assert hit.how == "every parameter at its high bound (batches saturated); mnbt pushed to a derived value"
    # the saturated corner, the batch's total 128 (holds) and 127 (does not: the limit; the far
    # end 1 is not checked), the hit from the memo, then the re-check's two points
    assert calls == [4096, 128, 127, 4096, 128]


def test_an_assumption_taken_positionally_binds_as_by_keyword():
    """The probe calls a plain function's assumption by position (no keyword dict: cheaper), only
    when that binds as the keyword call does: every parameter positional-or-keyword, no
    ``__wrapped__`` or ``__signature__`` that could differ from what the call binds."""
    import functools

    from capproof.encode import call_with_args
    from capproof.obligation import takes_positionally

    def plain(a, b):
        return a < b

    def keyword_only(a, *, b):
        return a < b

    def positional_only(a, /, b):
        return a < b

    @functools.wraps(plain)
    def wrapped(**kw):
        return plain(**kw)

    assert takes_positionally(plain) and takes_positionally(lambda b, a: a < b)
    assert not any(
        takes_positionally(f) for f in (keyword_only, positional_only, wrapped, functools.partial(plain, 1), divmod)
    )
    args = {"a": 2, "b": 1, "c": 0}
    flipped = lambda b, a: a < b  # noqa: E731 - the parameters in the function's order, not the point's
    assert (
        call_with_args(plain, "assumption", "x", ["a", "b"], args, True)
        is call_with_args(plain, "assumption", "x", ["a", "b"], args)
        is False
    )
    assert (
        call_with_args(flipped, "assumption", "x", ["b", "a"], args, True)
        is call_with_args(flipped, "assumption", "x", ["b", "a"], args)
        is False
    )


def test_a_budget_push_still_checks_the_far_end_when_the_total_and_its_neighbour_hold(spec_file):
    """The total-first checks skip the far end only when a value between fails (the assumptions,
    monotone along the line, then fail at the far end too): with a slack budget both hold, the far
    end is checked, holds, and the coordinate is not pushed (no assumption binds it there)."""
    source = (
        HEADER
        + """
CALLS = []

def budget(lens, mnbt):
    CALLS.append(mnbt)
    return total(lens) <= mnbt + 200

@obligation(domain={"max_num_seqs": Range(1, 16), "mnbt": Range(1, 4096), "num_reqs": Range(1, 16),
                    "lens": Vector(16, Range(1, 8), length="num_reqs")},
            assumptions={"num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
                         "tokens <= mnbt + 200": budget},
            expect="counterexample")
def arange_covers_tokens(max_num_seqs, mnbt, num_reqs, lens):
    return at_most(demand=total(lens) + 1, capacity=maximum(max_num_seqs + 1, mnbt))
"""
    )
    ob = _only(spec_file(source, "slack_budget.py"))
    calls = ob.func.__globals__["CALLS"]
    stats: dict = {}
    hit = probe(ob, *checked_domains(ob, {}, 20_000_000), stats=stats)
    # the saturated corner, the total 128 and 127 (both hold), the far end 1 (holds: no push)
    assert calls[:4] == [4096, 128, 127, 1]
    assert hit is None or "mnbt pushed" not in hit.how


@pytest.mark.parametrize("spec", ["spec/specdec_graphs.py", "spec/per_batch_buffers.py", "spec/vllm_block_table.py"])
def test_every_probe_point_lists_its_names_in_one_order(spec, monkeypatch):
    """The probe's seen-set keys a point by its values unsorted (capproof.probe._Prober.evaluate):
    sound only if every point's dicts name the parameters in one order (the axes', the vectors').
    Checked at every point the probe tries on three spec files, proved obligations included (they
    run the whole budget: base points, sweeps, bisections)."""
    from capproof import probe as probe_module

    orders: list[tuple] = []
    evaluate = probe_module._Prober.evaluate

    def checked(self, scalars, shapes, how):
        orders.append((tuple(scalars) == tuple(self.axes), tuple(shapes) == tuple(self.vectors)))
        return evaluate(self, scalars, shapes, how)

    monkeypatch.setattr(probe_module._Prober, "evaluate", checked)
    for ob in [ob for ob in load_file(spec) if hasattr(ob, "domain")]:
        _probe(ob)
    assert len(orders) > 100 and all(a and b for a, b in orders)


def _reference_plan(prober, failed, small):
    """The moves' plan (a set of the coordinates seen, a list per
    parameter, the scalars sorted by key): the oracle of the test below."""
    vectors, params_of, axes = prober.vectors, prober.params_of, prober.axes
    tied, untied = [], []
    for a in [failed] if failed is not None else prober.ob.assumptions:
        (untied if vectors.keys().isdisjoint(params_of[a]) else tied).append(a)
    entries, scalars, seen = [], [], set()
    for a in tied + untied:
        for n in params_of[a]:
            if n in vectors:
                length = vectors[n].length
                new = [(n, "base"), (n, "first")] + ([(length, "")] if length else [])
            elif n in axes:
                new = [(n, "")]
            else:
                continue
            for c in new:
                if c not in seen:
                    seen.add(c)
                    (entries if c[1] else scalars).append(c)
    if small:
        return entries + scalars
    lengths = {d.length for d in vectors.values()}
    return sorted(scalars, key=lambda c: (c[0] in lengths, axes[c[0]].lo - axes[c[0]].hi)) + entries


@pytest.mark.parametrize("spec", ["spec/specdec_graphs.py", "spec/per_batch_buffers.py", "spec/vllm_0_33_today.py"])
def test_the_moves_plan_is_the_documented_order(spec, monkeypatch):
    """``_Prober.plan`` (one pass, no set of the coordinates seen, no sort key per call: session
    19) gives the order the reference above gives, for every assumption and for the saturations,
    at small and saturated points, on every obligation of three spec files whose probe plans a
    move (batches with and without a length parameter, scalar-only ones)."""
    from capproof import probe as probe_module

    plan = probe_module._Prober.plan
    checked: list[str] = []

    def compared(self, failed, small):
        if self.ob.id not in checked:
            checked.append(self.ob.id)
            for f in (None, *self.ob.assumptions):
                for sm in (False, True):
                    self.plans.pop((f, sm), None)
                    assert plan(self, f, sm) == _reference_plan(self, f, sm), (self.ob.id, f, sm)
        return plan(self, failed, small)

    monkeypatch.setattr(probe_module._Prober, "plan", compared)
    for ob in [ob for ob in load_file(spec) if hasattr(ob, "domain")]:
        _probe(ob)
    assert len(checked) >= 5


def test_an_assumption_is_computed_once_per_argument_values_whatever_its_parameters(spec_file, monkeypatch):
    """The memo keys an assumption by its arguments' keys (one ``operator.itemgetter`` per
    assumption: a value for one parameter, a tuple for more, nothing for none): during the search
    each assumption runs once per distinct argument values (one without parameters once in all);
    the re-check runs every one again at the first point and the hit."""
    source = (
        HEADER
        + """
CALLS = []

def none_():
    CALLS.append("none")
    return True

def one(n):
    CALLS.append(("one", n))
    return n >= 0

def two(n, m):
    CALLS.append(("two", n, m))
    return n + m >= 0

@obligation(domain={"n": Range(0, 9), "m": Range(0, 3)}, assumptions={"none": none_, "one": one, "two": two},
            expect="counterexample")
def tokens(n, m):
    return at_most(demand=n + m, capacity=11)
"""
    )
    from capproof import probe as probe_module

    ob = _only(spec_file(source, "memo_keys.py"))
    calls = ob.func.__globals__["CALLS"]
    recheck = probe_module._Prober.recheck

    def marked(self):
        calls.append("recheck")
        return recheck(self)

    monkeypatch.setattr(probe_module._Prober, "recheck", marked)
    hit = _probe(ob)
    assert hit is not None and hit.params == {"n": 9, "m": 3} and hit.points == 2
    # the low corner (0, 0), then the high one (9, 3): "none" memoised from the first point
    assert calls == [
        "none",
        ("one", 0),
        ("two", 0, 0),
        ("one", 9),
        ("two", 9, 3),
        "recheck",
        "none",
        ("one", 0),
        ("two", 0, 0),
        "none",
        ("one", 9),
        ("two", 9, 3),
    ]
