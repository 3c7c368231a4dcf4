"""Adversarial catalogue: the object's own memory read with ``ctypes``.

``ctypes.py_object(a)`` holds the value; a cast of a pointer to it gives its address without
``id()``, and ``c_ssize_t.from_address``/``c_void_p.from_address`` read the object's header: its
reference count (a small int is shared by the whole interpreter and has a large count; a fresh
symbolic value a small one) or its type pointer (``int``'s, or capproof's class). No audit event
the symbolic run watches is raised (``ctypes.cdata`` is not among them), and the guard does not
refuse ``ctypes``. Each gives a false proof:

- the reference count, the type pointer (against that of an int);
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient).

Caught (an error): a C function called through ``ctypes.pythonapi`` (its ``ctypes.dlsym`` event).

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
OPEN = pytest.mark.xfail(strict=True, reason="ctypes reading the object's memory is not refused")

ADDR = (
    "import ctypes\n\n\n"
    "def addr(o):\n"
    "    return ctypes.cast(ctypes.pointer(ctypes.py_object(o)), ctypes.POINTER(ctypes.c_void_p))[0]\n\n\n"
)
A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"

ATTEMPTS = [
    pytest.param(
        "reference-count", ADDR + A + "    sym = ctypes.c_ssize_t.from_address(addr(a)).value < 50\n" + TAIL, marks=OPEN
    ),
    pytest.param(
        "type-pointer",
        ADDR
        + A
        + "    ty = ctypes.c_void_p.from_address(addr(a) + 8).value\n"
        + "    sym = ty != ctypes.c_void_p.from_address(addr(5) + 8).value\n"
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "a-c-function-through-pythonapi",
        "import ctypes\n\n\n"
        + A
        + "    g = ctypes.pythonapi.PyLong_AsLong\n"
        + "    g.restype = ctypes.c_long\n"
        + "    g.argtypes = [ctypes.py_object]\n"
        + "    try:\n        g(a)\n        sym = False\n    except Exception:\n        sym = True\n"
        + TAIL,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_ctypes_does_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = (
    ADDR
    + """from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def refcount_read_by_ctypes(a):
    sym = ctypes.c_ssize_t.from_address(addr(a)).value < 50
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""
)


@IN_PROCESS
def test_the_batched_runner_does_not_prove_through_ctypes(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_object_memory_read_by_ctypes.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["refcount_read_by_ctypes"] != "proved", verdicts


@IN_PROCESS
def test_check_config_is_not_safe_through_ctypes(tmp_path):
    path = tmp_path / "cc_object_memory_read_by_ctypes.py"
    path.write_text(
        ADDR + "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    sym = ctypes.c_ssize_t.from_address(addr(num_reqs)).value < 50\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


@OPEN
def test_bound_is_not_sufficient_through_ctypes(tmp_path):
    path = tmp_path / "bd_object_memory_read_by_ctypes.py"
    path.write_text(
        ADDR + "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    ty = ctypes.c_void_p.from_address(addr(num_reqs) + 8).value\n"
        "    sym = ty != ctypes.c_void_p.from_address(addr(5) + 8).value\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
