"""Regenerate capproof/engines/vllm/flags.py from vLLM wheels: per release, every option string
``vllm serve`` accepts, its ``CacheDType`` values and its batch defaults.

Usage (wheels fetched with ``pip download --no-deps vllm==X -d DIR``; nothing is committed but the
generated table):

    python real/extract_vllm_flags.py .capproof/wheels > capproof/engines/vllm/flags.py

Per wheel, read from the wheel's own source (no vLLM import):

- **flags** (static AST): ``add_argument("--x", "-y", ...)`` calls in ``vllm/engine/arg_utils.py``,
  ``vllm/entrypoints/cli/serve.py`` and the frontend ``cli_args.py`` (:data:`FRONTEND_ARGS`), plus one ``--field-name`` per field of the
  ``*FrontendArgs`` dataclasses there (vLLM turns those into flags the same way);
- **enable/disable pairs**: whether ``argparse_utils.py`` registers ``EnableDisableAction``
  (``--disable-x`` accepted for a boolean ``--enable-x``; 0.33.0);
- **cache dtypes**: the ``CacheDType = Literal[...]`` of ``vllm/config/cache.py``;
- **batch defaults**: ``EngineArgs.get_batch_defaults`` *executed* (its source compiled from the
  wheel) against a stand-in platform per GPU of :data:`GPUS` below, for the OpenAI API server
  (``vllm serve``) usage context.
"""

import ast
import enum
import glob
import os
import re
import sys
import textwrap
import types
import zipfile

from packaging.version import Version

#: GPUs an operator can name with ``check-config --gpu``: (total memory in GiB as
#: torch reports it, device name, compute capability). Keep in step with capproof/engines/gpus.py.
GPUS = {
    "A100": (80, "nvidia a100-sxm4-80gb", (8, 0)),
    "L40S": (45, "nvidia l40s", (8, 9)),
    "H100": (80, "nvidia h100 80gb hbm3", (9, 0)),
    "H200": (141, "nvidia h200", (9, 0)),
    "B200": (180, "nvidia b200", (10, 0)),
    "B300": (270, "nvidia b300", (10, 3)),
    "GB10": (120, "nvidia gb10", (12, 1)),
}


#: Where the frontend (server) arguments live: openai/ up to 0.28, launchers/ in 0.29-0.32, common/ in 0.33.
FRONTEND_ARGS = ("vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/launchers/cli_args.py",
                 "vllm/entrypoints/common/cli_args.py")


def _read(zf: zipfile.ZipFile, name: str) -> str | None:
    try:
        return zf.read(name).decode("utf-8")
    except KeyError:
        return None


def _flags(zf: zipfile.ZipFile) -> set[str]:
    flags: set[str] = {"--config", "--help", "-h", "--headless", "--api-server-count", "-asc"}
    frontends = [f for f in FRONTEND_ARGS if _read(zf, f)]
    for rel in ("vllm/engine/arg_utils.py", "vllm/entrypoints/cli/serve.py", *frontends):
        tree = ast.parse(_read(zf, rel))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                        flags.add(arg.value)
        if rel in frontends:
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
                    for item in node.body:
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                            flags.add("--" + item.target.id.replace("_", "-"))
    return flags


