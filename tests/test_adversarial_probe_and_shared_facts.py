"""Adversarial checks of the int probe and shared per-entry facts: every verdict compared with brute force on ints.

- The int probe (capproof/probe.py, wired in capproof/prover.py ``prove_obligation``): pins on a
  batch's length, Choice and PowersOfTwo gaps, huge (2**62) and negative ranges, vacuous domains,
  padding seen through ``len()``, fill above the entries, ``isinstance`` branches, a model whose
  result moves with module state, an ``unknown`` turned into a counterexample (shown batch replayed
  alone, ``minimized`` false in ``--json``, CLI exit codes, ``-j 1`` and ``-j 2`` alike). Each
  reported point (the first counterexample and the minimised one) must lie in the pinned domain,
  satisfy every assumption and fail on ints, with and without the batch's padding; a verdict
  ``proved``/``vacuous`` must agree with enumeration.
- ``capproof.aggregate.shared_facts`` (per-entry facts decided once per distinct term): cases whose
  per-entry term differs only by a case value (rising in one case, falling in another), two batches
  with look-alike terms over other entry ranges and fills; verdicts equal those with
  ``shared_facts`` replaced by ``contextlib.nullcontext``, and brute force (tight / one short).
- ``capproof.bound._entries_sorted``: an order-dependent claim and an assumption on the order: the
  recorded slack point must replay to its recorded demand and capacity, meet every assumption, and
  be certified by ``check_obligation``.
- The early stop of ``capproof.prover._aggregate_cases`` (batches <= 64): verdict and counterexample
  equal those with ``Options(aggregate=False)``.
"""

from __future__ import annotations

import contextlib
import json

import pytest
from _brute import domain_points
from _tiers import fast_few
from click.testing import CliRunner

from capproof import Options, Verdict
from capproof.bound import bound_obligation, check_obligation
from capproof.cli import main
from capproof.domain import Vector
from capproof.encode import replay
from capproof.loader import load_file
from capproof.prover import prove_obligation

HEADER = """
from capproof import Range, Choice, obligation, at_most, claim
from capproof.domain import Vector, PowersOfTwo
from capproof.arith import total, all_of, maximum, minimum, max_of, min_of, cdiv, round_up, select
"""

OFF = dict(density="off", contracts=False)


def _load(spec_file, body: str, tag: str):
    items = load_file(spec_file(HEADER + body, f"adv13_{tag}.py"))
    assert not hasattr(items, "message"), items
    return {ob.name: ob for ob in items}["ob"]


def _outcome(ob, point, padding=True):
    """(claim holds, values, failed assumptions) on ints, or None when the model raises there."""
    try:
        return replay(ob, point, padding=padding)
    except Exception:  # noqa: BLE001 - a point where the model raises is no counterexample
        return None


def _fails(ob, point) -> bool:
    """The point is a counterexample on ints: every assumption holds and the claim fails, with the
    padding and on the batch alone (what a counterexample shows)."""
    out = [_outcome(ob, point), _outcome(ob, point, padding=False)]
    return all(o is not None and not o[0] and not o[2] for o in out)


def _admitted_and_failing(ob, pins=None) -> tuple[int, int]:
    admitted = failing = 0
    for point in domain_points(ob, pins):
        out = _outcome(ob, point)
        if out is None or out[2]:
            continue
        admitted += 1
        failing += _fails(ob, point)
    return admitted, failing


def _in_domain(ob, point, pins) -> None:
    assert set(point) == set(ob.params), point
    for p, v in point.items():
        dom = ob.domain[p]
        if p in pins:
            assert v == pins[p], (p, v, pins)
        if isinstance(dom, Vector):
            n = point[dom.length] if dom.length else dom.size
            assert len(v) == n and all(dom.elem.lo <= e <= dom.elem.hi for e in v), (p, v)
        else:
            assert dom.contains(v), (p, v)


