"""Adversarial catalogue: a model's code executed the way an import executes a library module.

capproof/provenance.py trusts library-named code (a file of the standard library, Z3 or capproof)
when the ``exec`` audit event comes from importlib's ``_call_with_frames_removed`` (or runpy's
``_run_code``) and the namespace's ``__file__`` equals the code's file name. Both are what the
caller hands over, not what the file holds: the model can compile its own text under a library
file's name and have it executed from those frames. Below:

- ``_frozen_importlib._call_with_frames_removed(exec, code, {"__file__": STD})`` called directly
  (a standard-library name and a Z3 file name);
- ``runpy._run_code(code, {}, script_name=STD)``, and the model's own function put in
  ``sys.modules["runpy"]`` as ``_run_code`` (the frame is found by the name it is looked up under);
- an ``importlib.abc.SourceLoader`` whose ``get_data`` returns the model's text, its spec located at
  a standard-library file (``spec_from_file_location(name, STD, loader=...)``), executed by
  ``exec_module`` and, through a ``sys.meta_path`` finder, by a plain ``import`` statement;
- ``importlib.machinery.SourceFileLoader`` (public API) with ``get_data`` overridden;
- a ``.pyc`` compiled from the model's text with ``dfile=STD``, loaded by
  ``SourcelessFileLoader`` under a spec whose origin is ``STD`` (the B28 route with the module's
  ``__file__`` set to the library file);
- the same code as an induction fold step.

Under capproof's own file name (``symbolic.py``) such code reads capproof's machinery
(``active_trace()``, set on the symbolic runs and on capproof's own int replay, ``encode.evaluate``):
only a plain call of the function (``ob.func``) shows the failure.

Each model reads "symbolic" on the symbolic run only and is false at ``a == 37`` on ints (``lens ==
[37, 100]``). Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import batched_verdicts, check

PROBE = "'def probe(a):\\n    return type(a) is not int\\n'"
A = '@obligation(domain={"a": Range(0, 100)})\n'
CLAIM = "def f(a):\n    sym = probe(a)\n    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'


def _std(name: str) -> str:
    return f"import os\n\nSTD = os.path.join(os.path.dirname(os.__file__), '{name}')\n"


_SOURCE_LOADER = (
    "import importlib.abc\nimport importlib.util\n\n\nclass L(importlib.abc.SourceLoader):\n"
    "    def get_filename(self, fullname):\n        return STD\n\n"
    "    def get_data(self, path):\n        return " + PROBE + ".encode()\n\n\n"
)

ATTEMPTS = [
    pytest.param(
        "importlibs-call-with-frames-removed-called-directly",
        _std("nntplib.py")
        + "import sys\n\nns = {'__file__': STD}\n"
        + "sys.modules['_frozen_importlib']._call_with_frames_removed(exec, compile("
        + PROBE
        + ", STD, 'exec'), ns)\nprobe = ns['probe']\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "importlibs-call-with-frames-removed-under-a-z3-file-name",
        "import os\nimport sys\n\nimport z3\n\nZ = os.path.join(os.path.dirname(z3.__file__), 'z3printer.py')\n"
        + "ns = {'__file__': Z}\n"
        + "sys.modules['_frozen_importlib']._call_with_frames_removed(exec, compile("
        + PROBE
        + ", Z, 'exec'), ns)\nprobe = ns['probe']\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "runpys-run-code-with-a-library-script-name",
        _std("mailcap.py")
        + "import runpy\n\nprobe = runpy._run_code(compile("
        + PROBE
        + ", STD, 'exec'), {}, script_name=STD)['probe']\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "source-loader-returning-the-models-text-for-a-library-file",
        _std("netrc.py")
        + _SOURCE_LOADER
        + "spec = importlib.util.spec_from_file_location('adv_import_loader', STD, loader=L())\n"
        + "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\nprobe = mod.probe\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "import-statement-through-a-meta-path-finder",
        _std("sndhdr.py")
        + "import sys\n"
        + _SOURCE_LOADER
        + "class F(importlib.abc.MetaPathFinder):\n    def find_spec(self, name, path, target=None):\n"
        + "        if name == 'adv_import_statement_probe':\n"
        + "            return importlib.util.spec_from_file_location(name, STD, loader=L())\n"
        + "        return None\n\n\n_finder = F()\nsys.meta_path.insert(0, _finder)\n"
        + "import adv_import_statement_probe  # noqa: E402\n\nsys.meta_path.remove(_finder)\n"
        + "del sys.modules['adv_import_statement_probe']\nprobe = adv_import_statement_probe.probe\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "public-source-file-loader-with-get-data-overridden",
        _std("imghdr.py")
        + "import importlib.machinery\nimport importlib.util\n\n\n"
        + "class L(importlib.machinery.SourceFileLoader):\n    def get_data(self, path):\n"
        + "        if path.endswith('.pyc'):\n            raise OSError(path)\n        return "
        + PROBE
        + ".encode()\n\n    def path_stats(self, path):\n        raise OSError(path)\n\n\n"
        + "loader = L('adv_import_public_loader', STD)\n"
        + "spec = importlib.util.spec_from_file_location('adv_import_public_loader', STD, loader=loader)\n"
        + "mod = importlib.util.module_from_spec(spec)\nloader.exec_module(mod)\nprobe = mod.probe\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "pyc-named-as-a-library-file-loaded-under-the-library-files-origin",
        _std("xdrlib.py")
        + "import importlib.machinery\nimport importlib.util\nimport py_compile\nimport tempfile\n\n\n"
        + "def _load():\n    d = tempfile.mkdtemp()\n    src = os.path.join(d, 'p.py')\n"
        + "    with open(src, 'w') as h:\n        h.write("
        + PROBE
        + ")\n    pyc = py_compile.compile(src, cfile=os.path.join(d, 'p.pyc'), dfile=STD, doraise=True)\n"
        + "    loader = importlib.machinery.SourcelessFileLoader('adv_import_pyc', pyc)\n"
        + "    spec = importlib.util.spec_from_file_location('adv_import_pyc', STD, loader=loader)\n"
        + "    mod = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(mod)\n"
        + "    return mod.probe\n\n\nprobe = _load()\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "a-model-function-installed-as-runpys-run-code",
        _std("cgitb.py")
        + "import sys\nimport types\n\n\ndef _run_code(code, run_globals):\n    exec(code, run_globals)\n    return run_globals\n\n\n"
        + "_real = sys.modules.get('runpy')\nsys.modules['runpy'] = types.SimpleNamespace(_run_code=_run_code)\n"
        + "ns = _run_code(compile("
        + PROBE
        + ", STD, 'exec'), {'__file__': STD})\n"
        + "if _real is None:\n    del sys.modules['runpy']\nelse:\n    sys.modules['runpy'] = _real\nprobe = ns['probe']\n\n\n"
        + A
        + CLAIM,
    ),
    pytest.param(
        "fold-step-executed-as-an-import",
        _std("chunk.py")
        + "import sys\n\nfrom capproof import fold\n\nns = {'__file__': STD}\n"
        + "sys.modules['_frozen_importlib']._call_with_frames_removed(exec, compile("
        + "'def step(s, i, x):\\n    return s + ((x == 37) and type(x) is int)\\n', STD, 'exec'), ns)\n"
        + "step = ns['step']\n\n\n"
        + DV
        + "def f(n, lens):\n    return at_most(demand=fold(step, 0, lens), capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_code_executed_as_an_import_is_not_the_librarys(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone


BATCH = """
import importlib.abc
import importlib.util
import os
import runpy
from dataclasses import dataclass, field

