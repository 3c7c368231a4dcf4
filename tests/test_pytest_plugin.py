"""The pytest plugin (capproof/pytest_plugin.py): `pytest --capproof` proves obligations as test items.

Each test builds a throwaway project with pytester and runs pytest in a subprocess, as a team's
CI would (the plugin is found through the installed `pytest11` entry point).
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

SPEC = """
from capproof import Choice, Range, at_most, cdiv, equal, obligation

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)})
def width_covers(max_model_len, block_size):
    return at_most(demand=max_model_len, capacity=cdiv(max_model_len, block_size) * block_size)

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, expect="counterexample")
def unaligned_is_aligned_kept_bug(max_model_len, block_size):
    return equal(W_buf=cdiv(max_model_len, block_size), W_bt=cdiv(cdiv(max_model_len, block_size), 2) * 2)

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)})
def table_too_small(max_model_len, block_size):
    return at_most(demand=max_model_len, capacity=(max_model_len // block_size) * block_size)
"""

TEST = """
def test_ordinary():
    assert 1 + 1 == 2
"""


@pytest.fixture
def team(pytester):
    """A team's repository: tests/ and spec/, pytest configured to collect tests/ only."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    pytester.mkdir("spec")
    (pytester.path / "tests" / "test_ordinary.py").write_text(TEST)
    (pytester.path / "spec" / "buffers.py").write_text(textwrap.dedent(SPEC))
    return pytester


def test_without_the_flag_nothing_of_capproof_is_collected(team):
    result = team.runpytest_subprocess()
    result.assert_outcomes(passed=1)


def test_without_the_flag_the_plugin_does_not_import_z3(team):
    """The plugin is loaded in every pytest session of the environment; Z3, the prover and the
    runner are imported only when --capproof collects spec files."""
    (team.path / "tests" / "test_imports.py").write_text(
        textwrap.dedent("""
        import sys

        def test_no_solver_loaded():
            assert "capproof.pytest_plugin" in sys.modules
            assert not {"z3", "capproof.prover", "capproof.runner"} & set(sys.modules)
    """)
    )
    result = team.runpytest_subprocess()
    result.assert_outcomes(passed=2)


@pytest.mark.slow  # two xdist workers start and each imports the prover: ~13 s
def test_xdist_workers_give_the_same_verdicts(team):
    """`pytest --capproof -n 2`: obligations spread over pytest-xdist workers, same outcomes."""
    pytest.importorskip("xdist")
    result = team.runpytest_subprocess("--capproof", "-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*FAILED spec/buffers.py::table_too_small*"])


def test_capproof_flag_adds_every_obligation_and_fails_the_unexpected_one(team):
    result = team.runpytest_subprocess("--capproof", "-rA")
    # the suite's own test, the proved obligation and the kept bug pass; the unexpected counterexample fails
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*PASSED spec/buffers.py::width_covers*",
            "*PASSED spec/buffers.py::unaligned_is_aligned_kept_bug*",
            "*FAILED spec/buffers.py::table_too_small*",
        ]
    )
    # the failure shows the verdict as `capproof prove` prints it: path:line:, verdict, named values
    text = result.stdout.str()
    assert "spec/buffers.py:12: FAIL counterexample table_too_small (expected proved)" in text
    assert "demand <= capacity fails: demand=1, capacity=0" in text and "max_model_len = 1" in text
    assert "Traceback" not in text  # the verdict, not the plugin's internals


@pytest.mark.slow  # a pytest run in a subprocess (2-3 s): the fast tier keeps the --capproof run, the flagless ones and -m/-k
def test_spec_dir_under_the_collected_directory_is_collected_once(team):
    """Without testpaths pytest walks the whole project, spec/ included: each obligation once."""
    (team.path / "tox.ini").unlink()
    result = team.runpytest_subprocess("--capproof")
    result.assert_outcomes(passed=3, failed=1)


@pytest.mark.slow
def test_marker_and_k_select_obligations_like_tests(team):
    only = team.runpytest_subprocess("--capproof", "-m", "capproof", "-v")
    only.assert_outcomes(passed=2, failed=1)  # the suite's own test is deselected
    assert "test_ordinary PASSED" not in only.stdout.str()
    only.stdout.fnmatch_lines(["*1 deselected*"])
    picked = team.runpytest_subprocess("--capproof", "-k", "width_covers or kept_bug", "-v")
    picked.assert_outcomes(passed=2)
    skipped = team.runpytest_subprocess("--capproof", "-m", "not capproof")
    skipped.assert_outcomes(passed=1)


@pytest.mark.slow  # a pytest run in a subprocess (2-3 s); the --capproof run stays fast
def test_a_spec_path_on_the_command_line_collects_only_that_file(team):
    (team.path / "spec" / "other.py").write_text(
        textwrap.dedent("""
        from capproof import Range, at_most, obligation

        @obligation(domain={"n": Range(1, 100)})
        def fits(n):
            return at_most(demand=n, capacity=100)
    """)
    )
    result = team.runpytest_subprocess("--capproof", "spec/other.py", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*spec/other.py::fits PASSED*"])


def test_a_spec_file_that_does_not_import_is_one_failing_item(team):
    (team.path / "spec" / "broken.py").write_text("import no_such_module_anywhere\n")
    result = team.runpytest_subprocess("--capproof", "spec/broken.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*error: spec/broken.py:1: ModuleNotFoundError*no_such_module_anywhere*", "FAILED spec/broken.py::load*"]
    )


@pytest.mark.slow  # two pytest runs in subprocesses (2-3 s); the --capproof run stays fast
def test_ini_option_and_tool_capproof_paths(pytester):
    """`capproof = true` in the ini enables it; [tool.capproof] paths says where the specs are."""
    pytester.makepyprojecttoml(
        textwrap.dedent("""
        [tool.pytest.ini_options]
        capproof = true
        testpaths = ["tests"]

        [tool.capproof]
        paths = ["claims"]
    """)
    )
    pytester.mkdir("tests")
    pytester.mkdir("claims")
    (pytester.path / "claims" / "buffers.py").write_text(textwrap.dedent(SPEC))
    result = pytester.runpytest_subprocess("-m", "capproof", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*claims/buffers.py::width_covers PASSED*"])


@pytest.mark.slow
def test_contracts_are_items_too(pytester):
    """A CrossHair contract of a model is an item `contract[models/x.py:f]`; --capproof-no-contracts drops it."""
    pytester.mkdir("spec")
    pytester.mkdir("models")
    (pytester.path / "models" / "__init__.py").write_text("")
    (pytester.path / "models" / "halves.py").write_text(
        textwrap.dedent('''
        def half_up(n: int) -> int:
            """
            pre: n >= 0
            post: 2 * __return__ >= n
            """
            return (n + 1) // 2
    ''')
    )
    (pytester.path / "spec" / "contracts.py").write_text(
        textwrap.dedent("""
        from capproof import contract

        contract("models/halves.py::half_up")
    """)
    )
    result = pytester.runpytest_subprocess("--capproof", "-v", "--capproof-crosshair-timeout", "2")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*spec/contracts.py::contract?models/halves.py:half_up? PASSED*"])
    none = pytester.runpytest_subprocess("--capproof", "--capproof-no-contracts")
    assert none.ret == pytest.ExitCode.NO_TESTS_COLLECTED
