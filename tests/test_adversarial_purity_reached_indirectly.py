"""Adversarial catalogue: effects of a fold step or per-entry function that the purity check
cannot see because it never reaches the code, or never reads the method's name.

capproof/purity.py scans the bytecode of a step and of every function it reaches through
globals, closure cells, defaults and project classes, and judges method calls by name. Three
ways past it, each proved "[all batch sizes]" by induction or the aggregate abstraction though
false on ints at ``k == 37`` with two requests (padded and alone):

- **callables held in a container or a descriptor**: a dispatch dict or tuple of lambdas, a
  ``SimpleNamespace`` attribute read then called, a class attribute holding a list of functions,
  a ``functools.cached_property`` getter, a project descriptor's ``__get__``, a ``partial`` in a
  dict (push_object drops builtin containers, standard-library objects and non-function class
  attributes without scanning what they hold);
- **a method fetched by a runtime name or a library method with a "pure" name**:
  ``operator.attrgetter("append")(h)``, ``h.__getattribute__("append")``,
  ``object.__getattribute__(h, "append")``, ``queue.Queue.get`` (``get`` is known pure because
  ``dict.get`` is);
- **a library object's method fetched with ``LOAD_ATTR`` and then called** (``draw = rng.random;
  draw()`` on a local ``random.Random``, ``add = lg.addHandler``): the check of unknown method names
  reads ``LOAD_METHOD`` only, and a standard-library class's methods are not scanned;
- **an augmented assignment to a parameter** given a held list (a default ``acc=h``, a
  ``functools.partial`` binding, a helper ``_stage(s, i, x, rows)`` a lambda calls with the model's
  list): parameters are exempt as "the caller's own value", which is only the fold's own state and
  entry.

Through the same holes, ``check-config --spec`` answered ``safe`` (exit 0) and ``capproof bound``
"sufficient" where ints refute. Each attempt is checked on ints at its failing point first.
Each failed before capproof/purity.py looked into containers, library descriptors, project
objects' attributes and class attributes of every kind, refused library-class instances, names
that fetch a method at run time (``attrgetter``, ``__getattribute__``) and augmented assignment
to a defaulted parameter.
"""

from __future__ import annotations

import pytest
from _soundness_harness import fails_on_ints

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation

HEADER = (
    "import functools, logging, operator, queue, random, types\n"
    "from capproof import Range, Vector, obligation, at_most, select, total, all_of\n"
    "from capproof.arith import fold\n"
)
D64 = '@obligation(domain={"k": Range(0, 40), "n": Range(1, 64), "lens": Vector(64, Range(1, 3), length="n")})\n'
POINT = {"k": 37, "n": 2, "lens": [1, 1]}  # two requests: the effect happens twice on ints
CLAIM = "    return at_most(demand=select(k == 37, len(h), 1), capacity=1)\n"


def _model(pre: str, use: str) -> str:
    return D64 + "def m(k, n, lens):\n    h = []\n" + pre + use + CLAIM


def _fold(pre: str, step: str) -> str:
    return _model(pre, f"    s = fold({step}, 0, lens)\n")


def _total(pre: str, element: str) -> str:
    return _model(pre, f"    t = total({element} for x in lens)\n")


