"""The prover on models that branch on symbolic values: one problem per execution path, the
path condition labelled in the unsat core and the counterexample, a fork budget."""

from __future__ import annotations

import json

from capproof import Options, Verdict
from capproof.encode import build_case, build_paths
from capproof.loader import load_file
from capproof.prover import prove_obligation, replay
from capproof.report import _obligation_md, terminal_lines

HEADER = "from capproof import Range, Choice, obligation, at_most, equal, less_than, cdiv\n"


def _ob(spec_file, text, name=None, module="spec_under_test.py"):
    items = load_file(spec_file(HEADER + text, module))
    assert not hasattr(items, "message"), items
    return items[0] if name is None else next(i for i in items if i.name == name)


BRANCHY = """
def width(dcp, max_model_len, block_size):
    # vLLM-style: a dcp > 1 layout multiplies the block size (vllm/v1/worker/block_table.py shape)
    if dcp > 1:
        block_size = block_size * dcp
    return cdiv(max_model_len, block_size)

@obligation(domain={"dcp": Range(1, 8), "max_model_len": Range(1, 4096), "block_size": Choice(16, 32)})
def columns_fit(dcp, max_model_len, block_size):
    return at_most(demand=width(dcp, max_model_len, block_size), capacity=cdiv(max_model_len, block_size))
"""


def test_a_branching_model_is_proved_path_by_path_with_labelled_path_conditions(spec_file):
    ob = _ob(spec_file, BRANCHY)
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    assert r.cases == 2 and r.paths == 4
    assert json.loads(json.dumps(r.to_json()))["paths"] == 4
    ob = _ob(
        spec_file,
        """
def rows(dcp, n):
    if dcp > 1:
        return n * dcp   # one row per rank
    return n

@obligation(domain={"dcp": Range(1, 8), "n": Range(0, 4096)})
def rows_fit(dcp, n):
    return at_most(demand=n * dcp, capacity=rows(dcp, n))
""",
        module="spec_rows.py",
    )
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    # on the dcp <= 1 path, n * dcp <= n needs the path condition: the core names it and the model line
    labels = [a for a in r.assumptions_used if a.startswith("path: ")]
    assert len(labels) == 1 and labels[0].startswith("path: dcp <= 1 at ") and labels[0].endswith("spec_rows.py:4"), (
        labels
    )
    # shown in the terminal, the JSON and the proofs/ report
    entry = r.to_json()
    assert entry["assumptions_used"] == r.assumptions_used and entry["paths"] == 2
    shown = "\n".join(terminal_lines(entry))
    assert "path conditions in the proof: dcp <= 1 at " in shown
    md = "\n".join(_obligation_md(entry))
    assert "Execution paths" in md and f"`{labels[0][len('path: ') :]}`" in md
    assert (
        "Domain bounds the proof used" not in md
        or labels[0] not in md.split("Domain bounds the proof used")[1].split("Execution")[0]
    )


def test_a_wrong_claim_on_one_path_only_is_found_and_replayed(spec_file):
    ob = _ob(
        spec_file,
        """
def slots(n, spec):
    if spec > 0 and n > 100:
        return n + spec + 1   # one slot more than the buffer on this path only
    return n + spec

@obligation(domain={"n": Range(1, 1000), "spec": Range(0, 4)}, expect="counterexample")
def slots_fit(n, spec):
    return at_most(demand=slots(n, spec), capacity=n + spec)
""",
    )
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    cex = r.counterexample
    assert cex.params == {"n": 101, "spec": 1}  # smallest point on the failing path
    assert "n > 100" in cex.path or "100 < n" in cex.path, cex.path
    assert "on path" in r.message
    holds, values, failed = replay(ob, cex.params)
    assert not holds and not failed and values == cex.values
    assert r.to_json()["counterexample"]["path"] == cex.path


