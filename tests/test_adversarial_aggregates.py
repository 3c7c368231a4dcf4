"""Adversarial checks of today's batch features: every verdict compared with brute force.

- The aggregate abstraction's mapped totals ``total(f(d) for d in batch)`` (capproof/aggregate.py:
  monotone facts, ``affine_envelope``, ``common_residue``, ``_probe_real_batch``) with decreasing
  or negative ``f``, negative entries, nonzero padding ``fill``, a symbolic length that may be 0,
  two mapped totals over one batch, ``f`` = ``d // k``, ``cdiv``, ``round_up``, ``minimum``,
  ``select``, ``f`` of a scalar parameter or of the batch's own aggregates, and generators sliced
  before ``total``/``all_of`` sees them. For each claim ``E <= K`` the worst ``E`` is found by
  enumerating every point of a small domain on ints: at ``K = worst`` the claim must never get a
  counterexample, at ``K = worst - 1`` it must never be proved; every counterexample replays.
- Induction over the batch (capproof/induction.py): padding outside the entries' range, and
  assumptions admitted only by batches longer than the non-vacuity search looks at.
- ``capproof bound --check`` (capproof/bound.py): records tampered in ways tests/test_bound_check.py
  does not try (a case removed or duplicated, a witness outside its domain or violating an
  assumption, an obligation moved to ``skipped`` under a forged fingerprint).
"""

from __future__ import annotations

import copy
import json

import pytest
from _brute import domain_points
from click.testing import CliRunner

from capproof import Options, Verdict
from capproof.bound import Uncertified, bound_obligation, check_obligation, record_key, run_bounds
from capproof.encode import replay
from capproof.loader import load_file
from capproof.prover import prove_obligation

TEMPLATE = """
from capproof import Range, Choice, obligation, at_most, all_of
from capproof.arith import total, max_of, min_of, select, minimum, maximum, cdiv, round_up
from capproof.domain import Vector

D = {{"n": Range({nlo}, {size}), "c": Range(0, 3), "xs": Vector({size}, Range({lo}, {hi}), length={length}, fill={fill})}}
A = {assume}

@obligation(domain=D, assumptions=A)
def ob(n, c, xs):
    return at_most(demand={expr}, capacity={cap})
"""


def _worst(ob) -> int | None:
    """The largest demand over the admitted points, by enumeration on ints (None: none admitted)."""
    best = None
    for point in domain_points(ob):
        try:
            _, values, failed = replay(ob, point)
        except ValueError:  # max_of of an empty batch on ints: the point is not a batch the model takes
            continue
        if not failed:
            best = values["demand"] if best is None else max(best, values["demand"])
    return best


def _sound(ob, must_hold: bool, options: Options) -> tuple[str, str]:
    r = prove_obligation(ob, options)
    if r.verdict is Verdict.PROVED:
        assert must_hold, f"false proof ({r.encoding}: {r.encoding_note})"
    if r.verdict is Verdict.COUNTEREXAMPLE:
        holds, _, failed = replay(ob, r.counterexample.params)
        assert not holds and not failed, f"counterexample {r.counterexample.params} does not replay"
        assert not must_hold
    return r.verdict.name, r.encoding


def _compare_with_brute_force(spec_file, name: str, **kw) -> list[tuple[str, str]]:
    kw = {"nlo": 1, "size": 3, "lo": 0, "hi": 4, "length": '"n"', "fill": 0, "assume": "{}", "cap": "10**9", **kw}

    def load(cap, tag):
        path = spec_file(TEMPLATE.format(**{**kw, "cap": cap}), f"adv_{name}_{tag}.py")
        return {it.name: it for it in load_file(path)}["ob"]

    worst = _worst(load("10**9", "top"))
    assert worst is not None, "the assumptions admit no point: not a useful attempt"
    seen = []
    for cap, must_hold in ((worst, True), (worst - 1, False)):
        ob = load(str(cap), "tight" if must_hold else "short")
        for options in (Options(density="off"), Options(density="off", aggregate=False)):
            seen.append(_sound(ob, must_hold, options))
    return seen


NEG = {"lo": -2, "hi": 3}
PADDED = {"nlo": 0, "lo": -2, "hi": 3, "fill": -1}
TOTAL_IS = {"assume": '{"t": lambda xs, c: total(xs) == c + 2}'}
EACH_ABOVE = {"assume": '{"e": lambda xs, c: all_of(*(d >= c for d in xs))}'}

