"""proofs/ reports a reviewer can trust: every relative link lands on the right line, and a
changed verdict is a small, local diff."""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import textwrap

from click.testing import CliRunner
from conftest import ROOT

from capproof.cli import main
from capproof.report import render_reports

LINK = re.compile(r"\]\(\.\./([^)#]+)(?:#L(\d+))?\)")


def _committed_reports() -> dict[str, str]:
    directory = os.path.join(ROOT, "proofs")
    return {
        fn: open(os.path.join(directory, fn), encoding="utf-8").read()
        for fn in sorted(os.listdir(directory))
        if fn.endswith(".md")
    }


def test_every_relative_link_in_proofs_points_at_the_declaration():
    reports = _committed_reports()
    assert reports
    checked = 0
    for fn, text in reports.items():
        for line in text.splitlines():
            for target, lineno in LINK.findall(line):
                path = os.path.join(ROOT, target)
                assert os.path.isfile(path), f"{fn}: broken link to {target}"
                assert lineno, f"{fn}: link to {target} has no line"
                source = open(path, encoding="utf-8").read().splitlines()[int(lineno) - 1].lstrip()
                function = re.search(r"::([\w.]+)`\]", line)  # a model function (models/ or a spec helper)
                if function:
                    name = function.group(1).split(".")[-1]
                    assert source.startswith((f"def {name}(", f"class {name}")), (fn, line, source)
                else:  # spec: the obligation's decorator, the contract() declaration, or an inventory
                    # obligation's cover() call / table() entry (spec/_inventory.py), or the claim a factory
                    # declares one obligation per inventory entry with (spec/vllm_0_33_derived.py)
                    assert source.startswith(("@obligation", "contract(", "cover(", "table(", '"', "def claim(")), (
                        fn,
                        line,
                        source,
                    )
                checked += 1
    assert checked > 20


def test_obligations_list_models_assumptions_and_counterexample_values():
    text = _committed_reports()["vllm_dsa_indexer.md"]
    section = text.split("### `ebt_width_matches_runner_before_50823`")[1].split("\n### ")[0]
    assert "- models:\n  - [`models/vllm/block_table.py::" in section
    assert (
        "Assumptions (all hold at the counterexample)" in section and "kernel_block_size divides block_size" in section
    )
    assert "not needed" not in section  # no unsat-core legend on a counterexample
    assert re.search(r"\| \*\*`W_buf`\*\* \| `\d+` \|", section)
    assert re.search(r"\| \*\*`W_bt`\*\* \| `\d+` \|", section)


SPEC = """
from capproof import Range, Choice, obligation, at_most, equal, cdiv

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)})
def width_covers(max_model_len, block_size):
    return at_most(demand=max_model_len, capacity=cdiv(max_model_len, block_size) * block_size)

@obligation(domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 64)}, expect="counterexample")
def unaligned_equals_aligned(max_model_len, block_size):
    return equal(W_buf=cdiv(max_model_len, block_size), W_bt=cdiv(cdiv(max_model_len, block_size), 2) * 2)

@obligation(domain={"max_model_len": Range(1, 2**21)})
def third(max_model_len):
    return at_most(demand=max_model_len, capacity=max_model_len)
"""


