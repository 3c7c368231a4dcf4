"""capproof.inventory: the entry file format, the shape expression evaluator and the Z3 printer."""

from __future__ import annotations

import json

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from capproof import inventory as inv
from capproof.arith import cdiv, maximum, minimum, round_up, select
from capproof.errors import SpecError
from capproof.symbolic import SymInt

BT = "vllm/v1/worker/block_table.py::BlockTable.block_table"


def _entry(**kw):
    base = dict(
        id=BT,
        file="vllm/v1/worker/block_table.py",
        line=80,
        owner="BlockTable",
        attribute="block_table",
        dtype="int32",
        shape=["max_num_reqs", "cdiv(max_model_len, block_size * dcp)"],
        how="traced",
        why="",
        sized_by=["blocks", "requests"],
        params=["block_size", "dcp", "max_model_len", "max_num_reqs"],
    )
    base.update(kw)
    return inv.Entry(**base)


def test_file_round_trip(tmp_path):
    path = tmp_path / "proofs" / "inventory" / "vllm-0.33.0.json"
    entries = [
        _entry(),
        _entry(id="vllm/x.py::A.b", owner="A", attribute="b", shape=["7"], how="read", why="CUDA-only call"),
    ]
    inv.dump(entries, "vllm", "0.33.0", str(path))
    doc = json.loads(path.read_text())
    assert doc["engine"] == "vllm" and doc["version"] == "0.33.0"
    assert [e["id"] for e in doc["entries"]] == sorted(e.id for e in entries)
    assert set(doc["entries"][0]) == {
        "id",
        "file",
        "line",
        "owner",
        "attribute",
        "dtype",
        "shape",
        "how",
        "why",
        "sized_by",
        "params",
        "verdicts",
        "coverage",
        "accesses",
        "demands",
    }
    loaded = inv.load(str(path))
    assert sorted(loaded, key=lambda e: e.id) == sorted(entries, key=lambda e: e.id)
    # the same entries give the same bytes
    assert inv.dumps(loaded, "vllm", "0.33.0") == path.read_text()


def test_capacity_and_numel_on_ints_and_symints():
    entries = [_entry()]
    # DeepSeek-V3.2 at 163840 tokens, block 64, dcp 8: 320 columns (reference §1.2)
    assert inv.capacity(entries, BT, 1, max_num_reqs=256, max_model_len=163840, block_size=64, dcp=8) == 320
    assert inv.capacity(entries, BT, -1, max_num_reqs=256, max_model_len=163840, block_size=64, dcp=8) == 320
    assert inv.numel(entries, BT, max_num_reqs=256, max_model_len=163840, block_size=64, dcp=1) == 256 * 2560
    L = SymInt.var("max_model_len")
    sym = inv.capacity(entries, BT, 1, max_num_reqs=4, max_model_len=L, block_size=64, dcp=1)
    assert isinstance(sym, SymInt)
    s = z3.Solver()
    s.add(L.term == 1001 * 64 - 5, sym.term != 1001)
    assert s.check() == z3.unsat


def test_capacity_from_path(tmp_path):
    path = tmp_path / "inv.json"
    inv.dump([_entry()], "vllm", "0.33.0", str(path))
    assert inv.capacity(str(path), BT, 0, max_num_reqs=12) == 12


