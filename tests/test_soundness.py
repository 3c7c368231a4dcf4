"""Holes in capproof's own soundness, each an attempt to obtain a wrong verdict.

Every test here failed on main before its fix: a silently accepted contradictory pin, a message
pointing into capproof's or Z3's code, a witness or density line that says less than it seems to.
The attempts at a wrong verdict (S1-S3, batches, forks) are in tests/test_adversarial.py.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from capproof import Options, Verdict
from capproof.cli import main
from capproof.loader import load_file
from capproof.prover import prove_obligation

HEADER = (
    "import math\n"
    "from capproof import Range, Choice, Vector, obligation, at_most, less_than, equal, claim, select, "
    "min_of, max_of, total, count\n"
)


def decide(path, name, **options):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    ob = next(i for i in items if i.name == name)
    return ob, prove_obligation(ob, Options(**options))


# --- error messages point at the spec line ----------------------------------------------------

LOCATIONS = (
    HEADER
    + """
D = {"x": Range(1, 10)}

@obligation(domain=D)
def string_capacity(x):
    return at_most(demand=x, capacity="10")

@obligation(domain=D)
def list_times_int(x):
    return at_most(demand=x * [1], capacity=100)

@obligation(domain=D)
def none_operand(x):
    return at_most(demand=x * None, capacity=100)

@obligation(domain=D)
def raw_z3_term(x):
    import z3
    return at_most(demand=x + z3.Int("y"), capacity=100)

@obligation(domain=D)
def missing_attribute(x):
    return at_most(demand=x.numerator_of_a_float, capacity=100)
"""
)


@pytest.mark.parametrize(
    "name, line",
    [
        ("string_capacity", 8),
        ("list_times_int", 12),
        ("none_operand", 16),
        ("raw_z3_term", 21),
        ("missing_attribute", 25),
    ],
)
def test_errors_name_the_spec_line_not_capproof_or_z3(spec_file, name, line):
    path = spec_file(LOCATIONS)
    _, r = decide(path, name)
    assert r.verdict is Verdict.ERROR
    assert f"{os.path.relpath(path)}:{line}" in r.message, r.message
    for inside in ("symbolic.py", "z3core.py", "z3.py", "arith.py", "encode.py"):
        assert inside not in r.message, r.message


# --- command line: pins ------------------------------------------------------------------------

GOOD = """
from capproof import Range, obligation, at_most

@obligation(domain={"g": Range(1, 8), "x": Range(0, 100)}, expect="counterexample")
def grows(g, x):
    return at_most(demand=x * 2, capacity=x + g)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "good.py").write_text(textwrap.dedent(GOOD))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_parameter_pinned_twice_is_bad_input(project):
    result = CliRunner().invoke(main, ["prove", "--set", "g=3", "--set", "g=4"])
    assert result.exit_code == 2
    assert "g pinned twice (g=3 and g=4)" in result.output


def test_an_unknown_pin_stops_before_proving(project):
    result = CliRunner().invoke(main, ["prove", "--set", "gg=3"])
    assert result.exit_code == 2
    assert "no selected obligation has a parameter named 'gg'" in result.output
    assert "spec/good.py::grows" not in result.output  # nothing was proved first


def test_pinned_density_labels_the_pinned_parameter(project):
    """main: ``g over 1..8: fails for …`` under ``--set g=3`` read as a fact about the pinned run."""
    result = CliRunner().invoke(main, ["prove", "--set", "g=3", "--json", "-"])
    density = json.loads(result.output)["obligations"][0]["density"]
    assert density["pinned_params"] == ["g"]
    text = CliRunner().invoke(main, ["prove", "--set", "g=3"]).output
    assert "g over 1..8 (pinned in this run; varied here, the others held): fails for" in text
    assert "x over 0..100: fails for" in text


# --- witnesses ---------------------------------------------------------------------------------

WITNESS = (
    HEADER
    + """
@obligation(domain={"width": Range(1, 100), "num_reqs": Range(1, 8), "padded": Range(1, 16)},
            assumptions={"padding only adds": lambda num_reqs, padded: padded >= num_reqs},
            witnesses={"raises": lambda num_reqs, padded: padded > num_reqs},
            expect="counterexample")
def widths_match(width, num_reqs, padded):
    return equal(W_buf=width - (width % 2), W_bt=width)
"""
)