def test_a_changed_verdict_is_a_small_local_diff(tmp_path, monkeypatch):
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "small.py").write_text(textwrap.dedent(SPEC))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["prove", "--json", "-"])
    before = json.loads(result.output)
    after = copy.deepcopy(before)
    entry = next(e for e in after["obligations"] if e["id"].endswith("::unaligned_equals_aligned"))
    entry.update(verdict="proved", ok=False, counterexample=None, density=None, message="unsat on 2 cases")
    ((path, old),) = render_reports(before).items()
    new = render_reports(after)[path]
    changed = [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    # the summary line and table row, the verdict and result lines, the counterexample table and
    # its failure-density lines
    assert 0 < len(changed) <= 26, changed
    assert not any("width_covers" in line or "third" in line for line in changed)
    sections = new.split("\n### ")
    untouched = [s for s in sections if not s.startswith("`unaligned_equals_aligned`")][1:]
    assert all(s in old for s in untouched)


def test_models_used_follow_spec_helpers():
    """A claim that calls a helper of its spec module lists the models the helper calls; the private
    helper itself (``_wna16_read_claim``, it builds the claim) is followed, not listed."""
    from conftest import obligation_named

    ob = obligation_named("spec/moe_align.py", "wna16_reads_within_sorted_ids")
    assert ob.models_used()[0] == "models/moe_align.py::gemm_max_read_offset"
    assert "spec/moe_align.py::_wna16_read_claim" not in ob.models_used()
    ob = obligation_named("spec/vllm_dsa_indexer.py", "ebt_width_matches_runner_for_every_batch_before_50302")
    assert "models/vllm/block_table.py::runner_block_table_width_39324" in ob.models_used()
    # the trigger witnesses' conditions call models too
    assert "models/vllm/indexer.py::takes_variable_decode_copy" in ob.models_used()


MODELS_ANYWHERE = {
    "engine_formulas/__init__.py": "",
    "engine_formulas/sizes.py": """
        from capproof import cdiv


        def pages(tokens, page):
            return cdiv(tokens, page)


        def padded(tokens, page):
            return pages(tokens, page) * page


        class Pool:
            def __init__(self, tokens):
                self.tokens = tokens

            @staticmethod
            def slots(tokens, page):
                return padded(tokens, page) + page
    """,
    "spec/pool.py": """
        from capproof import Choice, Range, at_most, obligation, total
        import engine_formulas.sizes as sizes
        from engine_formulas.sizes import Pool


        def local_rounding(n, page):
            return ((n + page - 1) // page) * page


        @obligation(domain={"tokens": Range(1, 4096), "page": Choice(16, 64)},
                    assumptions={"a page is used": lambda tokens, page: sizes.pages(tokens, page) >= 1})
        def pool_holds_tokens(tokens, page):
            need = total(local_rounding(t, page) for t in (tokens, tokens))
            return at_most(demand=need, capacity=2 * Pool.slots(tokens, page))
    """,
}


def test_models_used_lists_every_project_function_the_obligation_calls(tmp_path, monkeypatch):
    """Not only packages named models: any project module, attribute calls (module.f,
    Class.staticmethod), helpers of the spec file, calls inside generator expressions and
    assumptions, and what those functions call in turn; the claim's source text."""
    for name, text in MODELS_ANYWHERE.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    from capproof.loader import ensure_project_on_path, load_file

    ensure_project_on_path(str(tmp_path))
    (ob,) = load_file("spec/pool.py")
    # depth first: the claim's own names, then its generator expression's, then the assumptions'
    assert ob.models_used() == [
        "engine_formulas/sizes.py::Pool.slots",
        "engine_formulas/sizes.py::padded",
        "engine_formulas/sizes.py::pages",
        "spec/pool.py::local_rounding",
    ]
    assert ob.claim_source() == (
        "need = total(local_rounding(t, page) for t in (tokens, tokens))\n"
        "return at_most(demand=need, capacity=2 * Pool.slots(tokens, page))"
    )
    result = CliRunner().invoke(main, ["report", "--no-contracts"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "proofs" / "pool.md").read_text()
    assert "Claim, as written in the spec file:\n\n```python\nneed = total(local_rounding(t, page)" in page
    assert "  - [`engine_formulas/sizes.py::Pool.slots`](../engine_formulas/sizes.py#L18)" in page


def test_function_source_parses_a_file_once_and_follows_its_text(tmp_path):
    """function_source memoises each file's parse (spec/vllm_0_33_buffers.py asked for hundreds
    of lambdas of one 100 kB file, each parse and split of the whole file: 1.6 s of every load);
    the memo is keyed by the text, so a changed file is parsed again."""
    import linecache
    import runpy

    from capproof.obligation import _PARSED, function_source

    path = tmp_path / "two_lambdas.py"
    path.write_text("A = {'x': lambda n: n + 1, 'y': lambda m: m *  2}\n\ndef f(k):\n    '''doc'''\n    return k - 1\n")
    ns = runpy.run_path(str(path))
    assert [function_source(ns["A"]["x"]), function_source(ns["A"]["y"]), function_source(ns["f"])] == [
        "n + 1",
        "m *  2",
        "return k - 1",
    ]
    parsed = _PARSED[str(path)]
    assert function_source(ns["A"]["x"]) == "n + 1" and _PARSED[str(path)] is parsed
    path.write_text("A = {'x': lambda n: n + 2}\n")
    linecache.checkcache(str(path))
    ns = runpy.run_path(str(path))
    assert function_source(ns["A"]["x"]) == "n + 2" and _PARSED[str(path)] is not parsed
