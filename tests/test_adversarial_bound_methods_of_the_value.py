"""Adversarial catalogue: the value's bound methods are Python functions on a symbolic int and C methods on an int.

``a.bit_length`` and ``a.__floor__`` exist on both an int and a symbolic int, so reading them is
allowed; but an int's are C methods (``builtin_function_or_method``, ``method-wrapper``) and a
symbolic int's are bound Python functions, and *their* attributes differ: ``__func__`` and
``__code__`` exist only on the symbolic one, ``__qualname__`` says ``int.bit_length`` only on the
int, ``__text_signature__`` exists only on the builtin, ``inspect.signature`` reads the signature
differently. capproof refuses ``__module__`` read this way (the attribute-name guard) and calling
an operator method directly (``a.__add__``); so a method of the value a model reads is an opaque callable: calling it calls the method, any
attribute of it (or its repr, a comparison, a hash) is misuse. Below, each refused:

- ``a.bit_length.__qualname__``, ``a.__floor__.__func__`` (directly, and by ``hasattr`` in a
  helper), ``a.conjugate.__code__``, ``a.bit_length.__text_signature__``,
  ``inspect.signature(a.bit_length)``, ``a.__floor__.__name__``; through ``str.format`` fields
  (``'{0.__add__.__qualname__}'``, ``'{0.__init__.__qualname__}'``); as an aggregate element
  ("proved [all batch sizes]") and as a fold step;
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient);
- also: ``a.bit_length.__module__`` (refused by name), ``a.__add__.__qualname__`` (an operator
  method called or read directly: refused), ``a.__index__.__self__ is a`` (true on both: a
  sound verdict whatever it is).

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


def _try(expr: str, error: str = "AttributeError", caught: str = "False") -> str:
    return A + f"    try:\n        {expr}\n    except {error}:\n        sym = {caught}\n" + TAIL


ATTEMPTS = [
    pytest.param("floor-name", A + "    sym = a.__floor__.__name__ != '__floor__'\n" + TAIL),
    pytest.param("bit-length-qualname", A + "    sym = a.bit_length.__qualname__ != 'int.bit_length'\n" + TAIL),
    pytest.param("floor-func", _try("a.__floor__.__func__\n        sym = True")),
    pytest.param(
        "floor-func-by-hasattr-in-a-helper",
        "def _pyfunc(m):\n    return hasattr(m, '__func__')\n\n\n" + A + "    sym = _pyfunc(a.__floor__)\n" + TAIL,
    ),
    pytest.param("conjugate-code", _try("sym = a.conjugate.__code__.co_argcount >= 0")),
    pytest.param("bit-length-text-signature", _try("sym = a.bit_length.__text_signature__ is None", caught="True")),
    pytest.param(
        "inspect-signature-of-bit-length",
        "import inspect\n\n\n" + _try("sym = str(inspect.signature(a.bit_length)) != '()'", "ValueError", "True"),
    ),
    pytest.param(
        "format-field-add-qualname", A + "    sym = '{0.__add__.__qualname__}'.format(a) != 'int.__add__'\n" + TAIL
    ),
    pytest.param(
        "format-field-init-qualname",
        A + "    sym = '{0.__init__.__qualname__}'.format(a) != 'object.__init__'\n" + TAIL,
    ),
    pytest.param(
        "floor-func-as-an-aggregate-element",
        DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, not hasattr(x.__floor__, '__func__')), 1, 0)"
        + " for x in lens), capacity=0)\n",
    ),
    pytest.param(
        "bit-length-qualname-in-a-fold-step",
        DV
        + "def f(n, lens):\n"
        + "    acc = 0\n"
        + "    for x in lens:\n"
        + "        acc = acc + select(all_of(x == 37, x.bit_length.__qualname__ == 'int.bit_length'), 1, 0)\n"
        + "    return at_most(demand=acc, capacity=0)\n",
    ),
    pytest.param("bool-method-func-of-a-symbolic-bool", _try("(a == 37).__bool__.__func__\n        sym = True")),
    pytest.param(
        "numerator-bit-length-qualname",
        A + "    sym = a.numerator.bit_length.__qualname__ != 'int.bit_length'\n" + TAIL,
    ),
    pytest.param("bit-length-module", A + "    sym = a.bit_length.__module__ is not None\n" + TAIL),
    pytest.param("add-qualname-read-directly", A + "    sym = a.__add__.__qualname__ != 'int.__add__'\n" + TAIL),
    pytest.param("index-self-is-the-value", A + "    sym = a.__index__.__self__ is a\n" + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_bound_methods_of_the_value_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_a_bound_method(a):
    return at_most(demand=select(all_of(a == 37, a.bit_length.__qualname__ == "int.bit_length"), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_through_a_bound_method(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_bound_methods_of_the_value.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_a_bound_method"] != "proved", verdicts


def test_check_config_is_not_safe_through_a_bound_method(tmp_path):
    path = tmp_path / "cc_bound_methods_of_the_value.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    q = num_reqs.bit_length.__qualname__\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, q == 'int.bit_length'), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_a_bound_method(tmp_path):
    path = tmp_path / "bd_bound_methods_of_the_value.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    py = hasattr(num_reqs.__floor__, '__func__')\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not py), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
