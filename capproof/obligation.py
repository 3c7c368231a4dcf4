"""Declaring obligations (Z3) and contracts (CrossHair) in spec/ files.

An obligation is a claim over a parameter space::

    @obligation(
        domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 32, 64, 128, 256)},
        assumptions={"kernel_block_size divides block_size": lambda block_size, kernel_block_size: ...},
        expect="counterexample", case="vllm-dsa-ebt-128align", sources=["vllm-project/vllm#50302"],
    )
    def indexer_width_equals_runner_width(max_model_len, block_size):
        return equal(W_buf=indexer_width(...), W_bt=runner_width(...))

The function's parameters are exactly the domain's names; it returns a :class:`Claim` (or a
plain/symbolic bool). Assumption functions take any subset of the parameters by name.
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from .domain import Domain, Range, Vector
from .errors import SpecError
from .symbolic import SymBool, SymInt

__all__ = [
    "Claim",
    "claim",
    "equal",
    "at_most",
    "less_than",
    "fits",
    "obligation",
    "Obligation",
    "contract",
    "Contract",
]

EXPECTATIONS = ("proved", "counterexample")

_PARAM_NAMES: dict[int, tuple[object, tuple[str, ...], bool]] = {}


def param_signature(func: Callable[..., object]) -> tuple[object, tuple[str, ...], bool]:
    """(func, its parameter names, whether it binds them positionally as by keyword), memoised
    per function object."""
    hit = _PARAM_NAMES.get(id(func))
    if hit is not None and hit[0] is func:
        return hit
    params = inspect.signature(func).parameters
    # a plain function (its signature is its code's: no __wrapped__ or __signature__ to differ
    # from what a call binds) whose parameters are all positional-or-keyword
    positional = (
        type(func) is _FUNCTION
        and not hasattr(func, "__wrapped__")
        and not hasattr(func, "__signature__")
        and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params.values())
    )
    hit = _PARAM_NAMES[id(func)] = (func, tuple(params), positional)
    return hit


def _param_names(func: Callable[..., object]) -> tuple[str, ...]:
    """``inspect.signature(func).parameters`` names, memoised per function object (evaluation
    asks once per assumption per point; density enumerates up to 2**16 points)."""
    return param_signature(func)[1]


def takes_positionally(func: Callable[..., object]) -> bool:
    """Whether ``func(*values)``, the values in the order of :func:`_param_names`, binds them as
    ``func(**{name: value})`` does: a plain Python function whose parameters are all
    positional-or-keyword (a call without a keyword dict costs ~0.5 us less: the int probe calls
    an assumption tens of times per obligation)."""
    return param_signature(func)[2]


_FUNCTION = type(_param_names)

#: Every Obligation and Contract created, in creation order (the loader takes a file's from here,
#: so one shadowed by a later definition of the same name, or held in a dict, is not lost).
CREATED: list = []


@dataclass(frozen=True)
class Claim:
    """A boolean claim plus the named quantities it compares (shown in reports).

    ``relation`` is a short human form such as ``"W_buf == W_bt"``.
    """

    holds: object
    values: Mapping[str, object] = field(default_factory=dict)
    relation: str = ""

    def __bool__(self) -> bool:
        # `claim1 and claim2` or `all([claim1, claim2])` would silently keep one claim.
        raise SpecError(
            "a Claim has no truth value: `and`/`or`/`all()`/`if` on claims would drop one; "
            "combine them with claim(all_of(c1.holds, c2.holds), **c1.values, **c2.values)"
        )


def claim(holds: object, /, **named: object) -> Claim:
    """A claim with arbitrary named quantities to report alongside it."""
    return Claim(holds, dict(named), "")


def _two(named: Mapping[str, object], what: str) -> tuple[str, object, str, object]:
    if len(named) != 2:
        raise SpecError(f"{what}() takes exactly two named quantities, got {list(named)}")
    (a, av), (b, bv) = named.items()
    return a, av, b, bv


def equal(**named: object) -> Claim:
    """``first == second``, e.g. ``equal(W_buf=..., W_bt=...)``."""
    a, av, b, bv = _two(named, "equal")
    return Claim(av == bv, dict(named), f"{a} == {b}")


def _width(name: str, value: object, dtype: object) -> tuple[object, str, object]:
    """(``value`` fits ``dtype``, the dtype's name, ``value`` as the dtype holds it)."""
    from .arith import all_of, dtype_info, dtype_range, wrap

    try:
        dname = dtype_info(dtype)[0]
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    lo, hi = dtype_range(dname)
    return all_of(lo <= value, value <= hi), dname, wrap(value, dname)  # type: ignore[operator]


def fits(dtype: object, /, **named: object) -> Claim:
    """The value is representable in the integer ``dtype`` (``"int32"``, ``"uint32"``,
    ``"int64"``, … or ``torch.int32``): a kernel that computes it in that type gets it exactly,
    without wrapping. E.g. ``fits("int32", offset=stride_cm * max_offs_token)``.

    One named quantity; the claim also reports it as the dtype holds it (``offset_int32``, the
    two's-complement wrapped value of :func:`capproof.arith.wrap`), so a counterexample shows both
    ``offset=3211264000`` and ``offset_int32=-1083703296``. Raises SpecError for an unknown dtype.
    """
    if len(named) != 1:
        raise SpecError(f"fits() takes exactly one named quantity, got {list(named)}")
    ((name, value),) = named.items()
    holds, dname, wrapped = _width(name, value, dtype)
    return Claim(holds, {name: value, f"{name}_{dname}": wrapped}, f"{name} fits {dname}")


def _with_dtype(claim: Claim, dtype: object) -> Claim:
    """``claim`` whose first quantity is computed in ``dtype``: it must also fit (no wrap); the
    wrapped value is reported after the two quantities."""
    if dtype is None:
        return claim
    from .arith import all_of

    (a, av), (b, bv) = claim.values.items()
    fit, dname, wrapped = _width(a, av, dtype)
    return Claim(all_of(fit, claim.holds), {a: av, b: bv, f"{a}_{dname}": wrapped}, f"{claim.relation} in {dname}")


def at_most(*, dtype: object = None, **named: object) -> Claim:
    """``first <= second``, e.g. ``at_most(demand=..., capacity=...)``. With ``dtype=``
    (``"int32"``, …) the first quantity is computed in that integer type and must also fit it
    (see :func:`fits`)."""
    a, av, b, bv = _two(named, "at_most")
    return _with_dtype(Claim(av <= bv, dict(named), f"{a} <= {b}"), dtype)


def less_than(*, dtype: object = None, **named: object) -> Claim:
    """``0 <= first < second``: an index into a buffer of ``second`` entries, checked on both
    sides (a negative index wraps or faults as surely as one past the end), e.g.
    ``less_than(index=..., capacity=...)``. With ``dtype=`` (``"int32"``, …) the index is computed
    in that integer type and must also fit it (see :func:`fits`): an index past ``2**31 - 1``
    wraps before it is compared, so a capacity above the dtype's range does not save it."""
    a, av, b, bv = _two(named, "less_than")
    from .arith import all_of

    return _with_dtype(Claim(all_of(0 <= av, av < bv), dict(named), f"0 <= {a} < {b}"), dtype)  # type: ignore[operator]


def _spec_relpath(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover
        return path


def _code_names(code) -> list[tuple[str, ...]]:
    """The names ``code`` refers to (``co_names``), and those of every code object nested in it
    (comprehensions, generator expressions, lambdas, nested functions): one tuple per code object."""
    out = [tuple(code.co_names)]
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            out += _code_names(const)
    return out


def function_source(func) -> str | None:
    """The source of ``func``'s body, dedented, without its docstring: for a ``def`` its
    statements, for a lambda its expression. None when the source cannot be read (a function
    made by ``exec``, a lambda sharing its line with another of the same parameters). A wrapper
    made with :func:`functools.wraps` shows the function it wraps (mutmut's trampolines in
    ``make mutation``'s copy, so the copy's reports are the project's)."""
    func = inspect.unwrap(func) if callable(func) else func
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    try:
        parsed = _parsed_source(code.co_filename)
    except (OSError, SyntaxError, ValueError):
        return None
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    found = []
    for node in parsed.by_line.get(code.co_firstlineno, ()):
        if isinstance(node, ast.Lambda) != (code.co_name == "<lambda>"):
            continue
        args = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        if args == params and (isinstance(node, ast.Lambda) or node.name == code.co_name):
            found.append(node)
    if len(found) != 1:
        return None
    node = found[0]
    if isinstance(node, ast.Lambda):
        return parsed.segment(node.body)
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if not body:
        return None
    lines = parsed.lines[body[0].lineno - 1 : body[-1].end_lineno]
    return textwrap.dedent("\n".join(lines)).strip("\n")


def _decorators_between(func) -> list[tuple[str, str | None]]:
    """The wrappers made with :func:`functools.wraps` between ``func`` and the function it finally
    wraps, outermost first, as (qualified name, source of the wrapper's body); mutmut's
    trampolines (``make mutation``'s copy) are left out, so the copy's reports are the project's."""
    out = []
    f = func
    while callable(f) and hasattr(f, "__wrapped__"):
        code = getattr(f, "__code__", None)
        if code is not None and not any("mutmut" in n for n in code.co_names):
            where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
            body = None
            try:
                parsed = _parsed_source(code.co_filename)
                nodes = [
                    n
                    for n in parsed.by_line.get(code.co_firstlineno, ())
                    if not isinstance(n, ast.Lambda) and n.name == code.co_name
                ]
                if len(nodes) == 1:
                    node = nodes[0]
                    body = textwrap.dedent("\n".join(parsed.lines[node.lineno - 1 : node.end_lineno])).strip("\n")
            except (OSError, SyntaxError, ValueError):
                pass
            out.append((f"{code.co_qualname if hasattr(code, 'co_qualname') else code.co_name} ({where})", body))
        f = f.__wrapped__
    return out


class _ParsedSource:
    """One source text parsed once: its functions and lambdas indexed by the lines
    :func:`function_source` matches a code object's ``co_firstlineno`` against (a ``def``'s first
    decorator line and its ``def`` line; a lambda's line), in ``ast.walk`` order."""

    def __init__(self, text: str) -> None:
        self.text = text
        tree = ast.parse(text)
        self.lines = text.splitlines()
        self.by_line: dict[int, list] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                first = (
                    node.lineno
                    if isinstance(node, ast.Lambda)
                    else (node.decorator_list[0].lineno if node.decorator_list else node.lineno)
                )
                for line in dict.fromkeys((first, node.lineno)):
                    self.by_line.setdefault(line, []).append(node)
        self._raw: list[str] | None = None

    def segment(self, node) -> str | None:
        """``ast.get_source_segment(text, node)`` without splitting the whole text on every call."""
        if self._raw is None:
            split = getattr(ast, "_splitlines_no_ff", None)
            if split is None:  # pragma: no cover - a Python without the helper
                return ast.get_source_segment(self.text, node)
            self._raw = split(self.text)
        try:
            lineno, end_lineno = node.lineno - 1, node.end_lineno - 1
            col, end_col = node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if end_lineno is None or end_col is None:
            return None
        if end_lineno == lineno:
            return self._raw[lineno].encode()[col:end_col].decode()
        first = self._raw[lineno].encode()[col:].decode()
        last = self._raw[end_lineno].encode()[:end_col].decode()
        return "".join([first, *self._raw[lineno + 1 : end_lineno], last])


_PARSED: dict[str, _ParsedSource] = {}


def _parsed_source(path: str) -> _ParsedSource:
    """The parse of ``path``'s current text (:func:`_file_text`), memoised while the text is the same
    (spec/vllm_0_33_buffers.py asks for the sources of hundreds of lambdas of one file)."""
    text = _file_text(path)
    hit = _PARSED.get(path)
    if hit is None or hit.text != text:
        hit = _PARSED[path] = _ParsedSource(text)
    return hit


def _file_text(path: str) -> str:
    """A source file's text as Python reads it (``linecache``, so a file replaced since the import
    is read as imported when cached); OSError when unreadable."""
    import linecache

    lines = linecache.getlines(path)
    if not lines:
        raise OSError(f"cannot read {path}")
    return "".join(lines)


@dataclass
class Obligation:
    """A claim over a parameter space, declared with :func:`obligation`."""

    name: str
    func: Callable[..., object]
    domain: dict[str, Domain]
    assumptions: dict[str, Callable[..., object]]
    expect: str
    case: str | None
    sources: list[str]
    rlimit: int | None
    file: str
    line: int
    doc: str
    problems: list[str]
    witnesses: dict[str, Callable[..., object]] = field(default_factory=dict)
    #: Engine the claim is about (``"vllm"``, ``"sglang"``) and the PEP 440 versions its models
    #: describe (e.g. ``">=0.21,<0.27"``); ``None`` = engine-agnostic / every version. Used by
    #: ``capproof check-config`` to pick the obligations that apply to one deployment.
    engine: str | None = None
    versions: str | None = None
    #: Inventory entry ids (``"vllm/v1/worker/block_table.py::BlockTable.block_table"``) whose
    #: capacity this claim is about; ``capproof coverage`` gives those entries this verdict.
    covers: list[str] = field(default_factory=list)
    #: Model features the claim's buffers exist for (e.g. ``("dsa_indexer",)``): a deployment
    #: check applies the obligation only to a model that has every one of them.
    requires: tuple[str, ...] = ()
    #: Kinds the claim belongs to, for selecting and reporting (e.g. ``("per_batch", "spec_decode",
    #: "cuda_graphs")``, ``("inventory",)``); free-form names.
    tags: tuple[str, ...] = ()
    #: Scalar parameters counted in requests whose ``Range`` upper bound is the spec's batch size
    #: (the limit, e.g. ``max_num_seqs``, first), and implicitly the Vectors whose ``length`` is one
    #: of them: the claim is stated for any batch size, so a deployment check may raise these
    #: bounds (and those vectors' sizes) to the deployment's limit.
    batch_axis: tuple[str, ...] = ()
    #: paths explored per case when the model branches on symbolic values (None: Options.fork_budget)
    fork_budget: int | None = None
    #: the claim's source for reports when the function body does not show it (generated obligations)
    formula: str | None = None

    def applies_to(self, engine: str, version: str) -> bool:
        """True when this obligation describes ``engine`` at ``version``."""
        if self.engine != engine:
            return False
        if not self.versions:
            return True
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(self.versions).contains(version, prereleases=True)

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    @property
    def params(self) -> list[str]:
        return list(self.domain)

    def assumption_params(self, name: str) -> list[str]:
        return list(_param_names(self.assumptions[name]))

    def witness_params(self, name: str) -> list[str]:
        return list(_param_names(self.witnesses[name]))

    def models_used(self) -> list[str]:
        """The project's functions the obligation calls, as ``path.py::qualname`` (relative to the
        project root): in its claim, assumptions and witnesses, in their comprehensions, generator
        expressions, lambdas and nested functions, and transitively in the functions those call.

        A project function is one defined in a file under the working directory (the project
        root, where capproof runs), outside capproof itself and hidden directories: models in
        ``models/`` or any other package, helpers of the spec file itself or of another spec
        module. Found from the names the code refers to (globals, attributes of globals and of
        closure variables, e.g. ``block_table.cdiv`` or ``family.demand``), so a name referred to
        but not called is listed too. Lambdas, nested functions, private functions (``_name``, e.g.
        a claim helper of the spec file) and functions marked ``__capproof_glue__ = True`` (spec plumbing, e.g. binding an inventory shape's names) are
        followed, not listed.
        """
        root = os.path.abspath(os.getcwd()) + os.sep
        spec_path = os.path.abspath(self.func.__code__.co_filename) if hasattr(self.func, "__code__") else ""
        out: list[str] = []
        seen: set[int] = set()

        def project_ref(target) -> str | None:
            code = getattr(target, "__code__", None)
            module = getattr(target, "__module__", "") or ""
            if code is None or module == "capproof" or module.startswith("capproof."):
                return None
            path = os.path.abspath(code.co_filename)
            own = path == spec_path  # the spec file itself, wherever it lies
            if not own and (not path.startswith(root) or f"{os.sep}." in path[len(root) - 1 :]):
                return None
            qualname = getattr(target, "__qualname__", code.co_name)
            if "<" in qualname:  # a lambda or a nested function: part of what defines it
                return ""
            return f"{os.path.relpath(path, root[:-1])}::{qualname}"

        def consider(target) -> None:
            target = inspect.unwrap(target) if callable(target) else target
            if not inspect.isfunction(target):
                return
            ref = project_ref(target)
            if ref is None:
                return
            listed = not getattr(target, "__capproof_glue__", False) and not target.__name__.startswith("_")
            if ref and target is not self.func and ref not in out and listed:
                out.append(ref)
            visit(target)

        def visit(func) -> None:
            code = getattr(func, "__code__", None)
            if code is None or id(code) in seen:
                return
            seen.add(id(code))
            globs = getattr(func, "__globals__", {})
            cells = []
            for cell in getattr(func, "__closure__", None) or ():
                try:
                    cells.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
            for names in _code_names(code):
                holders = [globs[n] for n in names if n in globs] + cells
                for holder in holders:
                    if inspect.isfunction(holder):
                        consider(holder)
                for holder in holders:  # attributes: module.function, Class.method, family.demand
                    if inspect.isfunction(holder):
                        continue
                    for n in names:
                        try:
                            attr = inspect.getattr_static(holder, n)
                        except AttributeError:
                            continue
                        if isinstance(attr, (staticmethod, classmethod)):
                            attr = attr.__func__
                        if inspect.isfunction(attr):
                            consider(attr)

        visit(self.func)
        for extra in [*self.assumptions.values(), *self.witnesses.values()]:
            consider(extra)
        return out

    def claim_source(self) -> str | None:
        """The claim as written: ``formula`` when its declaration set one (obligations generated
        in a loop, whose function body is shared), else the body of the obligation's function
        without its docstring (see :func:`function_source`); None when the source is unreadable."""
        if self.formula is not None:
            return self.formula
        inner = function_source(self.func)
        wrappers = _decorators_between(self.func)
        if not wrappers or inner is None:
            return inner
        # the claim proved is the wrapper's result: show the code that computes it, not only the
        # function it wraps (a decorator may change the result)
        shown = "\n\n".join(
            f"# through the decorator {name}:\n{src or '(source unavailable)'}" for name, src in wrappers
        )
        return f"{shown}\n\n# the wrapped claim:\n{inner}"


def obligation(
    *,
    domain: Mapping[str, Domain],
    expect: str = "proved",
    case: str | None = None,
    sources: Sequence[str] = (),
    assumptions: Mapping[str, Callable[..., object]] | None = None,
    rlimit: int | None = None,
    witnesses: Mapping[str, Callable[..., object]] | None = None,
    engine: str | None = None,
    versions: str | None = None,
    covers: Sequence[str] = (),
    name: str | None = None,
    requires: Sequence[str] = (),
    fork_budget: int | None = None,
    tags: Sequence[str] = (),
    batch_axis: Sequence[str] = (),
) -> Callable[[Callable[..., object]], Obligation]:
    """Declare a claim over ``domain`` (see the module docstring).

    ``expect`` is ``"proved"`` or ``"counterexample"`` (a kept buggy historical formula).
    ``witnesses`` names conditions on the batch (e.g. ``"raises": takes_variable_copy``): for a
    counterexample, the prover also reports, at the counterexample's values of every parameter
    the condition does not take, the smallest point where the claim fails *and* the condition
    holds, or that there is none (the trigger witness: which batches take the failing path).
    Problems with the declaration are recorded, not raised, so that one bad obligation does
    not stop the rest of its file: they surface as an ``error`` verdict.
    ``engine``/``versions`` (optional) say which engine releases the claim's models describe.
    ``covers`` lists the inventory entry ids (``"<file in the wheel>::<Owner>.<attribute>"``, see
    :mod:`capproof.coverage`) whose capacity the claim checks. ``name`` overrides the function's
    name as the obligation's name (obligations generated in a loop, one per inventory entry).
    ``requires (optional) names the model features whose buffers the claim is about (e.g.
    ``"dsa_indexer"``): ``check-config`` applies it only to models that have them.
    ``fork_budget`` caps the execution paths explored per case when the model branches on
    symbolic values (default: the run's ``--fork-budget``, 64); exceeding it gives ``unknown``.
    """

    def wrap(func: Callable[..., object]) -> Obligation:
        problems: list[str] = []
        if expect not in EXPECTATIONS:
            problems.append(f"expect must be one of {EXPECTATIONS}, got {expect!r}")
        dom = dict(domain)
        for pname, d in dom.items():
            if not isinstance(d, Domain):
                problems.append(f"domain of {pname} is {d!r}, not a Range, Choice, PowersOfTwo or Vector")
            elif d.problem:
                problems.append(f"domain of {pname}: {d.problem}")
            elif isinstance(d, Vector) and d.length is not None:
                ld = dom.get(d.length)
                if ld is None:
                    problems.append(f"vector {pname}'s length {d.length!r} is not a parameter of the domain")
                elif isinstance(ld, Vector) or not isinstance(ld, Domain) or ld.problem:
                    problems.append(f"vector {pname}'s length {d.length!r} must be a valid scalar parameter")
                elif not all(0 <= v <= d.size for v in ((ld.lo, ld.hi) if isinstance(ld, Range) else ld.cases())):
                    problems.append(
                        f"vector {pname}'s length {d.length!r} ranges over {ld.describe()}, outside 0..{d.size}"
                    )
        params = list(inspect.signature(func).parameters)
        if sorted(params) != sorted(dom):
            problems.append(f"claim parameters {params} do not match the domain's names {list(dom)}")
        if versions is not None:
            try:
                from packaging.specifiers import SpecifierSet

                SpecifierSet(versions)
            except Exception as exc:  # noqa: BLE001 - reported as the obligation's error
                problems.append(f"versions {versions!r} is not a PEP 440 specifier: {exc}")
        covered = [covers] if isinstance(covers, str) else list(covers)
        for ident in covered:
            if not isinstance(ident, str) or "::" not in ident:
                problems.append(f"covers entry {ident!r} is not an inventory id '<file>::<Owner>.<attribute>'")
        if name is not None and not (isinstance(name, str) and name.isidentifier()):
            problems.append(f"name {name!r} is not an identifier")
        assumed = dict(assumptions or {})
        checks = dict(witnesses or {})
        for kind, named in (("assumption", assumed), ("witness", checks)):
            for cname, cfunc in named.items():
                if not callable(cfunc):
                    problems.append(f"{kind} {cname!r} is not callable")
                    continue
                unknown = [p for p in inspect.signature(cfunc).parameters if p not in dom]
                if unknown:
                    problems.append(f"{kind} {cname!r} uses {unknown}, not in the domain")
        for axis in batch_axis:
            if not isinstance(dom.get(axis), Range):
                problems.append(f"batch_axis {axis!r} is not a Range parameter of the domain")
        code = func.__code__
        made = Obligation(
            name=name if isinstance(name, str) and name.isidentifier() else func.__name__,
            func=func,
            domain=dom,
            assumptions=assumed,
            expect=expect,
            case=case,
            sources=list(sources),
            rlimit=rlimit,
            file=_spec_relpath(code.co_filename),
            line=code.co_firstlineno,
            doc=inspect.cleandoc(func.__doc__ or ""),
            problems=problems,
            witnesses=checks,
            engine=engine,
            versions=versions,
            covers=covered,
            requires=tuple(requires),
            fork_budget=fork_budget,
            tags=tuple(tags),
            batch_axis=tuple(batch_axis),
        )
        if fork_budget is not None and not (isinstance(fork_budget, int) and fork_budget >= 1):
            problems.append(f"fork_budget must be an int >= 1, got {fork_budget!r}")
        CREATED.append(made)
        return made

    return wrap


@dataclass
class Contract:
    """A CrossHair contract check of a models/ function or method.

    ``target`` is ``"models/file.py::function"`` or ``"models/file.py::Class.method"``; the
    pre/postconditions are PEP 316 docstring lines (``pre:``, ``post:``, ``raises:``) in the model.
    """

    target: str
    expect: str
    case: str | None
    sources: list[str]
    file: str
    line: int
    #: seconds per postcondition for this contract at least (the run's ``--crosshair-timeout``
    #: applies when larger); for contracts whose path tree takes longer to exhaust.
    crosshair_timeout: float | None = None

    @property
    def id(self) -> str:
        return self.target


def contract(
    target: str,
    *,
    expect: str = "proved",
    case: str | None = None,
    sources: Sequence[str] = (),
    crosshair_timeout: float | None = None,
) -> Contract:
    """Declare that ``target``'s PEP 316 contract is checked by CrossHair (see :class:`Contract`).

    ``crosshair_timeout`` raises the per-postcondition timeout for this contract (seconds).
    """
    frame = inspect.stack()[1]
    made = Contract(
        target=target,
        expect=expect if expect in EXPECTATIONS else f"invalid expect {expect!r}",
        case=case,
        sources=list(sources),
        file=_spec_relpath(frame.filename),
        line=frame.lineno,
        crosshair_timeout=crosshair_timeout,
    )
    CREATED.append(made)
    return made


def is_boolean(value: object) -> bool:
    return isinstance(value, (bool, SymBool))


def is_integer(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, SymInt)