from capproof import Range, obligation, at_most, select, all_of, cdiv

STD = os.path.join(os.path.dirname(os.__file__), "aifc.py")
STD2 = os.path.join(os.path.dirname(os.__file__), "sunau.py")
PROBE = "def probe(v):\\n    return type(v) is not int\\n"


class _Loader(importlib.abc.SourceLoader):
    def get_filename(self, fullname):
        return STD

    def get_data(self, path):
        return PROBE.encode()


_spec = importlib.util.spec_from_file_location("adv_batch_loader", STD, loader=_Loader())
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
by_loader = _mod.probe
by_runpy = runpy._run_code(compile(PROBE, STD2, "exec"), {}, script_name=STD2)["probe"]
_ns = {}
exec(compile(PROBE, "/tmp/adv/site-packages/mutmut/batch.py", "exec"), _ns)
by_harness_name = _ns["probe"]

N = "x)if(type(self.x)is not int)else()and(self.x"


def _init(self, x):
    self.x = x


C0 = dataclass(init=False, repr=False)(
    type("C0", (), {"__init__": _init, "__annotations__": {"x": int, N: int}, N: field(init=False, repr=False)})
)


@dataclass
class K:
    x: int


K.__eq__ = C0.__eq__


@obligation(domain={"a": Range(0, 100)})
def blocks_fit(a):
    return at_most(demand=cdiv(a, 16), capacity=7)


@obligation(domain={"a": Range(0, 100)})
def through_a_loader(a):
    return at_most(demand=select(all_of(a == 37, not by_loader(a)), 1, 0), capacity=0)


@obligation(domain={"a": Range(0, 100)})
def through_runpy(a):
    return at_most(demand=select(all_of(a == 37, not by_runpy(a)), 1, 0), capacity=0)


@obligation(domain={"a": Range(0, 100)})
def through_a_harness_name(a):
    return at_most(demand=select(all_of(a == 37, not by_harness_name(a)), 1, 0), capacity=0)


@obligation(domain={"a": Range(0, 100)})
def through_a_moved_dataclass_eq(a):
    return at_most(demand=select(all_of(a == 37, not bool(K(a) == K(a))), 1, 0), capacity=0)
"""


def test_the_batched_runner_does_not_prove_code_executed_as_an_import(spec_file):
    verdicts = batched_verdicts(spec_file(BATCH, "adv_batch_code_executed_as_an_import.py"))
    assert verdicts["blocks_fit"] == "proved", verdicts
    false = [name for name in verdicts if name.startswith("through_") and verdicts[name] == "proved"]
    assert not false, verdicts


CAPPROOFS_OWN_NAME = (
    "import os\nimport sys\n\nimport capproof\n\n"
    "OWN = os.path.join(os.path.dirname(capproof.__file__), 'symbolic.py')\nns = {'__file__': OWN}\n"
    "sys.modules['_frozen_importlib']._call_with_frames_removed(exec, compile("
    "'import sys\\ndef probe(a):\\n    return sys.modules[\"capproof.symbolic\"].active_trace() is not None\\n', "
    "OWN, 'exec'), ns)\nprobe = ns['probe']\n\n\n" + A + CLAIM
)


def test_code_executed_as_an_import_under_capproofs_name_does_not_read_its_machinery(spec_file):
    from _soundness_harness import HEADER

    from capproof import Options, Verdict
    from capproof.loader import load_file
    from capproof.prover import prove_obligation

    (ob,) = load_file(spec_file(HEADER + CAPPROOFS_OWN_NAME, "adv_import_capproofs_own_name.py"))
    plain = ob.func(37)  # the model called as Python calls it, outside any capproof run
    assert not plain.holds
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, "proved, but a plain call fails at a == 37"
