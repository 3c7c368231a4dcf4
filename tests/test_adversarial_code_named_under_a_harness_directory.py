"""Adversarial catalogue: a model's code named as a file of a test harness's directory.

capproof/guard.py counts a file under ``.../site-packages/mutmut/`` as library code
(``is_library_file``: a substring test, so the mutation harness's own frames are not audited),
while capproof/provenance.py's ``library_named`` does not list that directory, so ``genuine`` calls
any code naming it the file's own. Code the model compiles under a made-up path containing
``/site-packages/mutmut/`` (no such file needs to exist) is then skipped by the guard's scan: its
``type(a) is not int`` runs unaudited, in a scalar model and as an aggregate's element function
(``proved [all batch sizes]``). A path under ``site-packages`` alone, or under a hidden directory
below the working directory (an installed package's), is audited as the model's (an ``error``).

Each model reads "symbolic" on the symbolic run only and is false at ``a == 37`` on ints (``lens ==
[37, 100]``). Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

PROBE = "'def probe(a):\\n    return type(a) is not int\\n'"
A = '@obligation(domain={"a": Range(0, 100)})\n'
CLAIM = "def f(a):\n    sym = probe(a)\n    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'


def _named(path: str) -> str:
    return f"ns = {{}}\nexec(compile({PROBE}, {path}, 'exec'), ns)\nprobe = ns['probe']\n\n\n"


ATTEMPTS = [
    pytest.param("scalar-model", _named("'/tmp/adv/site-packages/mutmut/probe.py'") + A + CLAIM),
    pytest.param(
        "element-function-of-an-aggregate",
        _named("'/tmp/adv/site-packages/mutmut/element.py'")
        + DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, not probe(x)), 1, 0) for x in lens), capacity=0)\n",
    ),
    pytest.param("installed-package-name-is-audited", _named("'/tmp/adv/site-packages/probe.py'") + A + CLAIM),
    pytest.param(
        "hidden-directory-below-the-cwd-is-audited",
        "import os\n\n" + _named("os.path.join(os.getcwd(), '.hidden', 'probe.py')") + A + CLAIM,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_code_named_under_a_harness_directory_is_audited(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