APPENDS = "lambda x: (h.append(x), x)[1]"
CACHED = (
    "    class Req:\n        @functools.cached_property\n        def extra(self):\n"
    "            h.append(1)\n            return 0\n"
)
DESCRIPTOR = (
    "    class Counted:\n        def __get__(self, obj, kind=None):\n            h.append(1)\n            return 0\n"
    "    class Req:\n        extra = Counted()\n"
)
ATTEMPTS = [
    pytest.param(
        "dispatch-dict", _fold(f"    handlers = {{'flash': {APPENDS}}}\n", "lambda s, i, x: s + handlers['flash'](x)")
    ),
    pytest.param("dispatch-tuple", _fold(f"    hooks = ({APPENDS},)\n", "lambda s, i, x: s + hooks[0](x)")),
    pytest.param(
        "namespace-attribute-called",
        _fold(
            f"    cfg = types.SimpleNamespace(hook={APPENDS})\n"
            "    def step(s, i, x):\n        f = cfg.hook\n        return s + f(x)\n",
            "step",
        ),
    ),
    pytest.param(
        "class-attribute-list-of-functions",
        _fold(f"    class Hooks:\n        ALL = [{APPENDS}]\n", "lambda s, i, x: s + Hooks.ALL[0](x)"),
    ),
    pytest.param("cached-property", _fold(CACHED, "lambda s, i, x: s + x + Req().extra")),
    pytest.param("descriptor-get", _fold(DESCRIPTOR, "lambda s, i, x: s + x + Req.extra")),
    pytest.param(
        "partial-in-dict",
        _fold(
            "    reg = {'note': functools.partial(lambda acc, v: acc.append(v), h)}\n",
            "lambda s, i, x: (reg['note'](1), s + x)[1]",
        ),
    ),
    pytest.param("total-cached-property", _total(CACHED, "x + Req().extra")),
    pytest.param("attrgetter-append", _fold("", "lambda s, i, x: (operator.attrgetter('append')(h)(1), s + x)[1]")),
    pytest.param("getattribute-append", _fold("", "lambda s, i, x: (h.__getattribute__('append')(1), s + x)[1]")),
    pytest.param(
        "object-getattribute-append", _fold("", "lambda s, i, x: (object.__getattribute__(h, 'append')(1), s + x)[1]")
    ),
    pytest.param("total-attrgetter-append", _total("", "(operator.attrgetter('append')(h)(1), x)[1]")),
    pytest.param(
        "default-parameter-augmented",
        _fold("    def step(s, i, x, acc=h):\n        acc += [1]\n        return s + x\n", "step"),
    ),
    pytest.param(
        "keyword-only-default-augmented",
        _fold("    def step(s, i, x, *, acc=h):\n        acc += [1]\n        return s + x\n", "step"),
    ),
    pytest.param(
        "total-default-parameter-augmented",
        _total("    def per_req(x, acc=h):\n        acc += [1]\n        return x\n", "per_req(x)"),
    ),
    # a library object's method fetched with LOAD_ATTR, then called (the unknown-name check reads
    # LOAD_METHOD only): a local generator's draw, a logger's handler list
    pytest.param(
        "fetched-random-instance-draw",
        D64
        + "def m(k, n, lens):\n    rng = random.Random(0)\n"
        + "    def step(s, i, x):\n        draw = rng.random\n        draw()\n        return s + x\n"
        + "    s = fold(step, 0, lens)\n    gen = random.Random(0)\n    gen.random()\n"
        + "    one_draw = rng.random() == gen.random()\n"
        + "    return at_most(demand=select(k == 37, 0 if one_draw else 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "total-fetched-random-instance-draw",
        D64
        + "def m(k, n, lens):\n    rng = random.Random(0)\n"
        + "    def per_req(x):\n        draw = rng.random\n        draw()\n        return x\n"
        + "    t = total(per_req(x) for x in lens)\n    gen = random.Random(0)\n    gen.random()\n"
        + "    one_draw = rng.random() == gen.random()\n"
        + "    return at_most(demand=select(k == 37, 0 if one_draw else 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "fetched-logger-add-handler",
        D64
        + "def m(k, n, lens):\n    lg = logging.Logger('adv_local')\n"
        + "    hs = [logging.NullHandler() for _ in range(70)]\n"
        + "    def step(s, i, x):\n        add = lg.addHandler\n        add(hs[len(lg.handlers)])\n        return s + x\n"
        + "    s = fold(step, 0, lens)\n"
        + "    return at_most(demand=select(k == 37, len(lg.handlers), 1), capacity=1)\n",
    ),
    # a helper's parameter given the model's list (``rows += [x]`` on a parameter is exempt as "the
    # caller's own value", but a helper's caller passes a held list): from a lambda, a partial, a method
    pytest.param(
        "helper-extends-a-passed-list",
        "def _stage(s, i, x, rows):\n    rows += [x]\n    return s + x\n"
        + D64
        + "def m(k, n, lens):\n    h = []\n    s = fold(lambda s, i, x: _stage(s, i, x, h), 0, lens)\n"
        + CLAIM,
    ),
    pytest.param(
        "partial-binds-a-list-parameter",
        "def _stage(s, i, x, rows):\n    rows += [x]\n    return s + x\n"
        + D64
        + "def m(k, n, lens):\n    h = []\n    s = fold(functools.partial(_stage, rows=h), 0, lens)\n"
        + CLAIM,
    ),
    pytest.param(
        "total-partial-binds-a-list-parameter",
        "def _per_req(x, rows):\n    rows += [x]\n    return x\n"
        + D64
        + "def m(k, n, lens):\n    h = []\n    f = functools.partial(_per_req, rows=h)\n"
        + "    t = total(f(x) for x in lens)\n"
        + CLAIM,
    ),
    # a fold's invariant runs on the symbolic walk only (ints never call it): its effect through a
    # dispatch dict makes the claim true there
    pytest.param(
        "invariant-dispatch-dict",
        D64
        + "def m(k, n, lens):\n    h = []\n    note = {'n': lambda: (h.append(1), True)[1]}\n"
        + "    def inv(s, i, seen):\n        return note['n']() and s == total(seen)\n"
        + "    s = fold(lambda s, i, x: s + x, 0, lens, invariant=inv)\n"
        + "    return at_most(demand=select(k == 37, 1, 0), capacity=len(h))\n",
    ),
    pytest.param(
        "queue-get",  # Queue.get drains the queue; `get` is known pure as dict.get
        D64
        + "def m(k, n, lens):\n    q = queue.Queue()\n    for _ in range(200):\n        q.put(1)\n"
        + "    s = fold(lambda s, i, x: s + x + 0 * q.get(False), 0, lens)\n"
        + "    return at_most(demand=select(k == 37, 200 - q.qsize(), 1), capacity=1)\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_an_effect_reached_indirectly_is_not_run_once_for_all_entries(spec_file, name, body):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_indirect_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, POINT, padding=False) and fails_on_ints(ob, POINT, padding=True)
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.encoding}), but fails on ints at {POINT}"