def _sound(ob, options: Options, pins=None, failing: int | None = None):
    """Prove ``ob``; every point it reports is a counterexample on ints inside the pinned domain,
    and (with ``failing`` from enumeration) proved/vacuous only when nothing fails."""
    pins = pins or {}
    r = prove_obligation(ob, Options(**{**options.__dict__, **OFF, "pins": pins}))
    for shown in (r.counterexample, r.first_counterexample):
        if shown is not None:
            _in_domain(ob, shown.params, pins)
            assert _fails(ob, shown.params), (r.verdict, shown.params, r.message)
            assert replay(ob, shown.params)[1] == shown.values
    if failing is not None:
        if r.verdict in (Verdict.PROVED, Verdict.VACUOUS):
            assert failing == 0, f"false {r.verdict.value}: {r.message}"
        if failing and r.verdict is not Verdict.ERROR:
            assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    if r.verdict is Verdict.PROVED:
        assert r.first_counterexample is None
    return r


# -- the int probe -----------------------------------------------------------------------------

PROBE = {
    # a saturated batch fails, but the pin keeps its length at 2: the probe must stay inside
    "pinned_length": (
        """
@obligation(domain={"n": Range(0, 4), "xs": Vector(4, Range(0, 3), length="n", fill=0)})
def ob(n, xs):
    return at_most(demand=total(xs), capacity=CAP)
""",
        {"n": 2},
        6,
    ),
    # only y = 5 (x = 4, not a choice) fails: derived values of a Choice must stay in it
    "choice_gap": (
        """
@obligation(domain={"x": Choice(1, 3, 7), "y": Range(0, 10)}, assumptions={"y = x + 1": lambda x, y: y == x + 1})
def ob(x, y):
    return at_most(demand=select(y == 5, 1000, y), capacity=CAP)
""",
        {},
        8,
    ),
    # only x = 48 (not a power of two) fails
    "powers_gap": (
        """
@obligation(domain={"x": PowersOfTwo(1, 64), "y": Range(0, 100)}, assumptions={"y >= x - 1": lambda x, y: y >= x - 1})
def ob(x, y):
    return at_most(demand=select(x == 48, 1000, x) + select(y > 99, 0, 0), capacity=CAP)
""",
        {},
        64,
    ),
    # negative ranges, a nonlinear demand
    "negative": (
        """
@obligation(domain={"x": Range(-12, -3), "y": Range(-5, -1)}, assumptions={"x even": lambda x: x % 2 == 0})
def ob(x, y):
    return at_most(demand=x * y, capacity=CAP)
""",
        {},
        60,
    ),
    # fill above the entries and max_of: a padded batch fails on ints, the batch alone does not
    "fill_above_max": (
        """
@obligation(domain={"n": Range(1, 3), "xs": Vector(3, Range(0, 3), length="n", fill=9)})
def ob(n, xs):
    return at_most(demand=max_of(xs), capacity=CAP)
""",
        {},
        3,
    ),
    # the padding seen through len(): the batch alone gives another demand
    "len_sees_padding": (
        """
@obligation(domain={"n": Range(0, 3), "xs": Vector(3, Range(0, 3), length="n", fill=0)})
def ob(n, xs):
    return at_most(demand=total(xs) + len(xs), capacity=CAP)
""",
        {},
        12,
    ),
    # a fill entry in an assumption: all_of over the padded tuple sees 5 > 3
    "fill_in_assumption": (
        """
@obligation(domain={"n": Range(1, 3), "xs": Vector(3, Range(0, 3), length="n", fill=5)},
            assumptions={"each <= 3": lambda xs: all_of(*(d <= 3 for d in xs))})
def ob(n, xs):
    return at_most(demand=total(xs), capacity=CAP)
""",
        {},
        9,
    ),
    # an assumption that raises on some ints (index past a table) and is fine elsewhere
    "assumption_raises": (
        """
T = [1, 1, 1, 0]
def table(k):
    return T[k] == 1 if isinstance(k, int) else k <= 2
@obligation(domain={"k": Range(0, 6)}, assumptions={"in table": lambda k: table(k)})
def ob(k):
    return at_most(demand=k, capacity=CAP)
""",
        {},
        2,
    ),
    # isinstance: the ints take a branch the symbolic run does not
    "isinstance_branch": (
        """
def extra(x):
    return 5 if isinstance(x, int) and not isinstance(x, bool) else 0
@obligation(domain={"x": Range(0, 10)})
def ob(x):
    return at_most(demand=x + extra(x), capacity=CAP)
""",
        {},
        15,
    ),
}


