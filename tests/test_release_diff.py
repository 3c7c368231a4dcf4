"""The release diff (`capproof inventory --diff A B`) reports a buffer as changed only when its
allocation or sizing code, its shape, dtype, derived demand or access sites changed; tracing noise
(line moves, equal shapes spelled differently, why-texts, access order, a buffer traced in one
release only) is counted apart. Synthetic inventories and source files: no wheel is imported.

The values come from the vLLM 0.32.0 -> 0.33.0 diff (docs/how-to/release-diff.md): e.g.
`DeepseekSparseSWAMetadataBuilder.span_indptr` read as `max_num_reqs + 1` in 0.32.0 and traced as
`1 + max_num_reqs` in 0.33.0, the Triton backend's 3D softmax segments resized by speculative
decoding in 0.33.0.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from capproof.engines.tracing import command
from capproof.engines.tracing.sizing import Release, sizing_code
from capproof.inventory import Entry, diff, diff_lines, same_expression

FILE = "vllm/v1/attention/backends/mla/sparse_swa.py"


class Sources:
    """A release's sources as the diff reads them: sizing code per entry id, statements by file:line."""

    def __init__(self, sizing=None, lines=None):
        self.sizing_of, self.lines = sizing or {}, lines or {}

    def sizing(self, e):
        return self.sizing_of.get(e.id)

    def statement(self, file, line):
        return self.lines.get((file, line))

    def statements(self, file):
        return frozenset(t for (f, _), t in self.lines.items() if f == file)


def entry(attr="span_indptr", line=535, shape=("max_num_reqs + 1",), how="read", **kw) -> Entry:
    return Entry(
        id=f"{FILE}::DeepseekSparseSWAMetadataBuilder.{attr}",
        file=FILE,
        line=line,
        owner="DeepseekSparseSWAMetadataBuilder",
        attribute=attr,
        dtype=kw.pop("dtype", "int32"),
        shape=list(shape),
        how=how,
        **kw,
    )


# -- shapes compared as expressions ------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [
        ("max_num_reqs + 1", "1 + max_num_reqs"),
        ("max_num_reqs * (1 + num_speculative_tokens)", "max_num_reqs + max_num_reqs * num_speculative_tokens"),
        ("cdiv(max_model_len, block_size)", "(max_model_len + block_size - 1) // block_size"),
        ("-(-max_model_len // dcp // 64)", "cdiv(max_model_len, dcp * 64)"),
        ("select(dcp <= 1, max_num_reqs, 2 * max_num_reqs)", "select(1 < dcp, 2 * max_num_reqs, max_num_reqs)"),
        ("shape of row_ids", "shape  of  row_ids"),  # outside the language: compared as text
        ("len(x)  + 1", "(len(x) + 1)"),  # outside the language: canonical Python text
    ],
)
def test_equal_shapes_spelled_differently_are_the_same(a, b):
    assert same_expression(a, b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("max_num_reqs + 1", "max_num_reqs + 2"),
        ("sliding_window", "select(0 < vision_max_n_token, sliding_window + vision_max_n_token, sliding_window)"),
        ("max_num_batched_tokens", "max_num_tokens"),
        ("max_tokens", "max_num_batched_tokens"),  # a read name and a traced name: not equal as expressions
        ("cdiv(max_model_len, block_size)", "max_model_len // block_size"),
    ],
)
def test_different_shapes_are_not_the_same(a, b):
    assert not same_expression(a, b)


#: Two traced widths that differ only at ``dcp = 0`` (vLLM 0.34.0's DSA sparse indexer width gained
#: a ``1 == dcp`` branch in a helper: its traced shape differs from 0.33.0's where no deployment is).
ONLY_AT_DCP_0 = (
    "select(dcp <= 1, 64 * index_topk, 128)",
    "select(1 == dcp, 64 * index_topk, select(dcp <= 1, 0, 128))",
)


def test_shapes_equal_wherever_a_positive_name_is_at_least_1_are_the_same():
    a, b = ONLY_AT_DCP_0
    assert not same_expression(a, b)  # dcp = 0, index_topk = 1: 64 against 0
    assert same_expression(a, b, positive=("dcp",))


