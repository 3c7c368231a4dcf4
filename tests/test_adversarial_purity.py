"""Adversarial catalogue: effects a fold step or an aggregate's per-entry function hides from the
purity check.

Induction runs a fold's step once on a generic entry, and the aggregate abstraction calls a
per-entry function once on a stand-in entry; both stand aside for the bounded encoding when the
code may change anything besides its value (capproof/purity.py). A step whose effect goes through
a standard-library *function* that mutates its argument (``heapq.heappush``, ``bisect.insort``,
``operator.iadd``, ``struct.pack_into``), a mutating method the check does not list
(``array.frombytes``), or a mutating method reached through an alias (``push = h.append``,
``functools.partial(list.append, h)``, ``operator.methodcaller``, ``getattr``) runs once where ints run it once per entry: a claim that
reads the effect (``len(h)``) was proved "[all batch sizes]" though false on ints at ``k == 37``
with two requests. The check now lists what is known pure rather than what is known impure (a C
function or bound method it cannot read is refused unless known pure), so each of these goes to the
bounded encoding, as the same effects written as ``h.append(1)`` always did.

A 64-entry vector is needed for the batch-wide strategies; the domain is too large to brute force,
so each attempt is checked at its failing point on ints, padded and alone.
"""

from __future__ import annotations

import pytest
from _soundness_harness import fails_on_ints

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation

HEADER = (
    "import array, bisect, collections, functools, heapq, operator, struct, types\n"
    "from capproof import Range, Vector, obligation, at_most, select, total, max_of\n"
    "from capproof.arith import fold\n"
)
D64 = '@obligation(domain={"k": Range(0, 40), "n": Range(1, 64), "lens": Vector(64, Range(1, 3), length="n")})\n'
POINT = {"k": 37, "n": 2, "lens": [1, 1]}  # two requests: the effect happens twice on ints


def _fold(effect: str, pre: str = "    h = []\n", read: str = "len(h)") -> str:
    return (
        D64
        + f"def m(k, n, lens):\n{pre}    s = fold(lambda s, i, x: ({effect}, s + x)[1], 0, lens)\n"
        + f"    return at_most(demand=select(k == 37, {read}, 1), capacity=1)\n"
    )


