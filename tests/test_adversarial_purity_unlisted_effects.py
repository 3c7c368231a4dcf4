"""Adversarial catalogue: effects a fold step or per-entry function has through names the purity
check does not list.

capproof/purity.py judges a method called on a builtin or standard-library container (``list``,
``dict``, ``set``, ``deque``, ``Counter``, a ``SimpleNamespace``'s ``__dict__``) by its name against a
list of mutating methods. In-place dunders (``__ior__``, ``__imul__``, ``__init__``) and methods of
the standard library's Python classes (``Counter.subtract``) are not on it; builtins on the list of
known-pure functions (``any``, ``sum``, ``zip``) advance an iterator they are given, as
``it.__next__()`` does. Induction runs such a step once and the aggregate abstraction an element
function once where ints run it once per entry: a claim reading the effect is proved "[all batch
sizes]" though false on ints at ``k == 37`` with two requests (padded and alone).

A 64-entry vector is needed for the batch-wide strategies; each attempt is checked at its failing
point on ints, padded and alone.
"""

from __future__ import annotations

import pytest
from _soundness_harness import fails_on_ints

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation

HEADER = (
    "import collections, dataclasses, functools, types\n"
    "from capproof import Range, Vector, obligation, at_most, select, total\n"
    "from capproof.arith import fold\n"
)
D64 = '@obligation(domain={"k": Range(0, 40), "n": Range(1, 64), "lens": Vector(64, Range(1, 3), length="n")})\n'
POINT = {"k": 37, "n": 2, "lens": [1, 1]}  # two requests: the effect happens twice on ints

UNLISTED = pytest.mark.xfail(
    strict=True, reason="purity.py judges builtin/stdlib container methods by a list of mutating names"
)
READ_INSERTS = pytest.mark.xfail(strict=True, reason="purity.py: a defaultdict read (__missing__) inserts a key")
WRAPPED = pytest.mark.xfail(
    strict=True, reason="purity.py does not scan the function a functools.lru_cache wrapper (a C object) holds"
)
SPEC_CLASS = pytest.mark.xfail(
    strict=True,
    reason="purity.py skips classes whose module starts with 'capproof' (spec files load as capproof_spec.*)",
)
UNSCANNED = pytest.mark.xfail(
    strict=True, reason="purity.py reads no default arguments and tracks no module a step imports or holds in a local"
)
LIBRARY_METHODS = pytest.mark.xfail(
    strict=True,
    reason="purity.py skips the code of standard-library classes written in Python (sched, threading, logging)",
)
CONSUMES = pytest.mark.xfail(strict=True, reason="purity.py: builtins on its pure list advance an iterator argument")


def _fold(effect: str, pre: str, read: str, cap: int) -> str:
    return (
        D64
        + f"def m(k, n, lens):\n{pre}    s = fold(lambda s, i, x: ({effect}, s + x)[1], 0, lens)\n"
        + f"    return at_most(demand=select(k == 37, {read}, 1), capacity={cap})\n"
    )


def _total(effect: str, pre: str, read: str, cap: int) -> str:
    return (
        D64
        + f"def m(k, n, lens):\n{pre}    t = total(({effect}, x)[1] for x in lens)\n"
        + f"    return at_most(demand=select(k == 37, {read}, 1), capacity={cap})\n"
    )


