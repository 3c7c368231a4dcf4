"""Obligations whose capacity side is an inventory entry (the engine's own allocation, traced).

A **demand family** states once what the writers of a kind of buffer need (e.g. "the padded token
count of a step, at most ``max_num_batched_tokens`` after CUDA-graph and DP padding"), with the
scheduler facts it rests on as named assumptions. :func:`cover` applies a family to one inventory
entry: it declares an obligation ``<family>__<Owner>_<attribute>`` in the calling spec file whose
claim compares the family's demand with dimension ``dim`` of the entry, evaluated by
``capproof.inventory.capacity`` from the committed inventory JSON (no transcription: the shape
string is what the inventory traced from the wheel). The obligation ``covers`` the entry and lists
``inventory: <path>::<id>`` among its sources, so ``capproof coverage`` counts it as a traced
capacity. The loader skips this file (leading underscore).
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from capproof import Choice, Range, at_most, less_than, obligation
from capproof.domain import Domain
from capproof.errors import SpecError
from capproof.inventory import Entry, capacity, evaluate, expression_names, load

#: Domains of the config names shape expressions use. A capacity over a name not listed here
#: needs the family to give its domain (``Family.config``) or the entry is not generated.
CONFIG = {
    "max_num_batched_tokens": Range(1, 2**17),
    "max_num_reqs": Range(1, 2**12),
    "max_model_len": Range(1, 2**21),
    "num_speculative_tokens": Range(0, 64),
    # A builder attribute (min(max_num_seqs, max_cudagraph_capture_size), mamba_attn.py:115-120):
    # free here; the decode-row families bind their guard to the capacity itself.
    "decode_cudagraph_max_bs": Range(1, 2**12),
    # names traced shapes use (capproof/engines/vllm/trace.py POSITIVE), for when more entries are traced
    "max_cudagraph_capture_size": Range(1, 2**17),
    "num_sms": Range(1, 1024),
    "max_num_blocks": Range(1, 2**16),
    "block_table_width": Range(1, 2**16),
    "block_size": Choice(16, 32, 64, 128),
    "dcp": Choice(1, 2, 4, 8),
}

_cache: dict[str, list[Entry]] = {}
#: Entries :func:`cover` declared no obligation for, and why (they stay uncovered in coverage.md).
SKIPPED: dict[str, str] = {}


def entries(path: str) -> list[Entry]:
    """The inventory at ``path`` (relative to the project root), loaded once."""
    key = os.path.abspath(path)
    if key not in _cache:
        _cache[key] = load(path)
    return _cache[key]


def _signed(fn: Callable[..., object], params: Sequence[str]) -> Callable[..., object]:
    """``fn(**kw)`` presented with exactly ``params`` as its signature (the prover reads it)."""
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params]
    )
    return fn


@dataclass
class Family:
    """A demand shape shared by many buffers.

    ``demand(**params)`` is the largest extent written or read (elements along ``dim``); the claim
    is ``demand <= capacity`` (``relation="at_most"``, a slice ``[:demand]``) or ``demand <
    capacity`` (``"less_than"``, an index). ``domain`` holds the batch/step parameters and any
    config name the demand uses; ``facts`` the scheduler/config facts (named assumptions), each a
    function of parameter names. ``sources`` cite the code the facts come from.
    """

    name: str
    dim: int
    demand: Callable[..., object]
    domain: Mapping[str, Domain]
    facts: Mapping[str, Callable[..., object]] = field(default_factory=dict)
    relation: str = "at_most"
    sources: Sequence[str] = ()
    doc: str = ""
    demand_name: str = "demand"
    #: Deployment features the writers exist or the demand arises under (``Obligation.requires``:
    #: ``check-config`` applies the family's obligations only when the deployment has them all).
    requires: Sequence[str] = ()


def _ident(entry_id: str) -> str:
    tail = entry_id.split("::")[-1]
    return re.sub(r"\W", "_", tail)


def cover(
    inventory: str,
    entry_id: str,
    family: Family,
    writers: Sequence[str] = (),
    *,
    expect: str = "proved",
    config: Mapping[str, Domain] | None = None,
    facts: Mapping[str, Callable[..., object]] | None = None,
    doc: str = "",
    rlimit: int | None = None,
    aliases: Mapping[str, tuple[str, str]] | None = None,
    dim: int | None = None,
    name: str | None = None,
    where: tuple[str, int] | None = None,
):
    """Declare the obligation "``family``'s demand fits dimension ``family.dim`` of ``entry_id``".

    ``writers`` cite the lines that write or read the buffer (``vllm==0.33.0 file:line (what)``).
    ``config`` adds or narrows domains of config names; ``facts`` adds entry-specific facts.
    ``aliases`` binds a local name of a ``read`` shape to a config name or an expression over
    config names (the shape language), with the line that assigns it (``{"max_num_tokens":
    ("max_num_batched_tokens", "gpu_model_runner.py:524")}``); a traced shape uses config names. ``dim`` overrides the family's dimension.
    A capacity over a name with no domain declares nothing (returns None; the reason is kept in
    :data:`SKIPPED` and the entry stays uncovered); an unknown entry or a shape outside the
    expression language gives an ``error`` obligation (a stale table fails ``make verify``).
    The obligation is declared at the caller's line, in the caller's file. Raises
    :class:`capproof.errors.SpecError` for an unknown entry or a shape outside the language.
    """
    caller = _Where(*(where or _caller()))
    ents = entries(inventory)
    entry = next((e for e in ents if e.id == entry_id), None)
    if entry is None:
        return _missing(
            inventory,
            entry_id,
            family,
            caller,
            f"{inventory} has no entry {entry_id!r} (re-read the inventory and update the table)",
            name,
        )
    dim = family.dim if dim is None else dim
    aliases = dict(aliases or {})
    try:
        cap_names = expression_names(entry.shape[dim])
    except (IndexError, SpecError) as exc:
        return _missing(inventory, entry_id, family, caller, f"capacity of {entry_id} dimension {dim}: {exc}", name)
    doms = {**CONFIG, **(config or {})}
    domain: dict[str, Domain] = {}
    binding: dict[str, str] = {}
    alias_sources = []
    for n in cap_names:
        expr = n
        if n not in doms and n not in family.domain and n in aliases:
            expr, where = aliases[n]
            alias_sources.append(f"read shape: {n} = {expr} ({where})")
        binding[n] = expr
        for target in expression_names(expr):
            if target not in family.domain and target not in domain:
                if target not in doms:
                    SKIPPED[entry_id] = (
                        f"capacity `{entry.shape[dim]}` uses {target!r}, which has no domain (a read shape's local name)"
                    )
                    return None
                domain[target] = doms[target]
    domain.update(family.domain)
    for n, d in (config or {}).items():
        if n in domain:
            domain[n] = d
    demand_params = list(inspect.signature(family.demand).parameters)

    def claim(**kw):
        cap = capacity(ents, entry_id, dim, **_bind(binding, kw))
        need = family.demand(**{n: kw[n] for n in demand_params})
        rel = at_most if family.relation == "at_most" else less_than
        return rel(**{family.demand_name: need, f"{entry.attribute}[{dim}]": cap})

    claim.__name__ = name or f"{family.name}__{_ident(entry_id)}"
    claim.__doc__ = (
        f"{family.doc} Capacity: dimension {dim} of `{entry_id}` = `{entry.shape[dim]}` "
        f"({entry.how} from {entry.file}:{entry.line}). {doc}"
    ).strip()
    _signed(claim, list(domain))
    assumed = {k: _with_capacity(f, ents, entry_id, dim, binding) for k, f in {**family.facts, **(facts or {})}.items()}
    engine, version = _release(inventory)
    ob = obligation(
        domain=domain,
        assumptions=assumed,
        expect=expect,
        rlimit=rlimit,
        sources=[f"inventory: {inventory}::{entry_id}", *alias_sources, *family.sources, *writers],
        covers=[entry_id],
        engine=engine,
        versions=version and f"=={version}",
        tags=("inventory",),
        requires=tuple(family.requires),
    )(claim)
    ob.file = os.path.relpath(caller.filename)
    ob.line = caller.lineno
    ob.formula = _formula(family, demand_params, entry, dim, binding)
    return ob


def _caller() -> tuple[str, int]:
    """File and line of the spec file that called :func:`cover`: the first frame outside this file
    and outside a wrapper that is not project code (``make mutation`` runs every helper of this file
    through mutmut's trampoline, which must not move the obligation into mutmut)."""
    here = os.path.abspath(__file__)
    frame = inspect.currentframe()
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path != here and f"{os.sep}mutmut{os.sep}" not in path:
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    raise SpecError("cover() has no caller outside spec/_inventory.py")


def _release(inventory: str) -> tuple[str | None, str | None]:
    """``proofs/inventory/vllm-0.33.0.json`` -> ("vllm", "0.33.0"): the release the entry's capacity
    was read from, so ``check-config --engine vllm==0.33.0`` applies the obligation (and no other
    release does); (None, None) for a name of another form (a test fixture)."""
    match = re.fullmatch(r"([a-z][a-z-]*)-(\d+(?:\.\d+)*)\.json", os.path.basename(inventory))
    return (match.group(1), match.group(2)) if match else (None, None)


def _formula(family: Family, demand_params: Sequence[str], entry: Entry, dim: int, binding: Mapping[str, str]) -> str:
    """The claim of a generated obligation as reviewers read it (proofs/): the family's demand as
    written in spec/_families.py, the inventory's shape of the capacity dimension with the
    aliases its names are bound to, and the relation."""
    from capproof.obligation import function_source

    body = function_source(family.demand) or ""
    if body.startswith("return ") and "\n" not in body:
        body = body[len("return ") :]
    if not body or "\n" in body:
        body = f"{family.demand.__name__}({', '.join(demand_params)})"
    cap = f"{entry.attribute}[{dim}]"
    lines = [f"{family.demand_name} = {body}  # demand family {family.name!r}"] if body != family.demand_name else []
    lines.append(f"{cap} = {entry.shape[dim]}  # {entry.how} from {entry.file}:{entry.line}")
    lines += [f"{name} = {expr}" for name, expr in binding.items() if expr != name]
    rel = f"{family.demand_name} <= {cap}" if family.relation == "at_most" else f"0 <= {family.demand_name} < {cap}"
    return "\n".join([*lines, rel])


@dataclass
class _Where:
    filename: str
    lineno: int


def _bind(binding: Mapping[str, str], kw: Mapping[str, object]) -> dict[str, object]:
    """The shape's names bound to values: each name's expression (itself, or an alias) evaluated."""
    return {
        n: (kw[e] if e in kw else evaluate(e, **{t: kw[t] for t in expression_names(e)})) for n, e in binding.items()
    }


_bind.__capproof_glue__ = True  # plumbing, not a formula: proofs/ does not list it among the models


def _with_capacity(fact: Callable[..., object], ents, entry_id: str, dim: int, binding: Mapping[str, str]):
    """``fact`` as a function of domain names only: a parameter named ``capacity`` is bound to the
    entry's capacity (for writers guarded by the allocation's own size, e.g. ``if n <= self.size``)."""
    params = list(inspect.signature(fact).parameters)
    if "capacity" not in params:
        return fact
    others = [p for p in params if p != "capacity"]
    needed = list(dict.fromkeys([*others, *(t for e in binding.values() for t in expression_names(e))]))

    def bound(**kw):
        cap = capacity(ents, entry_id, dim, **_bind(binding, kw))
        return fact(capacity=cap, **{p: kw[p] for p in others})

    return _signed(bound, needed)


def _missing(inventory: str, entry_id: str, family: Family, caller, problem: str, name: str | None = None):
    """An ``error`` obligation for an entry that cannot be checked (``problem`` says why)."""

    def claim(**kw):  # pragma: no cover - never run: the obligation has a problem
        raise AssertionError

    claim.__name__ = name or f"{family.name}__{_ident(entry_id)}"
    _signed(claim, list(family.domain))
    ob = obligation(domain=dict(family.domain), covers=[entry_id], sources=[f"inventory: {inventory}::{entry_id}"])(
        claim
    )
    ob.problems.append(problem)
    ob.file = os.path.relpath(caller.filename)
    ob.line = caller.lineno
    return ob
