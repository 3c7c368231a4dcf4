"""The attention-metadata request count, split by which builders the chunked-local path reaches.

``CommonAttentionMetadata.num_reqs`` exceeds ``max_num_reqs`` on the chunked-local-attention path
(``make_local_attention_virtual_batches``: one virtual request per attention chunk a request's
tokens touch; finding 9). That path runs only inside the builder subclass that
``create_chunked_local_attention_backend`` (``vllm/model_executor/layers/attention/
chunked_local_attention.py``, vLLM 0.33.0) wraps around an underlying backend, and the underlying
backend is the one ``ChunkedLocalAttention.__init__`` gets from ``get_attn_backend(head_size,
dtype, kv_cache_dtype)``: ``use_mla`` and ``use_sparse`` left at their defaults (``False``). So
the builders it can reach are those of backends selectable for a non-MLA, non-sparse layer.

:func:`local_reach` establishes that, by reading and by running vLLM's code:

- **read** (AST, all of ``vllm/``): ``make_local_attention_virtual_batches`` is called only inside
  ``create_chunked_local_attention_backend``; that is called only in ``ChunkedLocalAttention.__init__``
  with an underlying backend bound only to ``get_attn_backend(...)`` with at most three positional
  arguments and no ``use_mla``/``use_sparse`` keyword;
- **executed**: ``get_attn_backend``'s defaults (``inspect.signature``); for every member of
  vLLM's ``AttentionBackendEnum`` whose class imports on this CPU (GPU-only packages replaced by
  the tracer's raising stand-ins, so the class's own code loads), ``is_mla()``, the builder class
  (``get_builder_cls()``) and its MRO, ``supports_pcp()``, and ``validate_configuration(use_mla=False,
  ...)`` at compute capabilities 8.0, 9.0, 10.0 and 12.0: an MLA backend is rejected ("non-MLA not
  supported"), which is how CUDA and ROCm selection (``--attention-backend`` or by priority) refuse
  it for a non-MLA layer; the CPU platform's ``get_attn_backend_cls`` run for every member;
- **read** for members whose class does not import here (CUTLASS MLA, FA MLA, ...): a class
  whose base, resolved through its module's imports, is an executed MLA backend class and that does
  not override ``is_mla``/``validate_configuration`` is MLA; any other is counted as reachable
  (conservative: its module stays in the chunked-local scope).

:func:`attention_facts` then gives two facts in place of one, with disjoint scopes (files under
``vllm/v1/attention/``): the files of builders the wrapper can reach (every builder in the MRO of a
reachable backend's builder, and the modules of reachable backends that do not import) keep the
refuted fact; every other file gets a fact whose chunked-local path is **checked** (not reached),
and both facts now also carry the **V2 runner**'s constructions of ``CommonAttentionMetadata``
(``gpu/attn_utils.py``, ``gpu/model_states/encoder_only.py``), judged by the V2 request-count
fact: its PCP local batch (``PCPManager``, up to ``2 * max_num_reqs`` requests, run on the CPU)
reaches ``build_attn_metadata`` as ``num_reqs`` (``model_states/default.py``: ``input_batch.num_reqs``
of the batch ``partition_batch`` returned), and PCP is allowed only with backends whose
``supports_pcp()`` holds (``cp_utils.py``: asserted per layer), which MLA backends do (executed).
So the split is supported for the chunked-local path, and the MLA builders' count is refuted by
the V2 runner's PCP path instead.

Errors: none raised; a derivation that cannot run records its paths as not checked.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys

from ...facts import fact_record, path_record
from ..tracing.accesses import compact_source as _src
from .wheels import py_files

__all__ = [
    "LOCAL_LAYER",
    "local_wrapper_sites",
    "wrapper_sites_read",
    "backend_classes",
    "local_reach",
    "attention_files",
    "compact",
    "v2_attention_paths",
    "attention_facts",
]

LOCAL_LAYER = "vllm/model_executor/layers/attention/chunked_local_attention.py"
ATTENTION_DIR = "vllm/v1/attention/"
V2_SITES = ("vllm/v1/worker/gpu/attn_utils.py", "vllm/v1/worker/gpu/model_states/encoder_only.py")
#: Compute capabilities the validation is run at (Ampere, Hopper, Blackwell, consumer Blackwell).
CAPABILITIES = ((8, 0), (9, 0), (10, 0), (12, 0))


def _enclosing(tree, lineno: int):
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= lineno <= (fn.end_lineno or 0):
            if best is None or fn.lineno >= best.lineno:
                best = fn
    return best


def local_wrapper_sites(root: str) -> tuple[bool, list[str]]:
    """``(ok, notes)``: the chunked-local path reaches only backends ``get_attn_backend`` returns for
    a layer with ``use_mla`` and ``use_sparse`` at their defaults (module docstring): the sources
    read (:func:`wrapper_sites_read`) and ``get_attn_backend``'s defaults (executed)."""
    bad, notes = wrapper_sites_read(root)
    try:
        from vllm.v1.attention.selector import get_attn_backend

        params = inspect.signature(get_attn_backend).parameters
        defaults = {k: params[k].default for k in ("use_mla", "use_sparse") if k in params}
        if defaults != {"use_mla": False, "use_sparse": False}:
            bad.append(f"get_attn_backend defaults are {defaults}")
        else:
            notes.append("get_attn_backend(use_mla=False, use_sparse=False) by default (executed: inspect.signature)")
    except Exception as exc:  # noqa: BLE001 - one note: the defaults were not read
        bad.append(f"get_attn_backend not imported: {type(exc).__name__}")
    return not bad, notes + [f"refused: {b}" for b in bad]


