"""Coverage: which inventory entries (pre-allocated engine buffers) have a verdict.

Inputs are two JSON documents, both committed or produced by ``make verify``:

- an **inventory** (``proofs/inventory/vllm-0.33.0.json``, written by ``capproof inventory``): a list
  of entries ``{"id": "<file in the wheel>::<Owner>.<attribute>", "file", "line", "owner",
  "attribute", "dtype", "shape", "how": "traced"|"read", "why", "sized_by", "params",
  "verdicts": {}}``;
- a **run** (``capproof prove --json``, ``.capproof/last-run.json``) whose obligations carry
  ``covers`` (the entry ids of ``@obligation(covers=[...])``).

An entry is **covered** when some obligation covering it was decided (verdict ``proved`` or
``counterexample``); it is **undecided** when its obligations are only ``unknown``/``vacuous``/
``error``, and **uncovered** when no obligation names it. "Capacity traced" counts covered entries
whose capacity is traced (``how == "traced"``) and whose obligation takes that capacity from the
inventory (a source ``inventory: <path>::<entry id>``, written by the spec helpers that call
``capproof.inventory.capacity``).

Covered is not safe. Each entry also gets one **kind** (:data:`KINDS`, :func:`kind_of`), the
headline being ``verified``:

- ``verified``: for *every* dimension of the shape, a proved obligation without an assumption
  that restates its claim (the prover's ``restating_assumptions``) takes that dimension's demand
  from the inventory (a source ``demand: <path>::<entry id>[<dim>]``), and the inventory derived
  that demand from the engine's own access sites (``demands[dim].how`` ``executed`` or ``ast``);
- ``counterexample``: some covering obligation found one (a finding, not a verification);
- ``proved, demand modelled``: proved, no restating assumption, but some dimension's demand is a
  spec-side model rather than derived from the engine's accesses;
- ``proved on an assumed fact``: the demand is derived on every dimension, but each such proof
  rests on a named assumption (in its unsat core) that no obligation over the engine's code
  checked, e.g. ``assumed: backend_bs <= padded_bs`` where the call chain crosses files: an
  unchecked fact never counts toward coverage;
- ``shape-only``: every proof rests on an assumption that restates the claim: what was checked
  is the allocation's shape against a config value (capacity >= max_num_reqs, say), with the
  demand bound itself assumed;
- ``undecided`` / ``uncovered`` as above.

An engine may report its headline over its **index buffers** (``headline_dtypes``: the element
types of an index/size buffer, e.g. SGLang's integer and bool buffers): the summary line then
starts with the verified share of the entries of those dtypes and keeps the all-entries counts
after it; without ``headline_dtypes`` (vLLM) the headline is over all entries.

Facts a proof rests on (its named assumptions in the unsat core) are listed as **assumed**, with
the engine paths their sources cite and that no obligation checked (:meth:`Coverage.assumed`).

Outputs: ``proofs/coverage.md`` (:func:`render_markdown`) and the ``verdicts`` field of each entry
(:func:`fill_verdicts`: obligation id -> verdict; every other field untouched). Nothing here proves:
it reads results. Errors: :class:`CoverageInputError` for a file that is not an inventory or a run.
"""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable

from . import facts as _facts
from .errors import CapproofError

__all__ = [
    "CoverageInputError",
    "EntryCoverage",
    "Coverage",
    "read_inventory",
    "read_run",
    "compute",
    "render_markdown",
    "fill_verdicts",
    "inventory_text",
    "categories_of",
    "dimension_kinds",
    "is_block_table",
    "INVENTORY_SOURCE_PREFIX",
    "DEFAULT_INVENTORY",
    "COVERAGE_REPORT",
    "KINDS",
    "assumed_facts",
    "kind_of",
    "DEMAND_SOURCE_PREFIX",
    "OTHER_INVENTORIES",
]

#: The committed inventory ``make verify`` checks coverage against.
DEFAULT_INVENTORY = os.path.join("proofs", "inventory", "vllm-0.33.0.json")
#: The other engines' committed inventories whose coverage the default report also lists.
OTHER_INVENTORIES = (os.path.join("proofs", "inventory", "sglang-0.5.23.json"),)
#: The generated coverage report.
COVERAGE_REPORT = os.path.join("proofs", "coverage.md")
#: A ``sources`` item of this form says the claim's capacity is read from that inventory entry.
INVENTORY_SOURCE_PREFIX = "inventory: "

#: A ``sources`` item of this form (``demand: <path>::<entry id>[<dim>]``) says the claim's demand
#: along that dimension is read from the inventory entry's derived ``demands``.
DEMAND_SOURCE_PREFIX = "demand: "

DECIDED = ("proved", "counterexample")

#: An entry's kind, best first (see the module docstring); only ``verified`` is the headline.
KINDS = (
    "verified",
    "counterexample",
    "proved, demand modelled",
    "proved on an assumed fact",
    "shape-only",
    "undecided",
    "uncovered",
)
#: How a derived demand was found: by running the engine's code on symbolic sizes, or by reading it.
DERIVED_HOW = ("executed", "ast")


