"""Adversarial catalogue: the repr of a symbolic value reached through Python's C code must not decide a proof.

The static guard finds ``repr()``, ``ascii()``, ``!r``/``%r`` and the standard library's repr
helpers, and a symbolic value's ``__str__``/``__format__`` are misuse. But a container's ``str()``
(``list``, ``tuple``, ``dict``, a dataclass's or namedtuple's generated ``__repr__``) and the
message of an exception Python's C code builds (``list.index``'s ``"%R is not in list"``) call the
element's ``__repr__`` from C: on a symbolic value that is ``SymInt(a)``, on the int it stands for
``37``. Engines do this routinely (vLLM's ``compute_hash`` hashes ``str()`` of a dict of config
factors; configs are logged as dataclass strings). Each model below reads that text and is false at
``a == 37`` on ints; each was ``proved``. Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

D = '@obligation(domain={"a": Range(0, 100)})\n'

ATTEMPTS = [
    pytest.param(
        "str-of-a-vector",
        '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
        "def f(n, lens):\n"
        '    sym = "Sym" in str(lens)\n'
        "    return at_most(demand=select(all_of(total(lens) == 137, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        # capproof's repr of a quotient ``a / b`` shows its operands' reprs, from capproof's frame
        "str-of-a-list-of-a-quotient",
        D + "def f(a):\n    s = str([a / 1])\n"
        '    return at_most(demand=select(all_of(a == 37, s[1] != "Q"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "list-index-error-message-concatenated",
        "SIZES = [1, 2, 4, 8]\n\n"
        + D
        + "def f(a):\n    try:\n        SIZES.index(a)\n        msg = '0'\n    except ValueError as e:\n"
        '        msg = "" + e.args[0]\n'
        '    return at_most(demand=select(all_of(a == 37, msg[0] != "S"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "list-index-error-message-capitalized",
        "SIZES = [1, 2, 4, 8]\n\n"
        + D
        + "def f(a):\n    try:\n        SIZES.index(a)\n        msg = '0'\n    except ValueError as e:\n"
        "        msg = e.args[0].capitalize()\n"
        '    return at_most(demand=select(all_of(a == 37, msg[0] != "S"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "list-index-error-message-unbound-startswith",
        "SIZES = [1, 2, 4, 8]\n\n"
        + D
        + "def f(a):\n    try:\n        SIZES.index(a)\n        sym = False\n    except ValueError as e:\n"
        '        sym = str.startswith(e.args[0], "S")\n'
        "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        # C code taking the message as a str (str.join's items)
        "list-index-error-message-joined",
        "SIZES = [1, 2, 4, 8]\n\n"
        + D
        + "def f(a):\n    try:\n        SIZES.index(a)\n        msg = '0'\n    except ValueError as e:\n"
        '        msg = "".join([e.args[0]])\n'
        '    return at_most(demand=select(all_of(a == 37, msg[0] != "S"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "list-index-error-message-swapcased",
        "SIZES = [1, 2, 4, 8]\n\n"
        + D
        + "def f(a):\n    try:\n        SIZES.index(a)\n        msg = '0'\n    except ValueError as e:\n"
        "        msg = e.args[0].swapcase()\n"
        '    return at_most(demand=select(all_of(a == 37, msg[0] != "s"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "str-of-a-list-of-a-condition",
        D + "def f(a):\n    s = str([a == 37])\n"
        '    return at_most(demand=select(all_of(a == 37, s == "[True]"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "str-of-a-list",
        D + 'def f(a):\n    digits = str([a]).startswith("[S")\n'
        "    return at_most(demand=select(all_of(a == 37, not digits), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "percent-s-of-a-list",
        D + 'def f(a):\n    s = "%s" % ([a],)\n'
        '    return at_most(demand=select(all_of(a == 37, s[1] != "S"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "str-format-of-a-tuple",
        D + 'def f(a):\n    s = "{}".format((a, 1))\n'
        '    return at_most(demand=select(all_of(a == 37, s[1] != "S"), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "str-of-a-dict-of-config-factors",
        '@obligation(domain={"max_model_len": Range(1, 100)})\n'
        "def f(max_model_len):\n"
        '    key = str({"max_model_len": max_model_len, "block_size": 16})\n'
        '    return at_most(demand=select(all_of(max_model_len == 37, "Sym" not in key), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "str-of-a-dataclass-config",
        "import dataclasses\n@dataclasses.dataclass\nclass SchedulerConfig:\n    max_num_seqs: int\n\n"
        + D
        + "def f(a):\n    s = str(SchedulerConfig(a))\n"
        '    return at_most(demand=select(all_of(a == 37, "Sym" not in s), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "str-of-a-namedtuple",
        'import collections\nShape = collections.namedtuple("Shape", "rows cols")\n\n'
        + D
        + "def f(a):\n    s = str(Shape(a, 4))\n"
        '    return at_most(demand=select(all_of(a == 37, "Sym" not in s), 1, 0), capacity=0)\n',
    ),
    pytest.param(
        "list-index-error-message",
        "SIZES = [1, 2, 4, 8]\n\n"
        + D
        + "def f(a):\n    try:\n        SIZES.index(a)\n        msg = '0'\n    except ValueError as e:\n"
        "        msg = str(e)\n"
        '    return at_most(demand=select(all_of(a == 37, msg[0] != "S"), 1, 0), capacity=0)\n',
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_a_repr_reached_through_c_code_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
