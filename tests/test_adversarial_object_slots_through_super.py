"""Adversarial catalogue: ``object``'s own slots called on a symbolic value (``super(int, x)``, ``int.__base__``).

``super(int, x)`` accepts a symbolic value (its ``__class__`` says ``int``) and binds the methods
found after ``int`` in int's MRO, ``object``'s, to the value itself. ``object.__sizeof__`` reads
the size of the value's real type: 28 for the int 37, another number for a symbolic int. capproof
refuses ``object.__repr__(x)``, ``sys.getsizeof(x)``, ``x.__sizeof__()`` and a read of
``__repr__``/``__dir__``, and ``object.__sizeof__(x)`` when ``object`` is named; ``object`` reached
another way (``int.__mro__[-1]``, ``int.__base__``, ``super``) was not. The guard now refuses a
read of a class's bases, MRO or subclasses, ``super`` other than ``super()`` in a method, and
``object``'s slots held by the model (capproof/guard.py). Below:

- ``super(int, a).__sizeof__()`` in the model's own code, with ``int`` reached as ``bool.__base__``,
  and called by C (``map``);
- ``int.__mro__[-1].__sizeof__(a)``, ``getattr(int.__base__, <computed name>)(a)``, a module global
  holding ``object.__sizeof__`` called from a helper;
- ``int.__base__.__setattr__(a, "x", 1)``: the ``AttributeError`` names the real type;
- ``int.__base__.__dict__["__class__"].__get__(a)``: ``object``'s own ``__class__`` descriptor, the
  real type (``type(a)`` without naming ``type``);
- as an aggregate element ("proved [all batch sizes]");
- ``object.__sizeof__(a)`` named, ``super(int, a).__repr__()`` / ``__dir__()`` (refused), ``super(int, a).__hash__()`` and
  ``__setattr__`` (a correct counterexample): passing.

Each model is false at ``a == 37`` on ints (``lens == [37, 100]``) and reads "symbolic" on the
symbolic run only. Brute forced on ints by tests/_soundness_harness.py.
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
    pytest.param("super-int-sizeof", A + "    sym = super(int, a).__sizeof__() != 28\n" + TAIL),
    pytest.param(
        "super-int-reached-as-bools-base-sizeof",
        A + "    sym = super(bool.__base__, a).__sizeof__() != 28\n" + TAIL,
    ),
    pytest.param(
        "super-int-sizeof-called-by-map",
        A + "    sym = list(map(lambda s: s.__sizeof__(), [super(int, a)]))[0] != 28\n" + TAIL,
    ),
    pytest.param(
        "super-int-sizeof-as-an-aggregate-element",
        DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, super(int, x).__sizeof__() == 28), 1, 0)"
        + " for x in lens), capacity=0)\n",
    ),
    pytest.param(
        "object-reached-as-ints-last-mro-entry-sizeof",
        A + "    sym = int.__mro__[-1].__sizeof__(a) != 28\n" + TAIL,
    ),
    pytest.param(
        "object-sizeof-by-a-computed-name",
        A + "    sym = getattr(int.__base__, '__size' + 'of__')(a) != 28\n" + TAIL,
    ),
    pytest.param(
        "object-sizeof-held-by-a-module-global",
        "SIZEOF = int.__mro__[-1].__sizeof__\n\n\ndef bytes_of(x):\n    return SIZEOF(x)\n\n\n"
        + A
        + "    sym = bytes_of(a) != 28\n"
        + TAIL,
    ),
    pytest.param(
        "object-setattr-error-message-names-the-real-type",
        "def _t(a):\n    try:\n        int.__base__.__setattr__(a, 'x', 1)\n        return True\n"
        + "    except AttributeError as e:\n        return 'int' not in str(e)\n\n\n"
        + A
        + "    sym = _t(a)\n"
        + TAIL,
    ),
    pytest.param(
        "objects-class-descriptor-gives-the-real-type",
        A + "    sym = not issubclass(int.__base__.__dict__['__cl' + 'ass__'].__get__(a), int)\n" + TAIL,
    ),
    pytest.param("object-sizeof-named", A + "    sym = object.__sizeof__(a) != 28\n" + TAIL),
    pytest.param(
        "object-reached-by-inspect-getmro",
        "import inspect\n\n\n" + A + "    sym = inspect.getmro(int)[-1].__sizeof__(a) != 28\n" + TAIL,
    ),
    pytest.param(
        "object-setattr-named-error-message",
        "def _t(a):\n    try:\n        object.__setattr__(a, 'x', 1)\n        return True\n"
        + "    except AttributeError as e:\n        return 'int' not in str(e)\n\n\n"
        + A
        + "    sym = _t(a)\n"
        + TAIL,
    ),
    pytest.param(
        "symint-class-found-among-objects-subclasses",
        A + "    sym = any(isinstance(a, c) for c in int.__base__.__subclasses__() if c.__name__ == 'SymInt')\n" + TAIL,
    ),
    pytest.param("super-int-repr", A + '    sym = "<int object" not in super(int, a).__repr__()\n' + TAIL),
    pytest.param("super-int-dir", A + '    sym = "term" in super(int, a).__dir__()\n' + TAIL),
    pytest.param("super-int-hash", A + "    sym = super(int, a).__hash__() == a\n" + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_objects_slots_through_super_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_super_sizeof(a):
    return at_most(demand=select(all_of(a == 37, super(int, a).__sizeof__() == 28), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_through_super(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_object_slots_through_super.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_super_sizeof"] != "proved", verdicts


def test_check_config_is_not_safe_through_super(tmp_path):
    path = tmp_path / "cc_object_slots_through_super.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    sym = super(int, num_reqs).__sizeof__() != 28\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_super(tmp_path):
    path = tmp_path / "bd_object_slots_through_super.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    sym = super(int, num_reqs).__sizeof__() != 28\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