def _ndims(entry: dict[str, Any]) -> int:
    shape = entry.get("shape")
    return len(shape) if isinstance(shape, list) else 1


def derived_dims(entry: dict[str, Any]) -> set[int]:
    """Dimensions whose demand the inventory derived from the engine's access sites
    (``demands``: a list of ``{"dim", "extent", "how", ...}``, how in :data:`DERIVED_HOW`). A demand
    with ``unchecked_uses`` (uses of the buffer in other files its derivation did not judge) or
    ``not_derived_for`` (configurations its derivation did not run, e.g. a kind of KV cache group)
    is not counted: its extent misses those uses or configurations."""
    out = set()
    for d in entry.get("demands") or []:
        if (
            isinstance(d, dict)
            and d.get("how") in DERIVED_HOW
            and d.get("extent")
            and isinstance(d.get("dim"), int)
            and not d.get("unchecked_uses")
            and not d.get("not_derived_for")
        ):
            out.add(d["dim"])
    return out


def demand_dims(entry_id: str, sources: Iterable[str]) -> set[int]:
    """Dimensions whose demand an obligation reads from the inventory (its ``demand: …::id[d]`` sources)."""
    out = set()
    for s in sources:
        if s.startswith(DEMAND_SOURCE_PREFIX):
            m = re.search(r"::(.+)\[(\d+)\]$", s)
            if m and m.group(1) == entry_id:
                out.add(int(m.group(2)))
    return out


def kind_of(entry: dict[str, Any], obligations: Iterable[dict[str, Any]], discharged: Iterable[str] = ()) -> str:
    """The entry's kind (:data:`KINDS`) from the run records of the obligations covering it (each
    with ``verdict``, ``restating_assumptions`` and ``sources``). ``discharged``: named assumptions
    that are engine facts checked on every path for this entry (:func:`capproof.facts.discharged`):
    they neither restate a claim nor count as assumed. Also used by ``check-config`` on the
    obligations it applied at a deployment's flags."""
    done = set(discharged)
    obs = list(obligations)
    if not obs:
        return "uncovered"
    if any(o.get("verdict") == "counterexample" for o in obs):
        return "counterexample"
    proved = [o for o in obs if o.get("verdict") == "proved"]
    if not proved:
        return "undecided"
    honest = [o for o in proved if not [a for a in o.get("restating_assumptions") or [] if a not in done]]
    if not honest:
        return "shape-only"
    want = set(range(_ndims(entry)))
    derived = derived_dims(entry)
    dims, dims_assumed = set(), set()
    for o in honest:
        read = demand_dims(entry["id"], o.get("sources", [])) & derived
        if assumed_facts(o, done):
            dims_assumed |= read
        else:
            dims |= read
    if dims and want <= dims:
        return "verified"
    if want <= dims | dims_assumed:
        return "proved on an assumed fact"
    return "proved, demand modelled"


def dimension_kinds(
    entry: dict[str, Any], obligations: Iterable[dict[str, Any]], discharged: Iterable[str] = ()
) -> dict[int, str]:
    """Per dimension of the entry's shape, how far its demand is checked (the per-dimension view of
    :func:`kind_of`): ``verified`` (a proved obligation with no restating or assumed fact reads the
    dimension's derived demand), ``on an assumed fact`` (the same, but the proof rests on a fact
    nothing checked), ``derived, not proved`` (the inventory derived the demand; no such proof reads
    it) or ``not derived`` (no demand from the engine's code for that dimension)."""
    done = set(discharged)
    derived = derived_dims(entry)
    dims, dims_assumed = set(), set()
    for o in obligations:
        if o.get("verdict") != "proved":
            continue
        if [a for a in o.get("restating_assumptions") or [] if a not in done]:
            continue
        read = demand_dims(entry["id"], o.get("sources", [])) & derived
        (dims_assumed if assumed_facts(o, done) else dims).update(read)
    out = {}
    for d in range(_ndims(entry)):
        if d in dims:
            out[d] = "verified"
        elif d in dims_assumed:
            out[d] = "on an assumed fact"
        elif d in derived:
            out[d] = "derived, not proved"
        else:
            out[d] = "not derived"
    return out


#: Block tables whose attribute does not say so: the field of a buffer dataclass the inventory
#: numbers (``AiterMLADCPVerifyMetadata(block_table=torch.zeros((rows, max_local_pages)))``).
BLOCK_TABLE_IDS = ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py::AiterMLAMetadataBuilder._dcp_verify_buffers#2",)


def is_block_table(entry: dict[str, Any]) -> bool:
    """A block-table-like entry: a table of block ids per request (its attribute names a block
    table, or it is in :data:`BLOCK_TABLE_IDS`) with at least two dimensions; its last dimension
    is its columns."""
    attribute = entry["id"].rpartition("::")[2].rpartition(".")[2]
    return ("block_table" in attribute or entry["id"] in BLOCK_TABLE_IDS) and _ndims(entry) >= 2


