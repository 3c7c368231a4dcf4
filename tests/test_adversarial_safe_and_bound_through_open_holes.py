"""Adversarial catalogue: ``check-config`` and ``capproof bound`` inherit every false proof.

``check-config --spec`` pins the parameters its launch line gives and proves the rest, and
``capproof bound`` optimises the demand on the same symbolic run; a symbolic run that does not
match the ints (a thread's arithmetic: tests/test_adversarial_threads.py; a repr read through a
container: tests/test_adversarial_container_repr.py; a side condition dropped by the aggregate
abstraction: tests/test_adversarial_side_conditions.py; an int subclass's reflected operator:
tests/test_adversarial_int_subclass_operators.py; the same check remembered per class:
tests/test_adversarial_int_subclass_check_cached.py; a model's code compiled under a library
file's name: tests/test_adversarial_code_named_as_library.py and
tests/test_adversarial_code_compiled_from_a_syntax_tree.py; library code doing the model's
introspection: tests/test_adversarial_library_code_does_the_models_introspection.py; the model's code
executed as an import: tests/test_adversarial_code_executed_as_an_import.py; named under a test harness's
directory: tests/test_adversarial_code_named_under_a_harness_directory.py; a dataclass method moved
to another class: tests/test_adversarial_dataclass_method_moved_to_another_class.py) gives a
false ``safe`` (exit 0) and a false minimal sufficient capacity. Each spec below fails on ints at ``num_reqs == 37`` (or at
``a == 2**53 + 1``), a point the line does not pin.
"""

from __future__ import annotations

import pytest
from _soundness_harness import assert_check_config_not_safe, fails_on_ints

from capproof.bound import bound_obligation
from capproof.loader import load_file