@pytest.mark.parametrize("name", sorted(PROBE))
@pytest.mark.parametrize("short", [False, True], ids=["tight", "short"])
def test_probe_points_lie_in_the_pinned_domain_and_fail_on_ints(spec_file, name, short):
    body, pins, worst = PROBE[name]
    ob = _load(spec_file, body.replace("CAP", str(worst - short)), f"{name}_{short}")
    admitted, failing = _admitted_and_failing(ob, pins)
    assert admitted, "no admitted point: not a useful attempt"
    assert bool(failing) == short or name in ("len_sees_padding", "isinstance_branch", "fill_above_max"), failing
    on = _sound(ob, Options(), pins, failing)
    off = _sound(ob, Options(probe=False), pins, failing)
    if on.verdict is not Verdict.ERROR and off.verdict is not Verdict.ERROR:
        assert on.verdict is off.verdict, (on.message, off.message)


@pytest.mark.parametrize("short", [False, True], ids=["tight", "short"])
def test_probe_on_a_huge_range(spec_file, short):
    """Range(-2**62, 2**62): the probe's corners and bisections on 63-bit ints."""
    ob = _load(
        spec_file,
        f"""
@obligation(domain={{"x": Range(-2**62, 2**62), "y": Range(0, 2**62)}}, assumptions={{"y <= x": lambda x, y: y <= x}})
def ob(x, y):
    return at_most(demand=x + y, capacity={2**63 - short})
""",
        f"huge_{short}",
    )
    r = _sound(ob, Options())
    assert r.verdict is (Verdict.COUNTEREXAMPLE if short else Verdict.PROVED), r.message
    if short:
        assert r.counterexample.params == {"x": 2**62, "y": 2**62}


def test_no_admitted_point_stays_vacuous_with_no_first_counterexample(spec_file):
    ob = _load(
        spec_file,
        """
@obligation(domain={"n": Range(0, 3), "xs": Vector(3, Range(0, 3), length="n")},
            assumptions={"too many": lambda xs: total(xs) > 9})
def ob(n, xs):
    return at_most(demand=total(xs), capacity=0)
""",
        "vacuous",
    )
    assert _admitted_and_failing(ob) == (0, 0)
    r = _sound(ob, Options(), failing=0)
    assert r.verdict is Verdict.VACUOUS and r.first_counterexample is None, r.message


def test_a_model_toggling_module_state_is_an_error_not_a_verdict(spec_file):
    ob = _load(
        spec_file,
        """
STATE = [0]
@obligation(domain={"x": Range(0, 10)})
def ob(x):
    STATE[0] ^= 1
    return at_most(demand=x + 20 * STATE[0] if isinstance(x, int) else x, capacity=10)
""",
        "toggle",
    )
    for options in (Options(**OFF), Options(rlimit=1, **OFF)):
        r = prove_obligation(ob, options)
        assert r.verdict is Verdict.ERROR and "not a function of its parameters" in r.message, r.message


UNKNOWN_PADDED = """
@obligation(domain={"max_num_seqs": Range(1, 16), "mnbt": Range(1, 4096), "k": Range(1, 7),
                    "num_reqs": Range(1, 16), "lens": Vector(16, Range(1, 8), length="num_reqs", fill=0)},
            assumptions={"num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
                         "decode length <= 1 + k": lambda lens, k: all_of(*(d <= 1 + k for d in lens)),
                         "tokens <= mnbt": lambda lens, mnbt: total(lens) <= mnbt}EXPECT)
def ob(max_num_seqs, mnbt, k, num_reqs, lens):
    return at_most(demand=total(lens) + 1, capacity=maximum(max_num_seqs + 1, mnbt))
"""