def assumed_facts(record: dict[str, Any], discharged: Iterable[str] = ()) -> list[str]:
    """The named assumptions a proved obligation's unsat core used (``assumptions_used`` that are
    among its ``assumptions``; the domain's own bounds are not named assumptions) and that are not
    in ``discharged`` (engine facts checked on every path): facts about the engine that nothing
    checked, so its proof is not a verification."""
    named = record.get("assumptions") or []
    done = set(discharged)
    return [a for a in record.get("assumptions_used") or [] if a in named and a not in done]


#: What sizes a buffer, by the config or model name that appears in its shape (the
#: inventory's categories). A name not listed here is "other".
CATEGORY_OF_NAME = {
    "max_num_batched_tokens": "tokens",
    "max_num_tokens": "tokens",
    "max_num_scheduled_tokens": "tokens",
    "max_model_len": "blocks",
    "block_size": "blocks",
    "dcp": "blocks",
    "max_num_blocks": "blocks",
    "max_num_blocks_per_req": "blocks",
    "kernel_block_size": "blocks",
    "block_table_width": "blocks",
    "max_num_reqs": "requests",
    "max_num_seqs": "requests",
    "num_speculative_tokens": "speculative slots",
    "num_lookahead_tokens": "speculative slots",
    "num_experts": "experts",
    "local_num_experts": "experts",
    "topk": "experts",
    "top_k": "experts",
    "numel": "experts",
    "num_tokens_post_pad": "experts",
    "max_num_tokens_padded": "experts",
    "num_sms": "SM count",
    "sm_count": "SM count",
    "num_compute_units": "SM count",
    "workspace_bytes": "bytes",
    "workspace_size": "bytes",
    "bytes": "bytes",
    # local names of read shapes (the allocation's own variable), by what they hold
    "max_tokens": "tokens",
    "max_positions": "tokens",
    "max_num_tokens_3d": "tokens",
    "max_padded_query_tokens": "tokens",
    "max_batch_size": "requests",
    "decode_cudagraph_max_bs": "requests",
    "max_num_logits": "requests",
    "max_num_pages": "blocks",
    "num_gpu_blocks": "blocks",
    "num_window_blocks": "blocks",
    "max_local_pages": "blocks",
    "num_speculative_steps": "speculative slots",
    "num_spec": "speculative slots",
    "next_n": "speculative slots",
    "max_num_sampled_tokens": "speculative slots",
    "max_num_m_blocks": "experts",
    "max_num_sm_parts": "SM count",
    "buffer_size": "bytes",
    "min_bytes": "bytes",
    "required_bytes": "bytes",
    "initial_workspace_size": "bytes",
    "_WORKSPACE_BYTES": "bytes",
    "VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE": "bytes",
}
CATEGORIES = ("requests", "tokens", "blocks", "speculative slots", "experts", "SM count", "bytes", "other")


class CoverageInputError(CapproofError):
    """An inventory or run file that cannot be read or has the wrong form (one line, exit 2)."""


@dataclass
class EntryCoverage:
    """One inventory entry and the obligations that cover it (run-JSON records, in run order)."""

    entry: dict[str, Any]
    obligations: list[dict[str, Any]] = field(default_factory=list)
    #: named assumptions that are engine facts checked on every path for this entry
    discharged: frozenset = frozenset()

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def status(self) -> str:
        """``counterexample`` (some covering obligation found one), ``proved`` (every covering
        obligation proved), ``undecided`` (only unknown/vacuous/error) or ``uncovered``."""
        verdicts = [o["verdict"] for o in self.obligations]
        if not verdicts:
            return "uncovered"
        if "counterexample" in verdicts:
            return "counterexample"
        if all(v == "proved" for v in verdicts):
            return "proved"
        return "undecided" if not any(v in DECIDED for v in verdicts) else "partly undecided"

    @property
    def covered(self) -> bool:
        return any(o["verdict"] in DECIDED for o in self.obligations)

    @property
    def traced_capacity(self) -> bool:
        """Covered by a decided obligation that takes this entry's capacity from the inventory,
        and the inventory traced the shape from the engine's code (``how == "traced"``)."""
        if self.entry.get("how") != "traced":
            return False
        tag = INVENTORY_SOURCE_PREFIX
        return any(
            o["verdict"] in DECIDED
            and any(s.startswith(tag) and s.endswith("::" + self.id) for s in o.get("sources", []))
            for o in self.obligations
        )

    def verdicts(self) -> dict[str, str]:
        return {o["id"]: o["verdict"] for o in self.obligations}

    @property
    def kind(self) -> str:
        """One of :data:`KINDS` (:func:`kind_of`)."""
        return kind_of(self.entry, self.obligations, self.discharged)