def test_witness_lines_show_every_parameter(spec_file):
    from capproof.report import terminal_lines

    _, r = decide(spec_file(WITNESS), "widths_match")
    line = next(x for x in terminal_lines(r.to_json()) if "trigger witness" in x)
    # main showed only "padded=2 (...)": width=1 and num_reqs=1 equal the counterexample's were left out
    assert "width=1, num_reqs=1, padded=2 (W_buf=0, W_bt=1)" in line


def test_a_witness_whose_minimisation_ran_out_is_labelled(spec_file, monkeypatch):
    """An unknown answer during the witness's minimisation (simulated: each binary-search step
    reports unknown) keeps the point found, labelled; main dropped the flag."""
    import capproof.minimize as minimize
    import capproof.prover as prover

    monkeypatch.setattr(minimize, "minimize_term", lambda s, model, term, lo, best=None: (model, False))
    # unseeded: the shrunk first counterexample (1, 1, 1) sits at every lower bound, so a seeded
    # minimisation asks no query and is rightly minimised (tests/test_shrink.py)
    monkeypatch.setattr(prover._First, "seed", lambda self: None)
    from capproof.report import terminal_lines

    _, r = decide(spec_file(WITNESS), "widths_match")
    (w,) = r.witnesses
    assert w.found and w.minimized is False
    assert r.counterexample.minimized is False
    line = next(x for x in terminal_lines(r.to_json()) if "trigger witness" in x)
    assert "not minimised" in line


# --- bound ------------------------------------------------------------------------------------


def test_bound_never_prints_minus_zero_percent(project):
    (project / "spec" / "tight.py").write_text(
        textwrap.dedent("""
        from capproof import Range, obligation, at_most

        @obligation(domain={"x": Range(1, 10**6)}, expect="counterexample")
        def one_short(x):
            return at_most(demand=x, capacity=x - (x // 10**6))
    """)
    )
    result = CliRunner().invoke(main, ["bound", "spec/tight.py"])
    assert "-0.00%" not in result.output
    assert "-0.0001%" in result.output, result.output


# --- a model that never returns, exits the process, or keeps state ----------------------------

RUNAWAY = """
import os
from capproof import Range, obligation, at_most

@obligation(domain={"x": Range(0, 10)})
def loops_forever(x):
    while True:
        pass

@obligation(domain={"x": Range(0, 10)})
def exits_the_process(x):
    os._exit(0)

@obligation(domain={"x": Range(0, 10)})
def fine(x):
    return at_most(demand=x, capacity=10)
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_endless_loop_and_os_exit_are_errors_and_the_run_goes_on(project, jobs):
    """main: -j 1 hangs on the loop; os._exit(0) ends the run with exit 0 and no summary (-j 1)
    or a BrokenProcessPool traceback (-j 2)."""
    (project / "spec" / "runaway.py").write_text(textwrap.dedent(RUNAWAY))
    result = CliRunner().invoke(main, ["prove", "spec/runaway.py", "--timeout", "3", "-j", jobs, "--json", "-"])
    assert result.exit_code == 2
    data = json.loads(result.output)
    verdicts = {o["id"].split("::")[1]: (o["verdict"], o["message"]) for o in data["obligations"]}
    assert verdicts["loops_forever"][0] == "error" and "time limit" in verdicts["loops_forever"][1]
    assert verdicts["exits_the_process"][0] == "error" and "exited with code 0" in verdicts["exits_the_process"][1]
    assert verdicts["fine"] == ("proved", verdicts["fine"][1])
    assert data["summary"]["exit_code"] == 2


SHARED_STATE = """
from capproof import Range, obligation, at_most

SEEN = {"slack": 0}

@obligation(domain={"x": Range(0, 10)})
def a_sets_state(x):
    SEEN["slack"] = 5
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def b_reads_state(x):
    return at_most(demand=x, capacity=10 - SEEN["slack"])
