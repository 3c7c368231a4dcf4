"""Adversarial catalogue: a function the guard refuses by name, imported inside the model.

The guard refuses the functions that see an object itself rather than asking it (``gc``'s,
``sys.getrefcount``, ``pickle``/``marshal.dumps``, ``operator.is_``, ``builtins.id``/``type``/
``repr``) when a model *names* them: a module global or a name the model's code resolves. A
module imported inside the model's function (``import gc`` in its body, ``from gc import
get_referents``, ``importlib.import_module('gc')``, a helper that imports it) is a local name, and
the load-time resolution does not see it: ``gc.get_referents(a)`` is ``[]`` for an int and the Z3
term for a symbolic one, ``gc.is_tracked(a)`` false for an int, ``marshal.dumps(a)`` raises only
on the symbolic one. They are decided when called or read, whatever route reached them: the
functions with an audit event of their own (``gc.get_referents``/``get_referrers``/``get_objects``,
``marshal.dumps``/``dump``) by the audit hook at the call, and any read of the ``gc`` module's
functions or data on the model's behalf during a symbolic run (``is_tracked``, the allocation
counts) at the read. Each refused (an error):

- ``import gc`` inside the model (``get_referents``, ``is_tracked``), ``from gc import
  get_referents``, ``importlib.import_module('gc')``, ``__import__('gc')``, a helper importing ``gc``
  itself, ``gc.get_referents`` of the value's method,
  ``import marshal`` inside the model;
- ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded", sufficient);
- ``gc.is_tracked`` called by ``map`` (no frame holds it), ``gc.get_count`` (the symbolic run's
  own allocations), ``vars(gc)``, ``gc.get_referents`` submitted to a thread pool (no model frame
  on the worker's stack), ``marshal.dump`` to a file;
- caught: ``gc`` imported at module level (refused by name), ``pickle.dumps`` imported inside
  (the hash of the type read on the model's behalf), ``builtins.repr`` inside (the repr is misuse),
  ``builtins.type`` inside (the type read is misuse).

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

ATTEMPTS = [
    pytest.param("gc-get-referents", A + "    import gc\n    sym = len(gc.get_referents(a)) != 0\n" + TAIL),
    pytest.param("gc-is-tracked", A + "    import gc\n    sym = gc.is_tracked(a)\n" + TAIL),
    pytest.param(
        "from-gc-import-get-referents",
        A + "    from gc import get_referents\n    sym = len(get_referents(a)) != 0\n" + TAIL,
    ),
    pytest.param(
        "gc-by-importlib",
        A
        + "    import importlib\n    g = importlib.import_module('gc')\n    sym = len(g.get_referents(a)) != 0\n"
        + TAIL,
    ),
    pytest.param(
        "gc-in-a-helper",
        A + "    def refs(x):\n        import gc\n        return gc.get_referents(x)\n    sym = bool(refs(a))\n" + TAIL,
    ),
    pytest.param(
        "gc-by-dunder-import",
        A + "    sym = len(__import__('gc').get_referents(a)) != 0\n" + TAIL,
    ),
    pytest.param(
        "gc-get-referents-of-a-method",
        A
        + "    import gc\n    sym = len(gc.get_referents(a.bit_length)) != len(gc.get_referents((5).bit_length))\n"
        + TAIL,
    ),
    pytest.param(
        "marshal-dumps",
        A
        + "    import marshal\n    try:\n        marshal.dumps(a)\n        sym = False\n"
        + "    except ValueError:\n        sym = True\n"
        + TAIL,
    ),
    pytest.param(
        "gc-is-tracked-called-by-map", A + "    sym = list(map(__import__('gc').is_tracked, [a]))[0]\n" + TAIL
    ),
    pytest.param(
        "gc-allocation-count",
        A + "    import gc\n    c0 = gc.get_count()[0]\n    b = a + 1\n    sym = gc.get_count()[0] != c0\n" + TAIL,
    ),
    pytest.param("gc-module-dict", A + "    import gc\n    sym = vars(gc)['is_' + 'tracked'](a)\n" + TAIL),
    pytest.param(
        "gc-get-referents-in-a-thread-pool",
        "import concurrent.futures\nimport importlib\n\n\n"
        + A
        + "    with concurrent.futures.ThreadPoolExecutor(1) as ex:\n"
        + "        sym = len(ex.submit(importlib.import_module('gc').get_referents, a).result()) != 0\n"
        + TAIL,
    ),
    pytest.param(
        "marshal-dump-to-a-file",
        A
        + "    import io\n    import marshal\n    try:\n        marshal.dump(a, io.BytesIO())\n        sym = False\n"
        + "    except ValueError:\n        sym = True\n"
        + TAIL,
    ),
    pytest.param("gc-at-module-level", "import gc\n\n\n" + A + "    sym = len(gc.get_referents(a)) != 0\n" + TAIL),
    pytest.param(
        "pickle-dumps-inside",
        A + "    import pickle\n    try:\n        pickle.dumps(a)\n        sym = False\n"
        "    except Exception:\n        sym = True\n" + TAIL,
    ),
    pytest.param("builtins-repr-inside", A + "    import builtins\n    sym = builtins.repr(a) != '37'\n" + TAIL),
    pytest.param("builtins-type-inside", A + "    import builtins\n    sym = builtins.type(a) is not int\n" + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_refused_functions_imported_inside_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_gc_imported_inside(a):
    import gc
    sym = len(gc.get_referents(a)) != 0
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_through_gc_imported_inside(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_refused_functions_imported_inside.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_gc_imported_inside"] != "proved", verdicts


def test_check_config_is_not_safe_through_gc_imported_inside(tmp_path):
    path = tmp_path / "cc_refused_functions_imported_inside.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    import gc\n"
        "    sym = len(gc.get_referents(num_reqs)) != 0\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_marshal_imported_inside(tmp_path):
    path = tmp_path / "bd_refused_functions_imported_inside.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    import marshal\n"
        "    try:\n"
        "        marshal.dumps(num_reqs)\n"
        "        sym = False\n"
        "    except ValueError:\n"
        "        sym = True\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