@pytest.mark.parametrize("pins", [{}, {"num_reqs": 5, "k": 3}], ids=["free", "pinned"])
def test_unknown_becomes_the_probe_counterexample_inside_the_pins(spec_file, pins):
    """rlimit 1: the solver is unknown; the probe's point (a padded batch: 16 entries declared,
    fewer active when pinned) is the counterexample, not minimised, inside the pins, failing alone."""
    ob = _load(spec_file, UNKNOWN_PADDED.replace("EXPECT", ""), f"unknown_{bool(pins)}")
    r = _sound(ob, Options(rlimit=1), pins)
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.counterexample.minimized is False, r.message
    first, shown = r.first_counterexample.params, r.counterexample.params  # the probe's point, shrunk on ints
    assert all(shown[k] <= first[k] for k in shown if k != "lens") and len(shown["lens"]) == shown["num_reqs"]
    assert all(shown[k] == v for k, v in pins.items())
    assert r.to_json()["counterexample"]["minimized"] is False
    assert r.to_json()["first_counterexample"]["source"] == "int probe"
    off = prove_obligation(ob, Options(rlimit=1, probe=False, pins=pins, **OFF))
    assert off.verdict is Verdict.UNKNOWN, off.message


@pytest.mark.parametrize("expect, code", [("", 1), (', expect="counterexample"', 0), (', expect="proved"', 1)])
def test_cli_exit_codes_and_json_when_unknown_becomes_counterexample(spec_file, expect, code):
    path = spec_file(HEADER + UNKNOWN_PADDED.replace("EXPECT", expect), "adv13_cli.py")
    seen = []
    for jobs in ("1", "2"):
        result = CliRunner().invoke(
            main,
            ["prove", path, "--rlimit", "1", "-j", jobs, "--no-contracts", "--density", "off", "--json", "-"],
            catch_exceptions=False,
        )
        assert result.exit_code == code, result.output
        doc = json.loads(result.output[result.output.index("{") :])
        (r,) = doc["obligations"]
        assert r["verdict"] == "counterexample" and r["counterexample"]["minimized"] is False
        assert r["first_counterexample"]["params"] == r["counterexample"]["params"]
        seen.append((r["verdict"], r["counterexample"]))
    assert seen[0] == seen[1]


# -- shared_facts: per-entry facts decided once per distinct term --------------------------------

SHARED = """
@obligation(domain={"s": Choice(-1, 1), "bs": Choice(1, 2, 3), "n": Range(1, 3),
                    "xs": Vector(3, Range(LO, HI), length="n", fill=FX),
                    "ys": Vector(2, Range(0, 3), length=None, fill=0)}ASSUME)
def ob(s, bs, n, xs, ys):
    return at_most(demand=DEMAND, capacity=CAP)
"""

SHARED_CASES = {
    # the same generator, rising in the case s = 1 and falling in s = -1
    "sign_by_case": dict(DEMAND="total(s * (d - 1) for d in xs) + total(ys)", LO=1, HI=3, FX=1),
    # one f per block-size case; the two batches' per-entry terms look alike but their ranges differ
    "block_per_case": dict(DEMAND="total(cdiv(d, bs) for d in xs) + total(cdiv(d, bs) for d in ys)", LO=0, HI=4, FX=0),
    # round_up's residue depends on the case; fill 0 maps to 0 only for these
    "round_up_per_case": dict(
        DEMAND="total(round_up(d, bs) for d in xs) - total(d // bs for d in ys)", LO=0, HI=3, FX=0
    ),
    # a term that is zero on the fill in one batch (fill 2, d - 2) and not in the other's alike term
    "fill_differs": dict(DEMAND="total(d - 2 for d in xs) + total(d * bs for d in ys)", LO=2, HI=4, FX=2),
    # a case-dependent assumption tying the batches
    "assumed_per_case": dict(
        DEMAND="total(minimum(d, bs) for d in xs) + max_of(ys)",
        LO=0,
        HI=3,
        FX=0,
        ASSUME=', assumptions={"tie": lambda xs, ys, s: total(xs) * s <= total(ys)}',
    ),
}