def test_a_traced_shape_differing_only_where_a_parallel_size_is_0_is_noise():
    old, new = entry(shape=[ONLY_AT_DCP_0[0]], how="traced"), entry(shape=[ONLY_AT_DCP_0[1]], how="traced")
    assert [c.what for c in diff([old], [new]).changed] == [["shape"]]
    d = diff([old], [new], positive=("dcp", "index_topk"))
    assert d.changed == [] and [k for _, _, k in d.noise] == [["shape spelling"]]


def test_the_vllm_diff_compares_shapes_with_the_tracers_positive_names(monkeypatch):
    """``capproof inventory --diff vllm==A vllm==B`` hands :data:`capproof.engines.vllm.trace.POSITIVE`
    (``dcp`` among them) to the comparison: the dcp-0-only difference is noise on the command path."""
    from capproof.engines.vllm import buffers, wheels

    built = {"1": [entry(shape=[ONLY_AT_DCP_0[0]], how="traced")], "2": [entry(shape=[ONLY_AT_DCP_0[1]], how="traced")]}
    monkeypatch.setattr(wheels, "fetch_version", lambda name, version, download=True: "")
    monkeypatch.setattr(command, "build_elsewhere", lambda engine, version, trace, module, warn=None: built[version])
    monkeypatch.setattr(wheels, "source_root", lambda name, version: "/nonexistent")
    out: list[str] = []
    assert buffers.run_diff("vllm==1", "vllm==2", out=out.append) == 0
    assert out[0] == "vllm==1 -> vllm==2: 0 added, 0 removed, 0 changed; 1 more differ only in tracing noise"


# -- noise classes: not changed ----------------------------------------------------------------------


def test_line_move_alone_is_noise():
    d = diff([entry(line=535)], [entry(line=545)])
    assert d.changed == [] and d.empty
    assert [k for _, _, k in d.noise] == [["line moved"]]


def test_equal_shape_spelled_differently_is_noise():
    d = diff([entry(shape=["max_num_reqs + 1"], how="traced")], [entry(shape=["1 + max_num_reqs"], how="traced")])
    assert d.changed == []
    assert d.noise[0][2] == ["shape spelling"]


def test_why_text_and_access_order_are_noise():
    acc = [
        {"file": FILE, "line": 700, "dim": 0, "extent": "num_reqs + 1", "op": "slice write", "how": "ast"},
        {"file": FILE, "line": 720, "dim": 0, "extent": "num_reqs", "op": "slice read", "how": "ast"},
    ]
    moved = [dict(a, line=a["line"] + 10, how="executed") for a in reversed(acc)]
    moved[0]["extent"] = "(num_reqs)"
    old = entry(why="not reached (static reading)", accesses=acc)
    new = entry(why="allocated outside the constructor", accesses=moved)
    d = diff([old], [new])
    assert d.changed == []
    assert d.noise[0][2] == ["why text", "access lines or order"]


def test_demand_provenance_and_equal_extents_are_noise():
    old = entry(
        how="traced",
        demands=[
            {
                "dim": 0,
                "extent": "num_reqs + 1",
                "binds": {"cap": "max_num_reqs + 1"},
                "how": "ast",
                "from": [f"{FILE}:700 self.span_indptr[: num_reqs + 1]"],
                "facts": [{"fact": "num_reqs <= max_num_reqs (scheduler, :212)", "checked": True}],
            }
        ],
    )
    new = entry(
        how="traced",
        demands=[
            {
                "dim": 0,
                "extent": "1 + num_reqs",
                "binds": {"cap": "1 + max_num_reqs"},
                "how": "executed",
                "from": [f"{FILE}:712 self.span_indptr[: num_reqs + 1]"],
                "facts": [{"fact": "num_reqs <= max_num_reqs (scheduler, :224)", "checked": True}],
            }
        ],
    )
    d = diff([old], [new])
    assert d.changed == []
    assert d.noise[0][2] == ["demand record"]