def _aliases(zf: zipfile.ZipFile) -> dict[str, str]:
    """Short option -> the long option of the same ``add_argument`` call (``-tp`` -> ``--tensor-parallel-size``)."""
    out = {}
    frontends = [f for f in FRONTEND_ARGS if _read(zf, f)]
    for rel in ("vllm/engine/arg_utils.py", "vllm/entrypoints/cli/serve.py", *frontends):
        for node in ast.walk(ast.parse(_read(zf, rel))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
                longs = [n for n in names if n.startswith("--")]
                for n in names:
                    if not n.startswith("--") and longs:
                        out[n] = longs[0]
    return out


def _kinds(zf: zipfile.ZipFile) -> dict[str, set[str]]:
    """Flags by how argparse consumes them: ``valueless`` (store_true, BooleanOptionalAction: a
    ``bool`` field), ``optional`` (``bool | str`` fields: nargs="?"), ``lists`` (list/tuple fields or
    nargs "+"/"*": every following non-flag token). Fields of ``EngineArgs`` and the frontend
    dataclasses (vLLM's ``get_kwargs``: ``{bool, str, None}`` -> nargs "?", bool -> BooleanOptionalAction,
    list/tuple -> nargs "+"), and explicit ``add_argument`` keywords."""
    kinds: dict[str, set[str]] = {"valueless": set(), "optional": set(), "lists": set()}
    frontends = [f for f in FRONTEND_ARGS if _read(zf, f)]
    for rel in ("vllm/engine/arg_utils.py", "vllm/entrypoints/cli/serve.py", *frontends):
        src = _read(zf, rel)
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and (node.name == "EngineArgs" or node.name.endswith("FrontendArgs")):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        ann = ast.get_source_segment(src, item.annotation) or ""
                        flag = "--" + item.target.id.replace("_", "-")
                        bare = re.sub(r"\[.*\]", "", ann)
                        words = set(re.findall(r"\w+", bare))
                        if "bool" in words and "str" in words:
                            kinds["optional"].add(flag)
                        elif "bool" in words:
                            kinds["valueless"].add(flag)
                        elif words & {"list", "tuple", "List", "Tuple"}:
                            kinds["lists"].add(flag)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
                for kw in node.keywords:
                    value = kw.value
                    text = ast.get_source_segment(src, value) or ""
                    if kw.arg == "action" and ("store_true" in text or "store_false" in text or "BooleanOptionalAction" in text or "store_const" in text):
                        kinds["valueless"].update(names)
                    elif kw.arg == "nargs" and text.strip("'\"") in ("+", "*"):
                        kinds["lists"].update(names)
                    elif kw.arg == "nargs" and text.strip("'\"") == "?":
                        kinds["optional"].update(names)
    return kinds


def _cache_dtypes(zf: zipfile.ZipFile) -> list[str]:
    tree = ast.parse(_read(zf, "vllm/config/cache.py"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CacheDType" for t in node.targets):
            sl = node.value.slice
            elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            return sorted(e.value for e in elts if isinstance(e, ast.Constant))
    raise SystemExit("CacheDType not found")


class _UsageContext(enum.Enum):
    UNKNOWN_CONTEXT = "UNKNOWN_CONTEXT"
    LLM_CLASS = "LLM_CLASS"
    API_SERVER = "API_SERVER"
    OPENAI_API_SERVER = "OPENAI_API_SERVER"
    OPENAI_BATCH_RUNNER = "OPENAI_BATCH_RUNNER"
    ENGINE_CONTEXT = "ENGINE_CONTEXT"


class _Platform:
    def __init__(self, gib: int, name: str, capability: tuple[int, int]):
        self.gib, self.name, self.capability = gib, name, capability

    def get_device_total_memory(self, device_id: int = 0) -> int:
        return self.gib * (1 << 30)

    def get_device_name(self, device_id: int = 0) -> str:
        return self.name

    def is_device_capability(self, capability, device_id: int = 0) -> bool:
        return tuple(capability) == self.capability

    def is_device_capability_family(self, capability, device_id: int = 0) -> bool:
        return self.capability[0] * 10 // 10 == capability // 10 if isinstance(capability, int) else False

    def is_tpu(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False


def _batch_defaults(zf: zipfile.ZipFile) -> dict[str, tuple[int, int]]:
    """Run the wheel's ``get_batch_defaults`` for each GPU: {gpu: (max_num_batched_tokens, max_num_seqs)}."""
    src = _read(zf, "vllm/engine/arg_utils.py")
    tree = ast.parse(src)
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_batch_defaults")
    code = textwrap.dedent(ast.get_source_segment(src, fn))
    code = re.sub(r"^@.*\n", "", code, flags=re.M)
    usage_lib = types.ModuleType("vllm.usage.usage_lib")
    usage_lib.UsageContext = _UsageContext
    saved = {k: sys.modules.get(k) for k in ("vllm", "vllm.usage", "vllm.usage.usage_lib")}
    sys.modules.update({"vllm": types.ModuleType("vllm"), "vllm.usage": types.ModuleType("vllm.usage"),
                        "vllm.usage.usage_lib": usage_lib})
    out = {}
    try:
        for gpu, (gib, name, cap) in GPUS.items():
            ns = {"UsageContext": _UsageContext, "GiB_bytes": 1 << 30, "current_platform": _Platform(gib, name, cap),
                  "logger": types.SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None)}
            exec(compile(code, "get_batch_defaults", "exec"), ns)
            mnbt, seqs = ns["get_batch_defaults"](None, 1)
            out[gpu] = (mnbt[_UsageContext.OPENAI_API_SERVER], seqs[_UsageContext.OPENAI_API_SERVER])
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return out


def main(wheel_dir: str) -> None:
    tables = {}
    for path in glob.glob(os.path.join(wheel_dir, "vllm-*.whl")):
        version = os.path.basename(path).split("-")[1]
        with zipfile.ZipFile(path) as zf:
            argparse_src = _read(zf, "vllm/utils/argparse_utils.py") or ""
            tables[version] = {
                "flags": _flags(zf),
                "kinds": _kinds(zf),
                "aliases": _aliases(zf),
                "enable_disable": "class EnableDisableAction" in argparse_src,
                "cache_dtypes": _cache_dtypes(zf),
                "batch_defaults": _batch_defaults(zf),
            }
    versions = sorted(tables, key=Version)
    newest = versions[-1]
    base = tables[newest]["flags"]
    w = sys.stdout.write
    w('"""vLLM ``vllm serve`` facts per release (generated by real/extract_vllm_flags.py from the PyPI wheels).\n\n')
    w("Per release: the option strings ``vllm serve`` accepts (as differences from the newest), whether\n")
    w("``--disable-x`` pairs with a boolean ``--enable-x`` (``EnableDisableAction``), the ``CacheDType``\n")
    w("values, and the OpenAI-server batch defaults ``EngineArgs.get_batch_defaults`` returns per GPU\n")
    w("(``(max_num_batched_tokens, max_num_seqs)``, executed from the wheel's source). Do not edit.\n")
    w('"""\n\n')
    w(f"VLLM_VERSION = {newest!r}\n")
    w(f"VLLM_VERSIONS = {tuple(versions)!r}\n")
    w("VLLM_SERVE_FLAGS = frozenset({\n")
    for flag in sorted(base):
        w(f"    {flag!r},\n")
    w("})\n\n")
    w(f"#: Flags a release accepts that {newest} does not, and {newest} flags it does not accept.\n")
    w("FLAGS_ADDED = {\n")
    for v in versions[:-1]:
        w(f"    {v!r}: {tuple(sorted(tables[v]['flags'] - base))!r},\n")
    w("}\n")
    w("FLAGS_REMOVED = {\n")
    for v in versions[:-1]:
        w(f"    {v!r}: {tuple(sorted(base - tables[v]['flags']))!r},\n")
    w("}\n\n")
    for kind, doc in (("valueless", "take no value (bool fields, store_true, BooleanOptionalAction; ``--no-x`` too)"),
                      ("optional", "take an optional value (``bool | str`` fields: nargs='?')"),
                      ("lists", "take every following non-flag token (list/tuple fields, nargs '+'/'*')")):
        union = set().union(*(tables[v]["kinds"][kind] for v in versions))
        w(f"#: Flags that {doc}, in any release.\n")
        w(f"{kind.upper()}_FLAGS = frozenset({tuple(sorted(union))!r})\n\n")
    aliases = {}
    for v in versions:
        aliases.update(tables[v]["aliases"])
    w("#: Short options and the long option they stand for, in any release.\n")
    w(f"ALIASES = {dict(sorted(aliases.items()))!r}\n\n")
    w(f"ENABLE_DISABLE_PAIRS = {tuple(v for v in versions if tables[v]['enable_disable'])!r}\n\n")
    w("CACHE_DTYPES = {\n")
    for v in versions:
        w(f"    {v!r}: {tuple(tables[v]['cache_dtypes'])!r},\n")
    w("}\n\n")
    w("#: GPU -> (max_num_batched_tokens, max_num_seqs) that ``vllm serve`` picks when the flags are not given.\n")
    w("BATCH_DEFAULTS = {\n")
    for v in versions:
        w(f"    {v!r}: {tables[v]['batch_defaults']!r},\n")
    w("}\n\n\n")
    w(textwrap.dedent('''\
        def serve_flags(version: str) -> frozenset:
            """The option strings ``vllm serve`` of ``version`` accepts (KeyError: no table for it)."""
            if version == VLLM_VERSION:
                return VLLM_SERVE_FLAGS
            return (VLLM_SERVE_FLAGS - frozenset(FLAGS_REMOVED[version])) | frozenset(FLAGS_ADDED[version])
        '''))


if __name__ == "__main__":
    main(sys.argv[1])