def _shared_ob(spec_file, name, cap, tag):
    kw = {"ASSUME": "", **SHARED_CASES[name], "CAP": cap}
    body = SHARED
    for k, v in kw.items():
        body = body.replace(k, str(v))
    return _load(spec_file, body, f"shared_{name}_{tag}")


def _worst_demand(ob) -> int:
    best = None
    for point in domain_points(ob):
        out = _outcome(ob, point)
        if out is not None and not out[2]:
            best = out[1]["demand"] if best is None else max(best, out[1]["demand"])
    assert best is not None
    return best


@pytest.mark.parametrize("name", fast_few(sorted(SHARED_CASES), {"fill_differs", "sign_by_case"}))  # others: slow tier
def test_shared_facts_give_the_verdicts_of_deciding_every_case_afresh(spec_file, monkeypatch, name):
    import capproof.aggregate as aggregate

    worst = _worst_demand(_shared_ob(spec_file, name, 10**6, "top"))
    for cap, must_hold in ((worst, True), (worst - 1, False)):
        ob = _shared_ob(spec_file, name, cap, "tight" if must_hold else "short")
        shared = _sound(ob, Options(probe=False), failing=0 if must_hold else 1)
        with monkeypatch.context() as m:
            m.setattr(aggregate, "shared_facts", contextlib.nullcontext)
            afresh = _sound(ob, Options(probe=False), failing=0 if must_hold else 1)
        assert (shared.verdict, shared.encoding, shared.counterexample and shared.counterexample.params) == (
            afresh.verdict,
            afresh.encoding,
            afresh.counterexample and afresh.counterexample.params,
        ), (shared.message, afresh.message)
        assert shared.verdict is (Verdict.PROVED if must_hold else Verdict.COUNTEREXAMPLE), shared.message


# -- the early stop of the aggregate attempt ---------------------------------------------------


@pytest.mark.parametrize("name", ["sign_by_case", "block_per_case", "assumed_per_case"])
def test_early_stop_gives_the_counterexample_of_the_bounded_encoding(spec_file, name):
    """The first failing case stops the aggregate attempt (batches <= 64); the bounded encoding
    then decides every case: the same verdict, counterexample and failing-case count as without
    the aggregate attempt."""
    worst = _worst_demand(_shared_ob(spec_file, name, 10**6, "top"))
    ob = _shared_ob(spec_file, name, worst - 1, "early")
    with_agg = prove_obligation(ob, Options(probe=False, **OFF))
    without = prove_obligation(ob, Options(probe=False, aggregate=False, **OFF))
    assert with_agg.verdict is without.verdict is Verdict.COUNTEREXAMPLE, (with_agg.message, without.message)
    assert with_agg.counterexample.params == without.counterexample.params
    assert with_agg.counterexample.minimized == without.counterexample.minimized
    assert (with_agg.failing_cases, with_agg.cases) == (without.failing_cases, without.cases)
    assert _fails(ob, with_agg.counterexample.params)


# -- bound: a search witness's batch sorted only where its replay agrees --------------------------