def test_traced_in_one_release_only_with_the_same_sizing_code_is_noise():
    # 0.32.0 read `max_tokens` (the tracer did not reach the allocation), 0.33.0 traced it
    old = entry("left_visible", 529, ["max_tokens"], "read", why="not reached")
    new = entry("left_visible", 539, ["max_num_batched_tokens"], "traced")
    code = {old.id: ("alloc torch.zeros(max_tokens, dtype=torch.int32)", "max_tokens = ...")}
    d = diff([old], [new], Sources(code), Sources(code))
    assert d.changed == []
    assert set(d.noise[0][2]) == {"line moved", "traced in one release only", "why text"}


def test_a_read_dtype_against_a_traced_dtype_is_noise():
    # `torch.empty_like(query_start_loc)` read as dtype '' in 0.32.0, traced as int32 in 0.33.0
    old = entry("_cu_num_logits", 165, ["shape of query_start_loc"], "read", dtype="")
    new = entry("_cu_num_logits", 179, ["1 + max_num_reqs"], "traced", dtype="int32")
    code = {old.id: ("alloc torch.empty_like(self.query_start_loc)",)}
    assert diff([old], [new], Sources(code), Sources(code)).changed == []


def test_an_access_derived_differently_from_an_unchanged_statement_is_noise():
    # vLLM 0.33.0 reached AdaptiveVerificationManager's constructor and recorded its read of
    # query_start_loc[:-1] (executed); 0.32.0's statement is the same, not executed
    stmt = "self._num_non_draft_tokens = torch.empty_like(query_start_loc[:-1])"
    av = "vllm/v1/worker/gpu/spec_decode/adaptive_verification.py"
    read = {"file": av, "line": 178, "dim": 0, "extent": "-1", "op": "slice read", "how": "executed"}
    d = diff(
        [entry(line=28)],
        [entry(line=32, accesses=[read])],
        Sources(lines={(av, 164): stmt}),
        Sources(lines={(av, 178): stmt}),
    )
    assert d.changed == []
    assert d.noise[0][2] == ["line moved", "accesses derived differently"]


def test_a_demand_derived_in_one_release_only_is_noise():
    dem = {"dim": 0, "extent": "raw_bs", "facts": [], "how": "executed"}
    d = diff([entry()], [entry(demands=[dem])])
    assert d.changed == [] and d.noise[0][2] == ["demand derived in one release only"]


# -- real changes: reported with both shapes and lines -----------------------------------------------

SEGM_OLD = ["128 // num_kv_heads", "num_heads", "16"]
SEGM_NEW = [
    "select(num_speculative_tokens <= 7, 1 + num_speculative_tokens, 8) * (128 // num_kv_heads)",
    "num_heads",
    "16",
]


def test_a_traced_shape_that_differs_is_a_change_with_both_shapes_and_lines():
    old = entry("softmax_segm_max", 180, SEGM_OLD, "traced", dtype="float32")
    new = entry("softmax_segm_max", 201, SEGM_NEW, "traced", dtype="float32")
    d = diff([old], [new])
    assert [c.what for c in d.changed] == [["shape"]]
    lines = diff_lines(d, "vllm==0.32.0", "vllm==0.33.0")
    assert lines[0] == "vllm==0.32.0 -> vllm==0.33.0: 0 added, 0 removed, 1 changed (1 shape)"
    assert lines[1] == f"~ {old.id}  (shape)"
    assert lines[2] == f"    vllm==0.32.0: [{', '.join(SEGM_OLD)}] float32  ({FILE}:180, traced)"
    assert lines[3] == f"    vllm==0.33.0: [{', '.join(SEGM_NEW)}] float32  ({FILE}:201, traced)"


def test_sizing_code_change_is_a_change_even_with_the_same_traced_shape():
    # vLLM 0.33.0 ROCm AITER MLA: max_num_pages grows by the draft tokens under adaptive verification
    old = entry("paged_kv_indices", 707, ["max_model_len * max_num_reqs"], "traced")
    new = entry("paged_kv_indices", 941, ["max_model_len * max_num_reqs"], "traced")
    a = ("alloc torch.zeros(max_num_pages, dtype=torch.int32)", "max_num_pages = max_num_reqs * max_model_len")
    b = a + ("if _adaptive_varlen_verify_enabled(vllm_config):", "max_num_pages += max_num_reqs * k")
    d = diff([old], [new], Sources({old.id: a}), Sources({new.id: b}))
    assert [c.what for c in d.changed] == [["sizing code"]]
    assert d.changed[0].details == [
        "+ if _adaptive_varlen_verify_enabled(vllm_config):",
        "+ max_num_pages += max_num_reqs * k",
    ]


