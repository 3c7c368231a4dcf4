"""The inventory of an engine's pre-allocated buffers: entries, their file format, and shapes.

An **inventory** lists every pre-allocated buffer of an engine release (allocated in a
constructor, an initialiser, ``load_model``, a workspace getter, or anywhere it is kept across
steps), one :class:`Entry` per buffer. Engine adapters build it (vLLM:
``capproof/engines/vllm/trace.py``); this module is engine-neutral: the entry model, the JSON
file, the **shape expression language** and its restricted evaluator, and the printer that turns
a traced Z3 term back into that language.

**File** (``proofs/inventory/<engine>-<version>.json``)::

    {"engine": "vllm", "version": "0.33.0", "entries": [
      {"id": "vllm/v1/worker/block_table.py::BlockTable.block_table",
       "file": "vllm/v1/worker/block_table.py", "line": 80, "owner": "BlockTable",
       "attribute": "block_table", "dtype": "int32", "shape": ["max_num_reqs", "max_num_blocks"],
       "how": "traced", "why": "", "sized_by": ["requests", "blocks"],
       "params": ["max_num_blocks", "max_num_reqs"], "verdicts": {}}, ...]}

- ``shape``: one expression string per dimension (elements, not bytes).
- ``how``: ``traced`` (the engine's own constructor ran on symbolic config values and the
  allocation was recorded) or ``read`` (statically read from the source; ``why`` says why it was
  not executed). A ``read`` shape is the allocation call's argument text and may use names outside
  the language; :func:`capacity` then raises :class:`~capproof.errors.SpecError`.
- ``verdicts``: obligation id -> verdict, filled by the coverage tooling (``{}`` when uncovered).

**Shape expressions** are Python expressions over config names (``max_num_reqs``,
``max_model_len``, ``block_size``, ``dcp``, ...), int literals, ``+ - * // %``, unary ``-``,
comparisons, ``&``/``|`` of comparisons, and the functions ``cdiv``, ``round_up``, ``minimum``,
``maximum``, ``select`` (from :mod:`capproof.arith`) and ``next_power_of_2`` (vLLM 0.33.0
``vllm/utils/math_utils.py``: ``1 if n < 1 else 1 << (n - 1).bit_length()``). Nothing else is
evaluated: no attribute access, subscripts, other calls, ``/``, floats or strings.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Protocol, Union

import z3

from .arith import cdiv, maximum, minimum, round_up, select
from .errors import SpecError
from .symbolic import SymBool, SymInt, to_z3_int

__all__ = [
    "derived",
    "demand",
    "bound_name",
    "locate",
    "Entry",
    "HOW",
    "SIZED_BY",
    "load",
    "loads",
    "dump",
    "dumps",
    "capacity",
    "numel",
    "evaluate",
    "expression_names",
    "check_expression",
    "next_power_of_2",
    "to_expression",
    "classify",
    "summary",
    "summary_line",
    "render_markdown",
    "InventoryDiff",
    "Sources",
    "Change",
    "CHANGE_KINDS",
    "NOISE_KINDS",
    "canonical",
    "same_expression",
    "diff",
    "diff_lines",
]

#: The two ways an entry's shape was obtained.
HOW = ("traced", "read")

#: What sizes a buffer, for the coverage summary; a config name -> its family (see :func:`classify`).
SIZED_BY: dict[str, str] = {
    "max_num_reqs": "requests",
    "max_num_seqs": "requests",
    "max_num_batched_tokens": "tokens",
    "max_num_tokens": "tokens",
    "max_cudagraph_capture_size": "tokens",
    "max_model_len": "blocks",
    "block_size": "blocks",
    "max_num_blocks": "blocks",
    "block_table_width": "blocks",
    "dcp": "blocks",
    "pcp": "blocks",
    "num_speculative_tokens": "speculative slots",
    "num_experts": "experts",
    "num_local_experts": "experts",
    "top_k": "experts",
    "num_tokens": "tokens",
    "block_size_m": "experts",
    "num_sms": "SM count",
    "workspace_bytes": "bytes",
}

Int = Union[int, SymInt]


@dataclass
class Entry:
    """One pre-allocated buffer of an engine release.

    ``id`` is ``file::Owner.attribute`` (stable across releases while the owner and attribute keep
    their names); ``line`` is the allocation call's line in the wheel's file; ``shape`` lists one
    expression per dimension in elements; ``how`` is ``traced`` or ``read`` (``why`` says why);
    ``sized_by`` names the families of the config names the shape uses; ``params`` the config names
    the shape uses; ``verdicts`` maps obligation ids to verdicts and ``coverage`` is the entry's
    kind (``verified``, ``shape-only``, ...: :data:`capproof.coverage.KINDS`; coverage tooling fills
    both). ``accesses`` lists where the engine's code reads or writes the buffer, each
    ``{"file", "line", "dim", "extent", "op", "how"}`` (``how``: ``executed`` when found by running
    the engine's code on recording stand-ins, ``ast`` when read from the source); ``demands`` the
    largest extent per dimension derived from them, each ``{"dim", "extent", "how", "from"}``
    (``extent`` in the shape language over config names; ``from`` the code that computes it).
    """

    id: str
    file: str
    line: int
    owner: str
    attribute: str
    dtype: str
    shape: list[str]
    how: str = "read"
    why: str = ""
    sized_by: list[str] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    verdicts: dict[str, str] = field(default_factory=dict)
    coverage: str = ""
    accesses: list[dict] = field(default_factory=list)
    demands: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.how not in HOW:
            raise SpecError(f"inventory entry {self.id}: how must be one of {HOW}, got {self.how!r}")

    def to_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------------------------
# file format


def loads(text: str, source: str = "<inventory>") -> tuple[dict, list[Entry]]:
    """Parse an inventory JSON document: ``({"engine", "version"}, entries)``. Bad input -> SpecError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise SpecError(f"{source}: expected an object with an 'entries' list")
    entries: list[Entry] = []
    names = {f for f in Entry.__dataclass_fields__}
    for i, raw in enumerate(data["entries"]):
        if not isinstance(raw, dict) or not {"id", "file", "line", "shape", "dtype"} <= raw.keys():
            raise SpecError(f"{source}: entry {i} lacks one of id, file, line, shape, dtype")
        unknown = set(raw) - names
        if unknown:
            raise SpecError(f"{source}: entry {raw['id']} has unknown fields {sorted(unknown)}")
        owner, _, attribute = raw["id"].partition("::")[2].rpartition(".")
        raw = {"owner": owner, "attribute": attribute, **raw}
        entries.append(Entry(**raw))
    meta = {"engine": data.get("engine"), "version": data.get("version")}
    return meta, entries


def locate(path: str) -> str:
    """Where the inventory ``path`` (``proofs/inventory/<engine>-<version>.json``, relative to the
    project root) is: ``path`` itself when it exists; else capproof's shipped copy of the same
    file (``capproof/_engine/inventory/``, package data mapped from the repository's
    ``proofs/inventory/``, the reviewed copy) or, in a checkout, the repository's; else ``path``.
    So an installed ``capproof check-config`` run from any directory reads the committed inventory."""
    if os.path.exists(path):
        return path
    parts = os.path.normpath(path).replace(os.sep, "/").split("/")
    if len(parts) < 3 or parts[-3:-1] != ["proofs", "inventory"]:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (
        os.path.join(here, "_engine", "inventory", parts[-1]),
        os.path.join(os.path.dirname(here), "proofs", "inventory", parts[-1]),
    ):
        if os.path.exists(candidate):
            return candidate
    return path


def releases(root: str = ".") -> list[str]:
    """The ``<engine>-<version>`` names of the inventories :func:`locate` can find: the project's
    ``proofs/inventory/`` under ``root`` and capproof's shipped copies."""
    here = os.path.dirname(os.path.abspath(__file__))
    names: set[str] = set()
    for d in (
        os.path.join(root, "proofs", "inventory"),
        os.path.join(here, "_engine", "inventory"),
        os.path.join(os.path.dirname(here), "proofs", "inventory"),
    ):
        if os.path.isdir(d):
            # an inventory's facts file (``<release>.facts.json``) sits beside it and is not a release
            names.update(
                f.removesuffix(".json") for f in os.listdir(d) if f.endswith(".json") and not f.endswith(".facts.json")
            )
    return sorted(names)


def load(path: str) -> list[Entry]:
    """The entries of the inventory file at ``path`` (SpecError on a missing or malformed file)."""
    try:
        with open(locate(path), encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise SpecError(f"cannot read inventory {path}: {exc.strerror}") from None
    return loads(text, path)[1]


def dumps(entries: Iterable[Entry], engine: str, version: str) -> str:
    """The JSON text of an inventory: entries sorted by id, sorted keys, no timestamps."""
    ordered = sorted(entries, key=lambda e: e.id)
    doc = {"engine": engine, "version": version, "entries": [e.to_dict() for e in ordered]}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def dump(entries: Iterable[Entry], engine: str, version: str, path: str) -> None:
    """Write :func:`dumps` to ``path`` (directories created)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dumps(entries, engine, version))


def classify(params: Iterable[str]) -> list[str]:
    """The sorted families (:data:`SIZED_BY`) of ``params``; names not listed are 'model' numbers."""
    return sorted({SIZED_BY.get(p, "model") for p in params})


# ------------------------------------------------------------------------------------------------
# the expression language


def next_power_of_2(n: Int) -> Int:
    """The next power of two, inclusive (1 for ``n < 1``), on ints and symbolic ints.

    Source: vLLM 0.33.0 ``vllm/utils/math_utils.py::next_power_of_2``
    (``1 if n < 1 else 1 << (n - 1).bit_length()``). On a symbolic ``n`` it is an exact ``If``
    chain over ``2**0 .. 2**62`` (values of ``n`` above ``2**62`` give ``2**63``, as Python does
    up to ``2**63``; larger ``n`` is outside any engine config).
    """
    if isinstance(n, SymInt):
        term = to_z3_int(n)
        result: z3.ArithRef = z3.IntVal(2**63)
        for k in range(62, -1, -1):
            result = z3.If(term <= 2**k, z3.IntVal(2**k), result)
        return SymInt(result)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"next_power_of_2 needs an int, got {n!r}")
    return 1 if n < 1 else 1 << (n - 1).bit_length()


FUNCTIONS = {
    "cdiv": cdiv,
    "round_up": round_up,
    "minimum": minimum,
    "maximum": maximum,
    "select": select,
    "next_power_of_2": next_power_of_2,
}

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.BitAnd: lambda a, b: _bool_op(a, b, "&"),
    ast.BitOr: lambda a, b: _bool_op(a, b, "|"),
}
_CMPOPS = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}


def _bool_op(a, b, op: str):
    if a.__class__ is bool and b.__class__ is bool:  # (the int probe's case: no check needed)
        return (a and b) if op == "&" else (a or b)
    for v in (a, b):
        if not isinstance(v, (bool, SymBool)):
            raise SpecError(f"shape expression: `{op}` joins conditions only, got {v!r}")
    if isinstance(a, bool) and isinstance(b, bool):
        return (a and b) if op == "&" else (a or b)
    return (a & b) if op == "&" else (a | b)


def _parse(expr: str) -> ast.Expression:
    if not isinstance(expr, str):
        raise SpecError(f"shape expression must be a string, got {expr!r}")
    try:
        return ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"shape expression {expr!r}: syntax error ({exc.msg})") from None


def check_expression(expr: str) -> None:
    """Raise SpecError unless ``expr`` uses only the shape expression language."""
    _walk(_parse(expr).body, expr, None)


def expression_names(expr: str) -> list[str]:
    """The config names ``expr`` uses (sorted; functions excluded). SpecError if outside the language."""
    names: set[str] = set()
    _walk(_parse(expr).body, expr, names)
    return sorted(names)


def _walk(node: ast.AST, expr: str, names: set[str] | None) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int):
            raise SpecError(f"shape expression {expr!r}: only int literals, got {node.value!r}")
    elif isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise SpecError(f"shape expression {expr!r}: {node.id} must be called")
        if names is not None:
            names.add(node.id)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        _walk(node.left, expr, names)
        _walk(node.right, expr, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _walk(node.operand, expr, names)
    elif isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
        _walk(node.left, expr, names)
        for c in node.comparators:
            _walk(c, expr, names)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
    ):
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise SpecError(f"shape expression {expr!r}: no *args")
            _walk(a, expr, names)
    else:
        what = type(node).__name__
        if isinstance(node, ast.BinOp):
            what = type(node.op).__name__
        elif isinstance(node, ast.Call):
            what = f"call of {ast.unparse(node.func)}"
        raise SpecError(f"shape expression {expr!r}: {what} is not allowed")


def _eval(node: ast.AST, env: Mapping[str, object], expr: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        try:
            value = env[node.id]
        except KeyError:
            raise SpecError(
                f"shape expression {expr!r}: unknown name {node.id!r} (given: {', '.join(sorted(env)) or 'none'})"
            ) from None
        if isinstance(value, bool) or not isinstance(value, (int, SymInt)):
            raise SpecError(f"shape expression {expr!r}: {node.id} must be an int or SymInt, got {value!r}")
        return value
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, env, expr), _eval(node.right, env, expr))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env, expr)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, expr)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, expr)
            r = _CMPOPS[type(op)](left, right)
            result = r if result is None else _bool_op(result, r, "&")
            left = right
        return result
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, env, expr) for a in node.args])
    raise SpecError(f"shape expression {expr!r}: {type(node).__name__} is not allowed")  # pragma: no cover


@functools.lru_cache(maxsize=4096)
def _checked(expr: str) -> ast.Expression:
    """``expr`` parsed and checked against the shape expression language (once per expression: an
    obligation evaluates its shapes on every path and probe point; the tree is only read)."""
    tree = _parse(expr)
    _walk(tree.body, expr, None)
    return tree


def _chain(ops: tuple[str, ...], *values):
    """A chained comparison as :func:`_eval` computes it: every comparison, joined with ``&``."""
    result = None
    for op, left, right in zip(ops, values, values[1:]):
        r = _CMPOPS[_CMP_BY_NAME[op]](left, right)
        result = r if result is None else _bool_op(result, r, "&")
    return result


_CMP_BY_NAME = {t.__name__: t for t in _CMPOPS}
_CMP_TEXT = {"Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">=", "Eq": "==", "NotEq": "!="}
_BINOP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_COMPILED_GLOBALS = {"__builtins__": {}, "_bool_op": _bool_op, "_chain": _chain}
_COMPILED_GLOBALS.update({f"_f_{name}": fn for name, fn in FUNCTIONS.items()})


def _python(node: ast.AST, params: dict[str, str]) -> str:
    """Python source computing ``node`` exactly as :func:`_eval` does (same operations, same
    left-to-right order), config names read from the parameters ``params`` maps them to."""
    if isinstance(node, ast.Constant):
        return repr(node.value)
    if isinstance(node, ast.Name):
        return params.setdefault(node.id, f"_v{len(params)}")
    if isinstance(node, ast.BinOp):
        left, right = _python(node.left, params), _python(node.right, params)
        if type(node.op) in _BINOP_TEXT:
            return f"({left} {_BINOP_TEXT[type(node.op)]} {right})"
        return f"_bool_op({left}, {right}, {'&' if isinstance(node.op, ast.BitAnd) else '|'!r})"
    if isinstance(node, ast.UnaryOp):
        operand = _python(node.operand, params)
        return f"(-{operand})" if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Compare):
        ops = tuple(type(op).__name__ for op in node.ops)
        values = [_python(v, params) for v in (node.left, *node.comparators)]
        if len(ops) == 1:
            return f"({values[0]} {_CMP_TEXT[ops[0]]} {values[1]})"
        return f"_chain({ops!r}, {', '.join(values)})"
    if isinstance(node, ast.Call):
        return f"_f_{node.func.id}({', '.join(_python(a, params) for a in node.args)})"
    raise SpecError(f"shape expression: {type(node).__name__} is not allowed")  # pragma: no cover


@functools.lru_cache(maxsize=4096)
def _compiled(expr: str):
    """``expr`` (checked by :func:`_checked`) as a Python function of its config names, and those
    names in the order of its parameters; None when it cannot be compiled (nested too deeply for
    Python's compiler): :func:`_eval` walks its tree then. The int probe and the symbolic runs
    evaluate the same derived demands at every point, and walking the tree node by node was most of
    their time (a ``check-config`` of an SGLang line: 3.2 million calls of :func:`_eval`)."""
    tree = _checked(expr)
    params: dict[str, str] = {}
    try:
        body = _python(tree.body, params)
        code = compile(f"lambda {', '.join(params.values())}: {body}", "<shape expression>", "eval")
        return eval(code, dict(_COMPILED_GLOBALS)), tuple(params)  # noqa: S307 - built from a checked tree
    except (RecursionError, MemoryError, SyntaxError, ValueError):  # pragma: no cover - very deep nesting
        return None


def evaluate(expr: str, **names: Int) -> Int:
    """The value of shape expression ``expr`` with config ``names`` bound (ints or SymInts).

    Raises SpecError for an unknown name, a name bound to a non-integer, or syntax outside the
    language; ZeroDivisionError for a concrete zero divisor (as Python does).
    """
    if not isinstance(expr, str):
        raise SpecError(f"shape expression must be a string, got {expr!r}")
    compiled = _compiled(expr)
    if compiled is not None:
        fn, used = compiled
        args = []
        for name in used:
            value = names.get(name)
            if value.__class__ is not int and not isinstance(value, SymInt):
                break  # missing, a bool or not an int: the tree walk raises the error in its order
            args.append(value)
        else:
            return fn(*args)
    return _eval(_checked(expr).body, names, expr)


#: id(entries list) -> (that list, its length then, {entry id: position of its first entry}):
#: :func:`_entry`'s index (held, so the id is not reused).
_POSITIONS: dict[int, tuple[list, int, dict[str, int]]] = {}


def _entry(entries_or_path, entry_id: str) -> Entry:
    entries = load(entries_or_path) if isinstance(entries_or_path, (str, os.PathLike)) else entries_or_path
    if isinstance(entries, list):  # an index per list, checked on use (a list of another length: rebuilt)
        known = _POSITIONS.get(id(entries))
        if known is None or known[0] is not entries or known[1] != len(entries):
            positions: dict[str, int] = {}
            for i, e in enumerate(entries):
                positions.setdefault(e.id, i)
            known = _POSITIONS[id(entries)] = (entries, len(entries), positions)
        i = known[2].get(entry_id)
        if i is not None and entries[i].id == entry_id:
            return entries[i]
    for e in entries:
        if e.id == entry_id:
            return e
    raise SpecError(f"no inventory entry {entry_id!r}")


def capacity(entries_or_path, entry_id: str, dim: int, **names: Int) -> Int:
    """Dimension ``dim`` (0-based, negative from the end) of entry ``entry_id``, in elements.

    ``entries_or_path``: a list of :class:`Entry` or an inventory JSON path. Raises SpecError for
    an unknown entry, a dimension out of range, an unknown name or syntax outside the language.
    """
    entry = _entry(entries_or_path, entry_id)
    try:
        expr = entry.shape[dim]
    except (IndexError, TypeError):
        raise SpecError(f"inventory entry {entry_id}: no dimension {dim!r} (shape has {len(entry.shape)})") from None
    return evaluate(expr, **names)


def derived(entries_or_path, entry_id: str, dim: int) -> dict:
    """The derived demand record of dimension ``dim`` of entry ``entry_id`` (its ``demands`` item:
    ``extent``, ``how``, ``binds``, ``facts``, ``from``). Raises SpecError when the inventory derived
    none for that dimension (the obligation then has a problem: never a demand from a guess)."""
    entry = _entry(entries_or_path, entry_id)
    for d in entry.demands:
        if isinstance(d, dict) and d.get("dim") == dim and d.get("extent"):
            return d
    raise SpecError(
        f"inventory entry {entry_id}: no derived demand for dimension {dim} "
        "(run `capproof inventory --engine vllm==<version> --write` in the real venv)"
    )


def demand(entries_or_path, entry_id: str, dim: int, **names: Int) -> Int:
    """The derived demand of dimension ``dim`` of entry ``entry_id`` (elements; the largest slice
    stop, or index + 1), evaluated with ``names`` bound (:func:`derived`'s ``extent``)."""
    return evaluate(derived(entries_or_path, entry_id, dim)["extent"], **names)


def bound_name(entries_or_path, entry_id: str, dim: int, name: str, **names: Int) -> Int:
    """The value of a capacity name (``block_table_width``) as the derivation of dimension ``dim``
    computed it by running the engine's code (its ``binds``), evaluated with ``names`` bound."""
    rec = derived(entries_or_path, entry_id, dim)
    try:
        expr = rec["binds"][name]
    except (KeyError, TypeError):
        raise SpecError(f"inventory entry {entry_id}: dimension {dim}'s derivation binds no {name!r}") from None
    return evaluate(expr, **names)


def numel(entries_or_path, entry_id: str, **names: Int) -> Int:
    """The number of elements of entry ``entry_id``: the product of its dimensions (1 for a scalar)."""
    entry = _entry(entries_or_path, entry_id)
    result: Int = 1
    for expr in entry.shape:
        result = result * evaluate(expr, **names)
    return result


# ------------------------------------------------------------------------------------------------
# Z3 term -> expression

_PREC = {"cmp": 1, "or": 2, "and": 3, "add": 4, "mul": 5, "unary": 6, "atom": 7}


def to_expression(term, positive: Iterable[str] = (), nonnegative: Iterable[str] = ()) -> str:
    """Print a Z3 Int term (or a SymInt, or an int) in the shape expression language.

    ``div``/``mod`` are SMT-LIB's Euclidean ones; they print as Python ``//``/``%`` where the
    divisor is a positive constant, or is provably positive given ``positive`` (names ``>= 1``),
    ``nonnegative`` (names ``>= 0``) and the conditions of the enclosing ``If`` branches; otherwise
    as an exact ``select`` on the divisor's sign. An ``If`` whose condition those facts decide
    prints only the branch taken. So the result equals the term on every integer point where the
    facts hold (and on every point, when no facts are given), except at a zero divisor, where
    Python raises and Z3 is unspecified.
    """
    if isinstance(term, SymInt):
        term = term.term
    if isinstance(term, bool):
        raise TypeError("to_expression needs an integer term")
    if isinstance(term, int):
        return str(term)
    facts = [z3.Int(n) >= 1 for n in positive] + [z3.Int(n) >= 0 for n in nonnegative]
    printer = ExpressionPrinter(facts)
    return printer.show(z3.simplify(printer.resolve(term, [])))[0]


#: Z3's resource limit for the printer's and :func:`same_expression`'s queries (a count of solver
#: steps, so the answer, and the printed text, is the same on a loaded machine as on an idle one).
PRINT_RLIMIT = 5_000_000
#: The release diff's limit for :func:`same_expression` (shapes and demands): ten times the
#: printer's, since unknown counts as a change and a traced width over a helper's many branches
#: (the DSA sparse indexer's ``sparse_indices_buffer``, vLLM 0.33.0 -> 0.34.0) needs more than the
#: printer's limit to be proved equal.
DIFF_RLIMIT = 50_000_000


class ExpressionPrinter:
    def __init__(self, facts: list[z3.BoolRef]):
        self.facts = facts
        self.solver = z3.Solver()
        # a resource limit, not a wall-clock timeout: the printed text must not depend on load
        self.solver.set("rlimit", PRINT_RLIMIT)
        self.solver.add(*facts)

    def implied(self, path: list[z3.BoolRef], cond: z3.BoolRef) -> bool:
        self.solver.push()
        self.solver.add(*path)
        self.solver.add(z3.Not(cond))
        r = self.solver.check()
        self.solver.pop()
        return r == z3.unsat

    def resolve(self, t, path: list):
        """``t`` with every ``If`` whose condition the facts and enclosing branches decide replaced
        by the branch taken (equal to ``t`` wherever the facts hold)."""
        if z3.is_app(t) and t.num_args() > 0:
            if t.decl().kind() == z3.Z3_OP_ITE:
                c, a, b = t.children()
                if self.implied(path, c):
                    return self.resolve(a, path)
                if self.implied(path, z3.Not(c)):
                    return self.resolve(b, path)
                return z3.If(c, self.resolve(a, path + [c]), self.resolve(b, path + [z3.Not(c)]))
            return t.decl()(*[self.resolve(c, path) for c in t.children()])
        return t

    def show(self, t, path: list | None = None) -> tuple[str, int]:
        path = path or []
        if z3.is_int_value(t):
            v = t.as_long()
            return (str(v), _PREC["atom"]) if v >= 0 else (str(v), _PREC["unary"])
        if z3.is_true(t):
            return "(0 == 0)", _PREC["atom"]
        if z3.is_false(t):
            return "(0 == 1)", _PREC["atom"]
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            return t.decl().name(), _PREC["atom"]
        k = t.decl().kind()
        ch = t.children()
        if k == z3.Z3_OP_ADD:
            parts = []
            for i, c in enumerate(ch):
                neg, mag = self._negated(c)
                s = self.wrap(mag if neg else c, _PREC["mul"] if neg else _PREC["add"], path)
                if i == 0:
                    parts.append(("-" + self.wrap(mag, _PREC["unary"], path)) if neg else s)
                else:
                    parts.append((" - " if neg else " + ") + s)
            return "".join(parts), _PREC["add"]
        if k == z3.Z3_OP_SUB:
            s = self.wrap(ch[0], _PREC["add"], path)
            for c in ch[1:]:
                s += " - " + self.wrap(c, _PREC["mul"], path)
            return s, _PREC["add"]
        if k == z3.Z3_OP_UMINUS:
            return "-" + self.wrap(ch[0], _PREC["unary"], path), _PREC["unary"]
        if k == z3.Z3_OP_MUL:
            cd = self._cdiv_product(t, path)
            if cd is not None:
                return cd
            if len(ch) == 2 and z3.is_int_value(ch[0]) and ch[0].as_long() == -1:
                inner = ch[1]
                if z3.is_idiv(inner):
                    neg, x = self._negated(inner.arg(0))
                    b = inner.arg(1)
                    if neg and (z3.is_int_value(b) and b.as_long() > 0 or self.implied(path, b > 0)):
                        # -((-x) // b) == cdiv(x, b) for b > 0 (vLLM's cdiv)
                        return f"cdiv({self.show(x, path)[0]}, {self.show(b, path)[0]})", _PREC["atom"]
                return "-" + self.wrap(ch[1], _PREC["unary"], path), _PREC["unary"]
            if len(ch) == 2 and z3.is_int_value(ch[0]) and z3.is_idiv(ch[1]) and z3.is_int_value(ch[1].arg(1)):
                c, (num, den) = ch[0].as_long(), ch[1].children()
                neg, x = self._negated(num)
                if c < 0 and den.as_long() == -c and neg:
                    # -c * ((-x) // c) == round_up(x, c) for c > 0 (vLLM's round_up via cdiv)
                    return f"round_up({self.show(x, path)[0]}, {-c})", _PREC["atom"]
                if c > 1 and den.as_long() == c:
                    x = z3.simplify(num - (c - 1))
                    # c * ((x + c - 1) // c) == round_up(x, c)
                    return f"round_up({self.show(x, path)[0]}, {c})", _PREC["atom"]
            s = self.wrap(ch[0], _PREC["mul"], path)
            for c in ch[1:]:
                s += " * " + self.wrap(c, _PREC["unary"], path)
            return s, _PREC["mul"]
        if k in (z3.Z3_OP_IDIV, z3.Z3_OP_MOD):
            return self.divmod(t, k, ch, path)
        if k == z3.Z3_OP_ITE:
            c, a, b = ch
            if self.implied(path, c):
                return self.show(a, path + [c])
            if self.implied(path, z3.Not(c)):
                return self.show(b, path + [z3.Not(c)])
            ca = self.show(c, path)[0]
            sa, pa = self.show(a, path + [c])
            sb = self.show(b, path + [z3.Not(c)])[0]
            if sa == sb:
                return sa, pa
            return f"select({ca}, {sa}, {sb})", _PREC["atom"]
        cmp = {z3.Z3_OP_LE: "<=", z3.Z3_OP_GE: ">=", z3.Z3_OP_LT: "<", z3.Z3_OP_GT: ">", z3.Z3_OP_EQ: "=="}
        if k in cmp and z3.is_int(ch[0]):
            return (
                f"{self.wrap(ch[0], _PREC['add'], path)} {cmp[k]} {self.wrap(ch[1], _PREC['add'], path)}",
                _PREC["cmp"],
            )
        if k == z3.Z3_OP_DISTINCT and len(ch) == 2 and z3.is_int(ch[0]):
            return f"{self.wrap(ch[0], _PREC['add'], path)} != {self.wrap(ch[1], _PREC['add'], path)}", _PREC["cmp"]
        if k == z3.Z3_OP_NOT:
            return self.show(_negate(ch[0]), path)
        if k == z3.Z3_OP_EQ and z3.is_bool(ch[0]):
            a, b = ch
            return self.show(z3.Or(z3.And(a, b), z3.And(_negate(a), _negate(b))), path)
        if k in (z3.Z3_OP_XOR, z3.Z3_OP_DISTINCT) and len(ch) == 2 and z3.is_bool(ch[0]):
            a, b = ch
            return self.show(z3.Or(z3.And(a, _negate(b)), z3.And(_negate(a), b)), path)
        if k in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            op, prec = (" & ", _PREC["and"]) if k == z3.Z3_OP_AND else (" | ", _PREC["or"])
            # comparisons bind looser than & and | in Python: parenthesise every operand
            # sorted: & and | commute, and Z3's operand order follows term creation, which varies
            # between runs (the committed inventory must not)
            return op.join(sorted("(" + self.show(c, path)[0] + ")" for c in ch)), prec
        raise SpecError(f"cannot print Z3 term {t} in the shape expression language")

    def _cdiv_product(self, t, path):
        """``-1 * (a * ((-x) // b))`` (Z3's form of ``a * cdiv(x, b)``) printed with ``cdiv``."""
        factors = []
        stack = [t]
        while stack:
            u = stack.pop()
            if z3.is_mul(u):
                stack.extend(reversed(u.children()))
            else:
                factors.append(u)
        coeff = [f for f in factors if z3.is_int_value(f)]
        if len(coeff) != 1 or coeff[0].as_long() >= 0 or len(factors) < 3:
            return None
        for i, f in enumerate(factors):
            if z3.is_idiv(f):
                neg, x = self._negated(f.arg(0))
                b = f.arg(1)
                if neg and (z3.is_int_value(b) and b.as_long() > 0 or self.implied(path, b > 0)):
                    rest = [g for j, g in enumerate(factors) if j != i and not z3.is_int_value(g)]
                    c = -coeff[0].as_long()
                    parts = ([str(c)] if c != 1 else []) + [self.wrap(g, _PREC["unary"], path) for g in rest]
                    parts.append(f"cdiv({self.show(x, path)[0]}, {self.show(b, path)[0]})")
                    return " * ".join(parts), _PREC["mul"]
        return None

    def wrap(self, t, prec: int, path) -> str:
        s, p = self.show(t, path)
        return s if p >= prec else f"({s})"

    @staticmethod
    def _negated(t) -> tuple[bool, object]:
        """``(True, x)`` when ``t`` is ``-1 * x`` or a negative numeral (then ``x`` is its magnitude)."""
        if z3.is_int_value(t) and t.as_long() < 0:
            return True, z3.IntVal(-t.as_long())
        if z3.is_mul(t) and len(t.children()) == 2 and z3.is_int_value(t.arg(0)):
            c = t.arg(0).as_long()
            if c == -1:
                return True, t.arg(1)
            if c < 0:
                return True, z3.IntVal(-c) * t.arg(1)
        return False, t

    def divmod(self, t, k, ch, path) -> tuple[str, int]:
        a, b = ch
        op = "//" if k == z3.Z3_OP_IDIV else "%"
        # cdiv(x, c) prints from Python's -(x // -c) = -((-x) div c)'s shapes: handled by the generic path.
        if z3.is_int_value(b) and b.as_long() > 0 or self.implied(path, b > 0):
            return f"{self.wrap(a, _PREC['mul'], path)} {op} {self.wrap(b, _PREC['unary'], path)}", _PREC["mul"]
        sa, sb = self.wrap(a, _PREC["mul"], path), self.wrap(b, _PREC["unary"], path)
        if k == z3.Z3_OP_MOD:
            # Euclidean mod is in [0, |b|): for b < 0 that is Python's a % -b
            if z3.is_int_value(b) and b.as_long() < 0 or self.implied(path, b < 0):
                return f"{sa} % {self.wrap(-b, _PREC['unary'], path)}", _PREC["mul"]
            nb = self.wrap(z3.simplify(-b), _PREC["unary"], path)
            return f"select({sb} > 0, {sa} % {sb}, {sa} % {nb})", _PREC["atom"]
        # Euclidean div with b < 0 is -(a // -b)
        if z3.is_int_value(b) and b.as_long() < 0 or self.implied(path, b < 0):
            return f"-({sa} // {self.wrap(z3.simplify(-b), _PREC['unary'], path)})", _PREC["unary"]
        nb = self.wrap(z3.simplify(-b), _PREC["unary"], path)
        return f"select({sb} > 0, {sa} // {sb}, -({sa} // {nb}))", _PREC["atom"]


def _negate(c):
    k = c.decl().kind()
    ch = c.children()
    flip = {
        z3.Z3_OP_LE: lambda a, b: a > b,
        z3.Z3_OP_GE: lambda a, b: a < b,
        z3.Z3_OP_LT: lambda a, b: a >= b,
        z3.Z3_OP_GT: lambda a, b: a <= b,
    }
    if k in flip:
        return flip[k](*ch)
    if k == z3.Z3_OP_EQ and z3.is_int(ch[0]):
        return ch[0] != ch[1]
    if k == z3.Z3_OP_EQ and z3.is_bool(ch[0]):
        return z3.Or(z3.And(ch[0], _negate(ch[1])), z3.And(_negate(ch[0]), ch[1]))
    if k in (z3.Z3_OP_XOR, z3.Z3_OP_DISTINCT) and len(ch) == 2 and z3.is_bool(ch[0]):
        return z3.Or(z3.And(ch[0], ch[1]), z3.And(_negate(ch[0]), _negate(ch[1])))
    if k == z3.Z3_OP_DISTINCT and len(ch) == 2:
        return ch[0] == ch[1]
    if k == z3.Z3_OP_NOT:
        return ch[0]
    if k == z3.Z3_OP_AND:
        return z3.Or(*[_negate(x) for x in ch])
    if k == z3.Z3_OP_OR:
        return z3.And(*[_negate(x) for x in ch])
    if z3.is_true(c):
        return z3.BoolVal(False)
    if z3.is_false(c):
        return z3.BoolVal(True)
    raise SpecError(f"cannot print the negation of {c} in the shape expression language")


# ------------------------------------------------------------------------------------------------
# readable form and release diff


def summary(entries: list[Entry]) -> dict:
    """Counts: total, traced, read, and per directory ``{dir: {"traced": n, "read": m}}``."""
    by_dir: dict[str, dict[str, int]] = {}
    for e in entries:
        d = by_dir.setdefault(os.path.dirname(e.file), {"traced": 0, "read": 0})
        d[e.how] += 1
    traced = sum(e.how == "traced" for e in entries)
    return {"total": len(entries), "traced": traced, "read": len(entries) - traced, "by_directory": by_dir}


def summary_line(entries: list[Entry], engine: str, version: str) -> str:
    s = summary(entries)
    pct = 100.0 * s["traced"] / s["total"] if s["total"] else 0.0
    return (
        f"inventory {engine}=={version}: {s['total']} pre-allocated buffers, {s['traced']} traced "
        f"({pct:.0f}%), {s['read']} read"
    )


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(entries: list[Entry], engine: str, version: str, generator: str = "") -> str:
    """The readable inventory: summary counts, then one table per directory (sorted by file, line)."""
    s = summary(entries)
    lines = [f"# Inventory of pre-allocated buffers: {engine} {version}", ""]
    if generator:
        lines += [f"Generated by `{generator}`; do not edit.", ""]
    lines += [
        summary_line(entries, engine, version),
        "",
        "| directory | buffers | traced | read |",
        "|---|---:|---:|---:|",
    ]
    for d, c in sorted(s["by_directory"].items()):
        lines.append(f"| `{d}` | {c['traced'] + c['read']} | {c['traced']} | {c['read']} |")
    lines += [
        "",
        "**traced**: the engine's own constructor ran with symbolic config values and the allocation "
        "was recorded (the shape is what the engine computes). **read**: read from the allocation call's "
        "source (why: last column). Shapes are in elements, one expression per dimension.",
        "",
    ]
    for d in sorted(s["by_directory"]):
        lines += [f"## `{d}/`", "", "| buffer | line | dtype | shape | how | sized by |", "|---|---:|---|---|---|---|"]
        for e in sorted((e for e in entries if os.path.dirname(e.file) == d), key=lambda e: (e.file, e.line, e.id)):
            how = e.how if not e.why else f"{e.how}: {e.why}"
            shape = "[" + ", ".join(f"`{_md_cell(x)}`" for x in e.shape) + "]"
            lines.append(
                f"| `{os.path.basename(e.file)}::{e.owner}.{e.attribute}` | {e.line} | {_md_cell(e.dtype)} | "
                f"{shape} | {_md_cell(how)} | {', '.join(e.sized_by)} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


#: What a release diff may report as changed (:class:`Change`'s ``what``).
CHANGE_KINDS = ("dtype", "shape", "sizing code", "demand", "accesses")
#: What differs between two releases' records of one buffer without a change (tracing noise).
NOISE_KINDS = (
    "line moved",
    "shape spelling",
    "traced in one release only",
    "why text",
    "access lines or order",
    "accesses derived differently",
    "demand record",
    "demand derived in one release only",
)


@dataclass
class Change:
    """One buffer that changed between two releases: ``what`` lists :data:`CHANGE_KINDS` items,
    ``details`` the lines that show it (old and new sizing statements, demands, accesses)."""

    old: Entry
    new: Entry
    what: list[str]
    details: list[str] = field(default_factory=list)


@dataclass
class InventoryDiff:
    """Buffers added, removed, and changed between two releases; ``noise`` the buffers whose
    records differ only in tracing noise (``(old, new, kinds)``, kinds from :data:`NOISE_KINDS`)."""

    added: list[Entry]
    removed: list[Entry]
    changed: list[Change]
    noise: list[tuple[Entry, Entry, list[str]]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def canonical(text: str) -> str:
    """``text`` as :func:`ast.unparse` prints it (spacing, redundant parentheses and quotes do not
    count); when it is not a Python expression, its words joined by single spaces."""
    try:
        return ast.unparse(ast.parse(text.strip(), mode="eval"))
    except (SyntaxError, ValueError, AttributeError):
        return " ".join(str(text).split())


def _divisors(t: z3.ExprRef, out: list) -> None:
    if z3.is_app(t):
        if t.decl().kind() in (z3.Z3_OP_IDIV, z3.Z3_OP_MOD, z3.Z3_OP_REM, z3.Z3_OP_DIV):
            out.append(t.children()[1])
        for c in t.children():
            _divisors(c, out)


@functools.lru_cache(maxsize=4096)
def same_expression(a: str, b: str, rlimit: int | None = None, positive: Iterable[str] = ()) -> bool:
    """Whether shape expressions ``a`` and ``b`` are equal: the same text after :func:`canonical`,
    or, both in the shape expression language, equal on every assignment of non-negative integers
    to their names at which no divisor is zero (Z3 proves ``a != b`` unsat within ``rlimit``,
    default :data:`PRINT_RLIMIT`; unknown is not equal).
    A name is a config count (never negative); at a zero divisor Python raises, so no value there
    can differ. Names in ``positive`` are at least 1 (the engine's sizes no deployment sets to 0,
    e.g. a parallel size ``dcp``: two traced shapes that differ only at ``dcp = 0`` are equal)."""
    if a == b or canonical(a) == canonical(b):
        return True
    try:
        names = sorted(set(expression_names(a)) | set(expression_names(b)))
        env = {n: SymInt.var(n) for n in names}
        ta, tb = to_z3_int(evaluate(a, **env)), to_z3_int(evaluate(b, **env))
    except (SpecError, ZeroDivisionError, TypeError, ArithmeticError):
        return False
    if z3.eq(z3.simplify(ta), z3.simplify(tb)):
        return True
    divisors: list = []
    _divisors(ta, divisors)
    _divisors(tb, divisors)
    solver = z3.Solver()
    solver.set("rlimit", PRINT_RLIMIT if rlimit is None else rlimit)
    floor = set(positive)
    solver.add(*[z3.Int(n) >= (1 if n in floor else 0) for n in names], *[d != 0 for d in divisors], ta != tb)
    return solver.check() == z3.unsat


def _same_shape(a: list[str], b: list[str], positive: Iterable[str] = ()) -> bool:
    return len(a) == len(b) and all(same_expression(x, y, DIFF_RLIMIT, positive) for x, y in zip(a, b))


#: A dtype as a traced entry records it (a read entry may hold the call's text instead, or '').
_DTYPE = re.compile(r"^(u?int\d+|float\d+|bfloat16|bool|complex\d+|float8\w*)$")

_LINE_REF = re.compile(r"(?:\.py)?:\d+(?:,\d+)*\b")


def _without_lines(text: str) -> str:
    """``text`` without its ``file.py:123`` / ``:123`` line references."""
    return _LINE_REF.sub(lambda m: ".py" if m.group(0).startswith(".py") else "", str(text))


def _unlined(obj):
    """``obj`` (a fact: strings, lists, dicts) with line references removed and lists sorted."""
    if isinstance(obj, str):
        return _without_lines(obj)
    if isinstance(obj, dict):
        return {k: _unlined(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return sorted((_unlined(x) for x in obj), key=lambda x: json.dumps(x, sort_keys=True))
    return obj


def _access_key(a: dict) -> tuple:
    return (a.get("file", ""), a.get("dim"), canonical(str(a.get("extent", ""))), a.get("op", ""))


def _access_text(k: tuple) -> str:
    return f"{k[0]} dim {k[1]} {k[3]} [{k[2]}]"


def _demand_changes(a: list[dict], b: list[dict], positive: Iterable[str] = ()) -> list[str]:
    """Lines naming what differs between two demand lists, for each dimension both derive: the extent (as
    an expression), the names it binds (each as an expression) and its facts (every field: the
    fact, whether it was checked, the paths it was checked or not checked on; texts without line
    references, lists as sets). The derivation's provenance (``from``, ``notes``, ``how``,
    ``family``) is not compared, nor a dimension derived in one release only (the derivation, not
    the engine, reached it: a changed reader shows as a changed access)."""

    def by_dim(ds):
        out: dict = {}
        for d in ds:
            if isinstance(d, dict):
                out.setdefault(d.get("dim"), []).append(d)
        return out

    def facts(d):
        return sorted(json.dumps(_unlined(f), sort_keys=True) for f in d.get("facts", []) or [])

    def same(x, y):
        if not same_expression(str(x.get("extent", "")), str(y.get("extent", "")), DIFF_RLIMIT, positive):
            return False
        bx, by = x.get("binds") or {}, y.get("binds") or {}
        if set(bx) != set(by) or not all(same_expression(str(bx[k]), str(by[k]), DIFF_RLIMIT, positive) for k in bx):
            return False
        return facts(x) == facts(y)

    out = []
    da, db = by_dim(a), by_dim(b)
    for dim in sorted(set(da) & set(db), key=str):
        xs, ys = da.get(dim, []), db.get(dim, [])
        unmatched = list(ys)
        lost = []
        for x in xs:
            hit = next((y for y in unmatched if same(x, y)), None)
            if hit is None:
                lost.append(x)
            else:
                unmatched.remove(hit)
        for x in lost:
            out.append(f"demand dim {dim} was {x.get('extent')}" + _binds_text(x))
        for y in unmatched:
            out.append(f"demand dim {dim} now {y.get('extent')}" + _binds_text(y))
    return out


def _binds_text(d: dict) -> str:
    b = d.get("binds") or {}
    return (" where " + ", ".join(f"{k} = {v}" for k, v in sorted(b.items()))) if b else ""


def _multiset_changes(a: list, b: list) -> tuple[list, list]:
    """``(only in a, only in b)`` of two lists compared as multisets."""
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return sorted((ca - cb).elements(), key=repr), sorted((cb - ca).elements(), key=repr)


class Sources(Protocol):
    """One release's sources as :func:`diff` reads them
    (:class:`capproof.engines.tracing.sizing.Release`)."""

    def sizing(self, entry: Entry) -> tuple[str, ...] | None:
        """The entry's sizing code: normalised statements (None: unreadable)."""

    def statement(self, file: str, line: int) -> str | None:
        """The normalised statement at ``file:line`` (None: unreadable)."""

    def statements(self, file: str) -> frozenset[str]:
        """Every normalised statement of ``file``."""


def _access_changes(a: Entry, b: Entry, sa: Sources | None, sb: Sources | None) -> tuple[list[str], bool]:
    """``(lines, derived_differently)``: the access sites gone and new between two releases, and
    whether the derived access records differ beyond that. With sources, an access is gone only
    when its statement is in no statement of the new release's file, new only when its statement
    is in none of the old one's (a statement kept verbatim is the same reader, however its access
    was derived); without, records are compared as (file, dimension, extent, operation)."""
    gone, came = _multiset_changes([_access_key(x) for x in a.accesses], [_access_key(x) for x in b.accesses])
    if not (gone or came):
        return [], False
    if sa is None or sb is None:
        return [f"access gone: {_access_text(k)}" for k in gone] + [
            f"access new: {_access_text(k)}" for k in came
        ], False
    lines: list[str] = []
    for word, records, here, there in (("gone", a.accesses, sa, sb), ("new", b.accesses, sb, sa)):
        shown: set[tuple[str, str]] = set()
        for x in records:
            file = x.get("file", "")
            text = here.statement(file, x.get("line"))
            if text is None:
                key = _access_key(x)
                if key in (gone if word == "gone" else came) and (file, str(key)) not in shown:
                    shown.add((file, str(key)))
                    lines.append(f"access {word}: {_access_text(key)}")
            elif text not in there.statements(file) and (file, text) not in shown:
                shown.add((file, text))
                lines.append(f"access {word}: {file}:{x.get('line')} {text}")
    return lines, not lines


def diff(
    old: list[Entry],
    new: list[Entry],
    old_src: Sources | None = None,
    new_src: Sources | None = None,
    positive: Iterable[str] = (),
) -> InventoryDiff:
    """Compare two inventories by entry id; an entry has **changed** only when what sizes or
    reads it did:

    - ``dtype``: a different dtype (when one release traced the buffer and the other read it,
      only two concrete dtype names are compared: a read entry may record the call's text or '');
    - ``shape``: a dimension whose expressions are not equal (:func:`same_expression`: equal
      spellings, e.g. ``1 + n`` and ``n + 1``, are the same shape; names in ``positive``, the
      engine's sizes that are at least 1, are compared from 1) when both releases record the
      shape the same way (both ``traced``, or both ``read``); a buffer traced in one release and
      read in the other is compared by its sizing code (the tracer, not the engine, differs);
      without sizing code, its shapes are compared as well;
    - ``sizing code``: given both releases' sources (``old_src``/``new_src``), the allocation
      call and the statements its size depends on, normalised
      (:func:`capproof.engines.tracing.sizing.sizing_code`), differ;
    - ``demand``: for a dimension both releases derive, the extent, the names it binds, or its
      facts differ (as expressions; facts without their line references);
    - ``accesses``: a reader or writer was added or removed: with sources, an access whose
      statement is in no statement of the other release's file (:func:`_access_changes`);
      without, the access records differ as a multiset of (file, dimension, extent, operation).

    Line moves, a different ``why``, the order of accesses, access records derived differently
    from unchanged statements, a demand derived in one release only, the lines and provenance of
    a derivation, and equal shapes spelled differently are noise: such entries are listed in
    ``noise`` with what differed, not in ``changed``."""
    o = {e.id: e for e in old}
    n = {e.id: e for e in new}
    changed: list[Change] = []
    noise: list[tuple[Entry, Entry, list[str]]] = []
    for i in sorted(o.keys() & n.keys()):
        a, b = o[i], n[i]
        what: list[str] = []
        details: list[str] = []
        ca = old_src.sizing(a) if old_src is not None else None
        cb = new_src.sizing(b) if new_src is not None else None
        code_known = ca is not None and cb is not None
        if a.dtype != b.dtype and (a.how == b.how or (_DTYPE.match(a.dtype) and _DTYPE.match(b.dtype))):
            what.append("dtype")
        if a.shape != b.shape and not _same_shape(a.shape, b.shape, positive) and (a.how == b.how or not code_known):
            what.append("shape")
        if code_known and ca != cb:
            what.append("sizing code")
            gone, came = _multiset_changes(list(ca), list(cb))
            details += [f"- {s}" for s in gone] + [f"+ {s}" for s in came]
        dem = _demand_changes(a.demands, b.demands, positive)
        if dem:
            what.append("demand")
            details += dem
        acc, derived_differently = _access_changes(a, b, old_src, new_src)
        if acc:
            what.append("accesses")
            details += acc
        if what:
            changed.append(Change(a, b, what, details))
            continue
        kinds = []
        if a.line != b.line:
            kinds.append("line moved")
        if a.how != b.how:
            kinds.append("traced in one release only")
        elif a.shape != b.shape:
            kinds.append("shape spelling")
        if a.why != b.why:
            kinds.append("why text")
        if derived_differently:
            kinds.append("accesses derived differently")
        elif a.accesses != b.accesses:
            kinds.append("access lines or order")
        one_side = {d.get("dim") for d in a.demands if isinstance(d, dict)} ^ {
            d.get("dim") for d in b.demands if isinstance(d, dict)
        }
        if one_side:
            kinds.append("demand derived in one release only")
        elif a.demands != b.demands:
            kinds.append("demand record")
        if kinds:
            noise.append((a, b, kinds))
    return InventoryDiff(
        added=[n[i] for i in sorted(n.keys() - o.keys())],
        removed=[o[i] for i in sorted(o.keys() - n.keys())],
        changed=changed,
        noise=noise,
    )


def diff_lines(d: InventoryDiff, old_name: str, new_name: str) -> list[str]:
    """The release-bump review: a count line (changed buffers by what changed; one buffer may count
    under several); one line per added/removed buffer; per changed
    buffer, what changed, the old and new shape with the line in each release, and the details
    (sizing statements only in one release, demands, access sites); last, one line counting the
    buffers whose records differ only in tracing noise, by kind."""
    from collections import Counter

    why = Counter(k for c in d.changed for k in c.what)
    out = [
        f"{old_name} -> {new_name}: {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed"
        + (" (" + ", ".join(f"{why[k]} {k}" for k in CHANGE_KINDS if why[k]) + ")" if why else "")
        + (f"; {len(d.noise)} more differ only in tracing noise" if d.noise else "")
    ]
    for e in d.added:
        out.append(f"+ {e.id}  [{', '.join(e.shape)}] {e.dtype}  ({e.file}:{e.line}, {e.how})")
    for e in d.removed:
        out.append(f"- {e.id}  [{', '.join(e.shape)}] {e.dtype}  ({e.file}:{e.line}, {e.how})")
    for c in d.changed:
        a, b = c.old, c.new
        out.append(f"~ {a.id}  ({', '.join(c.what)})")
        out.append(f"    {old_name}: [{', '.join(a.shape)}] {a.dtype}  ({a.file}:{a.line}, {a.how})")
        out.append(f"    {new_name}: [{', '.join(b.shape)}] {b.dtype}  ({b.file}:{b.line}, {b.how})")
        out += [f"      {x}" for x in c.details]
    if d.noise:
        kinds = Counter(k for _, _, ks in d.noise for k in ks)
        out.append(
            f"not changed: {len(d.noise)} buffers differ only in tracing noise ("
            + ", ".join(f"{kinds[k]} {k}" for k in NOISE_KINDS if kinds[k])
            + ")"
        )
    return out
