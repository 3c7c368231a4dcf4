"""The CLI: exit codes, JSON shape, bad input on one line while the rest still runs, reports."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from capproof.cli import main

GOOD = """
from capproof import Range, Choice, obligation, at_most, equal, cdiv

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, case="demo-case", sources=["x/y#1"])
def width_covers(max_model_len, block_size):
    return at_most(demand=max_model_len, capacity=cdiv(max_model_len, block_size) * block_size)

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, expect="counterexample")
def unaligned_equals_aligned(max_model_len, block_size):
    return equal(W_buf=cdiv(max_model_len, block_size), W_bt=cdiv(cdiv(max_model_len, block_size), 2) * 2)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project directory with spec/ and proofs/, used as the working directory."""
    (tmp_path / "spec").mkdir()
    monkeypatch.chdir(tmp_path)

    def write(name: str, source: str) -> str:
        path = tmp_path / "spec" / name
        path.write_text(textwrap.dedent(source))
        return os.path.join("spec", name)

    return write


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_all_as_expected_exits_0_and_json_has_the_relied_on_shape(project):
    project("good.py", GOOD)
    result = invoke("prove", "--json", "-")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"obligations", "contracts", "summary"}
    assert set(data["summary"]) >= {"ok", "proved", "counterexample", "unknown", "vacuous", "error"}
    assert data["summary"]["ok"] is True
    assert (data["summary"]["proved"], data["summary"]["counterexample"]) == (1, 1)
    first, second = data["obligations"]
    for entry in data["obligations"]:
        assert set(entry) >= {
            "id",
            "case",
            "sources",
            "expect",
            "verdict",
            "ok",
            "cases",
            "counterexample",
            "assumptions_used",
            "message",
        }
    assert first["id"] == "spec/good.py::width_covers"
    assert (first["case"], first["sources"], first["cases"]) == ("demo-case", ["x/y#1"], 2)
    assert first["counterexample"] is None
    cex = second["counterexample"]
    assert cex["params"] == {"max_model_len": 1, "block_size": 16}
    assert cex["values"] == {"W_buf": 1, "W_bt": 2}


def test_terminal_lists_every_name_with_its_value(project):
    project("good.py", GOOD)
    result = invoke("prove", "--set", "max_model_len=350000", "--set", "block_size=64")
    assert result.exit_code == 0, result.output
    assert "W_buf == W_bt fails: W_buf=5469, W_bt=5470" in result.output
    for line in ("W_buf         = 5469", "W_bt          = 5470", "max_model_len = 350000", "block_size    = 64"):
        assert line in result.output


def test_verdict_differing_from_expectation_exits_1(project):
    project("good.py", GOOD)
    # an even block count: the buggy formula agrees, so the expected counterexample is not found
    result = invoke("prove", "--set", "max_model_len=300000", "--set", "block_size=64")
    assert result.exit_code == 1, result.output
    assert "FAIL proved" in result.output and "(expected counterexample)" in result.output


def test_unknown_exits_2(project):
    project("good.py", GOOD)
    assert invoke("prove", "-k", "width_covers", "--rlimit", "1").exit_code == 2


def test_bad_spec_is_one_line_and_others_still_run(project):
    project("good.py", GOOD)
    project("broken.py", "from capproof import obligation\ndef oops(:\n")
    project("badimport.py", "import no_such_module_xyz\n")
    result = invoke("prove", "--json", "-")
    assert result.exit_code == 4  # a spec file that does not load is a usage error (as pytest), not a verdict
    data = json.loads(result.output)
    assert data["summary"]["exit_code"] == 4
    by_id = {o["id"]: o for o in data["obligations"]}
    assert "spec/broken.py" not in by_id
    broken = [m for m in data["usage_errors"] if m.startswith("spec/broken.py")]
    assert broken and broken[0].startswith("spec/broken.py:2: SyntaxError")
    assert any("ModuleNotFoundError" in m for m in data["usage_errors"] if m.startswith("spec/badimport.py"))
    assert by_id["spec/good.py::width_covers"]["verdict"] == "proved"
    assert by_id["spec/good.py::unaligned_equals_aligned"]["verdict"] == "counterexample"


def test_bad_obligation_in_a_file_does_not_stop_its_neighbours(project):
    project(
        "mixed.py",
        GOOD
        + """
@obligation(domain={"max_model_len": Range(10, 1)})
def inverted(max_model_len):
    return max_model_len > 0