def test_dtype_demand_and_access_changes_are_changes():
    acc = {"file": FILE, "line": 700, "dim": 0, "extent": "num_reqs + 1", "op": "slice write", "how": "ast"}
    dem = {"dim": 0, "extent": "num_reqs + 1", "facts": []}
    old = entry(how="traced", accesses=[acc], demands=[dem])
    new = entry(
        how="traced",
        dtype="int64",
        accesses=[acc, dict(acc, extent="num_reqs + 2", line=760)],
        demands=[dict(dem, extent="num_reqs + 2")],
    )
    (c,) = diff([old], [new]).changed
    assert c.what == ["dtype", "demand", "accesses"]
    assert "demand dim 0 was num_reqs + 1" in c.details and "demand dim 0 now num_reqs + 2" in c.details
    assert f"access new: {FILE} dim 0 slice write [num_reqs + 2]" in c.details


def test_a_new_access_statement_is_a_change_shown_with_its_line():
    # vLLM 0.33.0 block_table.py: the gather kernel's grid now covers dirty rows
    bt = "vllm/v1/worker/gpu/block_table.py"
    old_stmt = "_gather_block_tables_kernel[self.num_kv_cache_groups, num_reqs_padded](idx_mapping)"
    new_stmt = "_gather_block_tables_kernel[self.num_kv_cache_groups, num_rows](idx_mapping)"
    rec = {"file": bt, "dim": None, "extent": "whole", "how": "ast"}
    old = entry(how="traced", accesses=[dict(rec, line=167, op=f"passed to {old_stmt.split('(')[0]}")])
    new = entry(how="traced", accesses=[dict(rec, line=202, op=f"passed to {new_stmt.split('(')[0]}")])
    (c,) = diff([old], [new], Sources(lines={(bt, 167): old_stmt}), Sources(lines={(bt, 202): new_stmt})).changed
    assert c.what == ["accesses"]
    assert c.details == [f"access gone: {bt}:167 {old_stmt}", f"access new: {bt}:202 {new_stmt}"]


def test_a_fact_that_is_no_longer_checked_changes_the_demand():
    dem = {"dim": 0, "extent": "num_reqs", "facts": [{"fact": "num_reqs <= max_num_reqs", "checked": True}]}
    old, new = (
        entry(how="traced", demands=[dem]),
        entry(how="traced", demands=[dict(dem, facts=[{**dem["facts"][0], "checked": False}])]),
    )
    assert [c.what for c in diff([old], [new]).changed] == [["demand"]]


def test_added_and_removed_and_noise_summary_line():
    keep_old, keep_new = entry(line=1), entry(line=2)
    gone, came = entry("scale", 515), entry("_swa_seq_lens", 522, how="traced")
    lines = diff_lines(diff([keep_old, gone], [keep_new, came]), "A", "B")
    assert lines[0] == "A -> B: 1 added, 1 removed, 0 changed; 1 more differ only in tracing noise"
    assert lines[1].startswith(f"+ {came.id}  [max_num_reqs + 1] int32  ({FILE}:522, traced)")
    assert lines[2].startswith(f"- {gone.id}  [max_num_reqs + 1] int32  ({FILE}:515, read)")
    assert lines[-1] == "not changed: 1 buffers differ only in tracing noise (1 line moved)"


# -- sizing code read from the sources ---------------------------------------------------------------

OLD_SRC = """
    import torch

    class DeepseekSparseSWAMetadataBuilder:
        def __init__(self, vllm_config, device, max_num_reqs: int = 8):
            self.device = device
            max_tokens = vllm_config.scheduler_config.max_num_batched_tokens
            self.max_num_reqs = max_num_reqs
            self.span_indptr = torch.zeros(self.max_num_reqs + 1, dtype=torch.int32, device=device)
            self.left_visible = torch.zeros(max_tokens, dtype=torch.int32, device=device)
"""