@dataclass
class Coverage:
    inventory_path: str
    entries: list[EntryCoverage]
    #: covers= ids of the run that name no entry of this inventory: {obligation id: [ids]}
    unknown_ids: dict[str, list[str]] = field(default_factory=dict)
    #: the engine facts of this inventory (:mod:`capproof.facts`), checked or not
    facts: list[dict[str, Any]] = field(default_factory=list)
    #: element types of the engine's index buffers when its headline is over them (else None: all entries)
    headline_dtypes: frozenset | None = None

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def covered(self) -> int:
        return sum(e.covered for e in self.entries)

    @property
    def traced(self) -> int:
        return sum(e.traced_capacity for e in self.entries)

    def kinds(self, entries: "Iterable[EntryCoverage] | None" = None) -> "OrderedDict[str, int]":
        """``{kind: number of entries}`` for every kind of :data:`KINDS`, in that order (over
        ``entries``, by default all)."""
        out = OrderedDict((k, 0) for k in KINDS)
        for e in self.entries if entries is None else entries:
            out[e.kind] += 1
        return out

    def index_buffers(self) -> list[EntryCoverage]:
        """The entries whose dtype is one of :attr:`headline_dtypes` (``[]`` when it is None)."""
        dtypes = self.headline_dtypes or frozenset()
        return [e for e in self.entries if e.entry.get("dtype") in dtypes]

    @property
    def verified(self) -> int:
        return sum(e.kind == "verified" for e in self.entries)

    def assumed(self) -> "OrderedDict[str, dict[str, Any]]":
        """Every named fact a proof of this run rests on (in the unsat core of a proved obligation
        covering an entry), most entries first: ``{fact: {"entries": n, "restates": bool (it
        restates the claim of some obligation), "paths": [engine sources cited, not checked]}}``.
        None of them is checked by capproof: each is an assumption about the engine's code."""
        facts: dict[str, dict[str, Any]] = {}
        for e in self.entries:
            for o in e.obligations:
                if o.get("verdict") != "proved":
                    continue
                for a in o.get("assumptions_used", []):
                    if a not in o.get("assumptions", []) or a in e.discharged:
                        continue
                    row = facts.setdefault(a, {"entries": set(), "restates": False, "paths": []})
                    for f in _facts.facts_for(self.facts, a, _entry_file(e.entry), e.id):
                        for p in _facts.unchecked_paths(f):
                            item = f"{p['site']} [{p['result']}: {p['why'][:80]}]" if p.get("why") else p["site"]
                            if item not in row["paths"]:
                                row["paths"].insert(0, item)
                    row["entries"].add(e.id)
                    row["restates"] |= a in (o.get("restating_assumptions") or [])
                    for s in o.get("sources", []):
                        if _ENGINE_SOURCE.match(s) and s not in row["paths"]:
                            row["paths"].append(s)
        # facts the inventory's derivations record (``demands[].facts``) and did not check on every path
        for e in self.entries:
            for d in e.entry.get("demands") or []:
                for f in d.get("facts") or []:
                    if f.get("checked"):
                        continue
                    row = facts.setdefault(f"assumed: {f['fact']}", {"entries": set(), "restates": False, "paths": []})
                    row["entries"].add(e.id)
                    for kind, paths in (f.get("paths") or {}).items():
                        for p in paths:
                            item = f"{p} [{kind}]"
                            if item not in row["paths"]:
                                row["paths"].append(item)
        ordered = sorted(facts.items(), key=lambda kv: (-len(kv[1]["entries"]), kv[0]))
        return OrderedDict((k, {**v, "entries": len(v["entries"])}) for k, v in ordered)

    def fact_entries(self) -> dict[int, set[str]]:
        """``{index of a fact in self.facts: ids of the entries whose proofs name one of its
        assumptions and are in its scope}``."""
        out: dict[int, set[str]] = {i: set() for i in range(len(self.facts))}
        for e in self.entries:
            used = {a for o in e.obligations if o.get("verdict") == "proved" for a in o.get("assumptions_used", [])}
            for i, f in enumerate(self.facts):
                if used & set(f.get("assumptions") or []) and _facts.in_scope(f, _entry_file(e.entry), e.id):
                    out[i].add(e.id)
        return out

    def by_kind(self, key) -> dict[str, tuple[int, int]]:
        """``{group: (verified, shape-only)}``; ``key(entry) -> [groups]``."""
        out: dict[str, list[int]] = {}
        for e in self.entries:
            k = e.kind
            for g in key(e.entry):
                row = out.setdefault(g, [0, 0])
                row[0] += k == "verified"
                row[1] += k == "shape-only"
        return {g: (v[0], v[1]) for g, v in out.items()}

    def uncovered(self) -> list[EntryCoverage]:
        return [e for e in self.entries if not e.covered]

    def by(self, key) -> "OrderedDict[str, tuple[int, int, int]]":
        """``{group: (covered, traced-capacity covered, total)}``; ``key(entry) -> [groups]``."""
        out: dict[str, list[int]] = {}
        for e in self.entries:
            for g in key(e.entry):
                row = out.setdefault(g, [0, 0, 0])
                row[0] += e.covered
                row[1] += e.traced_capacity
                row[2] += 1
        return OrderedDict((g, tuple(out[g])) for g in sorted(out, key=_group_order))

    def summary_line(self) -> str:
        """The headline: over the index buffers first when :attr:`headline_dtypes` is set, then
        over all entries."""
        k = self.kinds()
        head = ""
        if self.headline_dtypes is not None:
            idx = self.index_buffers()
            ki = self.kinds(idx)
            head = (
                f"verified: {ki['verified']}/{len(idx)} index buffers ({_pct(ki['verified'], len(idx))}; dtype "
                f"{', '.join(sorted(self.headline_dtypes))}); proved on an assumed fact {ki['proved on an assumed fact']}; "
                f"uncovered {ki['uncovered']}. All entries: "
            )
        return head + (
            f"verified: {k['verified']}/{self.total} entries ({_pct(k['verified'], self.total)}: demand derived from "
            f"the engine's accesses on every dimension, no assumption restating the claim); "
            f"counterexample {k['counterexample']}; proved on a modelled demand {k['proved, demand modelled']}; "
            f"proved on an assumed fact {k['proved on an assumed fact']} (a derived demand, an unchecked fact); "
            f"shape-only {k['shape-only']} (capacity >= a config value, demand bound assumed); "
            f"undecided {k['undecided']}; uncovered {k['uncovered']}"
        )


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "n/a"


