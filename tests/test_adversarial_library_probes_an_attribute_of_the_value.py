"""Adversarial catalogue: a library asks the value for an attribute a symbolic value has and an int lacks.

The static guard (capproof/guard.py) refuses the model's own ``hasattr(x, "term")``: ``term`` and
``var`` are capproof's slots of a symbolic int, which an int lacks. ``isinstance`` with a
``typing.runtime_checkable`` ``Protocol`` whose members are data (``term: object``) asks the same
question from typing's code: ``_ProtocolMeta.__instancecheck__`` calls ``hasattr(instance, attr)``
for each member, so ``isinstance(a, HasTerm)`` is False on ints and True on the symbolic run. Below:

- a data-member Protocol named ``term``, one named ``var``;
- the same as the element of a sum over the batch;
- ``string.Formatter().get_field("0.term", (a,), {})`` (``string.py``'s ``getattr`` with a name
  parsed from a format string);
- ``pickle.whichmodule(a, "x")``: ``getattr(obj, "__module__", None)`` (an int instance has no
  ``__module__``; a symbolic one has its class's);
- a ``__len__`` method Protocol: proved by :func:`capproof.prover.prove_obligation`; ``capproof
  prove`` (the runner) makes it an error only because the ABC caches changed ("state changed");
- the model's own ``hasattr(a, "term")`` (refused): passing.

Those three library functions called with a symbolic value during a run are now misuse
(capproof/symbolic.py ``_probing_codes``); a symbolic int has no ``__len__`` (an int has none).

Each model is false at ``a == 37`` on ints (``lens == [37, 100]``). Brute forced on ints by
tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import assert_check_config_not_safe, check

A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'


def _protocol(name: str, member: str) -> str:
    return (
        "from typing import Protocol, runtime_checkable\n\n\n@runtime_checkable\n"
        f"class {name}(Protocol):\n    {member}\n\n\n"
    )


ATTEMPTS = [
    pytest.param(
        "protocol-with-a-data-member-named-term",
        _protocol("HasTerm", "term: object") + A + "    sym = isinstance(a, HasTerm)\n" + TAIL,
    ),
    pytest.param(
        "protocol-with-a-data-member-named-var",
        _protocol("HasVar", "var: object") + A + "    sym = isinstance(a, HasVar)\n" + TAIL,
    ),
    pytest.param(
        "protocol-check-as-the-element-of-a-sum",
        _protocol("HasTerm", "term: object")
        + DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, not isinstance(x, HasTerm)), 1, 0) for x in lens),"
        + " capacity=0)\n",
    ),
    pytest.param(
        "string-formatters-get-field-of-capproofs-slot",
        "import string\n\n\ndef _t(a):\n    try:\n        string.Formatter().get_field('0.term', (a,), {})\n"
        + "        return True\n    except AttributeError:\n        return False\n\n\n"
        + A
        + "    sym = _t(a)\n"
        + TAIL,
    ),
    pytest.param(
        "pickles-whichmodule-reads-dunder-module",
        "import pickle\n\n\n" + A + "    sym = pickle.whichmodule(a, 'x') != '__main__'\n" + TAIL,
    ),
    pytest.param(
        "protocol-with-a-len-method",
        _protocol("SupportsLen", "def __len__(self) -> int: ...") + A + "    sym = isinstance(a, SupportsLen)\n" + TAIL,
    ),
    pytest.param("the-models-own-hasattr", A + '    sym = hasattr(a, "term")\n' + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_a_librarys_attribute_probe_does_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


def test_check_config_is_not_safe_through_a_protocol_check(tmp_path):
    path = tmp_path / "cc_protocol_check.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n"
        + _protocol("HasTerm", "term: object")
        + '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        + '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        + "def table_fits(max_model_len, num_reqs):\n"
        + "    sym = isinstance(num_reqs, HasTerm)\n"
        + "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})
