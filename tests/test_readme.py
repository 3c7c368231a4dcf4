"""The README's obligation example is real: it loads and is proved."""

import os
import re

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation
from conftest import ROOT


def _example(defining: str) -> str:
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if f"def {defining}(" in b]
    return example


def test_readme_batch_example_finds_the_padded_rows_counterexample(tmp_path):
    path = tmp_path / "readme_batch_example.py"
    path.write_text(_example("padded_rows_fit"))
    (ob,) = load_file(str(path))
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.counterexample.values["rows"] > r.counterexample.values["capacity"]
    (w,) = r.witnesses
    assert w.found and max(w.params["decode_lens"]) >= 2


def test_readme_obligation_example_is_proved(tmp_path):
    example = _example("aligned_table_holds_every_token")
    path = tmp_path / "readme_example.py"
    path.write_text(example)
    (ob,) = load_file(str(path))
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    assert r.cases == 6
