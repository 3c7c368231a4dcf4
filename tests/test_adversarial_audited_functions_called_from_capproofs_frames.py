"""Adversarial catalogue: an audited function called by C code that capproof's own frame drives.

``gc.get_referents`` and ``marshal.dumps`` see the object itself (an int refers to nothing and
marshals; a symbolic value refers to its term and does not). Their audit events are decided at the
call: refused when the call is on the model's behalf, judged by the frames outward from the caller,
where the first of capproof's own frames means capproof called. A lazy ``map`` of the function
handed to one of capproof's public helpers (``total``, ``max_of``, ``count``) is run by ``map``'s C
code from inside the helper's frame, so the call counts as capproof's:

- ``total(map(len, map(get_referents, [a])))`` with ``get_referents`` held at load,
  ``max_of(...)`` with it fetched past the ``gc`` module's class, a batch entry's referents;
- ``marshal.dumps`` with ``marshal`` imported inside the model, under ``total`` and ``count``;
- ``gc`` imported inside the model, its ``is_tracked``/``get_referents`` read and called by
  ``operator.methodcaller(name, a)`` mapped over ``[gc]`` (the module class's read is excused too);
- ``prefix_sums`` and ``min_of`` as the helper; a held ``get_referents`` as ``fold``'s step (``fold`` calls it);
- the same for the checks that excuse capproof's frames as the caller: ``repr`` of the value and
  ``str`` of its ``type`` (both held at load by a computed name) under ``total``;
- the batched runner, ``check-config --spec`` ("safe", exit 0) and ``capproof bound`` ("bounded",
  sufficient).

Caught (an error): the same ``map`` consumed by the model's own code (``sum``, ``list``), even when
the list is then handed to ``prefix_sums``; under ``total``: ``sys.getsizeof``, ``str``, ``dir``,
``hash``, ``pickle.dumps``, ``type`` named bare, ``"{!r}".format``.

Each model is false at ``a == 37`` on ints and reads "symbolic" on the symbolic run only. Brute
forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import (
    HEADER,
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
    strict=True, reason="an audited call made by map() inside capproof's own helper counts as capproof's"
)

A = '@obligation(domain={"a": Range(0, 100)})\ndef f(a):\n'
TAIL = "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
HELD = 'import gc\nTOOLS = {"r": getattr(gc, "get_" + "referents")}\n\n\n'
MARSHAL = "    import marshal\n    try:\n        sym = {} == 0\n    except ValueError:\n        sym = True\n"

ATTEMPTS = [
    pytest.param(
        "referents-under-total", HELD + A + '    sym = total(map(len, map(TOOLS["r"], [a]))) > 0\n' + TAIL, marks=OPEN
    ),
    pytest.param(
        "referents-past-the-module-class-under-max-of",
        "import types\n\n\n"
        + A
        + '    import gc\n    r = types.ModuleType.__getattribute__(gc, "get_referents")\n'
        + "    sym = max_of(map(len, map(r, [a]))) > 0\n"
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "marshal-imported-inside-under-total",
        A + MARSHAL.format("total(map(len, map(marshal.dumps, [a])))") + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "marshal-imported-inside-under-count",
        A + MARSHAL.format("count(map(bool, map(marshal.dumps, [a])))") + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "repr-held-under-total",
        'import builtins\nTOOLS = {"r": getattr(builtins, "re" + "pr")}\n\n\n'
        + A
        + '    sym = total(map(len, map(TOOLS["r"], [a]))) != 2\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "type-held-under-total",
        'import builtins\nTOOLS = {"t": getattr(builtins, "ty" + "pe")}\n\n\n'
        + A
        + '    sym = total(map(len, map(str, map(TOOLS["t"], [a])))) != len(str(int))\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "is-tracked-read-and-called-by-methodcaller-under-total",
        "import operator\n\n\n"
        + A
        + "    import gc\n"
        + '    sym = total(map(int, map(operator.methodcaller("is_tracked", a), [gc]))) > 0\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "referents-read-and-called-by-methodcaller-under-total",
        "import operator\n\n\n"
        + A
        + "    import gc\n"
        + '    sym = total(map(len, map(operator.methodcaller("get_referents", a), [gc]))) > 0\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "referents-under-prefix-sums",
        HELD + A + '    sym = prefix_sums(map(len, map(TOOLS["r"], [a])))[-1] > 0\n' + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "marshal-imported-inside-under-min-of",
        A + MARSHAL.format("min_of(map(len, map(marshal.dumps, [a])))") + TAIL,
        marks=OPEN,
    ),
    pytest.param(
        "referents-held-as-a-fold-step",
        HELD
        + A
        + '    try:\n        sym = len(fold(TOOLS["r"], 0, [a])) > 0\n    except Exception:\n        sym = True\n'
        + TAIL,
        marks=OPEN,
    ),
    pytest.param("consumed-by-the-models-sum", HELD + A + '    sym = sum(map(len, map(TOOLS["r"], [a]))) > 0\n' + TAIL),
    pytest.param(
        "consumed-by-the-models-list-then-prefix-sums",
        HELD + A + '    sym = prefix_sums(list(map(len, map(TOOLS["r"], [a]))))[-1] > 0\n' + TAIL,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_audited_functions_called_from_capproofs_frames_do_not_tell_a_symbolic_value(spec_file, name, body):
    check(
        spec_file, name, body, header=HEADER + "from capproof import fold\n"
    )  # a proof is brute forced on ints, padded and alone


@OPEN
def test_a_batch_entrys_referents_under_total(spec_file):
    body = (
        HELD + '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
        "def f(n, lens):\n"
        '    sym = total(map(len, map(TOOLS["r"], [lens[0]]))) > 0\n'
        "    return at_most(demand=select(all_of(lens[0] == 37, not sym), 1, 0), capacity=0)\n"
    )
    check(spec_file, "batch-entry-referents-under-total", body)


BATCH = """
import gc
from capproof import Range, obligation, at_most, select, all_of, cdiv, total, max_of

