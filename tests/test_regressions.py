"""`capproof counterexamples`: witnesses and the generated pytest module, run for real.

The generated module passes while the buggy formula is in place and fails once the formula is
replaced by the fixed one; the same run twice gives byte-identical files; list-valued (vector)
parameters round-trip through JSON and the generated code.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from click.testing import CliRunner
from conftest import ROOT, obligation_named

from capproof.cli import main
from capproof.loader import load_file
from capproof.regressions import MODULE_NAME, read_witnesses, render_module

A4 = "ebt_width_matches_runner_before_50302"
PINS_350K = ["--set", "max_model_len=350000", "--set", "block_size=64", "--set", "dcp=1"]


class _Outcomes:
    """A pytest plugin recording each generated test's outcome by node id."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid.split("::")[-1]] = report.outcome


def run_generated(directory) -> tuple[int, dict[str, str]]:
    """Run the generated module in this process; (pytest exit code, {test id: outcome})."""
    plugin = _Outcomes()
    # the committed tests/regressions module may already be imported under the same name
    stem = MODULE_NAME[:-3]
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[-1] == stem}
    for k in saved:
        del sys.modules[k]
    addopts = os.environ.pop("PYTEST_ADDOPTS", None)  # e.g. CI's --junitxml is for the outer run
    try:
        code = pytest.main(
            [
                str(directory / MODULE_NAME),
                "-q",
                "-p",
                "no:cacheprovider",
                "--import-mode=importlib",
                "-o",
                "addopts=",
                "--rootdir",
                str(directory),
            ],
            plugins=[plugin],
        )
    finally:
        for k in [k for k in sys.modules if k.split(".")[-1] == stem]:
            del sys.modules[k]
        sys.modules.update(saved)
        if addopts is not None:
            os.environ["PYTEST_ADDOPTS"] = addopts
    return int(code), plugin.outcomes


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_generated_tests_pass_on_the_buggy_formula_and_fail_on_the_fixed_one(tmp_path, monkeypatch):
    out = tmp_path / "regressions"
    assert invoke("counterexamples", "spec/vllm_dsa_indexer.py", "-k", A4, "--out", str(out)).exit_code == 0
    result = invoke("counterexamples", "spec/vllm_dsa_indexer.py", "-k", A4, *PINS_350K, "--out", str(out))
    assert result.exit_code == 0, result.output
    pinned = json.loads((out / f"spec.vllm_dsa_indexer.{A4}@block_size=64,dcp=1,max_model_len=350000.json").read_text())
    assert pinned["values"] == {"W_buf": 5469, "W_bt": 5470}  # the vLLM #46074 report

    code, outcomes = run_generated(out)
    assert code == 0 and len(outcomes) == 2 and set(outcomes.values()) == {"passed"}, outcomes
    assert all(A4 in test_id for test_id in outcomes)

    # #50302: the indexer takes the runner's width. Patch the spec's model reference to that fix.
    ob = obligation_named("spec/vllm_dsa_indexer.py", A4)
    spec_globals = ob.func.__globals__
    runner_width, blocks = spec_globals["runner_block_table_width_39324"], spec_globals["max_num_blocks_per_req"]
    monkeypatch.setitem(
        spec_globals,
        "indexer_block_table_width_before_50302",
        lambda max_model_len, block_size, dcp: runner_width(blocks(max_model_len, block_size, dcp), block_size),
    )
    code, outcomes = run_generated(out)
    assert code == 1 and len(outcomes) == 2 and set(outcomes.values()) == {"failed"}, outcomes


@pytest.mark.slow  # two whole runs (2-4 s); the round-trip and generated-test checks stay fast
def test_same_run_twice_gives_byte_identical_files(tmp_path):
    out = tmp_path / "cx"
    first = invoke("counterexamples", "spec/vllm_dsa_indexer.py", "-k", "before_50302", "--out", str(out))
    assert first.exit_code == 0, first.output
    snapshot = {p: (out / p).read_bytes() for p in sorted(os.listdir(out))}
    second = invoke("counterexamples", "spec/vllm_dsa_indexer.py", "-k", "before_50302", "--out", str(out))
    assert "(0 files changed)" in second.output
    assert {p: (out / p).read_bytes() for p in sorted(os.listdir(out))} == snapshot
    # one witness per counterexample and per found trigger witness, one module replaying them all
    run = json.loads(
        invoke("prove", "spec/vllm_dsa_indexer.py", "-k", "before_50302", "--no-contracts", "--json", "-").output
    )
    with_cex = [e for e in run["obligations"] if e["counterexample"]]
    expected = sorted([e["id"] for e in with_cex] + [e["id"] for e in with_cex for w in e["witnesses"] if w["found"]])
    assert sorted(w["obligation"] for _, w in read_witnesses(str(out))) == expected
    assert sorted(snapshot) == sorted([MODULE_NAME] + [f for f in snapshot if f.endswith(".json")])
    code, outcomes = run_generated(out)
    assert code == 0 and len(outcomes) == len(expected)


