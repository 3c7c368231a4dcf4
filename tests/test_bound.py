"""capproof bound: certified worst demand, minimal capacity and slack, replayed on ints."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from capproof.bound import bound_obligation, capacity_relation, render_bounds_report
from capproof.cli import main
from capproof.loader import load_file
from capproof.prover import replay
from conftest import obligation_named


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
    holds, values, failed = replay(r_ob := obligation_named("spec/vllm_block_table.py", "slot_mapping_reads_within_runner_width_v0_33"), c.slack_point)
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


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "spec").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_json_exit_codes_and_check(project):
    (project / "spec" / "caps.py").write_text(SPEC.replace("@obligation(domain={\"x\"", "@obligation(domain={'x'")
                                              .split("@obligation(domain={'x'")[0])
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
