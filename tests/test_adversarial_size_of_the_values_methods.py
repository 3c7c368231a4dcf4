"""Adversarial catalogue: ``sys.getsizeof`` of the value's methods.

A method a model reads from a symbolic value is an opaque callable (reading its attributes, repr,
``==``, hash is misuse) and ``sys.getsizeof`` of the value itself is refused; the *method
object's* size is answered by its own ``__sizeof__``: an int's bound C method
(``builtin_function_or_method``) is 72 bytes, a symbolic value's wrapper is smaller. The wrapper's
``__sizeof__`` refuses, whoever asks. Each refused (an error):

- ``sys.getsizeof(a.bit_length)`` against an int's, ``sys.getsizeof(a.conjugate)`` in a helper,
  a symbolic bool's ``__bool__``;
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient);
- ``sys.getsizeof`` of a method submitted to a thread pool (no model frame on the worker's stack),
  ``a.bit_length.__sizeof__()`` (an attribute read of the wrapper);
- ``sys.getsizeof(a)`` and of a symbolic bool.

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

HEAD = "import sys\n\n\n"
A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"

ATTEMPTS = [
    pytest.param(
        "bit-length",
        HEAD + A + "    sym = sys.getsizeof(a.bit_length) != sys.getsizeof((5).bit_length)\n" + TAIL,
    ),
    pytest.param(
        "conjugate-in-a-helper",
        HEAD + "def nbytes(m):\n    return sys.getsizeof(m)\n\n\n" + A + "    sym = nbytes(a.conjugate) < 72\n" + TAIL,
    ),
    pytest.param(
        "symbolic-bools-bool",
        HEAD + A + "    c = a == 37\n    sym = sys.getsizeof(c.__bool__) != sys.getsizeof(True.__bool__)\n" + TAIL,
    ),
    pytest.param(
        "bit-length-in-a-thread-pool",
        "import concurrent.futures\n" + HEAD + A + "    with concurrent.futures.ThreadPoolExecutor(1) as ex:\n"
        "        sym = ex.submit(sys.getsizeof, a.bit_length).result() < 72\n" + TAIL,
    ),
    pytest.param("sizeof-read-of-the-method", A + "    sym = a.bit_length.__sizeof__() < 72\n" + TAIL),
    pytest.param("the-value-itself", HEAD + A + "    sym = sys.getsizeof(a) != 28\n" + TAIL),
    pytest.param("a-symbolic-bool-itself", HEAD + A + "    sym = sys.getsizeof(a == 37) != 28\n" + TAIL),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_size_of_the_values_methods_does_not_tell_a_symbolic_value(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
import sys
from capproof import Range, obligation, at_most, select, all_of, cdiv


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_a_methods_size(a):
    sym = sys.getsizeof(a.bit_length) != sys.getsizeof((5).bit_length)
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_through_a_methods_size(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_size_of_the_values_methods.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["through_a_methods_size"] != "proved", verdicts


def test_check_config_is_not_safe_through_a_methods_size(tmp_path):
    path = tmp_path / "cc_size_of_the_values_methods.py"
    path.write_text(
        "import sys\n"
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    sym = sys.getsizeof(num_reqs.bit_length) != sys.getsizeof((5).bit_length)\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


def test_bound_is_not_sufficient_through_a_methods_size(tmp_path):
    path = tmp_path / "bd_size_of_the_values_methods.py"
    path.write_text(
        "import sys\n"
        "from capproof import Range, obligation, at_most, select, all_of\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        "    sym = sys.getsizeof(num_reqs.bit_length) != sys.getsizeof((5).bit_length)\n"
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