ORDERED = {
    # the first entry weighs more: sorting descending changes the demand
    "weighted_first": (
        """
@obligation(domain={"n": Range(2, 3), "xs": Vector(3, Range(0, 3), length="n", fill=0)},
            assumptions={"sum small": lambda xs: total(xs) <= 4})
def ob(n, xs):
    return at_most(demand=3 * xs[0] + xs[1], capacity=20)
"""
    ),
    # ascending order assumed: sorting descending would break the assumption
    "ascending_assumed": (
        """
@obligation(domain={"n": Range(3, 3), "xs": Vector(3, Range(0, 3), length="n", fill=0)},
            assumptions={"ascending": lambda xs: all_of(xs[0] <= xs[1], xs[1] <= xs[2])})
def ob(n, xs):
    return at_most(demand=xs[2] - xs[0] + xs[1], capacity=20)
"""
    ),
    # order-independent, padded batch: sorting applies to the active entries only
    "padded_sum": (
        """
@obligation(domain={"n": Range(2, 3), "xs": Vector(3, Range(0, 3), length="n", fill=0)},
            assumptions={"one big": lambda xs: max_of(xs) >= 2})
def ob(n, xs):
    return at_most(demand=total(xs) + max_of(xs), capacity=20)
"""
    ),
}


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_bound_witness_order_replays_and_is_certified(spec_file, name):
    ob = _load(spec_file, ORDERED[name], f"ordered_{name}")
    slacks = []
    for point in domain_points(ob):
        out = _outcome(ob, point)
        if out is not None and not out[2]:
            slacks.append(out[1]["capacity"] - out[1]["demand"])
    entry = json.loads(json.dumps(bound_obligation(ob).to_json()))
    for case in entry["cases"]:
        assert case["status"] == "bounded", case
        assert case["min_slack"] == min(slacks), case
        holds, values, failed = replay(ob, case["slack_point"])
        assert not failed, case
        assert (values["demand"], values["capacity"]) == (
            case["demand_at_slack_point"],
            case["capacity_at_slack_point"],
        )
        assert values["capacity"] - values["demand"] == case["min_slack"]
        _in_domain(ob, case["slack_point"], {})
    assert check_obligation(ob, entry).to_json() == entry


# -- the first counterexample from the solver: the batch it shows must fail alone ------------------


def test_the_solvers_first_counterexample_is_not_a_padded_only_failure(spec_file):
    """Found by this module: ``_First.solver_point`` kept the solver's first (unminimised) model
    when it replayed with the padding, without the padding check every shown counterexample passes:
    here the model reads ``len(xs)`` (the padded size 3) once the batch total reaches 6, so the
    padded ``xs=[3, 3], n=2`` fails (15 > 14) while the batch shown holds alone (12 <= 14), and
    ``first_counterexample`` in --json showed it. The minimised counterexample (n=3) was sound."""
    ob = _load(
        spec_file,
        """
@obligation(domain={"xs": Vector(3, Range(0, 3), length="n", fill=0), "n": Range(1, 3)})
def ob(xs, n):
    return at_most(demand=total(xs) + select(total(xs) >= 6, 3 * len(xs), 0), capacity=14)
""",
        "padded_first",
    )
    for options in (Options(probe=False, aggregate=False), Options(probe=False), Options()):
        r = _sound(ob, options)
        assert r.verdict in (Verdict.COUNTEREXAMPLE, Verdict.ERROR), r.message
        assert r.first_counterexample is not None, r.message


@pytest.mark.parametrize("short", [False, True], ids=["tight", "short"])
def test_probe_on_an_int32_claim_and_a_two_sided_index(spec_file, short):
    """``dtype="int32"``: the probe's corner wraps (2**20 * 2**12 is 0 in int32) and must be a
    counterexample only when the product leaves int32; ``less_than`` with a negative range: the
    index -1 fails the lower bound."""
    hi_x = 2**19 + 128 + short  # (2**19 + 128) * 4095 = 2**31 - 128: the largest that fits
    ob = _load(
        spec_file,
        f"""
@obligation(domain={{"x": Range(0, {hi_x}), "y": Range(0, 2**12 - 1)}})
def ob(x, y):
    return at_most(dtype="int32", demand=x * y, capacity=2**40)
""",
        f"int32_{short}",
    )
    r = _sound(ob, Options())
    assert r.verdict is (Verdict.COUNTEREXAMPLE if short else Verdict.PROVED), r.message
    idx = _load(
        spec_file,
        f"""
from capproof import less_than
@obligation(domain={{"x": Range({-1 if short else 0}, 5)}})
def ob(x):
    return less_than(index=x, capacity=6)
""",
        f"index_{short}",
    )
    assert _admitted_and_failing(idx)[1] == short
    for options in (Options(), Options(rlimit=1)):
        r = _sound(idx, options, failing=int(short))
        assert r.verdict in ((Verdict.COUNTEREXAMPLE,) if short else (Verdict.PROVED, Verdict.UNKNOWN)), r.message