def wrapper_sites_read(root: str) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` of the read part (AST over ``vllm/``): ``make_local_attention_virtual_batches``
    is called only in a ``build`` of :data:`LOCAL_LAYER`; ``create_chunked_local_attention_backend``
    only in an ``__init__`` there, its first argument a name bound only to ``get_attn_backend(...)``
    with at most three positional arguments and no ``use_mla``/``use_sparse``/``**`` keyword."""
    notes, bad = [], []
    virtual, wrapper = [], []
    for rel, path in py_files(root):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if (
            "make_local_attention_virtual_batches(" not in text
            and "create_chunked_local_attention_backend(" not in text
        ):
            continue
        tree = ast.parse(text)
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            name = _src(call.func).rsplit(".", 1)[-1]
            if name not in ("make_local_attention_virtual_batches", "create_chunked_local_attention_backend"):
                continue
            fn = _enclosing(tree, call.lineno)
            (virtual if name.startswith("make_") else wrapper).append((rel, call, fn, tree))
    for rel, call, fn, _ in virtual:
        ok = rel == LOCAL_LAYER and fn is not None and fn.name == "build"
        (notes if ok else bad).append(
            f"{rel}:{call.lineno} make_local_attention_virtual_batches in {fn.name if fn else '?'}"
        )
    outer = None
    for rel, call, fn, _tree in wrapper:
        if rel != LOCAL_LAYER or fn is None or fn.name != "__init__" or not call.args:
            bad.append(f"{rel}:{call.lineno} create_chunked_local_attention_backend outside ChunkedLocalAttention")
            continue
        arg = call.args[0]
        sets = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and _src(t) == _src(arg) for t in n.targets)
        ]
        good = (
            isinstance(arg, ast.Name)
            and sets
            and all(
                isinstance(s.value, ast.Call)
                and _src(s.value.func).endswith("get_attn_backend")
                and len(s.value.args) <= 3
                and not any(k.arg in (None, "use_mla", "use_sparse") for k in s.value.keywords)
                for s in sets
            )
        )
        if good:
            notes.append(
                f"{rel}:{call.lineno} create_chunked_local_attention_backend({_src(arg)}), "
                + ", ".join(f":{s.lineno} {_src(arg)} = {ast.unparse(s.value)}" for s in sets)
            )
            outer = True
        else:
            bad.append(
                f"{rel}:{call.lineno} the wrapped backend is not get_attn_backend(head_size, dtype, kv_cache_dtype)"
            )
    if not virtual or not outer:
        bad.append("the chunked-local wrapper was not found")
    return bad, notes


def _validate_kwargs(cap):
    import torch
    from vllm.platforms.interface import DeviceCapability

    return dict(
        device_capability=DeviceCapability(*cap),
        head_size=128,
        dtype=torch.bfloat16,
        kv_cache_dtype="auto",
        block_size=None,
        use_mla=False,
        has_sink=False,
        use_sparse=False,
        use_mm_prefix=False,
        use_per_head_quant_scales=False,
        attn_type="decoder",
        has_sliding_window=False,
        use_non_causal=False,
        use_batch_invariant=False,
        use_kv_connector=False,
        use_pcp=False,
        use_adaptive_verification=False,
        use_dcp=False,
        use_rswa=False,
    )


def _rel_of(root: str, obj) -> str | None:
    try:
        path = inspect.getsourcefile(obj)
    except (TypeError, OSError):
        return None
    if not path:
        return None
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root)).replace(os.sep, "/")
    return None if rel.startswith("..") else rel


def _module_rel(root: str, dotted: str) -> str | None:
    rel = dotted.replace(".", "/") + ".py"
    return rel if os.path.exists(os.path.join(root, rel)) else None


def _ast_mla(root: str, dotted_path: str, mla_classes: dict[str, bool]) -> tuple[bool | None, str]:
    """Whether the class at ``dotted_path`` (``module.Class``) is MLA, read: its module's class
    definition has a base that the module imports from a class executed as MLA
    (``mla_classes``: ``module.Class`` -> ``is_mla()``), and the class overrides neither ``is_mla``
    nor ``validate_configuration``. ``None`` when that cannot be read."""
    module, _, name = dotted_path.rpartition(".")
    rel = _module_rel(root, module)
    if rel is None:
        return None, f"{module} not in the sources"
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None:
        return None, f"no class {name} in {rel}"
    if any(isinstance(f, ast.FunctionDef) and f.name in ("is_mla", "validate_configuration") for f in cls.body):
        return None, f"{name} overrides is_mla or validate_configuration"
    imports = {}
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                imports[a.asname or a.name] = f"{n.module}.{a.name}"
    for b in cls.bases:
        full = imports.get(_src(b))
        if full and mla_classes.get(full):
            return True, f"{rel}:{cls.lineno} {name}({_src(b)}), {full}.is_mla() is True (executed)"
    return None, f"{name}'s bases are not executed MLA classes"


def backend_classes(root: str) -> list[dict]:
    """One record per ``AttentionBackendEnum`` member (module docstring, executed part): ``name``,
    ``path``, ``how`` (``executed`` or ``ast`` or ``not read``), ``mla`` (True/False/None),
    ``rejects_non_mla`` (every validation at :data:`CAPABILITIES` says "non-MLA not supported"),
    ``supports_pcp``, ``files`` (the source files of every class in the builder's MRO, or the
    backend's module when the class does not import) and ``note``."""
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    out, mla_classes = [], {}
    for member in AttentionBackendEnum:
        rec = {"name": member.name, "path": None, "how": "not read", "mla": None, "rejects_non_mla": None}
        rec.update(supports_pcp=None, files=[], note="")
        try:
            rec["path"] = member.get_path()
        except Exception as exc:  # noqa: BLE001 - CUSTOM/TORCH_SDPA: registered by a plugin at run time
            rec["note"] = f"no class path ({type(exc).__name__}: registered at run time, not vLLM's code)"
            out.append(rec)
            continue
        try:
            cls = _import_class(member)
        except Exception as exc:  # noqa: BLE001 - the class needs a kernel library this CPU lacks
            rec["note"] = f"does not import here ({type(exc).__name__})"
            module = rec["path"].rpartition(".")[0]
            rel = _module_rel(root, module)
            rec["files"] = [rel] if rel else []
            out.append(rec)
            continue
        rec["how"] = "executed"
        rec["mla"] = bool(cls.is_mla())
        mla_classes[f"{cls.__module__}.{cls.__qualname__}"] = rec["mla"]
        reasons = []
        for cap in CAPABILITIES:
            try:
                reasons.append(cls.validate_configuration(**_validate_kwargs(cap)))
            except Exception as exc:  # noqa: BLE001 - a capability check that needs a GPU
                reasons.append([f"raised {type(exc).__name__}"])
        # The base check ``if use_mla != cls.is_mla(): invalid_reasons.append("non-MLA not supported")``
        # is unconditional (``backend.py``); a later capability probe that needs a GPU may raise here.
        base = getattr(cls.validate_configuration, "__func__", None) is _base_validate()
        rec["rejects_non_mla"] = all("non-MLA not supported" in r for r in reasons) or (rec["mla"] and base)
        try:
            rec["supports_pcp"] = bool(cls.supports_pcp())
        except Exception:  # noqa: BLE001
            rec["supports_pcp"] = None
        rec["files"], rec["note"] = _class_files(root, cls)
        out.append(rec)
    from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum

    for member in MambaAttentionBackendEnum:
        rec = {"name": f"mamba:{member.name}", "path": None, "how": "not read", "mla": None, "rejects_non_mla": None}
        rec.update(supports_pcp=None, files=[], note="", state_space=True)
        try:
            rec["path"] = member.get_path()
            cls = _import_class(member)
        except Exception as exc:  # noqa: BLE001 - not importable here: its files stay in the reached scope
            rec["note"] = f"does not import here ({type(exc).__name__})"
            out.append(rec)
            continue
        rec["how"] = "executed"
        try:
            rec["supports_pcp"] = bool(cls.supports_pcp())
        except Exception:  # noqa: BLE001
            rec["supports_pcp"] = None
        rec["files"], rec["note"] = _class_files(root, cls)
        out.append(rec)
    for rec in out:
        if rec["how"] == "not read" and rec["path"] and not rec.get("state_space"):
            mla, why = _ast_mla(root, rec["path"], mla_classes)
            if mla:
                rec.update(how="ast", mla=True, rejects_non_mla=True, note=why)
    return out


def _import_class(member):
    """``member.get_class()``, with a GPU-only package the module imports (``trace.CUDA_ONLY_PACKAGES``:
    FlashInfer, FlashAttention, ...) replaced by a module whose every use raises, as the tracer
    does: the result does not depend on what an earlier harness installed."""
    from ..tracing.interpret import install_cuda_only
    from .trace import CUDA_ONLY_PACKAGES

    for _ in range(16):
        try:
            return member.get_class()
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing.split(".")[0] not in CUDA_ONLY_PACKAGES or missing in sys.modules:
                raise
            install_cuda_only(missing)
    return member.get_class()


def _base_validate():
    from vllm.v1.attention.backend import AttentionBackend

    return AttentionBackend.validate_configuration.__func__


def _class_files(root: str, cls) -> tuple[list[str], str]:
    """The source files of every class in the MRO of the backend class, its builder and its
    implementation (the wrapper hands its metadata to the underlying backend's implementation)."""
    files, missing = set(), []
    for what in ("backend", "get_builder_cls", "get_impl_cls"):
        try:
            k = cls if what == "backend" else getattr(cls, what)()
        except Exception as exc:  # noqa: BLE001 - a part that needs a kernel library or is absent
            missing.append(f"{what} not read ({type(exc).__name__})")
            continue
        for base in inspect.getmro(k):
            rel = _rel_of(root, base)
            if rel:
                files.add(rel)
    return sorted(files), "; ".join(missing)


def _cpu_selection() -> tuple[set[str], str]:
    """The class paths vLLM's CPU platform selects for a non-MLA, non-sparse layer, for every
    ``--attention-backend`` member and none (executed)."""
    import torch
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    from vllm.v1.attention.selector import AttentionSelectorConfig

    got, errors = set(), 0
    for sel in [None, *AttentionBackendEnum]:
        for window in (False, True):
            cfg = AttentionSelectorConfig(
                head_size=128,
                dtype=torch.bfloat16,
                kv_cache_dtype="auto",
                block_size=None,
                use_mla=False,
                use_sparse=False,
                has_sliding_window=window,
            )
            try:
                got.add(CpuPlatform.get_attn_backend_cls(sel, attn_selector_config=cfg, num_heads=8))
            except Exception:  # noqa: BLE001 - a selection the platform refuses
                errors += 1
    return got, f"CpuPlatform.get_attn_backend_cls on {2 * (len(AttentionBackendEnum) + 1)} selections: {sorted(got)}"


def local_reach(root: str) -> dict:
    """``{"ok", "reachable_files", "other_files", "notes", "backends"}``: the files under
    ``vllm/v1/attention/`` whose builders the chunked-local wrapper can reach, the others, and why
    (module docstring). ``ok`` is False when the wrapper's sites were not read as expected: then
    every file counts as reachable."""
    ok, notes = local_wrapper_sites(root)
    backends = backend_classes(root)
    reach, unreached = set(), set()
    for b in backends:
        if (b["mla"] and b["rejects_non_mla"]) or (b.get("state_space") and b["how"] == "executed"):
            unreached.update(b["files"])
        else:
            reach.update(b["files"])  # non-MLA, or not read: conservative
    cpu, cpu_note = set(), ""
    try:
        cpu, cpu_note = _cpu_selection()
    except Exception as exc:  # noqa: BLE001 - the CPU platform does not run here
        cpu_note = f"CPU selection not run ({type(exc).__name__})"
        ok = False
    by_path = {b["path"]: b for b in backends if b["path"]}
    for path in cpu:
        b = by_path.get(path)
        if b is None or b["mla"]:
            ok = False
            notes.append(f"refused: the CPU platform selects {path} for a non-MLA layer")
    notes.append(cpu_note)
    notes.append(
        "MLA backends rejected for a non-MLA layer: "
        + ", ".join(f"{b['name']} ({b['how']})" for b in backends if b["mla"] and b["rejects_non_mla"])
    )
    notes.append(
        "state-space backends (MambaAttentionBackendEnum, selected by get_mamba_attn_backend, never by "
        "get_attn_backend): "
        + ", ".join(b["name"] for b in backends if b.get("state_space") and b["how"] == "executed")
    )
    notes.append(
        "reachable or not read: "
        + ", ".join(
            b["name"]
            for b in backends
            if not ((b["mla"] and b["rejects_non_mla"]) or (b.get("state_space") and b["how"] == "executed"))
        )
    )
    files = attention_files(root)
    other = {f for f in files if ok and f in unreached and f not in reach}
    return {
        "ok": ok,
        "reachable_files": sorted(set(files) - other),
        "other_files": sorted(other),
        "notes": notes,
        "backends": backends,
    }


def compact(files: list[str], every: list[str], base: str = ATTENTION_DIR) -> list[str]:
    """``files`` with each directory under ``base`` (``base`` included) all of whose files (in
    ``every``) are in ``files`` written as its prefix (``dir/``, as :func:`capproof.facts.in_scope`
    reads it), outermost first."""
    chosen, out = set(files), []
    dirs = sorted(p for f in every for p in _parents(f) if p.startswith(base))
    covered: set[str] = set()
    for d in dirs:
        if any(d.startswith(c) for c in out):
            continue
        inside = [f for f in every if f.startswith(d)]
        if inside and all(f in chosen for f in inside):
            out.append(d)
            covered.update(inside)
    return sorted(out + [f for f in files if f not in covered])


def _parents(f: str) -> list[str]:
    parts = f.split("/")[:-1]
    return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]


def attention_files(root: str) -> list[str]:
    """Every ``.py`` file under ``vllm/v1/attention/`` (the request-count facts' scopes)."""
    return [rel for rel, _ in py_files(root, ATTENTION_DIR.rstrip("/"))]


def v2_attention_paths(root: str, v2_status: str, pcp: dict | None, scope_supports_pcp: bool) -> list[dict]:
    """The V2 runner's ``CommonAttentionMetadata(num_reqs=...)`` constructions, judged by the V2
    request-count fact (``v2_status``): with PCP (``pcp``: the executed local batch) a
    counterexample where the scope holds a backend that supports PCP, else checked only when the V2
    fact is."""
    out = []
    for rel in V2_SITES:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and _src(call.func).endswith("CommonAttentionMetadata")):
                continue
            arg = next((k.value for k in call.keywords if k.arg == "num_reqs"), None)
            if arg is None:
                continue
            site, sets = f"{rel}:{call.lineno}", f"num_reqs={_src(arg)[:60]} (V2 runner)"
            if pcp and scope_supports_pcp and rel.endswith("attn_utils.py"):
                out.append(
                    path_record(
                        site,
                        sets,
                        "executed",
                        "counterexample",
                        f"V2 + PCP: PCPManager's local batch has {pcp['values']['num_reqs']} requests at max_num_reqs "
                        f"{pcp['values']['max_num_reqs']} (run on the CPU); partition_batch returns it "
                        "(gpu/model_runner.py prepare_inputs), model_states/default.py prepare_attn passes "
                        "input_batch.num_reqs to build_attn_metadata (read); backends in scope support PCP",
                    )
                )
            elif v2_status == "checked":
                out.append(path_record(site, sets, "ast", "checked", "the V2 request count (checked)"))
            else:
                out.append(
                    path_record(
                        site,
                        sets,
                        "ast",
                        "not checked",
                        f"the V2 request count is {v2_status}"
                        + (
                            "; its PCP path does not reach these builders in the target model (supports_pcp() "
                            "False, executed; asserted per target layer, vllm/v1/worker/cp_utils.py:36; the V2 runner "
                            "passes only the target's layer names, so a drafter's layers are not checked), its other "
                            "paths are not all checked"
                            if pcp and not scope_supports_pcp
                            else " (its paths not all checked)"
                        ),
                    )
                )
    return out


def attention_facts(
    root: str,
    v1_paths: list[dict],
    local_path: dict,
    local_cex: dict | None,
    v2_status: str,
    pcp: dict | None,
    assumption: str,
) -> list[dict]:
    """The attention-metadata facts (module docstring): builders the wrapper reaches; builders it
    cannot reach that run under PCP; those that do not. ``v1_paths``: the paths of the V1
    runner, drafters and micro-batches (every ``CommonAttentionMetadata`` construction outside V2
    and the chunked-local one); ``local_path``: the chunked-local construction's path as judged for
    the builders it reaches (a counterexample); ``local_cex`` its record."""
    reach = local_reach(root)
    backends = reach["backends"]
    every = attention_files(root)
    pcp_files = {f for b in backends if b["supports_pcp"] for f in b["files"]}
    mla = sorted(f for f in reach["other_files"] if f in pcp_files)
    ssm = sorted(f for f in reach["other_files"] if f not in pcp_files)
    pcp_in_reach = bool(pcp_files & set(reach["reachable_files"]))
    not_reached = path_record(
        local_path["site"],
        local_path["sets"],
        "executed" if reach["ok"] else "ast",
        "checked" if reach["ok"] else "not checked",
        ("not reached: " if reach["ok"] else "not established: ") + "; ".join(reach["notes"])[:900],
    )
    cexs = [c for c in [pcp] if c]
    head = "attention-metadata request count CommonAttentionMetadata.num_reqs <= max_num_reqs, "
    out = [
        fact_record(
            head + "builders the chunked-local wrapper can reach",
            [assumption],
            compact(reach["reachable_files"], every),
            [*v1_paths, local_path, *v2_attention_paths(root, v2_status, pcp, pcp_in_reach)],
            [c for c in [local_cex] if c] + (cexs if pcp_in_reach else []),
        )
    ]
    if mla:
        out.append(
            fact_record(
                head + "builders the chunked-local wrapper cannot reach that run under PCP (MLA backends)",
                [assumption],
                compact(mla, every),
                [*v1_paths, not_reached, *v2_attention_paths(root, v2_status, pcp, True)],
                cexs,
            )
        )
    if ssm:
        out.append(
            fact_record(
                head + "builders the chunked-local wrapper cannot reach and PCP does not run (state-space backends)",
                [assumption],
                compact(ssm, every),
                [*v1_paths, not_reached, *v2_attention_paths(root, v2_status, pcp, False)],
            )
        )
    return out
