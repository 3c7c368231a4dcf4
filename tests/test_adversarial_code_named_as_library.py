"""Adversarial catalogue: a model's own code compiled under a library file's name.

capproof tells a model's code from the standard library's, capproof's and Z3's by
``co_filename``, and audits only the model's: ``type(a) is not int``, ``object.__repr__(a)``, an
int slot called directly or a thread's work are refused in a model's function. A function the
model compiles itself (``compile(source, <a stdlib path>, "exec")``, ``code.replace(co_filename=
...)``) carries whatever file name it is given, and its introspection runs unaudited (so does a
dataclass method named as ``dataclasses`` names the ones it writes, file ``<string>``): each model
below reads "symbolic" on the symbolic run only and is false at ``a == 37`` on ints
(``lens == [37, 100]`` for the induction step). Brute forced
on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from _soundness_harness import check

HEAD = "import os\nimport types\n\nSTD = os.path.join(os.path.dirname(os.__file__), 'bisect.py')\n"
D = '@obligation(domain={"a": Range(0, 100)})\n'
CLAIM = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"


#: ``marshal.dumps`` of ``def probe(a): return type(a) is not int`` compiled as the standard
#: library's bisect.py, made by another interpreter (this process never sees it compiled)
_MARSHALLED = subprocess.run(
    [
        sys.executable,
        "-c",
        "import marshal, os, sys\n"
        "m = compile('def probe(a):\\n    return type(a) is not int\\n', "
        "os.path.join(os.path.dirname(os.__file__), 'bisect.py'), 'exec')\n"
        "sys.stdout.write(marshal.dumps(m.co_consts[0]).hex())",
    ],
    capture_output=True,
    text=True,
    check=True,
).stdout
_MARSHALLED = bytes.fromhex(_MARSHALLED)


def _compiled(source: str) -> str:
    # ``probe`` is compiled from ``source`` under the standard library's bisect.py
    return (
        HEAD
        + f"ns = {{}}\nexec(compile({source!r}, STD, 'exec'), ns)\nprobe = ns['probe']\n\n\n"
        + D
        + "def f(a):\n    sym = probe(a)\n"
        + CLAIM
    )


ATTEMPTS = [
    pytest.param(
        "type-test-in-code-renamed-by-code-replace",
        HEAD
        + "\n\ndef _probe(a):\n    return type(a) is not int\n\n\n"
        + "probe = types.FunctionType(_probe.__code__.replace(co_filename=STD), globals())\n\n\n"
        + D
        + "def f(a):\n    sym = probe(a)\n"
        + CLAIM,
    ),
    pytest.param(
        "object-repr-in-code-compiled-as-stdlib",
        _compiled("def probe(a):\n    return 'ymInt' in object.__repr__(a)\n"),
    ),
    pytest.param(
        "int-slot-in-code-compiled-as-stdlib",
        _compiled("def probe(a):\n    return int.__eq__(37, a) is NotImplemented\n"),
    ),
    pytest.param(
        "thread-started-by-code-compiled-as-stdlib",
        _compiled(
            "import threading\ndef probe(a):\n    out = []\n"
            "    t = threading.Thread(target=lambda: out.append(type(a) is not int))\n"
            "    t.start(); t.join()\n    return out[0]\n"
        ),
    ),
    pytest.param(
        "type-test-in-code-compiled-from-a-syntax-tree-as-stdlib",
        HEAD
        + "import ast\n\nns = {}\n"
        + "exec(compile(ast.parse('def probe(a):\\n    return type(a) is not int\\n'), STD, 'exec'), ns)\n"
        + "probe = ns['probe']\n\n\n"
        + D
        + "def f(a):\n    sym = probe(a)\n"
        + CLAIM,
    ),
    pytest.param(
        "type-test-in-code-unmarshalled-as-stdlib",
        # the bytes of a function's code named as bisect.py, made in another process: the spec
        # only unmarshals them (no compile or code.__new__ in this process)
        HEAD
        + "import marshal\n\n"
        + f"probe = types.FunctionType(marshal.loads({_MARSHALLED!r}), globals())\n\n\n"
        + D
        + "def f(a):\n    sym = probe(a)\n"
        + CLAIM,
    ),
    pytest.param(
        "type-test-in-code-compiled-as-capproof",
        HEAD.replace(
            "STD = os.path.join(os.path.dirname(os.__file__), 'bisect.py')",
            "import capproof.symbolic\n\nSTD = capproof.symbolic.__file__",
        )
        + "ns = {}\nexec(compile('def probe(a):\\n    return type(a) is not int\\n', STD, 'exec'), ns)\nprobe = ns['probe']\n\n\n"
        + D
        + "def f(a):\n    sym = probe(a)\n"
        + CLAIM,
    ),
    pytest.param(
        "type-test-in-code-compiled-as-z3",
        HEAD.replace("STD = os.path.join(os.path.dirname(os.__file__), 'bisect.py')", "import z3\n\nSTD = z3.__file__")
        + "ns = {}\nexec(compile('def probe(a):\\n    return type(a) is not int\\n', STD, 'exec'), ns)\nprobe = ns['probe']\n\n\n"
        + D
        + "def f(a):\n    sym = probe(a)\n"
        + CLAIM,
    ),
    pytest.param(
        "type-test-in-an-induction-step-compiled-as-stdlib",
        "from capproof import fold\n\n"
        + HEAD
        + "ns = {}\nexec(compile('def step(s, i, x):\\n    return s + x - (type(x) is int and x == 37)\\n', STD, 'exec'), ns)\n"
        + "step = ns['step']\n\n\n"
        + '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
        + "def f(n, lens):\n    return at_most(demand=total(lens), capacity=fold(step, 0, lens))\n",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        "type-test-in-a-dataclass-eq-compiled-as-dataclasses-code",
        # the name and file dataclasses gives the methods it writes ("<string>"), on a dataclass
        "from dataclasses import dataclass\n\n\n@dataclass\nclass C:\n    x: int\n\n\n"
        + "ns = {}\nexec(compile('def __eq__(self, other):\\n    return type(self.x) is not int\\n', '<string>', 'exec'), ns)\n"
        + "C.__eq__ = ns['__eq__']\n\n\n"
        + D
        + "def f(a):\n    sym = C(a) == C(a)\n"
        + CLAIM,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_code_compiled_under_a_library_name_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
