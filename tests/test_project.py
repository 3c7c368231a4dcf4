"""Python-tool habits: project root from a subdirectory, [tool.capproof] defaults, -k expressions,
unknown --set names rejected before anything runs, -q, python -m capproof."""

import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.loader import keyword_matcher
from capproof.project import SettingsError, find_root, read_settings

SPEC = textwrap.dedent("""\
    from capproof import Range, at_most, obligation


    @obligation(domain={"n": Range(1, 64)}, expect="proved")
    def table_fits(n):
        return at_most(demand=n, capacity=64)


    @obligation(domain={"n": Range(1, 64)}, expect="counterexample")
    def table_too_small(n):
        return at_most(demand=n, capacity=32)
""")


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "tables.py").write_text(SPEC)
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    cwd = os.getcwd()
    yield tmp_path
    os.chdir(cwd)


def invoke(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args)
    finally:
        os.chdir(old)


def test_root_found_from_a_subdirectory(project):
    assert find_root(str(project / "docs" / "deep")) == str(project)
    result = invoke(["prove", "--no-contracts"], project / "docs" / "deep")
    assert result.exit_code == 0, result.output
    assert "spec/tables.py:4: ok   proved         table_fits" in result.output and "2 of 2 as expected" in result.output


def test_tool_capproof_table_wins_over_a_spec_dir_and_gives_defaults(project):
    (project / "pyproject.toml").write_text('[tool.capproof]\nrlimit = 1\npaths = ["spec/tables.py"]\n')
    assert read_settings(str(project)) == {"rlimit": 1, "paths": ["spec/tables.py"]}
    starved = invoke(["prove", "--no-contracts", "-k", "table_fits"], project / "docs")
    assert starved.exit_code == 2 and "unknown" in starved.output  # rlimit 1 from the table: never proved
    fed = invoke(["prove", "--no-contracts", "-k", "table_fits", "--rlimit", "20000000"], project / "docs")
    assert fed.exit_code == 0, fed.output  # the command line wins


@pytest.mark.parametrize(
    "table, message",
    [
        ("[tool.capproof]\nrlimits = 5\n", "has no setting 'rlimits'"),
        ("[tool.capproof]\njobs = 'two'\n", "jobs = 'two' has the wrong type"),
        ("[tool.capproof]\njobs = 0\n", "must be positive"),
    ],
)
def test_bad_settings_are_one_line(project, table, message):
    (project / "pyproject.toml").write_text(table)
    with pytest.raises(SettingsError, match=message):
        read_settings(str(project))
    result = invoke(["prove", "--no-contracts"], project)
    assert result.exit_code == 2 and message in result.output


def test_k_expressions_as_pytest():
    match = keyword_matcher("ebt and not (before_50302 or every)")
    assert match("spec/vllm_dsa_indexer.py::ebt_width_matches_runner_after_50823", None)
    assert not match("spec/vllm_dsa_indexer.py::ebt_width_matches_runner_before_50302", None)
    assert keyword_matcher("vllm-dsa-ebt-128align")("spec/x.py::y", "vllm-dsa-ebt-128align")  # an exact case id
    for bad in ("a and", "(a", "a b", "and"):
        with pytest.raises(ValueError):
            keyword_matcher(bad)


def test_k_expression_selects_and_bad_one_is_a_usage_error(project):
    result = invoke(["prove", "--no-contracts", "-k", "table and not too_small"], project)
    assert result.exit_code == 0 and "1 of 1 as expected" in result.output, result.output
    bad = invoke(["prove", "--no-contracts", "-k", "table and"], project)
    assert bad.exit_code == 4 and "expected a word" in bad.output  # a usage error, as pytest's -k


def test_unknown_set_name_runs_nothing(project):
    result = invoke(["prove", "--no-contracts", "--set", "max_modle_len=4096"], project)
    assert result.exit_code == 2
    assert "--set max_modle_len: no selected obligation has a parameter named 'max_modle_len'" in result.output
    assert "table_fits" not in result.output  # nothing was proved


def test_quiet_prints_only_what_needs_attention(project):
    (project / "spec" / "tables.py").write_text(
        SPEC.replace("capacity=32)", "capacity=64)")
    )  # expected cex now missing
    result = invoke(["-q", "prove", "--no-contracts"], project)
    assert "table_fits" not in result.output and "table_too_small" in result.output
    assert (
        invoke(["-qq", "prove", "--no-contracts"], project)
        .output.strip()
        .splitlines()[-1]
        .startswith("1 of 2 as expected")
    )


def test_python_dash_m_capproof_and_version(project):
    out = subprocess.run([sys.executable, "-m", "capproof", "--version"], capture_output=True, text=True, cwd=project)
    assert out.returncode == 0 and "version" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "capproof", "prove", "--no-contracts", "-k", "table_fits"],
        capture_output=True,
        text=True,
        cwd=project / "docs",
    )
    assert out.returncode == 0 and "1 of 1 as expected" in out.stdout, out.stdout + out.stderr