def _group_order(g: str):
    return (CATEGORIES.index(g) if g in CATEGORIES else -1, g)


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
#: A source citing an engine release's code (``vllm==0.33.0 vllm/v1/...:123 (...)``).
_ENGINE_SOURCE = re.compile(r"^[a-z][a-z-]*==\S+ ")


def categories_of(entry: dict[str, Any]) -> list[str]:
    """What sizes the buffer: the inventory's categories named by ``sized_by`` (category words or
    config names) and by the names in its shape and ``params`` (:data:`CATEGORY_OF_NAME`, which
    also knows the local names of read shapes); ``["other"]`` when none is known."""
    names = list(entry.get("sized_by") or []) + list(entry.get("params") or [])
    for dim in entry.get("shape") or []:
        names += _NAME.findall(str(dim))
    found: list[str] = []
    for item in names:
        cat = item if item in CATEGORIES else CATEGORY_OF_NAME.get(item)
        if cat and cat not in found:
            found.append(cat)
    return sorted(found, key=CATEGORIES.index) or ["other"]


def _entry_file(entry: dict[str, Any]) -> str:
    return entry.get("file") or entry["id"].split("::")[0]


def directory_of(entry: dict[str, Any]) -> list[str]:
    return [os.path.dirname(entry.get("file") or entry["id"].split("::")[0])]


