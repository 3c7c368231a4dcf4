"""capproof bound: certified worst demand, minimal capacity and slack, replayed on ints."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import obligation_named

from capproof.bound import bound_obligation, capacity_relation, render_bounds_report
from capproof.cli import main
from capproof.loader import load_file
from capproof.prover import replay


def _bound(spec: str, name: str, **pins):
    return bound_obligation(obligation_named(spec, name), pins)


def test_relation_parsing_reads_less_than_as_capacity_minus_one():
    assert capacity_relation("demand <= capacity") == ("demand", "capacity", 0)
    assert capacity_relation("column < W_bt") == ("column", "W_bt", 1)
    assert capacity_relation("W_buf == W_bt") is None
    assert capacity_relation("") is None


def test_slot_mapping_block64_dcp1_worst_column_and_zero_slack():
    r = _bound("spec/vllm_block_table.py", "slot_mapping_reads_within_runner_width_v0_33", block_size=64, dcp=1)
    assert r.status == "bounded" and r.ok
    (c,) = r.cases
    # (L - 1) // 64 is largest at L = 2**21: 32767; the smallest L reaching it is 32767 * 64 + 1
    assert (c.max_demand, c.min_capacity) == (32767, 32768)
    assert c.demand_point == {"max_model_len": 2097089, "block_size": 64, "dcp": 1}
    assert c.capacity_at_demand_point == 32768
    assert (c.min_slack, c.slack_pct, c.insufficient) == (0, 0.0, False)
    holds, values, failed = replay(
        r_ob := obligation_named("spec/vllm_block_table.py", "slot_mapping_reads_within_runner_width_v0_33"),
        c.slack_point,
    )
    assert holds and not failed and values["W_bt"] - 1 - values["column"] == 0, r_ob.id


def test_margin_capacity_minimum_slack_is_one_row_at_worst_case_9():
    r = _bound("spec/runtime_indexers.py", "margin_capacity_covers_worst_case")
    (c,) = r.cases
    assert c.max_demand == 2**40 - 1 and c.min_capacity == 2**40
    # 9 * 11 // 10 + 1 = 10 rows for indices up to 8: slack 1 (12.5% of 8); w // 10 + 1 >= 1 everywhere
    assert (c.min_slack, c.slack_point, c.slack_pct) == (1, {"worst_case": 9, "index": 8}, 12.5)
    assert r.ok and r.insufficient == 0


def test_margin_any_demand_is_insufficient_as_expected():
    r = _bound("spec/runtime_indexers.py", "margin_capacity_covers_any_demand")
    (c,) = r.cases
    assert c.insufficient and c.min_slack == 1 - 2**41
    assert c.slack_point == {"worst_case": 0, "demand": 2**41}
    assert r.ok  # expected counterexample, and the bound shows an insufficient capacity


def test_equality_claims_are_skipped():
    r = _bound("spec/vllm_dsa_indexer.py", "ebt_width_matches_runner_before_50302")
    assert r.status == "skipped" and r.ok


SPEC = """
from capproof import Choice, Range, at_most, cdiv, less_than, obligation

@obligation(domain={"n": Range(1, 1000), "k": Choice(2, 4)})
def doubled(n, k):
    return at_most(demand=n, capacity=cdiv(n, k) * k * 2)

@obligation(domain={"n": Range(1, 1000)})
def index_fits(n):
    return less_than(index=n - 1, capacity=n)

@obligation(domain={"x": Range(2, 10**6), "y": Range(2, 10**6)})
def product_demand(x, y):
    return at_most(demand=x * y, capacity=10**12)

@obligation(domain={"x": Range(2, 2 * 10**9), "y": Range(2, 2 * 10**9)}, rlimit=2_000_000,
            assumptions={"x * y is 1000000007 * 1000000009": lambda x, y: x * y == 1000000016000000063})
def factor_demand(x, y):
    return at_most(demand=x, capacity=2 * 10**9)

@obligation(domain={"x": Range(1, 10**6)}, rlimit=1)
def tiny_budget(x):
    return at_most(demand=x, capacity=10**6)

@obligation(domain={"n": Range(1, 10)}, assumptions={"never": lambda n: n > 10})
def nothing_admitted(n):
    return at_most(demand=n, capacity=n)