@pytest.mark.parametrize(
    "expr, message",
    [
        ("max_num_reqs.bit_length()", "call of max_num_reqs.bit_length"),
        ("max_num_reqs.real", "Attribute"),
        ("__import__('os')", "call of __import__"),
        ("max_model_len / 2", "Div"),
        ("2.5 * max_num_reqs", "only int literals"),
        ("x[0]", "Subscript"),
        ("lambda: 1", "Lambda"),
        ("cdiv(a=1, b=2)", "call of cdiv"),
        ("cdiv", "must be called"),
        ("1 +", "syntax error"),
        ("max_num_reqs << 2", "LShift"),
    ],
)
def test_disallowed_syntax_is_a_spec_error(expr, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        inv.evaluate(expr, max_num_reqs=1, x=1, max_model_len=2, a=1, b=1)


def test_unknown_name_entry_and_dimension():
    with pytest.raises(SpecError, match="unknown name 'block_size'"):
        inv.capacity([_entry()], BT, 1, max_model_len=10, dcp=1)
    with pytest.raises(SpecError, match="no inventory entry"):
        inv.capacity([_entry()], "nope", 0)
    with pytest.raises(SpecError, match="no dimension 2"):
        inv.capacity([_entry()], BT, 2)
    with pytest.raises(SpecError, match="must be an int"):
        inv.evaluate("x + 1", x=1.5)


def test_malformed_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SpecError, match="not JSON"):
        inv.load(str(bad))
    bad.write_text('{"entries": [{"id": "a"}]}')
    with pytest.raises(SpecError, match="lacks one of"):
        inv.load(str(bad))
    with pytest.raises(SpecError, match="cannot read"):
        inv.load(str(tmp_path / "missing.json"))
    with pytest.raises(SpecError, match="how must be"):
        _entry(how="guessed")


def test_expression_names_and_classify():
    assert inv.expression_names("select(dcp > 1, cdiv(max_model_len, block_size), 2) + num_sms") == [
        "block_size",
        "dcp",
        "max_model_len",
        "num_sms",
    ]
    assert inv.classify(["max_num_reqs", "block_size", "hidden_size"]) == ["blocks", "model", "requests"]


@given(st.integers(min_value=-5, max_value=2**40))
def test_next_power_of_2_matches_vllm_definition(n):
    expected = 1 if n < 1 else 1 << (n - 1).bit_length()  # vllm/utils/math_utils.py 0.33.0
    assert inv.next_power_of_2(n) == expected
    sym = inv.next_power_of_2(SymInt.var("n"))
    assert z3.simplify(z3.substitute(sym.term, (z3.Int("n"), z3.IntVal(n)))).as_long() == expected


# ------------------------------------------------------------------------------------------------
# printer round trip: Z3 term -> expression -> same value on ints

NAMES = ["max_num_reqs", "max_model_len", "block_size", "dcp"]


def _terms():
    leaf = st.one_of(st.sampled_from(NAMES), st.integers(min_value=-9, max_value=300))

    def extend(children):
        binary = st.tuples(
            st.sampled_from(["+", "-", "*", "//", "%", "cdiv", "round_up", "min", "max", "sel"]), children, children
        )
        return st.one_of(binary, st.tuples(st.just("neg"), children), st.tuples(st.just("np2"), children))

    return st.recursive(leaf, extend, max_leaves=6)


def _build(tree, env):
    """Build ``tree`` with ``env`` values (ints or SymInts); the same code makes the term and the ints."""
    if isinstance(tree, str):
        return env[tree]
    if isinstance(tree, int):
        return tree
    op, *args = tree
    vals = [_build(a, env) for a in args]
    if op == "neg":
        return -vals[0]
    if op == "np2":
        v = vals[0]
        if type(v) is int and v > 2**62:
            raise ZeroDivisionError  # outside the exact range; skip
        return inv.next_power_of_2(v)
    a, b = vals
    if op in ("//", "%", "cdiv", "round_up"):
        if type(b) is int and b == 0:
            raise ZeroDivisionError
    return {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "//": lambda: a // b,
        "%": lambda: a % b,
        "cdiv": lambda: cdiv(a, b),
        "round_up": lambda: round_up(a, b),
        "min": lambda: minimum(a, b),
        "max": lambda: maximum(a, b),
        "sel": lambda: select(a > b, a, b + 1),
    }[op]()