ATTEMPTS = [
    pytest.param("dict-ior", _fold("d.__ior__({len(d): 1})", "    d = {0: 1}\n", "len(d)", 2), marks=UNLISTED),
    pytest.param("set-ior", _fold("st.__ior__({len(st)})", "    st = {0}\n", "len(st)", 2), marks=UNLISTED),
    pytest.param(
        "counter-subtract",
        _fold("c.subtract({'a': 1})", "    c = collections.Counter(a=10)\n", "10 - c['a']", 1),
        marks=UNLISTED,
    ),
    pytest.param(
        "list-imul", _fold("h.__imul__(2 if len(h) < 4 else 1)", "    h = [1]\n", "len(h)", 2), marks=UNLISTED
    ),
    pytest.param(
        "deque-imul",
        _fold("q.__imul__(2 if len(q) < 4 else 1)", "    q = collections.deque([1])\n", "len(q)", 2),
        marks=UNLISTED,
    ),
    pytest.param("list-init", _fold("h.__init__(h + [1])", "    h = [1]\n", "len(h)", 2), marks=UNLISTED),
    pytest.param(
        "namespace-dict-ior",
        _fold(
            "ns.__dict__.__ior__({str(len(ns.__dict__)): 1})",
            "    ns = types.SimpleNamespace(a=1)\n",
            "len(vars(ns))",
            2,
        ),
        marks=UNLISTED,
    ),
    pytest.param(
        "total-element-list-imul",
        _total("h.__imul__(2 if len(h) < 4 else 1)", "    h = [1]\n", "len(h)", 2),
        marks=UNLISTED,
    ),
    pytest.param(
        "iterator-dunder-next",
        _fold("it.__next__()", "    it = iter(range(100))\n", "100 - len(list(it))", 1),
        marks=CONSUMES,
    ),
    pytest.param(
        "any-consumes-iterator",
        _fold("any(it)", "    it = iter([1] * 100)\n", "100 - len(list(it))", 1),
        marks=CONSUMES,
    ),
    pytest.param(
        "sum-of-zip-consumes-iterator",
        _fold("sum(zip(it, (0,)), ())", "    it = iter(range(100))\n", "100 - len(list(it))", 2),
        marks=CONSUMES,
    ),
    pytest.param(
        "total-element-any-consumes-iterator",
        _total("any(it)", "    it = iter([1] * 100)\n", "100 - len(list(it))", 1),
        marks=CONSUMES,
    ),
    pytest.param(
        "defaultdict-read-inserts",
        _fold("dd[len(dd)]", "    dd = collections.defaultdict(int)\n", "len(dd)", 1),
        marks=READ_INSERTS,
    ),
    pytest.param(
        "total-element-defaultdict-read-inserts",
        _total("dd[len(dd)]", "    dd = collections.defaultdict(int)\n", "len(dd)", 1),
        marks=READ_INSERTS,
    ),
    pytest.param(
        "lru-cache-wrapper-hides-append",
        D64
        + "def m(k, n, lens):\n    h = []\n    @functools.lru_cache(maxsize=0)\n    def note():\n"
        + "        h.append(1)\n        return 0\n    s = fold(lambda s, i, x: s + x + note(), 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
        marks=WRAPPED,
    ),
    pytest.param(
        "total-element-lru-cache-wrapper-hides-append",
        D64
        + "def m(k, n, lens):\n    h = []\n    @functools.lru_cache(maxsize=0)\n    def note():\n"
        + "        h.append(1)\n        return 0\n    t = total(x + note() for x in lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
        marks=WRAPPED,
    ),
    pytest.param(
        "method-of-a-dataclass-defined-in-the-spec",
        "@dataclasses.dataclass\nclass Sched:\n    slots: list\n\n    def admit(self, x):\n"
        + "        self.slots += [x]\n        return x\n\n"
        + D64
        + "def m(k, n, lens):\n    sch = Sched([])\n    s = fold(lambda s, i, x: s + sch.admit(x), 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(sch.slots), 1), capacity=1)\n",
        marks=SPEC_CLASS,
    ),
    pytest.param(
        "default-argument-bound-method",
        D64
        + "def m(k, n, lens):\n    h = []\n"
        + "    s = fold(lambda s, i, x, push=h.append: (push(1), s + x)[1], 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
        marks=UNSCANNED,
    ),
    pytest.param(
        "total-element-default-argument-bound-method",
        D64
        + "def m(k, n, lens):\n    h = []\n    f = lambda x, push=h.append: (push(1), x)[1]\n"
        + "    t = total(f(x) for x in lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
        marks=UNSCANNED,
    ),
    pytest.param(
        "import-inside-the-step",
        D64
        + "def m(k, n, lens):\n    h = []\n    def step(s, i, x):\n        from heapq import heappush\n"
        + "        heappush(h, 1)\n        return s + x\n    s = fold(step, 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
        marks=UNSCANNED,
    ),
    pytest.param(
        "module-imported-as-a-local-in-the-step",
        D64
        + "def m(k, n, lens):\n    h = []\n    def step(s, i, x):\n        import heapq as hq\n"
        + "        hq.heappush(h, 1)\n        return s + x\n    s = fold(step, 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n",
        marks=UNSCANNED,
    ),
    pytest.param(
        "sched-scheduler-enter",
        _fold("ev.enter(0, 1, int)", "    import sched\n    ev = sched.scheduler()\n", "len(ev.queue)", 1),
        marks=LIBRARY_METHODS,
    ),
    pytest.param(
        "total-element-sched-scheduler-enter",
        _total("ev.enter(0, 1, int)", "    import sched\n    ev = sched.scheduler()\n", "len(ev.queue)", 1),
        marks=LIBRARY_METHODS,
    ),
    pytest.param(
        "semaphore-release",
        D64
        + "def m(k, n, lens):\n    import threading\n    sem = threading.Semaphore(0)\n"
        + "    s = fold(lambda s, i, x: (sem.release(), s + x)[1], 0, lens)\n    c = 0\n"
        + "    while sem.acquire(blocking=False):\n        c += 1\n"
        + "    return at_most(demand=select(k == 37, c, 1), capacity=1)\n",
        marks=LIBRARY_METHODS,
    ),
    pytest.param(
        "logger-add-handler",
        _fold(
            "lg.addHandler(hs[len(lg.handlers)])",
            "    import logging\n    lg = logging.Logger('adv_local')\n"
            "    hs = [logging.NullHandler() for _ in range(100)]\n",
            "len(lg.handlers)",
            1,
        ),
        marks=LIBRARY_METHODS,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_an_unlisted_effect_of_a_step_or_element_function_is_not_run_once_for_all_entries(spec_file, name, body):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_unlisted_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, POINT, padding=False) and fails_on_ints(ob, POINT, padding=True)
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.encoding}), but fails on ints at {POINT}"


