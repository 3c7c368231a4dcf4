"""Shared helpers: run the real spec/ obligations, and write throwaway spec files."""

from __future__ import annotations

import os
import textwrap

import pytest

from capproof import Options, Verdict
from capproof.loader import ensure_project_on_path, load_file
from capproof.prover import prove_obligation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _project_root(monkeypatch):
    """Specs and models resolve relative to the project root, as under `make`."""
    monkeypatch.chdir(ROOT)
    ensure_project_on_path(ROOT)


def obligation_named(spec_file: str, name: str):
    items = load_file(os.path.join(ROOT, spec_file))
    assert not hasattr(items, "message"), getattr(items, "message", "")
    matches = [it for it in items if getattr(it, "name", None) == name]
    assert matches, f"{name} not in {spec_file}"
    return matches[0]


def prove(spec_file: str, name: str, **pins: int):
    return prove_obligation(obligation_named(spec_file, name), Options(pins=pins))


def assert_proved(result):
    """pysmt-style: the obligation is proved (unsat on a non-vacuous case set)."""
    assert result.verdict is Verdict.PROVED, f"{result.id}: {result.verdict}: {result.message}"
    assert result.cases - result.excluded > 0


def assert_counterexample(result, **expected_values: int):
    """The obligation has a replayed counterexample whose named quantities match."""
    assert result.verdict is Verdict.COUNTEREXAMPLE, f"{result.id}: {result.verdict}: {result.message}"
    for name, value in expected_values.items():
        assert result.counterexample.values[name] == value, (name, result.counterexample.values)


@pytest.fixture
def spec_file(tmp_path):
    """Write a spec module into a temporary directory and return its path."""

    def write(source: str, name: str = "spec_under_test.py") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return str(path)

    return write


def pytest_collection_modifyitems(config, items):
    """``make mutation`` with ``CAPPROOF_MUTATION_ORACLE=prove`` (the default there): only the
    ``capproof prove`` oracle (tests/mutation/) may kill a mutant, for the "prove alone" figure."""
    if os.environ.get("CAPPROOF_MUTATION_ORACLE") == "prove":
        kept = [it for it in items if it.get_closest_marker("mutation")]
        config.hook.pytest_deselected(items=[it for it in items if it not in kept])
        items[:] = kept


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project in a temporary directory (``spec/`` made), as the working directory."""
    (tmp_path / "spec").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path