def test_bound_through_a_method_fetched_by_name_is_not_sufficient(spec_file):
    """The aggregate abstraction runs the element function once: ``len(h)`` is 64 on ints at n=64,
    not 1. ``capproof bound`` reported worst demand 194, min slack 0, sufficient, where k=37, n=64,
    lens=[3]*64 demands 256 of 194."""
    from capproof.bound import bound_obligation

    body = D64 + (
        "def m(k, n, lens):\n    h = []\n"
        "    t = total((operator.attrgetter('append')(h)(1), x)[1] for x in lens)\n"
        "    return at_most(demand=t + select(k == 37, len(h), 2), capacity=3 * n + 2)\n"
    )
    (ob,) = load_file(spec_file(HEADER + body, "adv_indirect_bound_attrgetter.py"))
    point = {"k": 37, "n": 64, "lens": [3] * 64}
    assert fails_on_ints(ob, point, padding=False) and fails_on_ints(ob, point, padding=True)
    r = bound_obligation(ob)
    sufficient = r.status == "bounded" and not any(c.insufficient for c in r.cases)
    assert not sufficient, f"bounded sufficient (worst demand {[c.max_demand for c in r.cases]}), but {point} fails"


DISPATCH_SPEC = """
from capproof import Range, Vector, obligation, at_most, select, all_of
from capproof.arith import fold


@obligation(domain={"max_model_len": Range(1, 16384), "k": Range(0, 40), "n": Range(1, 64),
                    "lens": Vector(64, Range(1, 3), length="n")},
            engine="vllm", versions="==0.33.0", expect="proved")
def staging_rows_dispatch(max_model_len, k, n, lens):
    rows = []
    backends = {"flash_attn": lambda x: (rows.append(x), x)[1]}  # per-backend row writer
    s = fold(lambda s, i, x: s + backends["flash_attn"](x), 0, lens)
    return at_most(demand=select(all_of(max_model_len == 4097, k == 37), len(rows), 1), capacity=1)
"""