#: the same sizes: lines moved, comments, a renamed local copy, a new device keyword, an unrelated statement
MOVED_SRC = """
    import torch

    class DeepseekSparseSWAMetadataBuilder:
        # a comment that moves every line
        def __init__(self, vllm_config, device, max_num_reqs: int = 8, extra=None):
            self.device = device
            self.extra = extra  # unrelated
            max_tokens = (
                vllm_config.scheduler_config.max_num_batched_tokens
            )
            self._max_num_reqs = max_num_reqs
            self._setup()
            self.left_visible = torch.zeros(max_tokens, dtype=torch.int32, device=self.device)

        def _setup(self):
            n = self._max_num_reqs
            self.span_indptr = torch.zeros(
                n + 1, dtype=torch.int32, device=self.device, pin_memory=True
            )
"""

#: a real change: the row count doubles under a new condition
CHANGED_SRC = OLD_SRC.replace(
    "            self.max_num_reqs = max_num_reqs\n",
    "            self.max_num_reqs = max_num_reqs\n            if vllm_config.speculative_config:\n"
    "                self.max_num_reqs = 2 * max_num_reqs\n",
)


def _write(tmp_path, name, src):
    root = tmp_path / name
    path = root / FILE
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(src))
    return str(root)


def _line(src: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if needle in line)


def test_sizing_code_ignores_line_moves_copies_placement_and_unrelated_statements(tmp_path):
    old, moved = _write(tmp_path, "old", OLD_SRC), _write(tmp_path, "new", MOVED_SRC)
    e_old = entry(line=_line(OLD_SRC, "self.span_indptr ="))
    e_new = entry(line=_line(MOVED_SRC, "self.span_indptr ="))
    assert sizing_code(old, e_old) == (
        "alloc torch.zeros(max_num_reqs + 1, dtype=torch.int32)",
        "param max_num_reqs = 8",
    )
    assert sizing_code(moved, e_new) == sizing_code(old, e_old)


def test_sizing_code_shows_a_changed_dependency(tmp_path):
    old, changed = _write(tmp_path, "old", OLD_SRC), _write(tmp_path, "new", CHANGED_SRC)
    e_old = entry(line=_line(OLD_SRC, "self.span_indptr ="))
    e_new = entry(line=_line(CHANGED_SRC, "self.span_indptr ="))
    new = sizing_code(changed, e_new)
    assert new == (
        "alloc torch.zeros(self.max_num_reqs + 1, dtype=torch.int32)",
        "if vllm_config.speculative_config:",
        "param max_num_reqs = 8",
        "self.max_num_reqs = 2 * max_num_reqs",
        "self.max_num_reqs = max_num_reqs",
    )
    d = diff([e_old], [e_new], Release(old), Release(changed))
    assert [c.what for c in d.changed] == [["sizing code"]]
    assert "+ self.max_num_reqs = 2 * max_num_reqs" in d.changed[0].details


def test_sizing_code_of_an_unreadable_file_is_none(tmp_path):
    assert sizing_code(str(tmp_path), entry()) is None


def test_run_diff_prints_the_semantic_diff_with_sizing_code(tmp_path, monkeypatch):
    """The command path: each release built (here: given), sizing code read from each release's
    sources; the moved and re-spelled buffer is noise, the resized one a change."""
    roots = {"1": _write(tmp_path, "old", OLD_SRC), "2": _write(tmp_path, "new", MOVED_SRC)}
    span = {"1": _line(OLD_SRC, "self.span_indptr ="), "2": _line(MOVED_SRC, "self.span_indptr =")}
    left = {"1": _line(OLD_SRC, "self.left_visible ="), "2": _line(MOVED_SRC, "self.left_visible =")}
    built = {
        "1": [entry(line=span["1"]), entry("left_visible", left["1"], ["max_tokens"])],
        "2": [
            entry(line=span["2"], shape=["1 + max_num_reqs"], how="traced"),
            entry("left_visible", left["2"], ["max_num_batched_tokens"], how="traced"),
        ],
    }
    monkeypatch.setattr(command, "build_elsewhere", lambda engine, version, trace, module, warn=None: built[version])
    out: list[str] = []
    code = command.run_diff(
        "vllm",
        ("vllm==1", "vllm==2"),
        lambda spec: spec.split("==")[1],
        lambda version: None,
        (RuntimeError, 3),
        "unused",
        out=out.append,
        source_root=roots.get,
    )
    assert code == 0
    # left_visible: traced in 2 only, its shapes not comparable (a local name against a config
    # name), the same sizing code -> noise
    assert out[0] == "vllm==1 -> vllm==2: 0 added, 0 removed, 0 changed; 2 more differ only in tracing noise"
    assert out[-1] == "not changed: 2 buffers differ only in tracing noise (2 line moved, 2 traced in one release only)"


