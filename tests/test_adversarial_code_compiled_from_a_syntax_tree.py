"""Adversarial catalogue: a model's code compiled from a syntax tree under a library file's name.

``compile()`` of an ``ast`` tree raises no ``compile`` audit event (CPython 3.11 audits only
source text), so ``compile(ast.parse(source), <a stdlib or Z3 file>, ...)`` gives code that names
the library file without any event: capproof/provenance.py counts a library-named code object as the
library's only when the import system executed it from that file. Below: the code as an aggregate's
element function, in a loop over the batch, as a lambda under a Z3 file's name, reading
``object.__repr__``, and under capproof's own file name. Each is false on ints at ``a == 37``
(``lens == [37, 100]``); brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check


def _probe(stdlib_file: str) -> str:
    # each attempt names a standard-library file no other test compiles code under: once any code
    # is seen made under a name, that name's code is checked (the hole is per file name)
    return (
        f"import ast\nimport os\n\nSTD = os.path.join(os.path.dirname(os.__file__), '{stdlib_file}')\nns = {{}}\n"
        "exec(compile(ast.parse('def probe(a):\\n    return type(a) is not int\\n'), STD, 'exec'), ns)\n"
        "probe = ns['probe']\n\n\n"
    )


DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'

ATTEMPTS = [
    pytest.param(
        "element-function-of-an-aggregate",
        _probe("colorsys.py")
        + DV
        + "def f(n, lens):\n"
        + "    return at_most(demand=total(select(all_of(x == 37, not probe(x)), 1, 0) for x in lens), capacity=0)\n",
    ),
    pytest.param(
        "loop-over-the-batch",
        _probe("graphlib.py")
        + DV
        + "def f(n, lens):\n    s = 0\n    for x in lens:\n"
        + "        s += select(all_of(x == 37, not probe(x)), 500, x)\n"
        + "    return at_most(demand=s, capacity=300)\n",
    ),
    pytest.param(
        "lambda-under-a-z3-file-name",
        "import ast\n\nimport z3.z3util\n\n"
        + "probe = eval(compile(ast.parse('lambda a: type(a) is not int', mode='eval'), z3.z3util.__file__, 'eval'))\n\n\n"
        + '@obligation(domain={"a": Range(0, 100)})\n'
        + "def f(a):\n    sym = probe(a)\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "object-repr-under-a-stdlib-file-name",
        "import ast\nimport os\n\nSTD = os.path.join(os.path.dirname(os.__file__), 'textwrap.py')\nns = {}\n"
        + "exec(compile(ast.parse('def probe(a):\\n    return \"ymInt\" in object.__repr__(a)\\n'), STD, 'exec'), ns)\n"
        + "probe = ns['probe']\n\n\n"
        + '@obligation(domain={"a": Range(0, 100)})\n'
        + "def f(a):\n    sym = probe(a)\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "type-test-under-capproofs-own-file-name",
        "import ast\n\nimport capproof\n\nns = {}\n"
        + "exec(compile(ast.parse('def probe(a):\\n    return type(a) is not int\\n'), capproof.__file__, 'exec'), ns)\n"
        + "probe = ns['probe']\n\n\n"
        + '@obligation(domain={"a": Range(0, 100)})\n'
        + "def f(a):\n    sym = probe(a)\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_code_compiled_from_a_syntax_tree_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
