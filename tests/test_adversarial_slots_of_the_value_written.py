"""Adversarial catalogue: a model writes or deletes the symbolic value's own slots.

Reading an attribute of a symbolic value answers only what an int has (``a.term`` is misuse).
A write or deletion, ``b.term = ...``, ``setattr(b, 'term', ...)``, ``del b.term``,
``delattr(b, 'term')``, would succeed on a symbolic int or bool (its ``__slots__``) where it raises
``AttributeError`` on an int or bool, so a model could tell the runs apart by catching it; and a
slot rebound to another Z3 term would change what the value *means* on the symbolic run only
(``b.term = z3.IntVal(36)``: ``b != a`` is false on ints, true at ``a == 37`` symbolically). Every
write and deletion of a symbolic value's (or its method wrapper's) attributes is refused, whoever
asks and by any route (the value's ``__setattr__``/``__delattr__``, and the slot itself for a route
past them: ``object.__setattr__``), and the term is set once, in ``__new__`` (``__init__`` is
``object``'s, as an int's). Each refused (an error):

- ``b.term = None``, ``del b.term``, ``setattr``/``delattr`` with a constant name, on a copy of the
  value (``b = a + 0``); a symbolic bool's slot; the slot rebound to a Z3 constant (an int's and a
  bool's); the method wrapper's own slot written or deleted (``a.bit_length._method = None``: a C
  method has no such attribute); a copy re-initialised, ``b.__init__(z3.IntVal(36))`` (an int's
  ``__init__`` is ``object``'s and ignores its argument; a symbolic value's sets its term); the
  generated ``__init__`` of a dataclass whose field is named ``term`` applied to a copy;
- as a fold step ("proved [batches <= 3]"); the batched runner, ``check-config --spec`` ("safe",
  exit 0) and ``capproof bound`` ("bounded", sufficient) through the same route;
- ``object.__setattr__(b, 'term', ...)`` (past the value's own ``__setattr__``, as a frozen
  dataclass's ``__init__`` writes), the method wrapper's slot written by ``setattr`` in a thread
  pool worker, a symbolic bool's slot deleted with ``delattr``;
- ``b.__setattr__('term', None)`` (the method read is refused by name).

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


def _try(copy: str, stmt: str) -> str:
    return (
        A
        + f"    {copy}\n    try:\n        {stmt}\n        sym = True\n    except AttributeError:\n        sym = False\n"
        + TAIL
    )


ATTEMPTS = [
    pytest.param("assign-the-slot", _try("b = a + 0", "b.term = None")),
    pytest.param("delete-the-slot", _try("b = a + 1", "del b.term")),
    pytest.param("setattr-with-a-constant-name", _try("b = a * 1", "setattr(b, 'term', None)")),
    pytest.param("delattr-with-a-constant-name", _try("b = a - 0", "delattr(b, 'term')")),
    pytest.param("assign-a-symbolic-bools-slot", _try("c = a == 36", "c.term = None")),
    pytest.param(
        "slot-rebound-to-another-term",
        "import z3\n\n\n"
        + A
        + "    b = a + 0\n    try:\n        b.term = z3.IntVal(36)\n    except AttributeError:\n        pass\n"
        + "    sym = b != a\n"
        + TAIL,
    ),
    pytest.param("write-a-methods-slot", _try("m = a.bit_length", "m._method = None")),
    pytest.param("delete-a-methods-slot", _try("m = a.conjugate", "del m._method")),
    pytest.param(
        "symbolic-bools-slot-rebound-to-false",
        "import z3\n\n\n"
        + A
        + "    c = a == 37\n    try:\n        c.term = z3.BoolVal(False)\n    except AttributeError:\n        pass\n"
        + "    sym = not c\n"
        + TAIL,
    ),
    pytest.param(
        "copy-re-initialised-with-another-term",
        "import z3\n\n\n" + A + "    b = a + 0\n    b.__init__(z3.IntVal(36))\n    sym = b != a\n" + TAIL,
    ),
    pytest.param(
        "by-a-dataclass-init-of-a-field-named-term",
        "from dataclasses import dataclass\n\n\n@dataclass\nclass P:\n    term: object\n\n\n"
        + _try("b = a + 0", "P.__init__(b, None)"),
    ),
    pytest.param(
        "slot-deleted-in-a-fold-step",
        DV
        + "def f(n, lens):\n"
        + "    acc = 0\n"
        + "    for x in lens:\n"
        + "        y = x + 0\n"
        + "        try:\n"
        + "            del y.term\n"
        + "            s = True\n"
        + "        except AttributeError:\n"
        + "            s = False\n"
        + "        acc = acc + select(all_of(x == 37, not s), 1, 0)\n"
        + "    return at_most(demand=acc, capacity=0)\n",
    ),
    pytest.param("setattr-method-read", _try("b = a + 0", "b.__setattr__('te' + 'rm', None)")),
    pytest.param("objects-setattr-past-the-values-own", _try("b = a + 0", "object.__setattr__(b, 'term', None)")),
    pytest.param(
        "objects-setattr-rebinds-the-term",
        "import z3\n\n\n"
        + A
        + "    b = a + 0\n    try:\n        object.__setattr__(b, 'term', z3.IntVal(36))\n    except AttributeError:\n"
        + "        pass\n    sym = b != a\n"
        + TAIL,
    ),
    pytest.param("delattr-of-a-symbolic-bools-slot", _try("c = a == 36", "delattr(c, 'term')")),
    pytest.param(
        "setattr-of-a-methods-slot-in-a-thread-pool",
        "import concurrent.futures\n\n\n"
        + A
        + "    m = a.bit_length\n    with concurrent.futures.ThreadPoolExecutor(1) as ex:\n        try:\n"
        + "            ex.submit(setattr, m, '_method', None).result()\n            sym = True\n"
        + "        except AttributeError:\n            sym = False\n"
        + TAIL,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_writing_the_values_slots_does_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_a_slot_write(a):
    b = a + 0
    try:
        b.term = None
        sym = True
    except AttributeError:
        sym = False
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_through_a_slot_write(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_slots_of_the_value_written.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_a_slot_write"] != "proved", verdicts


def test_check_config_is_not_safe_through_a_slot_write(tmp_path):
    path = tmp_path / "cc_slots_of_the_value_written.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    b = num_reqs + 0\n"
        "    try:\n"
        "        b.term = None\n"
        "        sym = True\n"
        "    except AttributeError:\n"
        "        sym = False\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_a_slot_delete(tmp_path):
    path = tmp_path / "bd_slots_of_the_value_written.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    b = num_reqs + 0\n"
        "    try:\n"
        "        del b.term\n"
        "        sym = True\n"
        "    except AttributeError:\n"
        "        sym = False\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
