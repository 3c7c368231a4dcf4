"""Adversarial catalogue: ``str.format``'s own (C) field lookup asks the value for an attribute only a symbolic value has.

A replacement field ``{0.term}`` makes ``str.format`` call ``getattr(value, "term")`` in C. A
symbolic int has an attribute ``term`` (its Z3 term), an int has none: on the symbolic run the
format succeeds, on ints it raises ``AttributeError``, so a model that catches that error takes a
branch the ints never take. capproof refuses the same probe through ``string.Formatter.get_field``
(Python code it intercepts), ``operator.attrgetter`` or ``getattr`` by a computed name (the static
guard), and a missing attribute (``{0.__slots__}``: capproof's error); ``str.format``,
``str.format_map`` and a field name built at run time reach the attribute without any of them. So
a model's read of a symbolic value's attribute, by any route (Python's or C's), gives only what an
int has, as the int has it: anything else is misuse. Below, each refused:

- the probe in the model, with a field name built at run time, through ``format_map``, as a
  keyword field of a log-like message, in a helper run by a thread pool, as an aggregate element
  ("proved [all batch sizes]");
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient) through the same probe;
- a method only capproof's class has (``{0.__deepcopy__}``); ``{0.__slots__}`` (no such attribute on either: capproof's error), ``{0.var}`` (the
  property reads the type's repr: misuse), ``{0[0]}`` (neither is subscriptable).

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

HAS_TERM = (
    "def _has_term(x):\n"
    "    try:\n"
    "        '{0.term}'.format(x)\n"
    "        return True\n"
    "    except AttributeError:\n"
    "        return False\n\n\n"
)
A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'


def _probe(expr: str, error: str = "AttributeError") -> str:
    return A + f"    try:\n        {expr}\n        sym = True\n    except {error}:\n        sym = False\n" + TAIL


ATTEMPTS = [
    pytest.param("format-field-a-method-only-capproofs-class-has", _probe("'{0.__deepcopy__}'.format(a)")),
    pytest.param("format-field-term", _probe("'{0.term}'.format(a)")),
    pytest.param("format-field-name-built-at-run-time", _probe("('{0.' + 'te' + 'rm}').format(a)")),
    pytest.param("format-map-field-term", _probe("'{x.term}'.format_map({'x': a})")),
    pytest.param("format-keyword-field-in-a-message", _probe("'padded {n.term} requests'.format(n=a)")),
    pytest.param(
        "format-field-term-in-a-thread-pool",
        HAS_TERM
        + "import concurrent.futures\n\n\n"
        + A
        + "    with concurrent.futures.ThreadPoolExecutor(1) as ex:\n"
        + "        sym = ex.submit(_has_term, a).result()\n"
        + TAIL,
    ),
    pytest.param(
        "format-field-term-as-an-aggregate-element",
        HAS_TERM
        + DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, not _has_term(x)), 1, 0) for x in lens), capacity=0)\n",
    ),
    pytest.param("format-field-term-of-a-symbolic-bool", _probe("'{0.term}'.format(a == 37)")),
    pytest.param("format-field-slots-missing-on-both", _probe("'{0.__slots__}'.format(a)")),
    pytest.param("format-field-var", _probe("'{0.var}'.format(a)")),
    pytest.param("format-field-index", _probe("'{0[0]}'.format(a)", "TypeError")),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_str_format_fields_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = (
    "from capproof import Range, obligation, at_most, select, all_of, cdiv\n\n\n"
    + HAS_TERM
    + """@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_a_format_field(a):
    return at_most(demand=select(all_of(a == 37, not _has_term(a)), 1, 0), capacity=0)
"""
)


def test_the_batched_runner_does_not_prove_through_a_format_field(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_str_format_field.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_a_format_field"] != "proved", verdicts


def test_check_config_is_not_safe_through_a_format_field(tmp_path):
    path = tmp_path / "cc_str_format_field.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n" + HAS_TERM + "@obligation("
        'domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not _has_term(num_reqs)), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_a_format_field(tmp_path):
    path = tmp_path / "bd_str_format_field.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n" + HAS_TERM + "@obligation("
        'domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not _has_term(num_reqs)), 100, 0),"
        " capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