VECTOR_SPEC = """
from capproof import Choice, Range, at_most, obligation
from capproof.arith import max_of, total
from capproof.domain import Vector


def buffer_capacity(capacity):
    return capacity


@obligation(
    domain={"num_reqs": Range(0, 4), "lens": Vector(4, Range(0, 8), length="num_reqs"), "capacity": Choice(8)},
    expect="counterexample",
    witnesses={"one long request": lambda lens: max_of(lens) >= 8},
)
def batch_fits(num_reqs, lens, capacity):
    return at_most(demand=total(lens), capacity=buffer_capacity(capacity))
"""


def test_vector_params_and_trigger_witnesses_round_trip(tmp_path, monkeypatch):
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "vec.py").write_text(textwrap.dedent(VECTOR_SPEC))
    monkeypatch.chdir(tmp_path)
    run = json.loads(invoke("prove", "--json", "-").output)
    (entry,) = run["obligations"]
    points = [entry["counterexample"], *[t for t in entry["witnesses"] if t["found"]]]
    assert len(points) == 2 and all(isinstance(p["params"]["lens"], list) for p in points)

    result = invoke("counterexamples", "--out", "out")
    assert result.exit_code == 0, result.output
    rows = read_witnesses(str(tmp_path / "out"))
    assert [fn for fn, _ in rows] == ["spec.vec.batch_fits+one_long_request-259ad81d.json", "spec.vec.batch_fits.json"]
    by_trigger = {w.get("trigger"): w for _, w in rows}
    assert by_trigger[None]["params"] == entry["counterexample"]["params"]
    assert by_trigger["one long request"]["params"] == points[1]["params"]
    module = (tmp_path / "out" / MODULE_NAME).read_text()
    assert f"'lens': {entry['counterexample']['params']['lens']!r}" in module
    code, outcomes = run_generated(tmp_path / "out")
    assert code == 0 and list(outcomes.values()) == ["passed", "passed"], outcomes

    # the fix (a buffer sized for the whole batch, 4 requests of up to 8) makes both rows fail
    (ob,) = load_file(str(tmp_path / "spec" / "vec.py"))
    monkeypatch.setitem(ob.func.__globals__, "buffer_capacity", lambda capacity: 4 * 8)
    code, outcomes = run_generated(tmp_path / "out")
    assert code == 1 and list(outcomes.values()) == ["failed", "failed"]


def test_broken_witness_in_out_dir_is_one_line_exit_2(tmp_path):
    out = tmp_path / "cx"
    out.mkdir()
    (out / "junk.json").write_text("{not json")
    result = CliRunner().invoke(main, ["counterexamples", "-k", A4, "--out", str(out)])
    assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "junk.json" in errors[0]


def test_unwritable_out_dir_is_one_line_exit_2(tmp_path):
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(main, ["counterexamples", "-k", A4, "--out", str(tmp_path / "file" / "sub")])
    assert result.exit_code == 2, result.output
    assert [line for line in result.output.splitlines() if line.startswith("error:")] == [
        f"error: --out {tmp_path / 'file' / 'sub'}: cannot write: Not a directory"
    ]


def test_committed_regressions_module_matches_its_witnesses():
    """tests/regressions/ is generated: its module must be what its witnesses render to."""
    directory = os.path.join(ROOT, "tests", "regressions")
    rows = read_witnesses(directory)
    assert rows, "tests/regressions/ holds the committed counterexample witnesses"
    with open(os.path.join(directory, MODULE_NAME), encoding="utf-8") as fh:
        assert fh.read() == render_module(rows, "../..")


def test_trigger_names_that_sanitise_alike_get_distinct_files():
    from capproof.regressions import witness_filename

    base = {"spec": "spec/x.py", "name": "ob", "pins": {}}
    a = witness_filename({**base, "trigger": "y is 3!"})
    b = witness_filename({**base, "trigger": "y_is_3_"})
    assert a != b and b == "spec.x.ob+y_is_3_.json"


def test_unexpected_counterexample_is_not_written(tmp_path, monkeypatch):
    """A claim expected to hold that has a counterexample gets no (passing) regression test."""
    from click.testing import CliRunner

    from capproof.cli import main

    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "wrong.py").write_text(
        "from capproof import Range, at_most, obligation\n\n\n"
        "@obligation(domain={'n': Range(1, 64)}, expect='proved')\n"
        "def too_small(n):\n    return at_most(demand=n, capacity=32)\n"
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["counterexamples"])
    assert result.exit_code == 1
    assert "not written: spec/wrong.py::too_small has an unexpected counterexample" in result.output
    assert not (tmp_path / "tests" / "regressions").exists() or not list(
        (tmp_path / "tests" / "regressions").glob("*.json")
    )
