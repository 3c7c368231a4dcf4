"""CrossHair verdict mapping on small models, and the seeded bug of the real models is found."""

from __future__ import annotations

import sys
import textwrap

import pytest

from capproof import Options, Verdict
from capproof.contracts import check_contract
from capproof.obligation import contract

MODEL = '''
def confirmed(x: int) -> int:
    """
    pre: x >= 0
    post: __return__ > x
    """
    return x + 1


def refuted(x: int) -> int:
    """
    pre: x >= 0
    post: __return__ < 10
    """
    return x


def contradictory(x: int) -> int:
    """
    pre: x > 0
    pre: x < 0
    post: __return__ == x
    """
    return x


def explodes(x: int) -> int:
    """
    pre: x >= 0
    post: True
    """
    if x == 7:
        raise RuntimeError("boom")
    return x


def no_contract(x: int) -> int:
    return x
'''


@pytest.fixture
def models_pkg(tmp_path, monkeypatch):
    pkg = tmp_path / "ctmodels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "small.py").write_text(textwrap.dedent(MODEL))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ctmodels/small.py"
    for name in [m for m in sys.modules if m.startswith("ctmodels")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    "name, verdict",
    [
        ("confirmed", Verdict.PROVED),
        ("refuted", Verdict.COUNTEREXAMPLE),
        ("contradictory", Verdict.VACUOUS),
        ("explodes", Verdict.COUNTEREXAMPLE),
    ],
)
def test_crosshair_states_map_to_verdicts(models_pkg, name, verdict):
    r = check_contract(contract(f"{models_pkg}::{name}"), Options(crosshair_timeout=10))
    assert r.verdict is verdict, r.message
    if verdict is Verdict.COUNTEREXAMPLE:
        assert "calling" in r.message  # CrossHair names the failing input


@pytest.mark.parametrize(
    "target, fragment",
    [
        ("ctmodels/small.py::no_contract", "no PEP 316 postcondition"),
        ("ctmodels/small.py::missing", "has no function 'missing'"),
        ("ctmodels/small.py", "must look like"),
        ("ctmodels/nope.py::f", "ModuleNotFoundError"),
    ],
)
def test_bad_contract_targets_are_errors(models_pkg, target, fragment):
    r = check_contract(contract(target), Options(crosshair_timeout=5))
    assert r.verdict is Verdict.ERROR
    assert fragment in r.message


def test_quality_seeded_unchecked_indexer_bug_is_found():
    """The unchecked indexer's contract (index < capacity) must be refuted with a concrete call."""
    r = check_contract(contract("models/runtime_indexers.py::unchecked_row"), Options(crosshair_timeout=20))
    assert r.verdict is Verdict.COUNTEREXAMPLE
    assert "unchecked_row(" in r.message


def test_quality_checked_row_is_confirmed_on_all_paths():
    r = check_contract(contract("models/runtime_indexers.py::checked_row"), Options(crosshair_timeout=20))
    assert r.verdict is Verdict.PROVED, r.message
