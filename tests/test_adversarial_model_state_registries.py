"""Adversarial catalogue: a model's state kept where the runner's state check does not look.

capproof evaluates a model many times in one process (the int probe, the symbolic paths, the
second opinion) and makes a verdict an ``error`` when the state it fingerprints changed while
deciding (capproof/runner.py: the project modules' data, closures, defaults, class attributes, the
names bound in library modules, ``os.environ``). Each model below is true on every evaluation but
the first in a process, and keeps what changes elsewhere:

- a registry inside a standard-library module, filled through its API: ``logging``'s loggers (a
  logger created lazily, as engines do per module), ``mimetypes``, ``linecache``, ``copyreg``;
  the ``abc`` cache of a class registered as virtual subclass;
- the project's own module, in what the fingerprint leaves out: a ``__dunder__`` global, a global
  bound to a module object made at import, a module added to ``sys.modules`` while deciding.

- process state set through C functions: ``decimal``'s context, ``sys.setswitchinterval``,
  ``codecs.register``, ``atexit``.

On ints (the model's first evaluation in a fresh interpreter) each fails at ``k == 37``; each was
proved before capproof/runner.py's ``_FreshCopy`` (a proved verdict decided again from the item's
starting state with the symbolic run first; a counterexample replayed as the first evaluation of a
fresh copy). The proof runs first here, in this process; the ints are evaluated in a fresh one.
The mirror image, a counterexample only later evaluations show (the claim holds on a fresh
interpreter's first evaluation), was reported as a counterexample.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _soundness_harness import HEADER
from _tiers import fast_few

import capproof.loader as loader
from capproof import Options, Verdict, prove
from capproof.loader import load_file


def _model(pre: str, first: str) -> str:
    """A model whose claim fails at k == 37 only where ``first`` is True (its first evaluation)."""
    return (
        "import sys, types\n"
        + pre
        + '\n@obligation(domain={"k": Range(0, 40)})\ndef m(k):\n'
        + f"    v = {first}\n"
        + "    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)\n"
    )


ATTEMPTS = [
    pytest.param(
        "logging-logger-created-lazily",
        _model(
            "import logging",
            "(('vllm.adv_lazy_logger' not in logging.Logger.manager.loggerDict), "
            "logging.getLogger('vllm.adv_lazy_logger'))[0]",
        ),
    ),
    pytest.param(
        "mimetypes-add-type",
        _model(
            "import mimetypes\nmimetypes.init()",
            "(mimetypes.guess_type('a.advx')[0] is None, mimetypes.add_type('text/x-adv', '.advx'))[0]",
        ),
    ),
    pytest.param(
        "linecache-entry",
        _model(
            "import linecache",
            "('<adv>' not in linecache.cache, linecache.cache.__setitem__('<adv>', (1, None, ['x'], '<adv>')))[0]",
        ),
    ),
    pytest.param(
        "copyreg-dispatch-table",
        _model(
            "import copyreg\nclass T:\n    pass",
            "(T not in copyreg.dispatch_table, copyreg.pickle(T, lambda t: (T, ())))[0]",
        ),
    ),
    pytest.param(
        "abc-virtual-subclass",
        _model(
            "import collections.abc\nclass Table:\n    pass",
            "(not issubclass(Table, collections.abc.Sized), collections.abc.Sized.register(Table))[0]",
        ),
    ),
    pytest.param(
        "dunder-global-of-the-spec",
        _model("__adv_state__ = []", "(__adv_state__.append(1), len(__adv_state__) == 1)[1]"),
    ),
    pytest.param(
        "module-object-global-of-the-spec",
        _model(
            "_M = types.ModuleType('_adv_reg_global')\n_M.n = []\nsys.modules['_adv_reg_global'] = _M",
            "(_M.n.append(1), len(_M.n) == 1)[1]",
        ),
    ),
    pytest.param(
        "module-added-to-sys-modules",
        _model(
            "",
            "(sys.modules.setdefault('_adv_fake_mod', types.ModuleType('_adv_fake_mod'))"
            ".__dict__.setdefault('n', []).append(1), len(sys.modules['_adv_fake_mod'].n) == 1)[1]",
        ),
    ),
    pytest.param(
        "file-written-through-a-descriptor-opened-at-import",
        _model(
            "import os, tempfile\nFD, _PATH = tempfile.mkstemp()",
            "(os.fstat(FD).st_size == 0, os.write(FD, b'x'))[0]",
        ),
    ),
    # process state set through C functions
    pytest.param(
        "decimal-context-precision",
        _model("import decimal", "(decimal.getcontext().prec == 28, setattr(decimal.getcontext(), 'prec', 29))[0]"),
    ),
    pytest.param(
        "switch-interval",
        _model("", "(sys.getswitchinterval() == 0.005, sys.setswitchinterval(0.006))[0]"),
    ),
    pytest.param(
        "atexit-callbacks",
        _model(
            "import atexit\n_BASE = atexit._ncallbacks()",
            "(atexit.register(print), atexit._ncallbacks() == _BASE + 1)[1]",
        ),
    ),
    pytest.param(
        "codecs-register",
        _model(
            "import codecs\n"
            "def _adv_lookup(name):\n"
            "    return codecs.lookup('utf-8') if name == 'adv_codec_x' else None\n"
            "def _adv_missing():\n"
            "    try:\n"
            "        codecs.lookup('adv_codec_x')\n"
            "        return False\n"
            "    except LookupError:\n"
            "        return True",
            "(_adv_missing(), codecs.register(_adv_lookup))[0]",
        ),
    ),
    # seen by the state check (an error): a list global, a function attribute
    pytest.param("list-global", _model("STATE = []", "(STATE.append(1), len(STATE) == 1)[1]")),
]

FRESH = """
import sys
sys.path.insert(0, {tests!r})
from _soundness_harness import fails_on_ints
from capproof.loader import load_file
(ob,) = load_file({path!r})
print(fails_on_ints(ob, {{"k": 37}}))
"""


@pytest.fixture(autouse=True)
def _forget_spec_modules():
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("capproof_spec."):
            del sys.modules[name]


#: The registries the fast tier keeps (one path each, ~0.5-1 s: the others run in the slow tier).
FAST_ATTEMPTS = {
    "abc-virtual-subclass",
    "decimal-context-precision",
    "list-global",
    "logging-logger-created-lazily",
    "mimetypes-add-type",
}


@pytest.mark.parametrize("name, body", fast_few(ATTEMPTS, FAST_ATTEMPTS))
def test_state_outside_the_fingerprint_does_not_carry_between_evaluations(spec_file, name, body):
    path = spec_file(HEADER + body, f"adv_registry_{name.replace('-', '_')}.py")
    loader._loaded.pop(path, None)
    (ob,) = load_file(path)
    result = prove(ob, Options(density="off"))
    tests = __import__("os").path.dirname(__file__)
    fresh = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRESH.format(tests=tests, path=path))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == "True"  # the first evaluation in a fresh interpreter fails at 37
    assert result.verdict is not Verdict.PROVED, f"proved, but fails at k=37 evaluated fresh ({name})"


def _later_only(pre: str, seen: str, after: str) -> str:
    """A model whose claim fails at k == 37 only where ``seen`` is True: on every evaluation but
    the first in a process (``after`` makes it so)."""
    return (
        "import sys\n"
        + pre
        + '\n@obligation(domain={"k": Range(0, 40)})\ndef m(k):\n'
        + f"    seen = {seen}\n"
        + f"    {after}\n"
        + "    return at_most(demand=select(all_of(k == 37, seen), 1, 0), capacity=0)\n"
    )


LATER_ONLY = [
    pytest.param(
        "logging-logger-created-lazily",
        _later_only(
            "import logging",
            "'vllm.adv_cex_logger' in logging.Logger.manager.loggerDict",
            "logging.getLogger('vllm.adv_cex_logger')",
        ),
    ),
    pytest.param(
        "switch-interval",
        _later_only("", "sys.getswitchinterval() != 0.005", "sys.setswitchinterval(0.006)"),
    ),
]

HOLDS_FRESH = FRESH.replace(
    'print(fails_on_ints(ob, {{"k": 37}}))', 'print(fails_on_ints(ob, {{"k": 37}}), fails_on_ints(ob, {{"k": 37}}))'
)


@pytest.mark.parametrize("name, body", fast_few(LATER_ONLY, {"logging-logger-created-lazily"}))
def test_a_counterexample_the_first_evaluation_does_not_show_is_not_reported(spec_file, name, body):
    path = spec_file(HEADER + body, f"adv_registry_cex_{name.replace('-', '_')}.py")
    loader._loaded.pop(path, None)
    (ob,) = load_file(path)
    result = prove(ob, Options(density="off"))
    tests = __import__("os").path.dirname(__file__)
    fresh = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HOLDS_FRESH.format(tests=tests, path=path))],
        capture_output=True,
        text=True,
        check=True,
    )
    # a fresh interpreter: the first evaluation at 37 holds, the second fails
    assert fresh.stdout.split() == ["False", "True"], fresh.stdout
    assert result.verdict is not Verdict.COUNTEREXAMPLE, f"counterexample {result.counterexample} ({name})"