"""


@pytest.mark.parametrize("args", [[], ["-j", "2"], ["-k", "b_reads"]])
def test_module_state_shared_between_obligations_cannot_move_a_verdict(project, args):
    """main: b_reads_state is a counterexample after a_sets_state ran in the same process
    (-j 1, or -j 2 when one worker takes both) and proved alone (-k): the verdict depended on the
    run. Now each obligation starts from the loaded module, and one that changes module state is
    an error."""
    (project / "spec" / "state.py").write_text(textwrap.dedent(SHARED_STATE))
    result = CliRunner().invoke(main, ["prove", "spec/state.py", "--json", "-", *args])
    verdicts = {o["id"].split("::")[1]: o for o in json.loads(result.output)["obligations"]}
    assert verdicts["b_reads_state"]["verdict"] == "proved"
    if "a_sets_state" in verdicts:
        a = verdicts["a_sets_state"]
        assert a["verdict"] == "error" and "module state changed" in a["message"] and "SEEN" in a["message"]


# --- claims that can fail ------------------------------------------------------------------------


def test_less_than_checks_the_lower_bound_of_an_index(spec_file):
    """main: column -1 passed ``less_than`` (only ``column < columns`` was checked)."""
    ob, r = decide(
        spec_file(
            HEADER
            + """
@obligation(domain={"pos": Range(0, 100)}, expect="counterexample")
def column_fits(pos):
    return less_than(column=pos - 1, columns=128)
"""
        ),
        "column_fits",
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE
    assert r.counterexample.values == {"column": -1, "columns": 128}
    assert r.relation == "0 <= column < columns"
    assert r.message.startswith("0 <= column < columns fails: column=-1, columns=128")


def test_an_assumption_that_restates_the_claim_is_reported(spec_file):
    """main: proved, with the assumption as the whole unsat core and nothing said. Engine facts can
    be equivalent to a claim (a scheduler's token budget), so it stays proved, labelled."""
    _, r = decide(
        spec_file(
            HEADER
            + """
from capproof import round_up
@obligation(domain={"num_tokens": Range(1, 8192), "graph_size": Range(1, 8192)},
            assumptions={"graph covers the batch": lambda num_tokens, graph_size: round_up(num_tokens, 8) <= graph_size})
def graph_fits(num_tokens, graph_size):
    return at_most(padded=round_up(num_tokens, 8), graph=graph_size)
"""
        ),
        "graph_fits",
    )
    assert r.verdict is Verdict.PROVED
    assert r.restating == ["graph covers the batch"]
    assert "assumption 'graph covers the batch' restates the claim" in r.message


def test_an_assumption_the_claim_follows_from_is_still_a_proof(spec_file):
    """The claim follows from the assumption through the formula (cdiv(2**20, 16) = 2**16), but
    the assumption says more than the claim: a proof, not a restatement."""
    _, r = decide(
        spec_file(
            HEADER
            + """
from capproof import cdiv
@obligation(domain={"max_model_len": Range(1, 2**20), "block_size": Choice(16, 64), "width": Range(1, 2**17)},
            assumptions={"width for the longest context": lambda width: width >= 2**16})
def blocks_fit(max_model_len, block_size, width):
    return at_most(blocks=cdiv(max_model_len, block_size), width=width)
"""
        ),
        "blocks_fit",
    )
    assert r.verdict is Verdict.PROVED and r.restating == [], r.message


def test_an_assumption_z3_cannot_separate_from_the_claim_is_listed_as_restating(spec_file, monkeypatch):
    """The same proof with the restating check's queries starved (a resource limit of 1): Z3 answers
    unknown, and an unknown answer must not clear the assumption (coverage would count the proof
    as verified on an assumption nothing showed to say more than the claim)."""
    import z3

    import capproof.prover as prover

    answers = []
    original = prover._sat

    def starved(s, extra):
        s.set("rlimit", 1)
        s.push()
        s.add(extra)
        answers.append(s.check())
        s.pop()
        return original(s, extra)

    monkeypatch.setattr(prover, "_sat", starved)
    _, r = decide(
        spec_file(
            HEADER
            + """
from capproof import cdiv
@obligation(domain={"max_model_len": Range(1, 2**20), "block_size": Choice(16, 64), "width": Range(1, 2**17)},
            assumptions={"width for the longest context": lambda width: width >= 2**16})
def blocks_fit(max_model_len, block_size, width):
    return at_most(blocks=cdiv(max_model_len, block_size), width=width)
"""
        ),
        "blocks_fit",
    )
    assert answers and all(a == z3.unknown for a in answers), answers
    assert r.verdict is Verdict.PROVED and r.restating == ["width for the longest context"], r.message


# --- models defined inside a spec file are listed (proofs/ links them) -------------------------

SPEC_LOCAL_MODEL = (
    HEADER
    + """
from capproof import cdiv

def blocks(n, block_size):
    '''A model defined in the spec file itself.'''
    return cdiv(n, block_size)

def _claim_of(n):
    return at_most(demand=blocks(n, 16), capacity=n)

@obligation(domain={"n": Range(1, 100)})
def blocks_fit(n):
    return _claim_of(n)
"""
)


def test_models_defined_in_the_spec_file_are_listed_and_linked(spec_file):
    """main: ``"models": []``, so proofs/ had no link to the formula the proof is about. The
    private claim helper ``_claim_of`` is followed, not listed."""
    import os

    from capproof.report import _obligation_md

    path = spec_file(SPEC_LOCAL_MODEL)
    ob, r = decide(path, "blocks_fit")
    assert r.verdict is Verdict.PROVED, r.message
    assert r.models == [f"{os.path.relpath(path)}::blocks"]
    lines = _obligation_md(r.to_json())
    line = open(path).read().splitlines().index("def blocks(n, block_size):") + 1
    assert any("::blocks`](" in text and text.endswith(f"#L{line})") for text in lines), lines


def test_module_fingerprint_holds_data_next_to_spec_functions_without_importing_them(monkeypatch):
    """A spec module's function cannot be pickled by reference (``capproof_spec.…`` is not
    importable): the fingerprint took pickle's failed import (a sys.path search) on every such value
    and fell back to ``repr``. Functions are now fingerprinted by identity, the data beside them by value."""
    import builtins
    import sys
    import types

    from capproof.runner import _fingerprint

    module = types.ModuleType("capproof_spec.not_importable")
    exec("f = lambda x: x\nfacts = {'a': f, 'limits': [1, 2]}", module.__dict__)
    imports = []
    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: imports.append(name) or real(name, *a, **k))
    before = _fingerprint(module.facts)
    module.facts["limits"].append(3)
    after = _fingerprint(module.facts)
    # (pickle looks up the module of every global it writes: capproof.runner's identity marker is
    # loaded already; what must not happen is a search of sys.path for the spec module)
    assert isinstance(before, bytes) and before != after
    assert all(name in sys.modules for name in imports) and module.__name__ not in imports
    assert _fingerprint({"a": module.f, "limits": [1, 2, 3]}) == after


