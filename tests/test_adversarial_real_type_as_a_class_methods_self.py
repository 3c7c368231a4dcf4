"""Adversarial catalogue: the value's real type reached as ``__self__`` of a class method bound through it.

``a.__init_subclass__`` and ``a.__subclasshook__`` are ``object``'s class methods, found through the
value's type and bound to it: their ``__self__`` is the value's *real* type, ``int`` for an int and
capproof's ``SymInt`` for a symbolic int, reached without naming ``type`` or reading ``__class__``
(which says ``int``). SymInt's metaclass refuses reading that type's attributes, hashing it and
comparing it (``__name__``, ``__dict__``, ``==``), but not passing it to ``issubclass``/``isinstance``
as the class tested against: ``issubclass(bool, a.__init_subclass__.__self__)`` is true for an int
and false for a symbolic int. Both halves are closed: the value's ``__init_subclass__`` (an
``object`` slot where an int has its own C method) is misuse to read, and ``isinstance``/``issubclass``
against the symbolic type reached by any route (``type(a)`` too) is misuse. Below, each refused:

- ``issubclass(bool, type(a))``, ``issubclass(bool, ...)``, ``isinstance(True, ...)``, ``isinstance(5, a.__subclasshook__.__self__)``,
  in a thread, as an aggregate element ("proved [all batch sizes]");
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient);
- also: the type's ``__dict__`` or ``__name__`` read, the type compared with ``!=`` (the
  metaclass refuses them), ``isinstance(a, ...)`` (true on both: a correct counterexample), the
  type called (``SymInt(5)`` fails: an error).

Each model is false at ``a == 37`` on ints and reads "symbolic" on the symbolic run only. Brute
forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import (
    assert_bound_not_sufficient,
    assert_check_config_not_safe,
    batched_verdicts,
    check,
)

A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'

ATTEMPTS = [
    pytest.param("issubclass-bool-of-type-of-the-value", A + "    sym = not issubclass(bool, type(a))\n" + TAIL),
    pytest.param(
        "issubclass-bool-of-init-subclass-self",
        A + "    sym = not issubclass(bool, a.__init_subclass__.__self__)\n" + TAIL,
    ),
    pytest.param(
        "isinstance-true-of-init-subclass-self",
        A + "    sym = not isinstance(True, a.__init_subclass__.__self__)\n" + TAIL,
    ),
    pytest.param(
        "isinstance-five-of-subclasshook-self", A + "    sym = not isinstance(5, a.__subclasshook__.__self__)\n" + TAIL
    ),
    pytest.param(
        "issubclass-in-a-thread",
        "import threading\n\n\n"
        + A
        + "    out = []\n"
        + "    t = threading.Thread(target=lambda: out.append(issubclass(bool, a.__init_subclass__.__self__)))\n"
        + "    t.start()\n"
        + "    t.join()\n"
        + "    sym = not out[0]\n"
        + TAIL,
    ),
    pytest.param(
        "issubclass-as-an-aggregate-element",
        DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, issubclass(bool, x.__init_subclass__.__self__)), 1, 0)"
        + " for x in lens), capacity=0)\n",
    ),
    pytest.param(
        "a-symbolic-bools-real-type-is-no-int-subclass",
        A + "    sym = not issubclass((a == 37).__init_subclass__.__self__, int)\n" + TAIL,
    ),
    pytest.param(
        "types-dict-of-init-subclass-self",
        A + "    sym = 'term' in a.__init_subclass__.__self__.__dict__\n" + TAIL,
    ),
    pytest.param(
        "subclasshook-self-compared",
        A + "    sym = a.__subclasshook__.__self__ != (0).__subclasshook__.__self__\n" + TAIL,
    ),
    pytest.param(
        "isinstance-of-the-value-itself",
        A + "    sym = not isinstance(a, a.__init_subclass__.__self__)\n" + TAIL,
    ),
    pytest.param(
        "init-subclass-self-called",
        A
        + "    try:\n        sym = a.__init_subclass__.__self__(5) != 5\n    except Exception:\n        sym = True\n"
        + TAIL,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_the_real_type_as_a_class_methods_self_does_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_a_class_methods_self(a):
    return at_most(demand=select(all_of(a == 37, issubclass(bool, a.__init_subclass__.__self__)), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_through_a_class_methods_self(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_real_type_as_a_class_methods_self.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_a_class_methods_self"] != "proved", verdicts


def test_check_config_is_not_safe_through_a_class_methods_self(tmp_path):
    path = tmp_path / "cc_real_type_as_a_class_methods_self.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    real = issubclass(bool, num_reqs.__init_subclass__.__self__)\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, real), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_a_class_methods_self(tmp_path):
    path = tmp_path / "bd_real_type_as_a_class_methods_self.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    real = issubclass(bool, num_reqs.__init_subclass__.__self__)\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, real), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