"""


def _spec(spec_file):
    items = load_file(spec_file(SPEC))
    return {it.name: it for it in items}


def test_waste_flag_and_witnesses_are_replayed(spec_file):
    ob = _spec(spec_file)["doubled"]
    r = bound_obligation(ob, waste_threshold=50)
    assert r.status == "bounded" and r.ok
    k2 = r.cases[0]
    assert k2.fixed == {"k": 2}
    assert (k2.max_demand, k2.min_capacity, k2.capacity_at_demand_point) == (1000, 1000, 2000)
    # slack = 2 * round_up(n, 2) - n: n for even n, n + 2 for odd n; least (2) at n = 2, i.e. 100%
    assert (k2.min_slack, k2.demand_at_slack_point, k2.slack_pct) == (2, 2, 100.0)
    assert k2.slack_point == {"n": 2, "k": 2}
    assert k2.wasteful and r.wasteful == 2
    assert not bound_obligation(ob, waste_threshold=500).wasteful


def test_less_than_uses_capacity_minus_one(spec_file):
    r = bound_obligation(_spec(spec_file)["index_fits"])
    (c,) = r.cases
    assert (c.max_demand, c.min_capacity, c.min_slack) == (999, 1000, 0)


def test_easy_nonlinear_optimum_is_certified(spec_file):
    r = bound_obligation(_spec(spec_file)["product_demand"])
    (c,) = r.cases
    assert r.status == "bounded" and (c.max_demand, c.min_slack) == (10**12, 0)


@pytest.mark.parametrize("name", ["factor_demand", "tiny_budget"])
def test_out_of_budget_is_unknown_never_a_bound(spec_file, name):
    r = bound_obligation(_spec(spec_file)[name])
    assert r.status == "unknown" and not r.ok
    assert all(c.max_demand is None and c.min_slack is None for c in r.cases)
    assert "unknown" in r.message


def test_vacuous_when_nothing_admitted(spec_file):
    r = bound_obligation(_spec(spec_file)["nothing_admitted"])
    assert r.status == "vacuous" and not r.ok


def test_cli_json_exit_codes_and_check(project):
    (project / "spec" / "caps.py").write_text(
        SPEC.replace('@obligation(domain={"x"', "@obligation(domain={'x'").split("@obligation(domain={'x'")[0]
    )
    runner = CliRunner()
    out = runner.invoke(main, ["bound", "--json", "-"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [b["id"].split("::")[1] for b in data["bounds"]] == ["doubled", "index_fits"]
    assert data["bounds"][0]["max_demand"] == 1000
    assert runner.invoke(main, ["bound", "--check"]).exit_code == 1  # no proofs/bounds.md yet
    assert runner.invoke(main, ["bound", "--write"]).exit_code == 0
    assert runner.invoke(main, ["bound", "--check"]).exit_code == 0
    text = (project / "proofs" / "bounds.md").read_text()
    assert text == render_bounds_report(data["bounds"])
    assert runner.invoke(main, ["bound", "--check", "-k", "doubled"]).exit_code == 2  # usage error


def test_cli_bad_pin_and_nothing_to_bound_exit_2(project):
    (project / "spec" / "caps.py").write_text(SPEC)
    runner = CliRunner()
    bad = runner.invoke(main, ["bound", "--set", "nope=3"])
    assert bad.exit_code == 2 and "nope" in bad.output
    none = runner.invoke(main, ["bound", "-k", "no_such_obligation"])
    assert none.exit_code == 2 and "nothing to bound" in none.output


# --- one-sided claims over batches (Vector parameters): tightness -----------------------

VECTOR_SPEC = """
from capproof import Choice, Range, Vector, at_most, less_than, obligation
from capproof.arith import max_of, round_up, total
from models.moe_align import num_tokens_post_pad, vllm_sorted_ids_capacity

COUNTED = {"counted once": lambda counts, numel: total(counts) == numel}
MOE = {"numel": Range(1, 24), "num_experts": Choice(4), "block_size_m": Choice(4), "pad_sorted_ids": Choice(0),
       "counts": Vector(4, Range(0, 24), length="num_experts")}

@obligation(domain=MOE, assumptions=COUNTED)
def moe_tight(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    return at_most(num_tokens_post_pad=num_tokens_post_pad(counts, block_size_m),
                   capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids))

@obligation(domain=MOE, assumptions=COUNTED)
def moe_capacity_raised(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    return at_most(num_tokens_post_pad=num_tokens_post_pad(counts, block_size_m),
                   capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids) + 1)

@obligation(domain=MOE, assumptions=COUNTED)
def moe_demand_lowered(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    return at_most(num_tokens_post_pad=total(round_up(c, block_size_m) for c in counts) - 2,
                   capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids))

@obligation(domain=MOE, assumptions=COUNTED, expect="counterexample")
def moe_capacity_lowered(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    return at_most(num_tokens_post_pad=num_tokens_post_pad(counts, block_size_m),
                   capacity=vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids) - 3)

@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(0, 5), length="n")})
def batch_total(n, lens):
    return less_than(index=total(lens) + max_of(lens), capacity=22)