FAKE_BUILD = """
import sys
from capproof.inventory import dump

_, version, out = sys.argv[1:4]
print("Failed to import Triton kernels (an engine's own log line)", file=sys.stderr)
for i in range(int(version)):
    print(f"warning: Harness{i} failed: AttributeError: 'SimpleNamespace' has no attribute 'x'", file=sys.stderr)
dump([], "vllm", version, out)
"""


@pytest.mark.parametrize("problems", [0, 1, 3])
def test_a_release_built_elsewhere_reports_its_trace_problems_in_one_line(tmp_path, monkeypatch, problems):
    """The diff builds each release in a child interpreter whose stderr is not shown: the child's
    ``warning:`` lines (constructors that did not trace on that release, e.g. a harness written
    for an older release's config) come back as one line per release, the engine's own log lines
    not at all; none when the release traced cleanly."""
    (tmp_path / "fake_capproof_build.py").write_text(FAKE_BUILD)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    warned: list[str] = []
    entries = command.build_elsewhere("vllm", str(problems), True, "fake_capproof_build", warn=warned.append)
    assert entries == []
    if problems == 0:
        assert warned == []
        return
    (line,) = warned
    assert line.startswith(f"warning: vllm=={problems}: {problems} trace problem")
    assert "first: Harness0 failed: AttributeError" in line
    assert line.endswith(f"all of them: capproof inventory --engine vllm=={problems}")
    assert "Triton" not in line


# -- the real wheels: SGLang 0.5.22 -> 0.5.23, static reading of three files (a few seconds) ------


@pytest.mark.real
def test_real_sglang_sizing_code_diff_names_the_resized_buffers_only():
    """Read entries of three SGLang files scanned from both wheels (``pip download --no-deps``,
    34-39 MB each, nothing installed) and diffed with each release's sizing code: the two buffers
    whose allocation changed are the only changes (``HashTopK.tid2eid`` loses its
    ``- num_fused_shared_experts``; the TRT-LLM MHA workspace grows by a semaphore area), the moved
    rest is noise. The full traced diff (4-8 min per release) is run by hand:
    docs/how-to/release-diff.md."""
    from capproof.engines.sglang import buffers, scan
    from capproof.engines.vllm import wheels

    files = [
        "sglang/srt/layers/moe/hash_topk.py",
        "sglang/srt/layers/attention/trtllm_mha_backend.py",
        "sglang/srt/layers/attention/triton_backend.py",
    ]
    built = {}
    for version in ("0.5.22", "0.5.23"):
        try:
            wheels.fetch_version("sglang", version, download=True)
        except wheels.WheelsUnavailable as exc:  # pragma: no cover - offline without the cache
            pytest.skip(str(exc))
        root = wheels.source_root("sglang", version)
        entries = [buffers.read_entry(a, "static") for f in files for a in scan.scan_file(root, f)]
        built[version] = (entries, Release(root))
    (old, old_src), (new, new_src) = built["0.5.22"], built["0.5.23"]
    d = diff(old, new, old_src, new_src)
    assert {c.old.id.split("::")[1]: c.what for c in d.changed} == {
        "HashTopK.tid2eid": ["shape", "sizing code"],
        "TRTLLMHAAttnBackend.workspace_buffer": ["shape", "sizing code"],
    }
    assert len(d.noise) >= 10 and all("line moved" in k for _, _, k in d.noise)