ATTEMPTS = [
    pytest.param("fold-step-heappush", _fold("heapq.heappush(h, 1)")),
    pytest.param("fold-step-insort", _fold("bisect.insort(h, 1)")),
    pytest.param("fold-step-operator-iadd", _fold("operator.iadd(h, [1])")),
    pytest.param(
        "fold-step-struct-pack-into",
        _fold("struct.pack_into('B', buf, 0, buf[0] + 1)", pre="    buf = bytearray(1)\n", read="buf[0]"),
    ),
    pytest.param(
        "fold-step-array-frombytes",
        _fold("a.frombytes(b'\\x01')", pre="    a = array.array('B')\n", read="len(a)"),
    ),
    pytest.param("fold-step-aliased-append", _fold("push(1)", pre="    h = []\n    push = h.append\n")),
    pytest.param(
        "fold-step-partial-of-list-append",
        _fold("push(1)", pre="    h = []\n    push = functools.partial(list.append, h)\n"),
    ),
    pytest.param("fold-step-methodcaller-append", _fold("operator.methodcaller('append', 1)(h)")),
    pytest.param("fold-step-getattr-append", _fold("getattr(h, 'append')(1)")),
    pytest.param(
        "fold-step-aliased-set-add",
        _fold("add(len(st))", pre="    st = set()\n    add = st.add\n", read="len(st)"),
    ),
    pytest.param(
        "fold-step-aliased-bytearray-extend",
        _fold("ext(b'1')", pre="    a = bytearray()\n    ext = a.extend\n", read="len(a)"),
    ),
    pytest.param(
        "fold-step-aliased-dict-update",
        _fold("upd({len(d): 1})", pre="    d = {}\n    upd = d.update\n", read="len(d)"),
    ),
    pytest.param("fold-step-aliased-heappush", _fold("hp(h, 1)", pre="    h = []\n    hp = heapq.heappush\n")),
    pytest.param(
        "aggregate-element-heappush",
        D64
        + "def m(k, n, lens):\n    h = []\n    t = total((heapq.heappush(h, 1), x)[1] for x in lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
    ),
    # a mutating dunder or a method no list names, called on a builtin or standard-library container
    pytest.param("fold-step-dict-ior", _fold("d.__ior__({len(d): 1})", pre="    d = {0: 1}\n", read="len(d) - 1")),
    pytest.param("fold-step-set-ior", _fold("st.__ior__({len(st)})", pre="    st = {0}\n", read="len(st) - 1")),
    pytest.param(
        "fold-step-counter-subtract",
        _fold("c.subtract({'a': 1})", pre="    c = collections.Counter(a=10)\n", read="10 - c['a']"),
    ),
    pytest.param(
        "fold-step-list-imul", _fold("h.__imul__(2 if len(h) < 4 else 1)", pre="    h = [1]\n", read="len(h) - 1")
    ),
    pytest.param(
        "fold-step-deque-imul",
        _fold("q.__imul__(2 if len(q) < 4 else 1)", pre="    q = collections.deque([1])\n", read="len(q) - 1"),
    ),
    pytest.param("fold-step-list-init-refills", _fold("h.__init__(h + [1])", pre="    h = [1]\n", read="len(h) - 1")),
    pytest.param(
        "fold-step-namespace-dict-ior",
        _fold(
            "ns.__dict__.__ior__({str(len(ns.__dict__)): 1})",
            pre="    ns = types.SimpleNamespace(a=1)\n",
            read="len(vars(ns)) - 1",
        ),
    ),
    pytest.param(
        "fold-step-aliased-counter-subtract",
        _fold("sub({'a': 1})", pre="    c = collections.Counter(a=10)\n    sub = c.subtract\n", read="10 - c['a']"),
    ),
    pytest.param(
        "aggregate-element-list-imul",
        D64
        + "def m(k, n, lens):\n    h = [1]\n    t = total((h.__imul__(2 if len(h) < 4 else 1), x)[1] for x in lens)\n"
        + "    return at_most(demand=select(k == 37, len(h) - 1, 1), capacity=1)\n",
    ),
    # an iterator the step holds, advanced by a builtin that is pure on a fresh iterable
    pytest.param(
        "fold-step-any-of-a-held-iterator",
        _fold("any(it)", pre="    it = iter([1] * 100)\n", read="100 - len(list(it))"),
    ),
    pytest.param(
        "fold-step-iterator-dunder-next",
        _fold("it.__next__()", pre="    it = iter(range(100))\n", read="100 - len(list(it))"),
    ),
    pytest.param(
        "fold-step-zip-pulls-a-held-iterator",
        _fold("sum(zip(it, (0,)), ())", pre="    it = iter(range(100))\n", read="100 - len(list(it))"),
    ),
    pytest.param(
        "fold-step-iterator-inside-a-list",
        _fold("any(holder[0])", pre="    holder = [iter([1] * 100)]\n", read="100 - len(list(holder[0]))"),
    ),
    pytest.param(
        "aggregate-element-any-of-a-held-iterator",
        D64
        + "def m(k, n, lens):\n    it = iter([1] * 100)\n    t = total((any(it), x)[1] for x in lens)\n"
        + "    return at_most(demand=select(k == 37, 100 - len(list(it)), 1), capacity=1)\n",
    ),
    # an augmented assignment changes a list in place through a local alias or the fold's state
    pytest.param(
        "fold-step-augmented-assignment-on-an-alias",
        D64
        + "def m(k, n, lens):\n    h = [1]\n    def step(s, i, x):\n        a = h\n        a += [1]\n"
        + "        return s + x\n    s = fold(step, 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(h) - 1, 1), capacity=1)\n",
    ),
    pytest.param(
        "fold-step-augmented-assignment-on-a-rebound-parameter",
        D64
        + "def m(k, n, lens):\n    h = [1]\n    def step(s, i, x):\n        s2 = s\n        x = h\n        x += [1]\n"
        + "        return s2 + 1\n    s = fold(step, 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(h) - 1, 1), capacity=1)\n",
    ),
    pytest.param(
        "fold-state-a-list-the-claim-reads",
        D64
        + "def m(k, n, lens):\n    h = [1]\n    def step(s, i, x):\n        s += [1]\n        return s\n"
        + "    fold(step, h, lens)\n    return at_most(demand=select(k == 37, len(h) - 1, 1), capacity=1)\n",
    ),
    # the same effects written so the check sees them: the bounded encoding decides (sound)
    pytest.param("fold-step-direct-append", _fold("h.append(1)")),
    pytest.param("fold-step-unbound-list-append", _fold("list.append(h, 1)")),
    pytest.param(
        "aggregate-element-max-of-insort",
        D64
        + "def m(k, n, lens):\n    h = []\n    t = max_of((bisect.insort(h, 1), x)[1] for x in lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_an_effect_of_a_step_or_element_function_is_not_run_once_for_all_entries(spec_file, name, body):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_purity_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, POINT, padding=False) and fails_on_ints(ob, POINT, padding=True)
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.encoding}), but fails on ints at {POINT}"