MAPPED = [
    ("neg", "total(-d for d in xs)", NEG),
    ("neg_lower", "-total(-d for d in xs)", NEG),
    ("decreasing_no_padding", "total(3 - d for d in xs)", {"length": "None"}),
    ("decreasing_lower", "-total(3 - d for d in xs)", {"length": "None", **NEG}),
    ("halves", "total(d // 2 for d in xs)", NEG),
    ("halves_lower", "-total(d // 2 for d in xs)", {**NEG, **TOTAL_IS}),
    ("cdiv", "total(cdiv(d, 2) for d in xs)", {**NEG, **EACH_ABOVE}),
    ("round_up", "total(round_up(d, 3) for d in xs)", TOTAL_IS),
    ("round_up_lower", "-total(round_up(d, 3) for d in xs)", NEG),
    ("minimum_scalar", "total(minimum(d, c) for d in xs)", NEG),
    ("select_scalar", "total(select(d > c, d - c, 0) for d in xs)", TOTAL_IS),
    ("select_steep", "-total(select(d > 1, 2 * d, d) for d in xs)", EACH_ABOVE),
    ("scaled_by_scalar", "total(d * c for d in xs)", NEG),
    ("scaled_by_length", "total(d * n for d in xs)", {}),
    ("two_mapped", "total(d // 2 for d in xs) + total(-d for d in xs)", NEG),
    ("two_mapped_lower", "total(cdiv(d, 2) for d in xs) - total(d // 2 for d in xs)", TOTAL_IS),
    ("mapped_and_plain", "total(d // 2 for d in xs) - total(xs)", NEG),
    ("mapped_and_max", "total(cdiv(d, 2) for d in xs) - max_of(xs)", EACH_ABOVE),
    ("own_minimum", "total(d - min_of(xs) for d in xs)", {}),
    ("count_of_the_maximum", "-total(select(d >= max_of(xs), 1, 0) for d in xs)", {}),
    ("padding_fill_nonzero", "total(d // 2 for d in xs)", PADDED),
    ("padding_fill_one", "total(cdiv(d, 2) for d in xs)", {"nlo": 0, "fill": 1}),
    ("sliced_list", "total([d for d in xs][:1])", {}),
    ("sliced_generator", "-total(list(d for d in xs)[:1])", {}),
    ("first_only_assumed", "max_of(xs)", {"assume": '{"first": lambda xs, c: all_of(*[d <= c for d in xs][:1])}'}),
]


@pytest.mark.parametrize("name, expr, variant", MAPPED, ids=[m[0] for m in MAPPED])
def test_mapped_totals_agree_with_brute_force(spec_file, name, expr, variant):
    """The tight claim is never refuted and the one-short claim never proved, on the aggregates
    and on the bounded encoding (3 entries: every length 1..3, or 0..3 with padding)."""
    seen = _compare_with_brute_force(spec_file, name, expr=expr, **variant)
    assert len(seen) == 4


def test_mapped_totals_are_proved_for_every_batch_size_where_they_should_be(spec_file):
    """Not vacuous: the tight claims above are proved on the aggregates (all batch sizes)."""
    for name, expr, variant in [MAPPED[0], MAPPED[4], MAPPED[9], MAPPED[14]]:
        seen = _compare_with_brute_force(spec_file, name + "_agg", expr=expr, **variant)
        assert seen[0] == ("PROVED", "all batch sizes"), (name, seen)


# --- a claim true up to the declared size, false above: only the declared sizes are claimed -------

LONG = """
from capproof import Range, obligation, at_most
from capproof.arith import total
from capproof.domain import Vector

@obligation(domain={"n": Range(1, SIZE), "xs": Vector(SIZE, Range(0, 7), length="n")})
def ob(n, xs):
    return at_most(demand=total(d // 2 for d in xs), capacity=9)
"""


