"""The ``capproof prove`` oracle of ``make mutation`` (marker ``mutation``, not in ``make test``).

One test per obligation of spec/: its spec file is loaded again inside the test (so the spec
helpers it calls while loading, ``spec/_inventory.py``'s ``cover`` and the families of
``spec/_families.py``, run under the mutant and are tracked by mutmut as called by this test),
the obligation is decided in this process with :attr:`capproof.Options.verdict_only`
(``--no-contracts --density off``, no minimisation, no witnesses, no restating check: the same
verdict, the counterexample still replayed on ints, the obligation's own rlimit), and the test
fails when the verdict differs from the obligation's expectation as declared in the unmutated
spec. mutmut runs, for each mutant of models/ or of a spec/ helper, only the tests whose
obligations call the mutated function (mutmut's own call tracking), so a mutant is *killed by
prove* when some obligation that uses it changes verdict.

Two outcomes are detected but are not kills by a verdict, and are recorded (one JSON line each)
in ``capproof-mutation-outcomes.jsonl`` at the root of the mutated copy, for
``tests/mutation/summary.py``: ``unknown`` (the solver ran out of the obligation's rlimit:
``capproof prove`` fails, but says nothing about the claim) and ``missing`` (the obligation is no
longer declared: ``prove`` does not notice, ``make verify``'s proofs/ staleness check does).
docs/soundness.md has the figures and how they were run.
"""

from __future__ import annotations

import json
import os

import pytest

from capproof import Options, loader
from capproof.loader import discover, ensure_project_on_path, load_file
from capproof.obligation import Obligation
from capproof.prover import prove_obligation

pytestmark = pytest.mark.mutation

ROOT = os.getcwd()
OUTCOMES = os.path.join(ROOT, "capproof-mutation-outcomes.jsonl")
ORACLE = Options(density="off", minimize=False, contracts=False, verdict_only=True, isolate=False)


def _obligations() -> list[Obligation]:
    ensure_project_on_path(ROOT)
    files, _ = discover(["spec"])
    out = []
    for f in files:
        items = load_file(f)
        if isinstance(items, list):
            out += [it for it in items if isinstance(it, Obligation)]
    return out


OBLIGATIONS = _obligations()


_fresh: dict[tuple[str, str], list | loader.LoadError] = {}


def _reload(path: str) -> list | loader.LoadError:
    """``path`` executed again under the active mutant (not the loader's items, loaded unmutated at
    collection): its load-time helper calls run now. mutmut's call-tracking run (``stats``)
    executes it in every test, so that each helper is tracked as called by every obligation of the
    file; a mutant's run (one process, one mutant) executes each file once."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    key = (mutant, os.path.abspath(path))
    if mutant == "stats" or key not in _fresh:
        loader._loaded.pop(key[1], None)
        _fresh[key] = load_file(path)
    return _fresh[key]


def _record(kind: str, ob_id: str, detail: str) -> None:
    with open(OUTCOMES, "a") as out:
        out.write(
            json.dumps(
                {"mutant": os.environ.get("MUTANT_UNDER_TEST", ""), "kind": kind, "obligation": ob_id, "detail": detail}
            )
            + "\n"
        )


@pytest.mark.parametrize("declared", OBLIGATIONS, ids=[ob.id for ob in OBLIGATIONS])
def test_verdict_is_as_expected(declared):
    items = _reload(declared.file)
    assert isinstance(items, list), f"{declared.file} no longer loads: {items}"
    ob = next((it for it in items if isinstance(it, Obligation) and it.id == declared.id), None)
    if ob is None:
        _record("missing", declared.id, "")
        pytest.fail(f"{declared.id} is no longer declared")
    r = prove_obligation(ob, ORACLE)
    if r.verdict.value == "unknown" and declared.expect != "unknown":
        _record("unknown", declared.id, r.message)
    assert r.verdict.value == declared.expect, f"{declared.id}: {r.verdict} ({r.message})"