""",
    )
    result = invoke("prove")
    assert result.exit_code == 2
    assert "FAIL error          inverted (expected proved)" in result.output
    assert "empty range 10..1" in result.output
    # each result starts with its spec file:line (editors and CI annotators jump to it)
    assert "spec/mixed.py:4: ok   proved         width_covers" in result.output
    lines = open("spec/mixed.py").read().splitlines()
    shown = next(line for line in result.output.splitlines() if line.endswith("inverted (expected proved)"))
    where = int(shown.split(":")[1])
    assert lines[where - 1].startswith("@obligation") and lines[where].startswith("def inverted"), (where, shown)


def test_unknown_pin_is_an_error(project):
    project("good.py", GOOD)
    result = invoke("prove", "--set", "max_modle_len=5")
    assert result.exit_code == 2
    assert "no selected obligation has a parameter named 'max_modle_len'" in result.output


@pytest.mark.parametrize("pin", ["max_model_len", "max_model_len=abc", "=5"])
def test_malformed_pin_is_a_usage_error(project, pin):
    project("good.py", GOOD)
    result = CliRunner().invoke(main, ["prove", "--set", pin])
    assert result.exit_code == 2
    assert "--set" in result.output


def test_missing_path_is_an_error(project):
    result = invoke("prove", "spec/nope.py")
    assert result.exit_code == 4  # usage error, as pytest's missing path
    assert "no such spec file" in result.output
    assert "nothing selected" not in result.output  # one reason, the missing path


def test_report_writes_then_check_detects_staleness(project):
    project("good.py", GOOD)
    assert invoke("report", "--no-contracts").exit_code == 0
    text = open("proofs/good.md").read()
    assert "`width_covers`" in text and "| **`W_buf`** | `1` |" in text
    assert "seconds" not in text
    assert invoke("report", "--check", "--no-contracts").exit_code == 0
    project("good.py", GOOD.replace("Choice(16, 64)", "Choice(16, 32, 64)"))
    from capproof import loader

    loader._loaded.clear()
    stale = invoke("report", "--check", "--no-contracts")
    assert stale.exit_code == 1
    assert "proofs/good.md" in stale.output


def test_report_from_json_equals_a_fresh_report(project):
    project("good.py", GOOD)
    assert invoke("prove", "--json", "run.json", "--no-contracts").exit_code == 0
    assert invoke("report", "--no-contracts").exit_code == 0
    assert invoke("report", "--check", "--from", "run.json").exit_code == 0


OTHER = """
from capproof import Range, at_most, obligation

@obligation(domain={"n": Range(1, 100)})
def fits(n):
    return at_most(demand=n, capacity=100)
"""


@pytest.mark.slow
def test_report_paths_write_only_their_pages(project, tmp_path):
    """`capproof report PATH…`: one spec file's page; the others are neither written nor removed."""
    project("good.py", GOOD)
    project("other.py", OTHER)
    (tmp_path / "proofs").mkdir()
    (tmp_path / "proofs" / "old.md").write_text("a page of a spec file that is not in this run\n")
    result = invoke("report", "spec/other.py", "--no-contracts")
    assert result.exit_code == 0, result.output
    assert "wrote 1 reports" in result.output
    assert sorted(os.listdir("proofs")) == ["old.md", "other.md"]
    assert "`fits`" in open("proofs/other.md").read()
    assert invoke("report", "--check", "spec/other.py", "--no-contracts").exit_code == 0
    # the whole run would write good.md and remove old.md: --check without PATHS says both are stale
    stale = invoke("report", "--check", "--no-contracts")
    assert stale.exit_code == 1 and "proofs/good.md" in stale.output and "proofs/old.md" in stale.output
    # from a run file, the path selects the same page
    assert invoke("prove", "--json", "run.json", "--no-contracts").exit_code == 0
    assert invoke("report", "--check", "--from", "run.json", "spec/other.py").exit_code == 0
    assert invoke("report", "spec/nope.py").exit_code == 2


def test_report_paths_from_a_subdirectory(project, tmp_path):
    project("other.py", OTHER)
    os.chdir(tmp_path / "spec")
    result = invoke("report", "other.py", "--no-contracts")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "proofs" / "other.md").exists()


def test_no_progress_bar_when_not_a_terminal_or_quiet(project):
    project("good.py", GOOD)
    for args in (("prove", "--no-contracts"), ("-q", "prove", "--no-contracts")):
        result = invoke(*args)
        assert "proving" not in result.output and "running:" not in result.output
        assert "\x1b[" not in result.output  # no cursor movement in a log


