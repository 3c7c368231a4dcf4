"""The ``capproof prove`` oracle of ``make mutation`` (marker ``mutation``, not in ``make test``).

One test per obligation of spec/: proved with ``--no-contracts --density off`` semantics in this
process, its verdict must equal its expectation. mutmut runs, for each mutant of models/ or of a
spec/ helper, only the tests whose obligations call the mutated function (mutmut's own call
tracking), so a mutant is killed *by prove* when some obligation that uses it changes verdict.
docs/soundness.md has the figures and how they were run.
"""

from __future__ import annotations

import os

import pytest

from capproof import Options
from capproof.loader import discover, ensure_project_on_path, load_file
from capproof.obligation import Obligation
from capproof.prover import prove_obligation

pytestmark = pytest.mark.mutation

ROOT = os.getcwd()


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


@pytest.mark.parametrize("ob", OBLIGATIONS, ids=[ob.id for ob in OBLIGATIONS])
def test_verdict_is_as_expected(ob):
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict.value == ob.expect, f"{ob.id}: {r.verdict} ({r.message})"
