"""The README and the docs by purpose: their examples are real, their links resolve, their commands work."""

import os
import re

import pytest
from conftest import ROOT

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation

#: the pages written as manuals (docs/performance.md, findings.md and soundness.md keep measurements)
MANUAL_PAGES = ["README.md", "docs/tutorial.md", "docs/architecture.md"] + [
    os.path.join("docs", folder, name)
    for folder in ("how-to", "reference", "explanation")
    if os.path.isdir(os.path.join(ROOT, "docs", folder))
    for name in sorted(os.listdir(os.path.join(ROOT, "docs", folder)))
    if name.endswith(".md")
]


def _text(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        return fh.read()


def _example(page: str, defining: str) -> str:
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", _text(page), re.S) if f"def {defining}(" in b]
    return example


def test_readme_is_a_front_page():
    text = _text("README.md")
    assert len(text.splitlines()) <= 200
    headings = re.findall(r"^## (.+)$", text, re.M)
    for needed in ("Install", "The two commands", "Check a deployment", "Write an obligation", "Where to read on"):
        assert needed in headings, needed


def test_readme_states_the_two_commands_ci_runs():
    """`.ci/run` and the GitHub workflow run exactly these; the Makefile defines them."""
    block = re.search(r"## The two commands\n\n```sh\n(.*?)```", _text("README.md"), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.startswith("make")]
    assert commands == ["make verify", "make test"]
    makefile = _text("Makefile")
    assert re.search(r"^verify:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    ci = _text(".ci/run")
    assert "make test" in ci and "make verify" in ci


def test_readme_obligation_example_is_proved(tmp_path):
    example = _example("README.md", "aligned_table_holds_every_token")
    assert len(example.splitlines()) <= 20
    path = tmp_path / "readme_example.py"
    path.write_text(example)
    (ob,) = load_file(str(path))
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    assert r.cases == 6
    assert r.assumptions_used == []  # as the README says: the claim needs no assumption


def test_the_tutorial_starts_from_the_readme_obligation():
    assert _example("docs/tutorial.md", "aligned_table_holds_every_token") == _example(
        "README.md", "aligned_table_holds_every_token"
    )


def test_the_tutorial_counterexample_is_the_one_shown(tmp_path):
    path = tmp_path / "your_file.py"
    path.write_text(
        _example("README.md", "aligned_table_holds_every_token")
        + "\n\n"
        + _example("docs/tutorial.md", "each_rank_holds_every_token")
    )
    _, ob = load_file(str(path))
    assert ob.line == 16  # the line the tutorial's output shows
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.COUNTEREXAMPLE
    assert r.counterexample.params == {"max_model_len": 17, "block_size": 16, "dcp": 2}
    assert r.counterexample.values == {"demand": 17, "capacity": 16}
    shown = re.search(r"FAIL counterexample each_rank_holds_every_token.*?```", _text("docs/tutorial.md"), re.S).group(
        0
    )
    assert "demand=17, capacity=16; fails in 3 of 6 admitted cases" in shown


@pytest.mark.parametrize("page", ["docs/tutorial.md", "docs/explanation/batches-and-routings.md"])
def test_the_batch_example_finds_the_padded_rows_counterexample(tmp_path, page):
    path = tmp_path / "batch_example.py"
    path.write_text(_example(page, "padded_rows_fit"))
    (ob,) = load_file(str(path))
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.counterexample.values["rows"] > r.counterexample.values["capacity"]
    (w,) = r.witnesses
    assert w.found and max(w.params["decode_lens"]) >= 2


@pytest.mark.parametrize("page", MANUAL_PAGES)
def test_every_relative_link_resolves(page):
    base = os.path.dirname(os.path.join(ROOT, page))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _text(page)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not os.path.exists(os.path.normpath(os.path.join(base, target.split("#")[0]))):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", MANUAL_PAGES)
def test_manual_pages_are_manuals_not_logs(page):
    """History lives in git: no session numbers or branch names in the manual pages."""
    assert re.findall(r"\bsession \d+|\bsessions? [sS]\d+\b|\bbreak\d+\b|\bissue \d+\b", _text(page)) == []


def _documented_commands() -> list[tuple[str, list[str]]]:
    """Every ``capproof …`` line of the manual pages' shell blocks, as argv (without the program)."""
    import shlex

    out = []
    for page in MANUAL_PAGES:
        for block in re.findall(r"```sh\n(.*?)```", _text(page), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = line.split(" #")[0].strip()
                program, _, rest = command.partition(" ")
                if not program.endswith("capproof") or "…" in rest or "[" in rest:
                    continue
                args = shlex.split(rest)
                if "--" in args:
                    args = args[: args.index("--")]
                out.append((page, args))
    return out


def test_the_documented_command_lines_are_accepted():
    """Each documented `capproof` command line parses (unknown options fail before --help is honoured)."""
    from click.testing import CliRunner

    from capproof.cli import main

    commands = _documented_commands()
    assert len(commands) >= 20 and any(args[:1] == ["check-config"] for _, args in commands)
    failed = []
    for page, args in commands:
        result = CliRunner().invoke(main, [*args, "--help"])
        if result.exit_code != 0:
            failed.append((page, args, result.output.splitlines()[-1:] if result.output else result.exception))
    assert failed == []