@UNLISTED
def test_bound_through_an_unlisted_in_place_dunder_is_not_sufficient(spec_file):
    """``capproof bound`` on the aggregate abstraction calls the element function once: ``len(d)``
    after ``d.__ior__`` per entry is 65 on ints at n=64, not 2. It reported worst demand 194,
    min slack 0, sufficient, where k=37, n=64, lens=[3]*64 demands 257 of 194."""
    from capproof.bound import bound_obligation

    body = (
        D64
        + "def m(k, n, lens):\n    d = {0: 1}\n    t = total((d.__ior__({len(d): 1}), x)[1] for x in lens)\n"
        + "    return at_most(demand=t + select(k == 37, len(d), 2), capacity=3 * n + 2)\n"
    )
    (ob,) = load_file(spec_file(HEADER + body, "adv_unlisted_bound_dict_ior.py"))
    point = {"k": 37, "n": 64, "lens": [3] * 64}
    assert fails_on_ints(ob, point, padding=False) and fails_on_ints(ob, point, padding=True)
    r = bound_obligation(ob)
    sufficient = r.status == "bounded" and not any(c.insufficient for c in r.cases)
    assert not sufficient, f"bounded sufficient (worst demand {[c.max_demand for c in r.cases]}), but {point} fails"


SCHED_SPEC = """
import dataclasses
from capproof import Range, Vector, obligation, at_most, select, all_of
from capproof.arith import fold


@dataclasses.dataclass
class Sched:
    slots: list

    def admit(self, x):
        self.slots += [x]
        return x


@obligation(domain={"max_model_len": Range(1, 16384), "k": Range(0, 40), "n": Range(1, 64),
                    "lens": Vector(64, Range(1, 3), length="n")},
            engine="vllm", versions="==0.33.0", expect="proved")
def staging_rows(max_model_len, k, n, lens):
    sch = Sched([])
    s = fold(lambda s, i, x: s + sch.admit(x), 0, lens)
    return at_most(demand=select(all_of(max_model_len == 4097, k == 37), len(sch.slots), 1), capacity=1)
"""


@SPEC_CLASS
def test_check_config_is_not_safe_through_a_step_calling_a_spec_class_method(tmp_path):
    """``check-config --spec`` with the deployment's batch bound (``--max-num-seqs 64``) counted the
    induction proof and answered ``safe`` (exit 0), though the obligation fails on ints at
    max_model_len=4097 (the line's value), k=37, n=2."""
    from click.testing import CliRunner

    from capproof.cli import main

    path = tmp_path / "sched_spec.py"
    path.write_text(SCHED_SPEC)
    (ob,) = load_file(str(path))
    point = {"max_model_len": 4097, "k": 37, "n": 2, "lens": [1, 1]}
    assert fails_on_ints(ob, point, padding=False) and fails_on_ints(ob, point, padding=True)
    argv = ["vllm", "serve", "m", "--max-model-len", "4097", "--max-num-seqs", "64"]
    result = CliRunner().invoke(main, ["check-config", "-j", "1", "--spec", str(path), "--", *argv])
    assert result.exit_code != 0, result.output