def _read_json(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise CoverageInputError(f"{what} {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CoverageInputError(f"{what} {path}: not JSON ({exc})") from None


def read_inventory(path: str) -> list[dict[str, Any]]:
    """The entries of an inventory JSON file (a list of entries, or ``{"entries": [...]}``).

    Raises :class:`CoverageInputError` when an entry has no string ``id`` or ids repeat."""
    data = _read_json(path, "inventory")
    entries = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise CoverageInputError(f"inventory {path}: not a list of entries")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("id"), str):
            raise CoverageInputError(f"inventory {path}: entry {i} has no string 'id'")
        if e["id"] in seen:
            raise CoverageInputError(f"inventory {path}: id {e['id']!r} repeats")
        seen.add(e["id"])
    return entries


def read_run(path: str) -> dict[str, Any]:
    """A ``capproof prove --json`` document. Raises :class:`CoverageInputError` otherwise, and for a
    pinned run (its verdicts are about a slice of the domain, not the obligation)."""
    data = _read_json(path, "run")
    if not isinstance(data, dict) or not isinstance(data.get("obligations"), list):
        raise CoverageInputError(f"run {path}: not a `capproof prove --json` file (no obligations list)")
    if any(o.get("pins") for o in data["obligations"]):
        raise CoverageInputError(f"run {path}: comes from a pinned run; coverage needs an unpinned one")
    return data


def compute(
    entries: Iterable[dict[str, Any]],
    run_json: dict[str, Any],
    inventory_path: str = "",
    facts: list[dict[str, Any]] | None = None,
    headline_dtypes: Iterable[str] | None = None,
) -> Coverage:
    """Join inventory entries with the run's obligations by ``covers`` (see the module docstring).
    ``facts``: the engine facts (:mod:`capproof.facts`); by default read from the file next to
    ``inventory_path`` (:func:`capproof.facts.facts_path`, none when it does not exist).
    ``headline_dtypes``: report the headline over the entries of these dtypes (the engine's index
    buffers) before the all-entries counts; None keeps it over all entries.
    Raises :class:`CoverageInputError` for a facts file of the wrong form."""
    if facts is None:
        try:
            facts = _facts.read(_facts.facts_path(inventory_path)) if inventory_path else []
        except _facts.FactsInputError as exc:
            raise CoverageInputError(str(exc)) from None
    cov = Coverage(
        inventory_path,
        [
            EntryCoverage(dict(e), discharged=frozenset(_facts.discharged(facts, _entry_file(e), e.get("id"))))
            for e in entries
        ],
        facts=list(facts),
        headline_dtypes=frozenset(headline_dtypes) if headline_dtypes is not None else None,
    )
    index = {e.id: e for e in cov.entries}
    for ob in run_json.get("obligations", []):
        stray = []
        for ident in ob.get("covers") or []:
            if ident in index:
                index[ident].obligations.append(ob)
            else:
                stray.append(ident)
        if stray:
            cov.unknown_ids[ob["id"]] = stray
    return cov


def fill_verdicts(entries: list[dict[str, Any]], cov: Coverage) -> list[dict[str, Any]]:
    """Copies of ``entries`` with ``verdicts`` = {obligation id: verdict} sorted by id (``{}`` when
    uncovered; sorted as ``capproof inventory --write`` writes them, so neither tool makes the
    other's committed file stale) and ``coverage`` = the entry's kind (:data:`KINDS`, set only
    where the entry has the field, as the current inventory format does); every other field and
    the key order kept."""
    by_id = {e.id: e for e in cov.entries}
    out = []
    for e in entries:
        new = dict(e)
        new["verdicts"] = dict(sorted(by_id[e["id"]].verdicts().items())) if e["id"] in by_id else {}
        if "coverage" in new:
            new["coverage"] = by_id[e["id"]].kind if e["id"] in by_id else "uncovered"
        out.append(new)
    return out


def inventory_text(original_text: str, entries: list[dict[str, Any]]) -> str:
    """``entries`` serialised like ``original_text`` (its indentation, list or ``{"entries": …}``
    form, other top-level keys kept), so only the ``verdicts`` fields change in a diff."""
    data = json.loads(original_text)
    indent = _indent_of(original_text)
    if isinstance(data, dict):
        data = dict(data)
        data["entries"] = entries
    else:
        data = entries
    ascii_only = original_text.isascii()
    return json.dumps(data, indent=indent, ensure_ascii=ascii_only) + ("\n" if original_text.endswith("\n") else "")


def _indent_of(text: str) -> int | None:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) != len(line):
            return len(line) - len(stripped)
    return None


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _shape(entry: dict[str, Any]) -> str:
    shape = entry.get("shape")
    if isinstance(shape, list):
        return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    return str(shape)


def _scope_text(fact: dict[str, Any]) -> str:
    """A fact's scope for the table: its files and directories, and its entry ids as a count per file."""
    scope = fact.get("scope") or []
    files = [s for s in scope if "::" not in s]
    ids: dict[str, int] = {}
    for s in scope:
        if "::" in s:
            ids[s.split("::", 1)[0]] = ids.get(s.split("::", 1)[0], 0) + 1
    return ", ".join(files + [f"{n} entries of {f}" for f, n in sorted(ids.items())])