def test_paths_partition_the_case_exactly_one_condition_holds_at_every_point(spec_file):
    import z3

    ob = _ob(spec_file, BRANCHY)
    cp = build_paths(ob, {"block_size": 16}, {"dcp": ob.domain["dcp"], "max_model_len": ob.domain["max_model_len"]}, {})
    assert cp.complete and not cp.failures and len(cp.paths) == 2
    for dcp in range(1, 9):
        for mml in (1, 15, 16, 17, 4096):
            sub = [(z3.Int("dcp"), z3.IntVal(dcp)), (z3.Int("max_model_len"), z3.IntVal(mml))]
            holding = [c for c in cp.paths if z3.is_true(z3.simplify(z3.substitute(c.path.condition.term, *sub)))]
            assert len(holding) == 1


def test_merged_case_for_analyses_is_equivalent_to_the_paths(spec_file):
    import z3

    ob = _ob(spec_file, BRANCHY)
    case = build_case(
        ob, {"block_size": 16}, {"dcp": ob.domain["dcp"], "max_model_len": ob.domain["max_model_len"]}, {}
    )
    demand = case.ev.claim.values["demand"]
    for dcp, mml in ((1, 17), (2, 17), (3, 4096), (8, 1)):
        sub = [(z3.Int("dcp"), z3.IntVal(dcp)), (z3.Int("max_model_len"), z3.IntVal(mml))]
        bs = 16 * dcp if dcp > 1 else 16
        assert z3.simplify(z3.substitute(demand.term, *sub)).as_long() == -(-mml // bs)


def test_fork_budget_exceeded_is_unknown_never_proved(spec_file):
    ob = _ob(
        spec_file,
        """
@obligation(domain={"a": Range(0, 9), "b": Range(0, 9), "c": Range(0, 9)}, fork_budget=3)
def many_paths(a, b, c):
    total = 0
    for v in (a, b, c):
        if v > 4:
            total += 1
    return total <= 3
""",
    )
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.UNKNOWN
    assert "fork budget of 3" in r.message
    r = prove_obligation(ob, Options(fork_budget=64))
    assert r.verdict is Verdict.UNKNOWN  # the obligation's own budget wins
    ob.fork_budget = None
    r = prove_obligation(ob, Options(fork_budget=8))
    assert r.verdict is Verdict.PROVED and r.paths == 8


def test_a_path_that_raises_is_an_error_unless_the_assumptions_exclude_it(spec_file):
    ob = _ob(
        spec_file,
        """
def per_block(n, k):
    if k < 1:
        raise ValueError("k must be positive")
    return n // k

@obligation(domain={"n": Range(0, 100), "k": Range(0, 8)}, assumptions={"k positive": lambda k: k >= 1})
def guarded(n, k):
    return at_most(demand=per_block(n, k), capacity=n)

@obligation(domain={"n": Range(0, 100), "k": Range(0, 8)})
def unguarded(n, k):
    return at_most(demand=per_block(n, k), capacity=n)
""",
    )
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    assert "k positive" in r.assumptions_used
    items = load_file(ob.file if ob.file.startswith("/") else ob.file)
    un = next(i for i in items if i.name == "unguarded")
    r = prove_obligation(un, Options())
    assert r.verdict is Verdict.ERROR and "k must be positive" in r.message and "on path" in r.message


def test_infeasible_paths_are_excluded_not_proved(spec_file):
    ob = _ob(
        spec_file,
        """
@obligation(domain={"x": Range(0, 10)}, assumptions={"x big": lambda x: x >= 5})
def only_infeasible_branch_is_wrong(x):
    if x < 3:
        return False   # wrong, but no admitted point takes this path
    return x >= 0
""",
    )
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    assert r.paths == 2


def test_trigger_witnesses_are_searched_on_every_path(spec_file):
    ob = _ob(
        spec_file,
        """
def rows(n, spec):
    if spec > 1:
        return n * 2 + spec      # the wide layout: overflows when n > 10
    return n + spec

@obligation(domain={"n": Range(0, 40), "spec": Range(0, 3)}, expect="counterexample",
            witnesses={"wide layout": lambda spec: spec > 1})
def rows_fit(n, spec):
    return at_most(demand=rows(n, spec), capacity=n + 10 + spec)
""",
        module="spec_witness_paths.py",
    )
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.counterexample.params == {"n": 11, "spec": 2}
    (w,) = r.witnesses
    assert w.found and w.params["spec"] >= 2
    holds, _, failed = replay(ob, w.params)
    assert not holds and not failed