def test_check_config_is_not_safe_through_a_step_calling_a_dispatch_table(tmp_path):
    """``check-config --spec`` counted the induction proof and answered ``safe`` (exit 0) though
    the obligation fails on ints at max_model_len=4097 (the line's value), k=37, n=2."""
    from click.testing import CliRunner

    from capproof.cli import main

    path = tmp_path / "dispatch_spec.py"
    path.write_text(DISPATCH_SPEC)
    (ob,) = load_file(str(path))
    point = {"max_model_len": 4097, "k": 37, "n": 2, "lens": [1, 1]}
    assert fails_on_ints(ob, point, padding=False) and fails_on_ints(ob, point, padding=True)
    argv = ["vllm", "serve", "m", "--max-model-len", "4097", "--max-num-seqs", "64"]
    result = CliRunner().invoke(main, ["check-config", "-j", "1", "--spec", str(path), "--", *argv])
    assert result.exit_code != 0, result.output


#: Containers and library objects the container walk does not know: a ``dict`` subclass (an exact
#: type check), a ``deque`` or ``MappingProxyType`` of hooks, and C library objects without a
#: ``__dict__`` (``queue.SimpleQueue.get``: a read-only name elsewhere; ``_random.Random``'s draw
#: fetched with LOAD_ATTR). Each proved "[all batch sizes]", false on ints at k=37, n=2.
STILL_REACHED_INDIRECTLY = [
    pytest.param(
        "dict-subclass-registry",
        "class Registry(dict):\n    pass\n\n\n"
        + _fold(f"    reg = Registry(flash={APPENDS})\n", "lambda s, i, x: s + reg['flash'](x)"),
    ),
    pytest.param(
        "deque-of-hooks",
        "import collections\n"
        + _fold(f"    hooks = collections.deque([{APPENDS}])\n", "lambda s, i, x: s + hooks[0](x)"),
    ),
    pytest.param(
        "mapping-proxy-registry",
        _fold(f"    reg = types.MappingProxyType({{'flash': {APPENDS}}})\n", "lambda s, i, x: s + reg['flash'](x)"),
    ),
    pytest.param(
        "simple-queue-get",
        D64
        + "def m(k, n, lens):\n    q = queue.SimpleQueue()\n    for _ in range(200):\n        q.put(1)\n"
        + "    s = fold(lambda s, i, x: s + x + 0 * q.get(False), 0, lens)\n"
        + "    return at_most(demand=select(k == 37, 200 - q.qsize(), 1), capacity=1)\n",
    ),
    pytest.param(
        "fetched-c-random-draw",
        "import _random\n"
        + D64
        + "def m(k, n, lens):\n    rng = _random.Random(0)\n"
        + "    def step(s, i, x):\n        draw = rng.random\n        draw()\n        return s + x\n"
        + "    s = fold(step, 0, lens)\n    gen = _random.Random(0)\n    gen.random()\n"
        + "    one_draw = rng.random() == gen.random()\n"
        + "    return at_most(demand=select(k == 37, 0 if one_draw else 1, 0), capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", STILL_REACHED_INDIRECTLY)
def test_an_effect_through_an_unknown_container_or_c_object_is_not_run_once(spec_file, name, body):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_unknown_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, POINT, padding=False) and fails_on_ints(ob, POINT, padding=True)
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.encoding}), but fails on ints at {POINT}"
