"""Adversarial catalogue: functions the guard refuses by name, held at load in a container.

The guard refuses, by identity, the functions that see the object itself or the stack above the
model (``gc.is_tracked``, ``operator.is_``, ``id``, ``sys.getrefcount``, ``sys.gettrace``,
``warnings.warn``, ...) when the model's code names them: a global, an attribute of a module it
holds. It walks the containers, defaults and class attributes the model holds, but looks there for
code to scan, not for these functions; and ``gc.is_tracked``, ``operator.is_``, ``id``,
``sys.getrefcount``, ``sys.gettrace`` and ``warnings.warn`` raise no audit event the symbolic run
watches. Fetched at load by a computed name (``getattr(gc, "is_" + "tracked")``) into a module-level
dict, a list, a default argument or a class attribute (``staticmethod``), each is called unwatched:

- ``gc.is_tracked(a)`` (an int is untracked), in a dict, a list, a default argument, a static
  method, submitted from the dict to a thread pool;
- ``operator.is_(a + 0, a)`` and ``id(a + 0) != id(a)`` (equal small ints are one object);
- ``sys.getrefcount(a)`` (a small int is shared), ``sys.gettrace()`` (the exception watch is a
  trace function), ``warnings.warn`` (the caller's frame, read in C);
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient).

Caught (an error): ``type`` (the identity test ``is int`` is watched), ``repr`` (the value's repr
is refused), ``pickle.dumps`` (the type's hash), ``sys.getprofile`` (no profile function set: a
counterexample), ``gc.get_referents`` (its audit event).

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
    strict=True, reason="a refused function held in a container at load is called unwatched at run time"
)

A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
LOADED = 'import gc\nTOOLS = {"t": getattr(gc, "is_" + "tracked")}\n\n\n'


def held(module: str, name: str) -> str:
    """``TOOLS = {"f": getattr(module, <name split in two>)}`` at module level."""
    return f'import {module}\nTOOLS = {{"f": getattr({module}, "{name[:2]}" + "{name[2:]}")}}\n\n\n'


ATTEMPTS = [
    pytest.param("held-in-a-module-dict", LOADED + A + '    sym = TOOLS["t"](a)\n' + TAIL, marks=OPEN),
    pytest.param(
        "held-in-a-default-argument",
        'def helper(x, _t=getattr(__import__("g" + "c"), "is_tracked")):\n    return _t(x)\n\n\n'
        + A
        + "    sym = helper(a)\n"
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "held-as-a-static-method",
        'import gc\n\n\nclass Tools:\n    t = staticmethod(vars(gc)["is_tracked"])\n\n\n'
        + A
        + "    sym = Tools.t(a)\n"
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "held-at-load-run-by-a-thread-pool",
        "from concurrent.futures import ThreadPoolExecutor\n"
        + LOADED
        + A
        + '    with ThreadPoolExecutor(1) as ex:\n        sym = ex.submit(TOOLS["t"], a).result()\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "is-tracked-held-in-a-list",
        'import gc\nTOOLS = [getattr(gc, "is_" + "tracked")]\n\n\n'
        + A
        + "    sym = TOOLS[0]((a,)) and TOOLS[0](a)\n"
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "identity-by-operator-is",
        held("operator", "is_") + A + '    sym = not TOOLS["f"](a + 0, a)\n' + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "identity-by-id",
        held("builtins", "id") + A + '    sym = TOOLS["f"](a + 0) != TOOLS["f"](a)\n' + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "reference-count", held("sys", "getrefcount") + A + '    sym = TOOLS["f"](a) < 50\n' + TAIL, marks=OPEN
    ),
    pytest.param(
        "the-exception-watchs-trace",
        held("sys", "gettrace") + A + '    sym = TOOLS["f"]() is not None\n' + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "the-callers-frame-by-warnings",
        held("warnings", "warn")
        + A
        + "    with warnings.catch_warnings(record=True) as got:\n"
        + '        warnings.simplefilter("always")\n'
        + '        TOOLS["f"]("x", stacklevel=3)\n'
        + '    sym = "capproof" in str(got[0].filename) if got else False\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param("the-type", held("builtins", "type") + A + '    sym = TOOLS["f"](a) is not int\n' + TAIL),
    pytest.param("the-repr", held("builtins", "repr") + A + '    sym = TOOLS["f"](a) != "37"\n' + TAIL),
    pytest.param(
        "pickle",
        held("pickle", "dumps") + A + '    try:\n        TOOLS["f"](a)\n        sym = False\n    except Exception:\n'
        "        sym = True\n" + TAIL,
    ),
    pytest.param("the-profile-function", held("sys", "getprofile") + A + '    sym = TOOLS["f"]() is not None\n' + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_refused_functions_held_in_containers_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


@OPEN
def test_an_aggregate_element_does_not_prove_through_a_held_function(spec_file):
    body = (
        LOADED + "def elem(x):\n"
        '    return select(all_of(x == 37, not TOOLS["t"](x)), 1, 0)\n\n\n'
        '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
        "def f(n, lens):\n"
        "    return at_most(demand=total(elem(x) for x in lens), capacity=0)\n"
    )
    check(spec_file, "aggregate-element-held-is-tracked", body)


BATCH = """
import gc
import operator
from capproof import Range, obligation, at_most, select, all_of, cdiv

TOOLS = {"t": getattr(gc, "is_" + "tracked"), "is": getattr(operator, "i" + "s_")}


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def tracked_held_at_load(a):
    sym = TOOLS["t"](a)
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)


@obligation(domain={"a": Range(0, 100)})
def identity_held_at_load(a):
    sym = not TOOLS["is"](a + 0, a)
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""


@IN_PROCESS
def test_the_batched_runner_does_not_prove_through_a_held_function(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_refused_functions_held_in_containers.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["tracked_held_at_load"] != "proved", verdicts
    assert verdicts["identity_held_at_load"] != "proved", verdicts


@IN_PROCESS
def test_check_config_is_not_safe_through_a_held_function(tmp_path):
    path = tmp_path / "cc_refused_functions_held_in_containers.py"
    path.write_text(
        held("sys", "getrefcount") + "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        '    sym = TOOLS["f"](num_reqs) < 50\n'
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


@OPEN
def test_bound_is_not_sufficient_through_a_held_function(tmp_path):
    path = tmp_path / "bd_refused_functions_held_in_containers.py"
    path.write_text(
        "import gc\n"
        "from capproof import Range, obligation, at_most, select, all_of\n\n"
        'TOOLS = {"t": getattr(gc, "is_" + "tracked")}\n\n\n'
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        '    sym = TOOLS["t"](num_reqs)\n'
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