TOOLS = {"r": getattr(gc, "get_" + "referents")}


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def referents_by_capproofs_total(a):
    sym = total(map(len, map(TOOLS["r"], [a]))) > 0
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)


@obligation(domain={"a": Range(0, 100)})
def marshal_by_capproofs_max(a):
    import marshal
    try:
        sym = max_of(map(len, map(marshal.dumps, [a]))) == 0
    except ValueError:
        sym = True
    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)
"""


@IN_PROCESS
def test_the_batched_runner_does_not_prove_through_capproofs_frames(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_audited_functions_called_from_capproofs_frames.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    assert verdicts["referents_by_capproofs_total"] != "proved", verdicts
    assert verdicts["marshal_by_capproofs_max"] != "proved", verdicts


@IN_PROCESS
def test_check_config_is_not_safe_through_capproofs_frames(tmp_path):
    path = tmp_path / "cc_audited_functions_called_from_capproofs_frames.py"
    path.write_text(
        "from capproof import Range, obligation, at_most, select, all_of, total\n\n\n"
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n"
        "    import marshal\n"
        "    try:\n"
        "        sym = total(map(len, map(marshal.dumps, [num_reqs]))) == 0\n"
        "    except ValueError:\n"
        "        sym = True\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


@OPEN
def test_bound_is_not_sufficient_through_capproofs_frames(tmp_path):
    path = tmp_path / "bd_audited_functions_called_from_capproofs_frames.py"
    path.write_text(
        HELD + "from capproof import Range, obligation, at_most, select, all_of, total\n\n\n"
        '@obligation(domain={"num_reqs": Range(1, 100)})\n'
        "def slots_fit(num_reqs):\n"
        '    sym = total(map(len, map(TOOLS["r"], [num_reqs]))) > 0\n'
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    assert_bound_not_sufficient(path, {"num_reqs": 37})
