"""Adversarial catalogue: the garbage collector's functions reached past the guarded ``gc`` module.

``gc.is_tracked`` tells a symbolic value from an int (an int is untracked; a symbolic value, an
object with slots, is tracked) and raises no audit event. The guard refuses it by name at load and
the ``gc`` module's own class refuses reads of it during a symbolic run. Past that class (the
function held at load is tests/test_adversarial_refused_functions_held_in_containers.py):

- ``types.ModuleType.__getattribute__(gc, "is_tracked")`` (past the module class's
  ``__getattribute__``), also on a symbolic bool, in an aggregate's element function;
- a fresh ``gc`` module object made by ``_imp.create_builtin`` (not the guarded one);
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient).

Caught (an error): ``operator.attrgetter("is_tracked")(gc)``, ``inspect.getmembers(gc)``,
``importlib.util.module_from_spec`` (importlib's ``type()`` of the value), and ``gc.get_referents``
reached by the same routes (its audit event is decided at the call).

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

#: the batched-runner and check-config checks give the false verdict alone, with their file and in a
#: fresh ``capproof`` process (the command line), but were refused after other tests in one process
#: of the full fast tier: non-strict there
IN_PROCESS = pytest.mark.xfail(
    strict=False, reason="a false verdict alone and from the command line; order dependent in one process"
)
OPEN = pytest.mark.xfail(
    strict=True, reason="gc.is_tracked (no audit event) reached past the gc module's class is not refused"
)

A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
FRESH = (
    "    import _imp, importlib.machinery\n"
    '    spec = importlib.machinery.ModuleSpec("gc", importlib.machinery.BuiltinImporter, origin="built-in")\n'
    "    m = _imp.create_builtin(spec)\n"
)

ATTEMPTS = [
    pytest.param(
        "module-type-getattribute",
        "import types\n\n\n"
        + A
        + '    import gc\n    sym = types.ModuleType.__getattribute__(gc, "is_tracked")(a)\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "module-type-getattribute-on-a-symbolic-bool",
        "import types\nimport gc as _g\n\n\n"
        + A
        + '    c = a > 50\n    sym = types.ModuleType.__getattribute__(_g, "is_tracked")(c)\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param("a-fresh-gc-module", A + FRESH + "    sym = m.is_tracked(a)\n" + TAIL, marks=OPEN),
    pytest.param(
        "attrgetter-on-the-module",
        "import operator\n\n\n" + A + '    import gc\n    sym = operator.attrgetter("is_tracked")(gc)(a)\n' + TAIL,
    ),
    pytest.param(
        "getmembers-of-the-module",
        "import inspect\n\n\n" + A + '    import gc\n    sym = dict(inspect.getmembers(gc))["is_tracked"](a)\n' + TAIL,
    ),
    pytest.param(
        "referents-held-in-a-module-dict",
        'import gc\nTOOLS = {"r": getattr(gc, "get_" + "referents")}\n\n\n'
        + A
        + '    sym = len(TOOLS["r"](a)) > 0\n'
        + TAIL,
    ),
    pytest.param("referents-of-a-fresh-gc-module", A + FRESH + "    sym = len(m.get_referents(a)) > 0\n" + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_collector_functions_past_the_module_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


@OPEN
def test_an_aggregate_element_does_not_prove_through_is_tracked(spec_file):
    body = (
        "import types\n\n\n"
        "def elem(x):\n"
        "    import gc\n"
        '    t = types.ModuleType.__getattribute__(gc, "is_tracked")\n'
        "    return select(all_of(x == 37, not t(x)), 1, 0)\n\n\n"
        '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
        "def f(n, lens):\n"
        "    return at_most(demand=total(elem(x) for x in lens), capacity=0)\n"
    )
    check(spec_file, "aggregate-element-is-tracked", body)


BATCH = """
import types
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def tracked_past_the_module_class(a):
    import gc as g
    sym = types.ModuleType.__getattribute__(g, "is_tracked")(a)
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)


@obligation(domain={"a": Range(0, 100)})
def tracked_of_a_fresh_module(a):
    import _imp, importlib.machinery
    spec = importlib.machinery.ModuleSpec("gc", importlib.machinery.BuiltinImporter, origin="built-in")
    sym = _imp.create_builtin(spec).is_tracked(a)
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""


@IN_PROCESS
def test_the_batched_runner_does_not_prove_through_is_tracked(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_collector_functions_past_the_module.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["tracked_past_the_module_class"] != "proved", verdicts
    assert verdicts["tracked_of_a_fresh_module"] != "proved", verdicts


@IN_PROCESS
def test_check_config_is_not_safe_through_is_tracked(tmp_path):
    path = tmp_path / "cc_collector_functions_past_the_module.py"
    path.write_text(
        "import types\n"
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    import gc\n"
        '    sym = types.ModuleType.__getattribute__(gc, "is_tracked")(num_reqs)\n'
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


@OPEN
def test_bound_is_not_sufficient_through_is_tracked(tmp_path):
    path = tmp_path / "bd_collector_functions_past_the_module.py"
    path.write_text(
        "import types\n"
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    import gc\n"
        '    sym = types.ModuleType.__getattribute__(gc, "is_tracked")(num_reqs)\n'
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
