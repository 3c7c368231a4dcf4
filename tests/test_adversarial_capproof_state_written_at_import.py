"""Adversarial catalogue: a spec module writes into capproof's own state in place when imported.

capproof refuses a spec module that rebinds capproof's machinery at import (``capproof.symbolic.
_is_model_code = ...``) and a model that reads capproof's private names during a symbolic run. A
write into one of capproof's dicts at import (the int-subclass operator check's memo, since removed:
``W`` has no operator of its own) rebound nothing: the symbolic run then takes ``W(1)`` as the plain int 1,
where on ints Python calls ``W.__rpow__`` first. Each model is false at ``a == 37`` on ints.
Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, check

from capproof.loader import load_file

W = "class W(int):\n    def __rpow__(self, other, *rest):\n        return 99\n\n\n"
D = '@obligation(domain={"a": Range(0, 100)})\n'
BODY = "def f(a):\n    x = a ** W(1)\n    return at_most(demand=select(a == 37, x - 37, 0), capacity=0)\n"

ATTEMPTS = [
    pytest.param(
        "operator-check-memo-item-set-at-import",
        "import capproof.symbolic as cs\n\n\n" + W + "cs._OVERRIDES[W] = False\n\n\n" + D + BODY,
    ),
    pytest.param(
        "operator-check-memo-updated-through-vars-at-import",
        "import capproof.symbolic\n\n\n"
        + W
        + "vars(capproof.symbolic)['_OVERRIDES'].update({W: False})\n\n\n"
        + D
        + BODY,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_capproof_state_written_at_import_does_not_decide_a_proof(spec_file, name, body):
    loaded = load_file(spec_file(HEADER + body, f"adv_{name.replace('-', '_')}.py"))
    if not isinstance(loaded, list):  # the dict the attack wrote into is gone: a load error, no verdict
        return
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