@settings(max_examples=60, deadline=None)
@given(_terms(), st.lists(st.integers(min_value=-20, max_value=5000), min_size=4, max_size=4), st.booleans())
@pytest.mark.slow
def test_printer_round_trip(tree, values, assume_positive):
    symenv = {n: SymInt.var(n) for n in NAMES}
    intenv = dict(zip(NAMES, values))
    positive = NAMES if assume_positive else []
    if assume_positive:
        intenv = {n: max(1, v) for n, v in intenv.items()}
    try:
        term = _build(tree, symenv)
        expected = _build(tree, intenv)
    except ZeroDivisionError:
        return
    expr = inv.to_expression(term, positive=positive)
    inv.check_expression(expr)
    try:
        got = inv.evaluate(expr, **intenv)
    except ZeroDivisionError:
        # a symbolic divisor that is zero at this point: Python raises where Z3 is unspecified
        return
    assert got == expected, (expr, intenv)
    # and the printed expression evaluated on SymInts is a term with the same value at this point
    again = inv.evaluate(expr, **symenv)
    if isinstance(again, SymInt):
        point = [(symenv[n].term, z3.IntVal(v)) for n, v in intenv.items()]
        assert z3.simplify(z3.substitute(again.term, *point)).as_long() == expected


def test_printer_reads_vllm_shapes():
    L, b, d = SymInt.var("max_model_len"), SymInt.var("block_size"), SymInt.var("dcp")
    assert inv.to_expression(cdiv(L, 64)) == "cdiv(max_model_len, 64)"
    assert inv.to_expression(round_up(L, 128)) == "round_up(max_model_len, 128)"
    assert inv.to_expression(cdiv(L, b * d), positive=["block_size", "dcp"]) == "cdiv(max_model_len, block_size * dcp)"
    assert (
        inv.to_expression(minimum(L, 4 * b)) == "select(max_model_len <= 4 * block_size, max_model_len, 4 * block_size)"
    )
    assert inv.to_expression(7) == "7"


def _committed_expressions() -> list[str]:
    """Every shape, derived extent and bound name of the committed inventories (proofs/inventory/)."""
    import glob
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found: set[str] = set()
    for path in glob.glob(os.path.join(root, "proofs", "inventory", "*.json")):
        with open(path, encoding="utf-8") as fh:
            for entry in json.load(fh)["entries"]:
                found.update(entry.get("shape", []))
                for d in entry.get("demands") or []:
                    if isinstance(d, dict):
                        found.update(
                            v for v in [d.get("extent"), *(d.get("binds") or {}).values()] if isinstance(v, str)
                        )
    out = []
    for expr in sorted(found):
        try:
            inv.check_expression(expr)
        except SpecError:
            continue  # a read shape outside the language
        out.append(expr)
    return out


def test_compiled_evaluation_is_the_tree_walk_on_every_committed_expression():
    """``evaluate`` runs each expression compiled to a Python function; the result (int, bool, the
    exception, or the Z3 term of a SymInt) is the tree walk's (``_eval``) on every expression of the
    committed inventories, at ints that include zero divisors and negatives."""
    import random

    exprs = _committed_expressions()
    assert len(exprs) > 300
    rng = random.Random(20261206)

    def outcome(fn):
        try:
            return ("value", fn())
        except Exception as exc:  # noqa: BLE001 - compared, not swallowed
            return ("raised", type(exc).__name__, str(exc))

    for expr in exprs:
        names = inv.expression_names(expr)
        for _ in range(4):
            env = {n: rng.choice([0, 1, 3, 64, rng.randint(-5, 10**6)]) for n in names}
            walked = outcome(lambda: inv._eval(inv._checked(expr).body, env, expr))
            assert outcome(lambda: inv.evaluate(expr, **env)) == walked, (expr, env)
        sym = {n: SymInt(z3.Int(n)) for n in names}
        walked, compiled = inv._eval(inv._checked(expr).body, sym, expr), inv.evaluate(expr, **sym)
        assert type(walked) is type(compiled), expr
        assert walked.term.eq(compiled.term) if isinstance(walked, SymInt) else walked == compiled, expr


def test_compiled_evaluation_reports_a_bad_name_as_the_tree_walk_does():
    """A missing name or a bool value falls back to the tree walk: the same SpecError, in its order."""
    with pytest.raises(SpecError, match="unknown name 'b'"):
        inv.evaluate("cdiv(a, 2) + b", a=4)
    with pytest.raises(SpecError, match="a must be an int or SymInt, got True"):
        inv.evaluate("a + b", a=True, b=1)
    assert inv.evaluate("0 < a <= b", a=1, b=1) is True and inv.evaluate("-a + 3", a=1) == 2