def test_a_claim_false_only_above_the_declared_size_is_proved_only_there(spec_file):
    """sum of d // 2 over n <= 3 entries in 0..7 is at most 9; at 4 entries it is 12. The 3-entry
    obligation is proved (its verdict says 'all batch sizes' of n in 1..3), the 200-entry one is
    refuted on the aggregates with a realised batch that replays."""
    small = {it.name: it for it in load_file(spec_file(LONG.replace("SIZE", "3"), "adv_long3.py"))}["ob"]
    r = prove_obligation(small, Options(density="off"))
    assert r.verdict is Verdict.PROVED and "1..3" in r.encoding_note
    big = {it.name: it for it in load_file(spec_file(LONG.replace("SIZE", "200"), "adv_long200.py"))}["ob"]
    r = prove_obligation(big, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.encoding_note
    holds, values, failed = replay(big, r.counterexample.params)
    assert not holds and not failed and values == r.counterexample.values
    assert sum(d // 2 for d in r.counterexample.params["xs"]) > 9


# --- induction over the batch ---------------------------------------------------------------------

FOLD = """
from capproof import Range, obligation, at_most, all_of
from capproof.arith import fold, total
from capproof.domain import Vector

D = {"n": Range(NLO, 6), "xs": Vector(6, Range(0, 2), length="n", fill=FILL)}

def walk(xs):
    def step(acc, i, x):
        return acc + x
    def invariant(acc, i, seen):
        return acc <= 2 * i
    return fold(step, 0, xs, invariant=invariant)

@obligation(domain=D, assumptions=ASSUME)
def ob(n, xs):
    return at_most(demand=walk(xs), capacity=CAP)
"""


@pytest.mark.parametrize(
    "nlo, fill, assume",
    [
        (1, 0, "{}"),
        (1, 5, "{}"),  # padding outside 0..2
        (5, 0, '{"long": lambda xs: total(xs) >= 9}'),  # admitted only by 5+ entries
        (1, 0, '{"long": lambda n, xs: all_of(n >= 5, total(xs) >= 9)}'),  # same, length a Range from 1
    ],
)
def test_fold_verdicts_agree_with_brute_force(spec_file, nlo, fill, assume):
    """A fold whose sum over every entry (padding included on ints) is bounded by its invariant:
    for each capacity the verdict agrees with enumerating every batch of 0..6 entries in 0..2."""

    def load(cap, tag):
        src = (
            FOLD.replace("NLO", str(nlo)).replace("FILL", str(fill)).replace("ASSUME", assume).replace("CAP", str(cap))
        )
        return {it.name: it for it in load_file(spec_file(src, f"adv_fold_{nlo}_{fill}_{len(assume)}_{tag}.py"))}["ob"]

    worst = _worst(load(10**9, "top"))
    assert worst is not None
    for cap, must_hold in ((worst, True), (worst - 1, False)):
        _sound(load(cap, "tight" if must_hold else "short"), must_hold, Options(density="off"))


# --- bound --check: tampered records ------------------------------------------------------------

CAPS = """
from capproof import Range, at_most, obligation, equal

@obligation(domain={"a": Range(0, 9), "b": Range(0, 9)}, assumptions={"a even": lambda a: a % 2 == 0})
def ties(a, b):
    return at_most(demand=a // 2 + b, capacity=20)

@obligation(domain={"a": Range(0, 9)})
def same(a):
    return equal(left=a, right=a)
"""


@pytest.fixture
def caps(spec_file):
    obs = {ob.name: ob for ob in load_file(spec_file(CAPS, "adv_caps.py"))}
    return obs["ties"], json.loads(json.dumps(bound_obligation(obs["ties"]).to_json()))


def test_the_untampered_record_is_certified(caps):
    ob, entry = caps
    assert check_obligation(ob, entry).to_json() == entry


@pytest.mark.parametrize(
    "tamper",
    [
        lambda e: e["cases"].clear(),  # case removed
        lambda e: e["cases"].append(copy.deepcopy(e["cases"][0])),  # case duplicated
        lambda e: e["cases"][0].update(demand_point={"a": 10, "b": 9}),  # outside its domain (demand 14)
        lambda e: e["cases"][0].update(demand_point={"a": 9, "b": 9}, max_demand=13),  # violates "a even"
        lambda e: e["cases"][0].update(slack_point={"a": 9, "b": 9}),  # violates "a even"
        lambda e: e["cases"][0].update(demand_point={"a": 8, "b": 9, "c": 0}),  # a parameter too many
        lambda e: e["cases"][0].update(demand_point={"a": 8.0, "b": 9}),  # not an int
        lambda e: e["cases"][0].update(demand_point={"a": True, "b": 9}),  # a bool for an int
        lambda e: e.update(waste_threshold_pct=50.0),  # another threshold
        lambda e: e.update(demand="b"),  # another demand name
    ],
)
def test_a_tampered_record_fails_its_certificate(caps, tamper):
    ob, entry = caps
    bad = copy.deepcopy(entry)
    tamper(bad)
    with pytest.raises(Uncertified):
        check_obligation(ob, bad)


def test_an_obligation_recorded_as_skipped_is_bounded_when_it_is_a_capacity_claim(spec_file):
    """proofs/bounds.json's ``skipped`` list was trusted: an at_most obligation listed there (a
    record from before a model turned a claim into a capacity claim, its fingerprint forged) was
    left out of proofs/bounds.md without being built. Now the claim is looked at on ints first."""
    path = spec_file(CAPS, "adv_caps_skip.py")
    obs = {ob.name: ob for ob in load_file(path)}
    recorded = {"bounds": {}, "skipped": {obs["ties"].id, obs["same"].id}, "keys": _keys_now(obs.values())}
    run = run_bounds([path], recorded=recorded)
    status = {r.id.split("::")[1]: r.status for r in run.results}
    assert status == {"ties": "bounded", "same": "skipped"}


def test_cli_check_catches_a_capacity_claim_hidden_in_skipped(tmp_path, monkeypatch):
    """End to end: --write, then a model change that makes a claim a capacity claim, with the
    obligation's recorded key rewritten to match the new sources: --check must still find
    proofs/bounds.md stale."""
    from capproof import loader

    (tmp_path / "spec").mkdir()
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec" / "caps.py"
    spec.write_text(CAPS)
    runner = CliRunner()
    assert runner.invoke(main_cli(), ["bound", "--write"]).exit_code == 0
    data = tmp_path / "proofs" / "bounds.json"
    before = json.loads(data.read_text())
    assert any(s["id"].endswith("::same") for s in before["skipped"])
    spec.write_text(CAPS.replace("return equal(left=a, right=a)", "return at_most(demand=a, capacity=8)"))
    loader._loaded.clear()
    (same,) = [ob for ob in loader.load_file(str(spec)) if ob.name == "same"]
    (old_key,) = [s["key"] for s in before["skipped"] if s["id"].endswith("::same")]
    forged = record_key(same, before["rlimit"], before["waste_threshold_pct"])
    assert forged and forged != old_key
    data.write_text(data.read_text().replace(old_key, forged))
    result = runner.invoke(main_cli(), ["bound", "--check"])
    assert result.exit_code == 1 and "stale" in result.output, result.output


def _keys_now(obligations) -> dict:
    """Each obligation's bounds.json key for its sources now (as a forged record would carry it)."""
    from capproof.bound import DEFAULT_WASTE_THRESHOLD

    return {ob.id: record_key(ob, 20_000_000, DEFAULT_WASTE_THRESHOLD) for ob in obligations}


def main_cli():
    from capproof.cli import main

    return main


# --- beyond the bounded encoding: 100 entries, worst demand known in closed form -----------------

BIG = """
from capproof import Range, obligation, at_most
from capproof.arith import total, minimum, cdiv
from capproof.domain import Vector

@obligation(domain={"n": Range(1, 100), "c": Range(0, 3), "xs": Vector(100, Range(LO, 7), length="n")})
def ob(n, c, xs):
    return at_most(demand=EXPR, capacity=CAP)
"""

BIG_CASES = [  # (name, lo, f summed, the worst sum as a function of n and c)
    ("halves", 0, "total(d // 2 for d in xs)", "3 * n"),
    ("negated", -2, "total(-d for d in xs)", "2 * n"),
    ("thirds_up", -2, "total(cdiv(d, 3) for d in xs)", "3 * n"),
    ("capped_by_scalar", 0, "total(minimum(d, c) for d in xs)", "c * n"),
    ("floor_of_negatives", -2, "-total(d // 2 for d in xs)", "n"),
]


@pytest.mark.parametrize("name, lo, expr, worst", BIG_CASES, ids=[b[0] for b in BIG_CASES])
def test_mapped_totals_at_100_entries(spec_file, name, lo, expr, worst):
    """At the worst sum the claim is proved for every batch size on the aggregates; one less is a
    counterexample realised as a batch that replays on ints."""

    def load(cap, tag):
        src = BIG.replace("LO", str(lo)).replace("EXPR", expr).replace("CAP", cap)
        return {it.name: it for it in load_file(spec_file(src, f"adv_big_{name}_{tag}.py"))}["ob"]

    r = prove_obligation(load(worst, "tight"), Options(density="off"))
    assert r.verdict is not Verdict.COUNTEREXAMPLE, r.counterexample
    short = load(f"{worst} - 1", "short")
    r = prove_obligation(short, Options(density="off"))
    assert r.verdict is not Verdict.PROVED, r.encoding_note
    if r.verdict is Verdict.COUNTEREXAMPLE:
        holds, _, failed = replay(short, r.counterexample.params)
        assert not holds and not failed


# --- assumptions the abstraction admits but no batch does; a claim false only off the realiser ---

PHANTOM = """
from capproof import Range, obligation, at_most, all_of
from capproof.arith import total, select, max_of, min_of
from capproof.domain import Vector

D = {"n": Range(1, 100), "xs": Vector(100, Range(0, 5), length="n")}

@obligation(domain=D, assumptions={"three": lambda n: n == 3,
                                   "skips": lambda xs: total(2 * d + select(d > 0, 1, 0) for d in xs) == 4})
def phantom_only(n, xs):
    return at_most(demand=n, capacity=2)

@obligation(domain={"n": Range(1, 100), "xs": Vector(100, Range(0, 3), length="n")})
def spread(n, xs):
    odd = all_of(n == 4, total(xs) == 6, max_of(xs) == 3, min_of(xs) == 0, total(d * d for d in xs) == 18)
    return at_most(demand=select(odd, 1, 0), capacity=0)
"""


@pytest.mark.slow  # the bounded encoding at 100 entries (4-6 s); the spread test below keeps PHANTOM fast
def test_assumptions_only_the_abstraction_admits_are_not_a_proof(spec_file):
    """Three entries of f(d) = 2d + [d > 0] (values 0, 3, 5, 7, ...) never sum to 4, but the mapped
    facts and the affine envelope admit it (min 0, max 1, total 2): the probe's real batch [0, 1, 1]
    is not admitted, and the bounded encoding finds the assumptions vacuous (never 'proved')."""
    ob = {it.name: it for it in load_file(spec_file(PHANTOM, "adv_phantom.py"))}["phantom_only"]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.VACUOUS, (r.verdict, r.encoding_note)


def test_a_claim_false_only_at_a_batch_the_realiser_does_not_build_is_still_refuted(spec_file):
    """Four entries in 0..3 with total 6, max 3, min 0: [0, 1, 2, 3] (what realise builds, sum of
    squares 14) or [0, 0, 3, 3] (18). The claim fails only at the second: the abstract point is not
    realised, and the bounded encoding at 100 entries gives the counterexample, which replays."""
    ob = {it.name: it for it in load_file(spec_file(PHANTOM, "adv_spread.py"))}["spread"]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.encoding_note
    assert sorted(r.counterexample.params["xs"]) == [0, 0, 3, 3]
    holds, _, failed = replay(ob, r.counterexample.params)
    assert not holds and not failed


def test_a_real_capacity_obligation_moved_to_skipped_is_still_bounded():
    """proofs/bounds.json as committed, with one bounded obligation moved to ``skipped``."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "proofs", "bounds.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    target = "spec/runtime_indexers.py::margin_capacity_covers_worst_case"
    bounds = {e["id"]: e for e in data["bounds"]}
    assert target in bounds
    skipped = {e["id"] if isinstance(e, dict) else e for e in data["skipped"]}
    keys = {e["id"]: e["key"] for e in [*data["bounds"], *data["skipped"]] if isinstance(e, dict) and "key" in e}
    recorded = {
        "bounds": {k: v for k, v in bounds.items() if k != target},
        "skipped": skipped | {target},
        "keys": keys,
    }
    cwd = os.getcwd()
    try:
        os.chdir(root)
        # the record is forged to match the sources as they are now
        (ob,) = [ob for ob in load_file("spec/runtime_indexers.py") if ob.id == target]
        keys.update(_keys_now([ob]))
        run = run_bounds(["spec/runtime_indexers.py"], keyword="margin_capacity_covers_worst_case", recorded=recorded)
    finally:
        os.chdir(cwd)
    (result,) = [r for r in run.results if r.id == target]
    assert result.status == "bounded" and result.recomputed == "not in the recorded bounds"
    assert [c.to_json() for c in result.cases] == bounds[target]["cases"]


BOUND_CASES = [
    m
    for m in MAPPED
    if m[0]
    in (
        "neg",
        "neg_lower",
        "decreasing_no_padding",
        "halves",
        "round_up",
        "scaled_by_scalar",
        "scaled_by_length",
        "two_mapped",
        "own_minimum",
        "padding_fill_one",
    )
]


@pytest.mark.parametrize("name, expr, variant", BOUND_CASES, ids=[b[0] for b in BOUND_CASES])
def test_bounds_of_mapped_totals_agree_with_brute_force_and_certify(spec_file, name, expr, variant):
    """capproof bound on the same claims with capacity 20: the worst demand (aggregate method) and
    the minimum slack (either method) are the enumerated ones, and the record certifies as it is."""
    kw = {
        "nlo": 1,
        "size": 3,
        "lo": 0,
        "hi": 4,
        "length": '"n"',
        "fill": 0,
        "assume": "{}",
        **variant,
        "cap": "20",
        "expr": expr,
    }
    ob = {it.name: it for it in load_file(spec_file(TEMPLATE.format(**kw), f"adv_bound_{name}.py"))}["ob"]
    worst = _worst(ob)
    entry = json.loads(json.dumps(bound_obligation(ob).to_json()))
    # (a model whose padded run reads the padding is also bounded on each batch length alone)
    case, *alone = entry["cases"]
    assert all(c.get("alone") and c["status"] == "bounded" and c["min_slack"] >= 20 - worst for c in alone)
    assert not alone or case["method"] == "search"
    assert case["status"] == "bounded" and case["min_slack"] == 20 - worst
    if case["method"] == "aggregate":
        assert case["max_demand"] == worst
    assert check_obligation(ob, entry).to_json() == entry


ALIGN = """
from capproof import Choice, Range, Vector, at_most, obligation
from capproof.arith import total
from models.moe_align import align_writes, vllm_sorted_ids_capacity

D = {"numel": Range(0, 9), "num_experts": NE, "block_size_m": Choice(2, 3), "pad_sorted_ids": Choice(0, 1),
     "counts": Vector(3, Range(0, 3), length="num_experts")}

@obligation(domain=D, assumptions={"counted once": lambda counts, numel: total(counts) == numel})
def ob(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    post_pad, last_write = align_writes(counts, num_experts, block_size_m)
    return at_most(demand=WHAT - vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids), capacity=CAP)
"""


@pytest.mark.parametrize(
    "ne, what",
    [
        ("Range(1, 3)", "last_write + 1"),
        ("Choice(1, 2, 3)", "last_write + 1"),
        ("Range(1, 3)", "post_pad"),
        ("Range(0, 3)", "last_write + 1"),
    ],
)
def test_align_writes_fold_agrees_with_brute_force(spec_file, ne, what):
    """models/moe_align.py's align_writes (a fold with an invariant, proved by induction for every
    number of experts): the largest write (or padded total) past vLLM 0.33.0's capacity, enumerated
    over every routing of 0..3 experts with 0..3 tokens each: tight is never refuted, one less never
    proved."""

    def load(cap, tag):
        src = ALIGN.replace("NE", ne).replace("WHAT", what).replace("CAP", cap)
        return {it.name: it for it in load_file(spec_file(src, f"adv_align_{tag}.py"))}["ob"]

    worst = _worst(load("10**9", "top"))
    assert worst is not None and worst <= 0  # vLLM's sizing holds: nothing written past the buffer
    for cap, must_hold in ((worst, True), (worst - 1, False)):
        _sound(load(str(cap), "tight" if must_hold else "short"), must_hold, Options(density="off"))


CASEWISE = """
from capproof import Choice, Range, at_most, equal, obligation

@obligation(domain={"mode": Choice(2, 1), "a": Range(0, 9)})
def casewise(mode, a):
    if mode == 1:
        return at_most(demand=a, capacity=8)
    return equal(left=a, right=a)
"""


def test_a_skip_is_confirmed_in_every_case_not_only_the_first_value(spec_file):
    """The claim is a capacity claim only for mode 1 (Choice(2, 1): not its first listed value)."""
    path = spec_file(CASEWISE, "adv_casewise.py")
    (ob,) = load_file(path)
    run = run_bounds([path], recorded={"bounds": {}, "skipped": {ob.id}, "keys": _keys_now([ob])})
    assert [r.status for r in run.results] != ["skipped"]