def test_a_value_holding_z3_terms_stays_opaque_and_is_compared_without_z3s_pretty_printer(monkeypatch):
    """Pickle refuses a Z3 term (a ctypes pointer): a value holding one is :class:`Opaque` (an item
    reaching it is decided alone), compared by each term's S-expression, not by ``repr`` (Z3's
    pretty-printer: seconds for a large term, and it elides deep subterms). An in-place change is seen."""
    import z3

    from capproof.runner import Opaque, _fingerprint

    x = z3.Int("x")
    deep = x
    for k in range(40):  # deeper than the pretty-printer's max_depth
        deep = deep * 2 + k
    held = {"terms": [deep + 1], "n": 1}
    monkeypatch.setattr(z3.AstRef, "__repr__", lambda self: pytest.fail("repr of a Z3 term"))
    before = _fingerprint(held)
    assert isinstance(before, Opaque)
    assert _fingerprint(held) == before
    held["terms"][0] = deep + 2  # differs only below the pretty-printer's depth
    assert isinstance(_fingerprint(held), Opaque) and _fingerprint(held) != before
    held["terms"][0] = deep + 1
    held["n"] = 2
    assert _fingerprint(held) != before


# --- the restating check is skipped once a counterexample is known (eng16) -----------

RESTATES_THEN_FAILS = (
    HEADER
    + """
from capproof import round_up
@obligation(domain={"pad": Choice(8, 16), "num_tokens": Range(1, 8192), "graph_size": Range(1, 8192)},
            assumptions={"graph covers the batch": lambda num_tokens, graph_size: round_up(num_tokens, 8) <= graph_size})
def graph_fits(pad, num_tokens, graph_size):
    if pad == 8:  # proved, the assumption restating the claim
        return at_most(padded=round_up(num_tokens, 8), graph=graph_size)
    return at_most(padded=round_up(num_tokens, pad), graph=graph_size)  # fails: 16 > 8
"""
)


