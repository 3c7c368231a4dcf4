"""Adversarial catalogue: C code that only asks whether the value has a mapping slot.

An int defines no ``__getitem__``, ``__len__``, ``__iter__`` or ``__contains__``; a symbolic int
that defined them (to raise a friendlier error) would make C code that tests for the slot without
calling it (``PyMapping_Check``) take another branch on the symbolic run, with no capproof code
running to notice. A symbolic int has none of them either:

- ``"abc" % a``: for a mapping argument, unused arguments are no error; for the int 37,
  ``TypeError: not all arguments converted``; ``b"abc" % a`` likewise;
- ``exec("pass", {}, a)``: the locals must be a mapping;
- ``types.MappingProxyType(a)``.

Each model catches the ``TypeError`` ints raise, is false at ``a == 37`` on ints and reads
"symbolic" on the symbolic run only. Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import assert_check_config_not_safe, check

A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n    sym = _t(a)\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"


def _try(statement: str, prelude: str = "") -> str:
    return (
        prelude
        + f"def _t(a):\n    try:\n        {statement}\n        return True\n    except TypeError:\n        return False\n\n\n"
        + A
        + TAIL
    )


ATTEMPTS = [
    pytest.param("str-percent-with-no-conversion", _try("'abc' % a")),
    pytest.param("bytes-percent-with-no-conversion", _try("b'abc' % a")),
    pytest.param("exec-with-the-value-as-locals", _try("exec('pass', {}, a)")),
    pytest.param("mapping-proxy-of-the-value", _try("types.MappingProxyType(a)", "import types\n\n\n")),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_c_code_asking_for_a_mapping_slot_does_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


def test_check_config_is_not_safe_through_a_mapping_slot(tmp_path):
    path = tmp_path / "cc_mapping_slot.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        "def _t(a):\n    try:\n        'abc' % a\n        return True\n    except TypeError:\n        return False\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    sym = _t(num_reqs)\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})