def _engine_fact_lines(cov: Coverage) -> list[str]:
    """The "Engine facts" section: each fact with its status, scope, paths and counterexamples."""
    per = cov.fact_entries()
    lines = [
        f"## Engine facts ({len(cov.facts)})",
        "",
        "Named assumptions checked as obligations over the engine's code (`capproof inventory`, "
        f"`{_facts.facts_path(cov.inventory_path)}`): one path per site that sets the quantity, judged by running the "
        "engine's code (`executed`) or reading its source (`ast`). A **checked** fact no longer counts as an "
        "assumption for the entries in its scope; an **assumed** or **refuted** one still does.",
        "",
        "| fact | status | scope | paths checked (executed / ast) | not checked or refuted | counterexamples | entries resting on it |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, f in enumerate(cov.facts):
        paths = f.get("paths") or []
        ok = [p for p in paths if p.get("result") == "checked"]
        ex = sum(p.get("how") == "executed" for p in ok)
        bad = _facts.unchecked_paths(f)
        shown = "; ".join(p["site"] for p in bad[:6]) + (f"; … {len(bad) - 6} more" if len(bad) > 6 else "")
        lines.append(
            f"| {_md_cell(f['fact'])} | {_facts.status(f)} | {_md_cell(_scope_text(f))} | "
            f"{len(ok)} ({ex} / {len(ok) - ex}) | {len(bad)}{': ' + _md_cell(shown) if bad else ''} | "
            f"{len(f.get('counterexamples') or [])} | {len(per.get(i, ()))} |"
        )
    lines.append("")
    return lines


def _column_lines(cov: Coverage) -> list[str]:
    """The block-table columns section: each block-table-like entry, its width, whether some
    obligation claims its columns and how far that dimension is checked."""
    rows = [e for e in cov.entries if is_block_table(e.entry)]
    if not rows:
        return []
    claimed = verified = 0
    body = []
    for e in rows:
        col = _ndims(e.entry) - 1
        kinds = dimension_kinds(e.entry, e.obligations, e.discharged)
        claims = [
            o["id"].split("::")[-1]
            for o in e.obligations
            if o.get("verdict") in DECIDED and col in demand_dims(e.id, o.get("sources", []))
        ]
        claimed += bool(claims)
        verified += e.kind == "verified"
        width = (e.entry.get("shape") or ["?"])[col]
        body.append(
            f"| `{e.id.rpartition('::')[2]}` | `{_md_cell(width)}` | "
            + (", ".join(f"`{c}`" for c in claims) or "none")
            + f" | {kinds[col]} | "
            + ", ".join(f"{d}: {k}" for d, k in kinds.items() if d != col)
            + f" | {e.kind} |"
        )
    return [
        f"## Block-table columns ({len(rows)} entries)",
        "",
        f"Entries holding block ids per request (the attribute names a block table, two or more dimensions; the last is "
        f"the columns). A column claim is an obligation reading the column dimension's derived demand. With a column "
        f"claim: {claimed}/{len(rows)}; verified on every dimension: {verified}/{len(rows)}.",
        "",
        "| entry | width | column claim | columns | other dimensions | kind |",
        "|---|---|---|---|---|---|",
        *body,
        "",
    ]


def _index_lines(cov: Coverage) -> list[str]:
    """The kinds over the index buffers (:attr:`Coverage.headline_dtypes`), when the headline is over them."""
    if cov.headline_dtypes is None:
        return []
    idx = cov.index_buffers()
    return [
        f"Index buffers (the headline; dtype {', '.join(sorted(cov.headline_dtypes))}): {len(idx)} of the "
        f"{cov.total} entries.",
        "",
        "| kind | index buffers | share |",
        "|---|---|---|",
        *(f"| {k} | {n} | {_pct(n, len(idx))} |" for k, n in cov.kinds(idx).items()),
        "",
    ]


def render_markdown(cov: Coverage) -> str:
    """The text of ``proofs/coverage.md``: summary, tables by category and directory, then every
    entry with its obligations, verdicts and the facts each proof rests on, or **uncovered**."""
    kinds = cov.kinds()
    lines = [
        "# Coverage: every inventory entry and its verdict",
        "",
        "Generated by `capproof coverage --write`; do not edit. `make verify` fails when this file is stale.",
        "",
        f"Inventory: `{cov.inventory_path}`. An entry is **verified** when, for every dimension of its shape, a proved "
        "obligation without an assumption restating its claim reads that dimension's demand from the inventory, and the "
        "inventory derived the demand from the engine's own access sites (`demands`, how `executed` or `ast`). "
        "**Shape-only** entries are proved only by obligations whose assumption restates the claim (the capacity is "
        "checked against a config value; that the demand stays within it is assumed): they are not verified. "
        '"Proved, demand modelled" means proved without a restating assumption, on a demand written in spec/ '
        'rather than derived from the engine. "Proved on an assumed fact": the demand is derived, but the proof\'s unsat '
        "core uses a named fact about the engine that nothing checked (listed below with its paths); not verified. Covered = some obligation naming the entry is proved or finds a "
        'counterexample; "capacity traced" = the inventory traced the shape from the engine\'s code and the '
        "obligation reads it from there.",
        "",
        f"**{cov.summary_line()}**",
        "",
        "| kind | entries | share |",
        "|---|---|---|",
        *(f"| {k} | {n} | {_pct(n, cov.total)} |" for k, n in kinds.items()),
        "",
        *_index_lines(cov),
        f"Covered (any decided verdict, the old headline): {cov.covered}/{cov.total}; capacity traced: "
        f"{cov.traced}/{cov.total}.",
        "",
    ]
    statuses: dict[str, int] = {}
    for e in cov.entries:
        statuses[e.status] = statuses.get(e.status, 0) + 1
    lines += ["Entries by status: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) + ".", ""]
    how: dict[str, int] = {}
    for e in cov.entries:
        how[str(e.entry.get("how"))] = how.get(str(e.entry.get("how")), 0) + 1
    lines += ["Shapes by how they were obtained: " + ", ".join(f"{k} {v}" for k, v in sorted(how.items())) + ".", ""]
    acc = sum(bool(e.entry.get("accesses")) for e in cov.entries)
    nacc = sum(len(e.entry.get("accesses") or []) for e in cov.entries)
    found: dict[str, int] = {}
    for e in cov.entries:
        for a in e.entry.get("accesses") or []:
            found[str(a.get("how"))] = found.get(str(a.get("how")), 0) + 1
    der = sum(bool(derived_dims(e.entry)) for e in cov.entries)
    full = sum(
        bool(derived_dims(e.entry)) and derived_dims(e.entry) >= set(range(_ndims(e.entry))) for e in cov.entries
    )
    lines += [
        f"Access sites recorded: {nacc} on {acc}/{cov.total} entries"
        + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(found.items())) + ")" if found else "")
        + f"; demand derived for some dimension of {der} entries, for every dimension of {full}.",
        "",
    ]
    for title, key in (
        ("What sizes the buffer (an entry counts under each)", categories_of),
        ("Directory", directory_of),
    ):
        lines += [
            f"| {title} | verified | shape-only | covered | capacity traced | total |",
            "|---|---|---|---|---|---|",
        ]
        ver = cov.by_kind(key)
        for g, (c, t, n) in cov.by(key).items():
            v, so = ver.get(g, (0, 0))
            lines.append(f"| {_md_cell(g)} | {v} | {so} | {c} ({_pct(c, n)}) | {t} | {n} |")
        lines.append("")
    lines += _column_lines(cov)
    if cov.facts:
        lines += _engine_fact_lines(cov)
    facts = cov.assumed()
    lines += [
        f"## Assumed facts ({len(facts)})",
        "",
        "Named facts the proofs rest on (in the unsat core of a proved obligation) that no obligation over the "
        "engine's code checked on every path, for the entries counted: each is **assumed**. Where an engine fact "
        "names the assumption, its paths not checked (or refuted) come first, then the engine paths the proofs cite.",
        "",
        "| fact | entries resting on it | restates a claim | paths cited, not checked |",
        "|---|---|---|---|",
    ]
    for fact, row in facts.items():
        paths = "; ".join(row["paths"][:6]) + (f"; … {len(row['paths']) - 6} more" if len(row["paths"]) > 6 else "")
        lines.append(
            f"| {_md_cell(fact)} | {row['entries']} | {'yes' if row['restates'] else 'no'} | {_md_cell(paths) or 'none cited'} |"
        )
    lines.append("")
    if cov.unknown_ids:
        lines += ["Obligations naming ids that are not in this inventory:", ""]
        lines += [f"- `{ob}`: " + ", ".join(f"`{i}`" for i in ids) for ob, ids in sorted(cov.unknown_ids.items())]
        lines.append("")
    unc = cov.uncovered()
    lines += [f"## Uncovered ({len(unc)})", ""]
    lines += [f"- `{e.id}` ({e.status})" for e in unc] or ["none"]
    lines += ["", "## Entries", ""]
    for e in cov.entries:
        ent = e.entry
        where = f"{ent.get('file', '')}:{ent.get('line', '')}"
        lines.append(f"### `{e.id}`")
        lines.append("")
        lines.append(
            f"- allocated: `{where}`, shape `{_shape(ent)}`, dtype `{ent.get('dtype')}`, "
            f"{ent.get('how')}" + (f" ({ent['why']})" if ent.get("why") and ent.get("how") != "traced" else "")
        )
        lines.append(f"- sized by: {', '.join(categories_of(ent))}")
        if not e.obligations:
            lines += ["- **uncovered**", ""]
            continue
        lines.append(
            f"- status: **{e.status}**, kind **{e.kind}**" + ("; capacity traced" if e.traced_capacity else "")
        )
        lines.append(
            "- dimensions: "
            + "; ".join(f"{d} {k}" for d, k in dimension_kinds(ent, e.obligations, e.discharged).items())
        )
        for o in e.obligations:
            name = o["id"].split("::")[-1]
            link = f"[`{name}`](../{o['file']}#L{o['line']})" if o.get("file") else f"`{o['id']}`"
            mark = "" if o.get("ok", True) else f" (expected {o['expect']})"
            lines.append(
                f"  - {link}: **{o['verdict']}**{mark}" + (f", claim `{o['relation']}`" if o.get("relation") else "")
            )
            named = [
                a + (" [checked engine fact]" if a in e.discharged else "")
                for a in o.get("assumptions_used", [])
                if a in o.get("assumptions", [])
            ]
            bounds = [a for a in o.get("assumptions_used", []) if a not in o.get("assumptions", [])]
            restating = [a for a in o.get("restating_assumptions") or [] if a not in e.discharged]
            if o["verdict"] == "proved" and restating:
                lines.append("    - shape-only: the assumption " + "; ".join(restating) + " restates the claim")
            if o["verdict"] == "proved":
                lines.append(
                    "    - rests on (assumed): "
                    + ("; ".join(named) if named else "no named fact")
                    + (f" (domain bounds: {'; '.join(f'`{b}`' for b in bounds)})" if bounds else "")
                )
            cex = o.get("counterexample")
            if cex:
                lines.append(
                    "    - counterexample: "
                    + ", ".join(f"{k}={v}" for k, v in {**cex["params"], **cex["values"]}.items())
                )
            if o["verdict"] not in DECIDED:
                lines.append(f"    - {_md_cell(o.get('message', ''))}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