@pytest.mark.slow  # proves the whole file twice; test_batching checks batched against alone in the fast tier
def test_verdicts_are_the_same_with_one_and_two_jobs(spec_file):
    """Every probe attempt above (one-short capacities) in one file: ``-j 1`` and ``-j 2`` give the
    same verdicts, counterexamples and first counterexamples."""
    bodies = []
    for i, name in enumerate(sorted(PROBE)):
        body, _, worst = PROBE[name]
        bodies.append(body.replace("CAP", str(worst - 1)).replace("def ob(", f"def ob_{i}("))
    path = spec_file(HEADER + "\n".join(bodies), "adv13_jobs.py")
    seen = []
    for jobs in ("1", "2"):
        result = CliRunner().invoke(
            main,
            ["prove", path, "-j", jobs, "--no-contracts", "--density", "off", "--json", "-"],
            catch_exceptions=False,
        )
        doc = json.loads(result.output[result.output.index("{") :])
        seen.append(
            (
                result.exit_code,
                {
                    r["id"]: (
                        r["verdict"],
                        r.get("counterexample"),
                        (r.get("first_counterexample") or {}).get("params"),
                    )
                    for r in doc["obligations"]
                },
            )
        )
    assert len(seen[0][1]) == len(PROBE)
    assert seen[0] == seen[1]


def test_a_hasattr_branch_off_the_probe_points_is_never_proved(spec_file):
    """Formerly a strict xfail: a Python-only branch on
    ``hasattr(x, "term")`` (capproof's own slot) at a point that is neither a structured probe point
    nor a semantics-probe point was proved. The static scan (``symbolic.introspections``) now sees
    hasattr/getattr asked for a name a symbolic value and an int do not both have: an error, never
    proved (``_sound`` allows an error; brute force says 1 of 11 points fails)."""
    ob = _load(
        spec_file,
        """
def bump(x):
    return 100 if not hasattr(x, "term") and x == 7 else 0
@obligation(domain={"x": Range(0, 10)})
def ob(x):
    return at_most(demand=x + bump(x), capacity=10)
""",
        "hasattr7",
    )
    assert _admitted_and_failing(ob) == (11, 1)
    r = _sound(ob, Options(), failing=1)
    assert r.verdict is Verdict.ERROR and "asks hasattr/getattr for 'term'" in r.message, r.message


def test_bound_witness_under_a_pin_stays_inside_it(spec_file):
    """A pinned batch length (``--set n=2``): the search witness, sorted or not, keeps the pin and
    replays to the recorded slack, which is brute force's under the pin."""
    ob = _load(spec_file, ORDERED["weighted_first"], "ordered_pinned")
    pins = {"n": 2}
    slacks = [
        o[1]["capacity"] - o[1]["demand"]
        for o in map(lambda p: _outcome(ob, p), domain_points(ob, pins))
        if o is not None and not o[2]
    ]
    (case,) = bound_obligation(ob, pins).to_json()["cases"]
    assert case["status"] == "bounded" and case["min_slack"] == min(slacks), case
    _in_domain(ob, case["slack_point"], pins)
    holds, values, failed = replay(ob, case["slack_point"])
    assert not failed and values["capacity"] - values["demand"] == case["min_slack"]