def test_progress_bar_on_a_terminal_counts_and_names_what_runs(project):
    """On a terminal, a rich progress bar shows how many items are done and which are running."""
    import io

    from rich.console import Console

    from capproof.cli import LiveProgress
    from capproof.runner import run
    from capproof.verdict import Options

    project("good.py", GOOD)
    out = io.StringIO()
    live = LiveProgress(Console(file=out, force_terminal=True, width=160))
    seen: list[str] = []
    real_started = live.started

    def started(kind, ident):
        real_started(kind, ident)
        seen.append(live._describe())

    live.started = started
    with live:
        result = run(["spec/good.py"], Options(jobs=1, contracts=False), monitor=live)
    assert result.exit_code == 0
    assert seen == ["running: width_covers", "running: unaligned_equals_aligned"]
    task = live.progress.tasks[0]
    assert (task.completed, task.total) == (2, 2)
    assert "2/2" in out.getvalue()


@pytest.mark.parametrize("content", ["[1]", "{not json", b"\xff\xfe\x00"])
def test_report_from_a_file_that_is_not_a_run_is_one_line_exit_2(tmp_path, content):
    bad = tmp_path / "run.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = invoke("report", "--from", str(bad))
    assert result.exit_code == 2
    assert "not a `capproof prove --json` file" in result.output


def test_smt2_into_a_file_path_is_one_line_exit_2(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    result = invoke("prove", "spec/vllm_kpool_tail.py", "--no-contracts", "--smt2", str(afile / "sub"))
    assert result.exit_code == 2 and "--smt2" in result.output and "cannot create" in result.output


def test_bound_json_to_an_unwritable_path_is_one_line_exit_2(tmp_path):
    result = invoke("bound", "spec/vllm_kpool_tail.py", "--json", str(tmp_path / "missing" / "b.json"))
    assert result.exit_code == 2 and "error: --json" in result.output


def test_junit_survives_control_characters_in_a_model_message(spec_file, tmp_path):
    path = spec_file("""
from capproof import Range, obligation

@obligation(domain={"x": Range(0, 3)})
def raises_with_escape_codes(x):
    raise ValueError("\\x1b[31mred\\x1b[0m and \\x00")
""")
    junit, sarif = tmp_path / "j.xml", tmp_path / "s.sarif"
    result = invoke("prove", path, "--junit", str(junit), "--sarif", str(sarif))
    assert result.exit_code == 2
    assert junit.exists() and sarif.exists()
    assert "\\x1b[31mred" in junit.read_text()


def test_model_config_that_is_not_utf8_is_one_line_exit_4(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe{")
    result = invoke("check-config", "--model-config", str(bad), "--", "vllm", "serve", "m")
    assert result.exit_code == 4 and "not UTF-8" in result.output


@pytest.mark.parametrize(
    "line",
    [
        [],
        ["--", "vllm", "serve"],
        ["--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-modle-len", "4096"],
        ["--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "1M"],  # vLLM refuses it at startup
        ["--", "vllm", "serve", "zai-org/GLM-5.2", "-dcp", "4"],
    ],
)
def test_check_config_bad_input_is_answered_before_the_specs_and_the_solver_load(line):
    """``capproof check-config`` with no launch line took ~20 s before its one-line error: bad
    input is refused (exit 4) before spec/, the inventories, Z3 and Hypothesis are loaded."""
    import subprocess
    import sys

    code = (
        "import sys, capproof.cli\n"
        "from click.testing import CliRunner\n"
        f"r = CliRunner().invoke(capproof.cli.main, ['check-config', *{line!r}])\n"
        "assert r.exit_code == 4 and r.output.startswith('error:') and len(r.output.splitlines()) == 1, r.output\n"
        "loaded = ('z3', 'hypothesis', 'capproof.prover', 'capproof.loader', 'capproof.runner')\n"
        "print(sorted(m for m in loaded if m in sys.modules or any(k.startswith('capproof_spec') for k in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr + out.stdout


def test_help_and_the_facade_do_not_import_the_solver():
    """Start-up: `capproof --help` and `import capproof` load neither Z3 nor the prover;
    every public name of the facade still resolves, to the object of its module."""
    import subprocess
    import sys

    code = (
        "import sys, capproof, capproof.cli\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(capproof.cli.main, ['--help']).exit_code == 0\n"
        "print(sorted(m for m in ('z3', 'capproof.prover', 'capproof.runner', 'capproof.arith', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    import capproof
    from capproof import obligation as decorator
    from capproof.runner import prove, run

    for name in capproof.__all__:
        assert getattr(capproof, name) is not None, name
    assert capproof.prove is prove and capproof.run is run  # prove: the runner's checks (docs/soundness.md)
    import capproof.obligation  # noqa: F401 - binds the submodule; the public name stays the decorator

    assert capproof.obligation is decorator and callable(decorator)