CHECK_CONFIG = [
    pytest.param(
        "container-repr",
        """
from capproof import Range, obligation, at_most, select, all_of

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_key_fits(max_model_len, num_reqs):
    key = str({"max_model_len": max_model_len, "num_reqs": num_reqs})   # compute_hash-style factors
    return at_most(demand=select(all_of(num_reqs == 37, "Sym" not in key), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "thread-pool-divisor",
        """
from concurrent.futures import ThreadPoolExecutor
from capproof import Range, obligation, at_most, select, cdiv

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def blocks_fit(max_model_len, num_reqs):
    with ThreadPoolExecutor(1) as ex:
        nb = ex.submit(lambda: cdiv(max_model_len, num_reqs - 37)).result()
    return at_most(demand=select(num_reqs == 37, 0, nb), capacity=max_model_len)
""",
    ),
    pytest.param(
        "int-subclass-reflected-pow",
        """
from capproof import Range, obligation, at_most, select, all_of

class W(int):
    def __rpow__(self, other, *rest):   # Python calls it first for num_reqs ** W(1) on ints
        return -1

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    x = num_reqs ** W(1)
    return at_most(demand=select(all_of(num_reqs == 37, x < 0), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "int-subclass-gains-rpow-after-its-check",
        """
from capproof import Range, obligation, at_most, select, all_of

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    class W(int):
        pass
    _ = num_reqs ** W(1)          # checked once: W has no operator of its own
    W.__rpow__ = lambda self, other, *rest: -1   # Python calls it first for num_reqs ** W(1) on ints
    x = num_reqs ** W(1)
    return at_most(demand=select(all_of(num_reqs == 37, x < 0), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "code-compiled-as-stdlib",
        """
import os
from capproof import Range, obligation, at_most, select, all_of

ns = {}
exec(compile("def probe(v):\\n    return type(v) is not int\\n",
             os.path.join(os.path.dirname(os.__file__), "bisect.py"), "exec"), ns)   # unaudited: "stdlib"

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = ns["probe"](num_reqs)   # True on the symbolic run only
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "dataclass-eq-from-a-model-body",
        """
import dataclasses
from dataclasses import dataclass
from capproof import Range, obligation, at_most, select, all_of

@dataclass
class C:
    x: int

C.__eq__ = dataclasses._create_fn("__eq__", ("self", "other"), ["return type(self.x) is not int"], globals=globals())

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = C(num_reqs) == C(num_reqs)
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "reprlib-type-name-dispatch",
        """
import reprlib
from capproof import Range, obligation, at_most, select, all_of

class R(reprlib.Repr):
    def repr_int(self, x, level):
        return "i"
    def repr_instance(self, x, level):
        return "s"

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = R().repr(num_reqs) == "s"
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "code-compiled-from-a-syntax-tree-as-stdlib",
        """
import ast, os
from capproof import Range, obligation, at_most, select, all_of

ns = {}
exec(compile(ast.parse("def probe(v):\\n    return type(v) is not int\\n"),
             os.path.join(os.path.dirname(os.__file__), "sched.py"), "exec"), ns)

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = ns["probe"](num_reqs)
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "code-executed-by-a-source-loader-as-stdlib",
        """
import importlib.abc, importlib.util, os
from capproof import Range, obligation, at_most, select, all_of

STD = os.path.join(os.path.dirname(os.__file__), "telnetlib.py")

class _Loader(importlib.abc.SourceLoader):
    def get_filename(self, fullname):
        return STD
    def get_data(self, path):
        return b"def probe(v):\\n    return type(v) is not int\\n"

_spec = importlib.util.spec_from_file_location("adv_cc_loader", STD, loader=_Loader())
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
probe = _mod.probe

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = probe(num_reqs)
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "code-executed-by-runpys-run-code-as-stdlib",
        """
import os, runpy
from capproof import Range, obligation, at_most, select, all_of

STD = os.path.join(os.path.dirname(os.__file__), "cgitb.py")
probe = runpy._run_code(compile("def probe(v):\\n    return type(v) is not int\\n", STD, "exec"), {}, script_name=STD)["probe"]

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = probe(num_reqs)
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "code-named-under-a-harness-directory",
        """
from capproof import Range, obligation, at_most, select, all_of

ns = {}
exec(compile("def probe(v):\\n    return type(v) is not int\\n", "/tmp/adv/site-packages/mutmut/cc.py", "exec"), ns)
probe = ns["probe"]

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = probe(num_reqs)
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "dataclass-eq-moved-from-a-class-with-a-spliced-field-name",
        """
from dataclasses import dataclass, field
from capproof import Range, obligation, at_most, select, all_of

N = "x)if(type(self.x)is not int)else()and(self.x"
def _init(self, x):
    self.x = x
C0 = dataclass(init=False, repr=False)(type("C0", (), {"__init__": _init, "__annotations__": {"x": int, N: int}, N: field(init=False, repr=False)}))

@dataclass
class K:
    x: int

K.__eq__ = C0.__eq__

@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},
            engine="vllm", versions="==0.33.0", expect="proved")
def table_fits(max_model_len, num_reqs):
    sym = bool(K(num_reqs) == K(num_reqs))
    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)
""",
    ),
]


@pytest.mark.parametrize("name, source", CHECK_CONFIG)
def test_check_config_is_not_safe_where_the_ints_fail(tmp_path, name, source):
    path = tmp_path / f"cc_{name.replace('-', '_')}.py"
    path.write_text(source)
    assert_check_config_not_safe(path, {"max_model_len": 4097, "num_reqs": 37})


BOUND = [
    pytest.param(
        "container-repr",
        """
from capproof import Range, obligation, at_most, select, all_of

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    key = str([num_reqs])
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, "Sym" not in key), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "aggregate-side-condition",
        """
import math
from capproof import Range, Vector, obligation, at_most, select, total
X = 2**53 + 1

@obligation(domain={"a": Range(0, 2**60), "n": Range(1, 3), "lens": Vector(3, Range(1, 4), length="n")})
def tokens_fit(a, n, lens):
    return at_most(demand=select(a == X, a - math.ceil(a / 1), 0) + total(lens), capacity=12)
""",
        {"a": 2**53 + 1, "n": 3, "lens": [4, 4, 4]},
    ),
    pytest.param(
        "int-subclass-gains-rpow-after-its-check",
        """
from capproof import Range, obligation, at_most, select

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    class W(int):
        pass
    _ = num_reqs ** W(1)
    W.__rpow__ = lambda self, other, *rest: 0
    x = num_reqs ** W(1)          # ints: 0; the symbolic run: num_reqs (worst demand 100 at 100)
    return at_most(demand=num_reqs + select(num_reqs == 37, 64 - x, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "code-compiled-as-stdlib",
        """
import os
from capproof import Range, obligation, at_most, select, all_of

ns = {}
exec(compile("def probe(v):\\n    return type(v) is not int\\n",
             os.path.join(os.path.dirname(os.__file__), "bisect.py"), "exec"), ns)   # unaudited: "stdlib"

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = ns["probe"](num_reqs)
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "reprlib-type-name-dispatch",
        """
import reprlib
from capproof import Range, obligation, at_most, select, all_of

class R(reprlib.Repr):
    def repr_int(self, x, level):
        return "i"
    def repr_instance(self, x, level):
        return "s"

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = R().repr(num_reqs) == "s"
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "dataclass-eq-from-a-model-body",
        """
import dataclasses
from dataclasses import dataclass
from capproof import Range, obligation, at_most, select, all_of

@dataclass
class C:
    x: int

C.__eq__ = dataclasses._create_fn("__eq__", ("self", "other"), ["return type(self.x) is not int"], globals=globals())

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = C(num_reqs) == C(num_reqs)
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "code-compiled-from-a-syntax-tree-as-stdlib",
        """
import ast, os
from capproof import Range, obligation, at_most, select, all_of

ns = {}
exec(compile(ast.parse("def probe(v):\\n    return type(v) is not int\\n"),
             os.path.join(os.path.dirname(os.__file__), "tabnanny.py"), "exec"), ns)

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = ns["probe"](num_reqs)
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "code-executed-by-a-source-loader-as-stdlib",
        """
import importlib.abc, importlib.util, os
from capproof import Range, obligation, at_most, select, all_of

STD = os.path.join(os.path.dirname(os.__file__), "pipes.py")

class _Loader(importlib.abc.SourceLoader):
    def get_filename(self, fullname):
        return STD
    def get_data(self, path):
        return b"def probe(v):\\n    return type(v) is not int\\n"

_spec = importlib.util.spec_from_file_location("adv_bound_loader", STD, loader=_Loader())
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
probe = _mod.probe

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = probe(num_reqs)
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "code-executed-by-runpys-run-code-as-stdlib",
        """
import os, runpy
from capproof import Range, obligation, at_most, select, all_of

STD = os.path.join(os.path.dirname(os.__file__), "uu.py")
probe = runpy._run_code(compile("def probe(v):\\n    return type(v) is not int\\n", STD, "exec"), {}, script_name=STD)["probe"]

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = probe(num_reqs)
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
    pytest.param(
        "code-named-under-a-harness-directory",
        """
from capproof import Range, obligation, at_most, select, all_of

ns = {}
exec(compile("def probe(v):\\n    return type(v) is not int\\n", "/tmp/adv/site-packages/mutmut/bd.py", "exec"), ns)
probe = ns["probe"]

@obligation(domain={"num_reqs": Range(1, 100)})
def slots_fit(num_reqs):
    sym = probe(num_reqs)
    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)
""",
        {"num_reqs": 37},
    ),
]


@pytest.mark.parametrize("name, source, point", BOUND)
def test_bound_is_not_sufficient_where_the_ints_fail(tmp_path, name, source, point):
    path = tmp_path / f"bd_{name.replace('-', '_')}.py"
    path.write_text(source)
    (ob,) = load_file(str(path))
    assert fails_on_ints(ob, point)
    result = bound_obligation(ob)
    sufficient = result.status == "bounded" and not any(c.insufficient for c in result.cases)
    assert not sufficient, f"bounded sufficient, but the claim fails on ints at {point}"