def _counting_restating(monkeypatch):
    import capproof.prover as prover

    calls = []
    original = prover._restating_assumptions

    def counted(*args):
        calls.append(args[1])
        return original(*args)

    monkeypatch.setattr(prover, "_restating_assumptions", counted)
    return calls


def test_a_counterexample_known_before_a_proved_case_skips_its_restating_check(spec_file, monkeypatch):
    """pad=8 is proved by an assumption restating the claim, pad=16 fails. With the int probe's
    counterexample known first, the proved case is not checked for restating assumptions (a
    counterexample's report shows none); without the probe it is checked (decided before the
    failing case), and the verdict, counterexample and cores are the same either way."""
    calls = _counting_restating(monkeypatch)
    _, r = decide(spec_file(RESTATES_THEN_FAILS), "graph_fits")
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.first_counterexample.source == "int probe", r.message
    assert calls == [] and r.restating == []
    _, unprobed = decide(spec_file(RESTATES_THEN_FAILS, "unprobed.py"), "graph_fits", probe=False)
    assert len(calls) == 1 and "graph covers the batch" in calls[0]  # pad=8, before the failing case
    assert unprobed.restating == []  # a counterexample shows no restating assumption
    assert (unprobed.verdict, unprobed.counterexample.params, unprobed.assumptions_used, unprobed.message) == (
        r.verdict,
        r.counterexample.params,
        r.assumptions_used,
        r.message,
    )


def test_an_error_after_a_skipped_restating_check_is_decided_again_with_it(spec_file, monkeypatch):
    """The skip assumes the verdict will be a counterexample; when a later case errs (the error
    verdict shows the restating assumptions) the obligation is decided again with every check: the
    same result as with the skip disabled."""
    import capproof.prover as prover

    source = RESTATES_THEN_FAILS.replace('"pad": Choice(8, 16)', '"pad": Choice(8, 16, 32)').replace(
        "    return at_most(padded=round_up(num_tokens, pad)",
        "    if pad == 32:\n        raise ValueError('no kernel for pad 32')\n    return at_most(padded=round_up(num_tokens, pad)",
    )
    calls = _counting_restating(monkeypatch)
    path = spec_file(source)
    _, r = decide(path, "graph_fits")
    assert r.verdict is Verdict.ERROR and "no kernel for pad 32" in r.message, r.message
    assert r.restating == ["graph covers the batch"] and len(calls) == 1  # the second run only
    original = prover._prove_obligation
    monkeypatch.setattr(
        prover,
        "_prove_obligation",
        lambda ob, options, first, restate_all=False: original(ob, options, first, restate_all=True),
    )
    _, every = decide(path, "graph_fits")
    assert (every.verdict, every.message, every.restating, every.assumptions_used) == (
        r.verdict,
        r.message,
        r.restating,
        r.assumptions_used,
    )


def test_a_process_that_imported_numpy_decides_a_plain_model(tmp_path):
    """Hypothesis (the second opinion) imports ``numpy.random`` on its first example when ``numpy``
    is loaded, as in a test process or an engine's. The runner imports it before reading the state an
    item starts from, so that import is not "state changed while deciding" (an error verdict on a
    model that reads only the environment, seen in the fast tier)."""
    import subprocess
    import sys

    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "env_spec.py").write_text(
        textwrap.dedent(
            """
            import os
            from capproof import Range, obligation, at_most

            @obligation(domain={"a": Range(0, 100)})
            def env_limit(a):
                return at_most(demand=a, capacity=int(os.environ.get("VLLM_ADVERSARIAL_CAP", "100")))
            """
        )
    )
    script = textwrap.dedent(
        """
        import sys
        import numpy  # loaded, numpy.random not yet
        assert "numpy.random" not in sys.modules
        from capproof import Options, run
        r = run(["spec/env_spec.py"], Options(jobs=1, contracts=False, density="off"))
        print(*[f"{o.verdict.value}: {o.message}" for o in r.obligations])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.startswith("proved:"), done.stdout + done.stderr
