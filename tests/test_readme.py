"""The README's obligation example is real: it loads and is proved."""

import os
import re

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation
from conftest import ROOT


def test_readme_obligation_example_is_proved(tmp_path):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    example = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "readme_example.py"
    path.write_text(example)
    (ob,) = load_file(str(path))
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED, r.message
    assert r.cases == 6