"""


def _moe_truth(counts_bound=24, experts=4, block=4):
    """Brute-force minimum slack of the small MoE model: every routing of numel <= 24 over 4 experts."""
    import itertools

    from models.moe_align import num_tokens_post_pad, vllm_sorted_ids_capacity

    slacks = [
        vllm_sorted_ids_capacity(sum(c), experts, block, 0) - num_tokens_post_pad(c, block)
        for c in itertools.product(range(counts_bound + 1), repeat=experts)
        if 1 <= sum(c) <= counts_bound
    ]
    return min(slacks)


@pytest.fixture(scope="module")
def vector_bounds(tmp_path_factory):
    import os

    from conftest import ROOT

    from capproof.loader import ensure_project_on_path

    path = tmp_path_factory.mktemp("vec") / "spec_vectors.py"
    path.write_text(VECTOR_SPEC)
    os.chdir(ROOT)
    ensure_project_on_path(ROOT)
    items = load_file(str(path))
    return {ob.name: bound_obligation(ob) for ob in items}


def test_moe_align_bound_is_tight_and_matches_brute_force(vector_bounds):
    """The per-expert round_up sum is refused by the aggregate abstraction: the search runs on the
    bounded encoding and certifies minimum slack 0 (brute force over every routing agrees)."""
    r = vector_bounds["moe_tight"]
    assert r.status == "bounded" and r.ok, r.message
    (c,) = r.cases
    assert c.method == "search" and c.slack_exact and c.min_slack == 0 == _moe_truth()
    assert c.max_demand is None  # not computed on the bounded encoding
    holds, values, failed = replay(load_file_ob(r), c.slack_point)
    assert holds and not failed and values["capacity"] - values["num_tokens_post_pad"] == 0


def load_file_ob(r):
    from capproof.loader import load_file as lf

    return next(ob for ob in lf(r.file) if ob.id == r.id)


@pytest.mark.parametrize("name, slack", [("moe_capacity_raised", 1), ("moe_demand_lowered", 2)])
def test_raising_a_moe_capacity_or_lowering_its_demand_is_noticed(vector_bounds, name, slack):
    """Both mutants still prove (one-sided claim); the bound's minimum slack moves from 0, so
    proofs/bounds.md changes and `bound --check` fails (the issue's mutation-testing gap)."""
    (c,) = vector_bounds[name].cases
    assert c.status == "bounded" and c.slack_exact and c.min_slack == slack


def test_an_insufficient_moe_capacity_is_flagged_with_a_replayed_failing_point(vector_bounds):
    r = vector_bounds["moe_capacity_lowered"]
    (c,) = r.cases
    assert r.ok and c.insufficient and not c.slack_exact
    assert -3 <= c.min_slack < 0  # the smallest failing point's slack: an upper bound of the minimum (-3)
    holds, values, failed = replay(load_file_ob(r), c.slack_point)
    assert not holds and not failed and values["capacity"] - values["num_tokens_post_pad"] == c.min_slack


def test_a_batch_claim_on_the_aggregate_abstraction_gets_exact_bounds(vector_bounds):
    """total + max over batches of 1..3 entries in 0..5: worst 15 + 5 = 20, min slack 21 - 20 = 1."""
    r = vector_bounds["batch_total"]
    (c,) = r.cases
    assert c.method == "aggregate" and (c.max_demand, c.min_capacity, c.min_slack) == (20, 21, 1)
    holds, values, failed = replay(load_file_ob(r), c.demand_point)
    assert holds and values["index"] == 20


@pytest.mark.slow
def test_bounds_report_is_the_same_for_any_jobs():
    """Each obligation is bounded in its own process from a fresh Z3 context."""
    runner = CliRunner()
    args = ["bound", "spec/specdec_graphs.py", "spec/moe_align.py", "--json", "-", "-k", "arange_covers or wna16"]
    one = runner.invoke(main, [*args, "-j", "1"])
    two = runner.invoke(main, [*args, "-j", "2"])
    assert one.exit_code == two.exit_code == 0, one.output
    assert json.loads(one.output) == json.loads(two.output)


CRASHING = (
    SPEC
    + """
import os

@obligation(domain={"n": Range(1, 10)})
def process_dies(n):
    os._exit(3)
"""
)


@pytest.mark.slow  # bounds every obligation twice; test_batching checks batched against alone in the fast tier
def test_obligations_bounded_several_to_a_process_equal_each_bounded_alone(spec_file):
    """Obligations without vectors are bounded several to a process (the runner's batches, each from a
    fresh Z3 context): the bounds are those of each obligation bounded alone in a fresh context, for any -j."""
    import z3

    from capproof.bound import _bound_all, _weight

    obs = list(_spec(spec_file).values())
    assert [_weight(ob) for ob in obs] == [0.0] * len(obs)  # (no vector: batched)
    alone = []
    previous = z3.z3._main_ctx
    try:
        for ob in obs:
            z3.z3._main_ctx = None
            alone.append(bound_obligation(ob).to_json())
    finally:
        z3.z3._main_ctx = previous  # later tests hold terms of this process's context
    for jobs in (1, 2):
        assert [r.to_json() for r in _bound_all(obs, {}, 20_000_000, 100.0, jobs)] == alone


def test_a_dying_bound_process_is_an_error_for_its_obligations_only(spec_file):
    from capproof.bound import _bound_all

    obs = [it for it in load_file(spec_file(CRASHING))]
    results = {r.id.split("::")[1]: r for r in _bound_all(obs, {}, 20_000_000, 100.0, 2)}
    assert results["process_dies"].status == "error" and "exited with code 3" in results["process_dies"].message
    # obligations sent to the same process before it died keep their bounds
    assert results["doubled"].status == "bounded" and results["index_fits"].status == "bounded"


def test_a_vector_obligation_gets_a_process_of_its_own():
    """The routings over 1024 experts take seconds each: alone in a process of the runner's pool,
    largest first; the others batched."""
    import os

    from conftest import ROOT

    from capproof.bound import _bound_fresh, _error_bound, _weight
    from capproof.loader import ensure_project_on_path
    from capproof.obligation import Obligation
    from capproof.runner import BATCH_ITEMS, Task, _task_order, _units

    os.chdir(ROOT)
    ensure_project_on_path()
    items = [it for it in load_file("spec/moe_align.py") if isinstance(it, Obligation)]
    vectors = [i for i, ob in enumerate(items) if any(getattr(d, "size", 0) for d in ob.domain.values())]
    task = Task("bound", _bound_fresh, _error_bound, _weight)
    work = [("bound", ob) for ob in items]
    chunks = _units(work, _task_order(items, task), {}, True, set(), task)
    assert all(len(c) <= BATCH_ITEMS for c in chunks)
    assert vectors and chunks[: len(vectors)] == [
        [i] for i in sorted(vectors, key=lambda i: -sum(getattr(d, "size", 0) for d in items[i].domain.values()))
    ]
    assert sorted(i for c in chunks for i in c) == list(range(len(items)))


def test_bounding_in_process_leaves_the_callers_z3_context_alone(tmp_path):
    """`bound -j 1` runs in the caller's process, each obligation from a fresh Z3 context; the
    caller's terms must stay usable afterwards (they broke every later test of a pytest run)."""
    import z3

    from capproof.bound import _bound_fresh
    from capproof.loader import load_file

    spec = tmp_path / "spec_ctx.py"
    spec.write_text(
        "from capproof import Range, at_most, obligation\n"
        "@obligation(domain={'n': Range(1, 64)})\n"
        "def fits(n):\n"
        "    return at_most(demand=n, capacity=64)\n"
    )
    x = z3.Int("x")
    before = z3.main_ctx()
    (item,) = load_file(str(spec))
    result = _bound_fresh(getattr(item, "obligation", item), {}, 20_000_000, 0.5)
    assert result.status != "error", result
    assert z3.main_ctx() is before
    s = z3.Solver()
    s.add(x > 3)
    assert s.check() == z3.sat


STATEFUL = """
from capproof import Range, at_most, obligation
import time

SEEN = []

@obligation(domain={"n": Range(1, 10)})
def slow(n):
    time.sleep(30)
    return at_most(demand=n, capacity=10)

@obligation(domain={"n": Range(1, 10)})
def remembers(n):
    SEEN.append(1)
    return at_most(demand=n, capacity=10)

@obligation(domain={"n": Range(1, 10)})
def plain(n):
    return at_most(demand=n, capacity=10)
"""


def test_bounding_gets_the_runners_time_limit_and_state_check(project):
    """Bounds are computed in the runner's processes: an obligation over the time limit is an error
    (its process killed), one that changes module state is an error, the others keep their bounds."""
    from capproof.bound import _bound_all

    (project / "spec" / "stateful.py").write_text(STATEFUL)
    obs = [it for it in load_file("spec/stateful.py")]
    results = {r.id.split("::")[1]: r for r in _bound_all(obs, {}, 20_000_000, 100.0, 2, timeout=2.0)}
    assert results["slow"].status == "error" and "time limit" in results["slow"].message
    assert results["remembers"].status == "error" and "module state changed" in results["remembers"].message
    assert results["plain"].status == "bounded" and results["plain"].worst.max_demand == 10
