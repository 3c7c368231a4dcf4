"""Adversarial catalogue: a model's file reached through a symbolic link in a library's directory.

capproof/provenance.py trusts library-named code (capproof's, Z3's, the standard library's
directory) when it equals the code of the file's installed text, and a file is installed when its
status-change time precedes capproof's start and, under a site directory, its distribution's
``RECORD`` lists it with its hash (:func:`capproof.provenance.unchanged`). Judging the name
lexically (``os.path.abspath``) and the file through the operating system (``os.stat``, ``open``,
which follow links) let these through; the file is now judged at the path the system resolves
(``os.path.realpath``), and a name whose written and resolved forms disagree on being a library's
is the model's:

- a file link made in capproof's package directory to a file of the model's written before the
  run: ``os.stat`` reports the target's old time, so the model's text is "installed" code;
- ``<z3 dir>/<dir link>/../z3util.py``: read lexically, Z3's own ``z3util.py`` (listed in
  ``RECORD``; its hash is computed on the lexical path, the real file), opened, the ``z3util.py``
  beside the link's target: the model's;
- the same ``..`` route under capproof's package directory, and as an aggregate element function
  ("proved [all batch sizes]");
- ``<site-packages>/mutmut`` (the mutation harness's directory, not installed) made a link to the
  model's directory: no distribution's ``RECORD`` lists ``mutmut``, and an unlisted package passes;
- a hard link (``link()`` changes the inode's status time): audited, not a false verdict.

The model's files are tests/data/linked_payloads/ (in the checkout before the test process
started, as a spec's own files are before ``capproof prove``). Each model reads "symbolic" on the
symbolic run only and is false at ``a == 37`` on ints (``lens == [37, 100]``). Brute forced on ints
by tests/_soundness_harness.py. Each test removes the links it made; the links in capproof's package
directory are not named ``*.py`` (the name's suffix decides nothing), so a test walking capproof's
modules meanwhile never meets one.
"""

from __future__ import annotations

import os

import pytest
from _soundness_harness import check, fails_on_ints
from click.testing import CliRunner

import capproof
from capproof.bound import bound_obligation
from capproof.cli import main
from capproof.loader import load_file

PAYLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "linked_payloads")
PACKAGE = os.path.dirname(os.path.abspath(capproof.__file__))


def _z3_dir() -> str:
    import z3

    return os.path.dirname(os.path.abspath(z3.__file__))


def _read() -> str:
    return "def _rd(p):\n    with open(p) as h:\n        return h.read()\n\n\n"


def _loaded(name_expr: str, symbol: str, alias: str) -> str:
    return f"ns = {{}}\nexec(compile(_rd({name_expr}), {name_expr}, 'exec'), ns)\n{alias} = ns['{symbol}']\n\n\n"


A = '@obligation(domain={"a": Range(0, 100)})\n'
CLAIM = "def f(a):\n    sym = probe(a)\n    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n"
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'


def _attempts():
    """(name, links to make as (target, link path), body, false verdict?)"""
    pid = os.getpid()
    file_link = os.path.join(PACKAGE, f"_adv_linked_probe_{pid}.link")
    z3_dir_link = os.path.join(_z3_dir(), f"_adv_linked_dir_{pid}")
    own_dir_link = os.path.join(PACKAGE, f"_adv_linked_dir_{pid}")
    own_dir_link2 = os.path.join(PACKAGE, f"_adv_linked_elem_dir_{pid}")
    hard_link = os.path.join(PACKAGE, f"_adv_hard_linked_probe_{pid}.link")
    harness = os.path.join(os.path.dirname(_z3_dir()), "mutmut")
    inner = os.path.join(PAYLOADS, "inner")
    return [
        pytest.param(
            "file-link-in-capproofs-package-directory",
            [("symlink", os.path.join(PAYLOADS, "probe.py"), file_link)],
            _read() + _loaded(repr(file_link), "probe", "probe") + A + CLAIM,
        ),
        pytest.param(
            "dotdot-through-a-directory-link-naming-z3s-listed-file",
            [("symlink", inner, z3_dir_link)],
            _read() + _loaded(repr(z3_dir_link + "/../z3util.py"), "probe", "probe") + A + CLAIM,
        ),
        pytest.param(
            "dotdot-through-a-directory-link-under-capproofs-directory",
            [("symlink", inner, own_dir_link)],
            _read() + _loaded(repr(own_dir_link + "/../probe.py"), "probe", "probe") + A + CLAIM,
        ),
        pytest.param(
            "aggregate-element-through-a-directory-link",
            [("symlink", inner, own_dir_link2)],
            _read()
            + _loaded(repr(own_dir_link2 + "/../element.py"), "element", "element")
            + DV
            + "def f(n, lens):\n    return at_most(demand=total(element(x) for x in lens), capacity=0)\n",
        ),
        pytest.param(
            "the-harness-directory-made-a-link-to-the-models-directory",
            [("symlink", PAYLOADS, harness)],
            _read() + _loaded(repr(os.path.join(harness, "probe.py")), "probe", "probe") + A + CLAIM,
        ),
        pytest.param(
            "hard-link-in-capproofs-package-directory",
            [("link", os.path.join(PAYLOADS, "hard_linked.py"), hard_link)],  # its own file: link() changes its time
            _read() + _loaded(repr(hard_link), "probe", "probe") + A + CLAIM,
        ),
    ]


def _make(links) -> None:
    for kind, target, path in links:
        if not os.path.lexists(path):
            (os.symlink if kind == "symlink" else os.link)(target, path)


def _remove(links) -> None:
    for _, _, path in links:
        if os.path.lexists(path):
            os.unlink(path)


@pytest.mark.parametrize("name, links, body", _attempts())
def test_code_reached_through_a_link_in_a_library_directory_is_audited(spec_file, name, links, body):
    if any(os.path.exists(path) and not os.path.islink(path) for _, _, path in links):
        pytest.skip("installed for real here (the mutation harness)")
    try:
        _make(links)
        check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
    finally:
        _remove(links)


def _spec_through_a_file_link(link: str, claim: str) -> str:
    return (
        "from capproof import Range, obligation, at_most, select, all_of, cdiv\n\n\n"
        + _read()
        + _loaded(repr(link), "probe", "probe")
        + claim
    )


def test_the_batched_runner_does_not_prove_code_reached_through_a_link(spec_file):
    from capproof import Options
    from capproof.runner import run

    links = [
        ("symlink", os.path.join(PAYLOADS, "probe.py"), os.path.join(PACKAGE, f"_adv_batch_probe_{os.getpid()}.link")),
        ("symlink", os.path.join(PAYLOADS, "inner"), os.path.join(_z3_dir(), f"_adv_batch_dir_{os.getpid()}")),
    ]
    body = (
        _spec_through_a_file_link(links[0][2], "")
        + _loaded(repr(links[1][2] + "/../z3util.py"), "probe", "probe2")
        + '@obligation(domain={"a": Range(0, 100)})\ndef blocks_fit(a):\n    return at_most(demand=cdiv(a, 16), capacity=7)\n\n\n'
        + '@obligation(domain={"a": Range(0, 100)})\ndef through_a_file_link(a):\n'
        + "    return at_most(demand=select(all_of(a == 37, not probe(a)), 1, 0), capacity=0)\n\n\n"
        + '@obligation(domain={"a": Range(0, 100)})\ndef through_a_z3_directory_link(a):\n'
        + "    return at_most(demand=select(all_of(a == 37, not probe2(a)), 1, 0), capacity=0)\n"
    )
    try:
        _make(links)
        path = spec_file(body, "adv_batch_code_reached_through_a_link.py")
        outcomes = run([path], Options(contracts=False, density="off")).obligations
    finally:
        _remove(links)
    verdicts = {o.id.rsplit(":", 1)[-1]: o.verdict.value for o in outcomes}
    assert verdicts["blocks_fit"] == "proved", verdicts
    false = [name for name in verdicts if name.startswith("through_") and verdicts[name] == "proved"]
    assert not false, verdicts


def test_check_config_is_not_safe_through_a_link(tmp_path):
    link = os.path.join(PACKAGE, f"_adv_cc_probe_{os.getpid()}.link")
    links = [("symlink", os.path.join(PAYLOADS, "probe.py"), link)]
    claim = (
        '@obligation(domain={"max_model_len": Range(1, 16384), "num_reqs": Range(1, 100)},\n'
        '            engine="vllm", versions="==0.33.0", expect="proved")\n'
        "def table_fits(max_model_len, num_reqs):\n    sym = probe(num_reqs)\n"
        "    return at_most(demand=select(all_of(num_reqs == 37, not sym), 1, 0), capacity=0)\n"
    )
    path = tmp_path / "cc_through_a_link.py"
    path.write_text(_spec_through_a_file_link(link, claim))
    try:
        _make(links)
        (ob,) = load_file(str(path))
        assert fails_on_ints(ob, {"max_model_len": 4097, "num_reqs": 37})
        argv = ["vllm", "serve", "m", "--max-model-len", "4097"]
        result = CliRunner().invoke(main, ["check-config", "-j", "1", "--spec", str(path), "--", *argv])
    finally:
        _remove(links)
    assert result.exit_code != 0, result.output


def test_bound_is_not_sufficient_through_a_link(tmp_path):
    link = os.path.join(PACKAGE, f"_adv_bd_probe_{os.getpid()}.link")
    links = [("symlink", os.path.join(PAYLOADS, "probe.py"), link)]
    claim = (
        '@obligation(domain={"num_reqs": Range(1, 100)})\ndef slots_fit(num_reqs):\n    sym = probe(num_reqs)\n'
        "    return at_most(demand=num_reqs + select(all_of(num_reqs == 37, not sym), 100, 0), capacity=100)\n"
    )
    path = tmp_path / "bd_through_a_link.py"
    path.write_text(_spec_through_a_file_link(link, claim))
    try:
        _make(links)
        (ob,) = load_file(str(path))
        assert fails_on_ints(ob, {"num_reqs": 37})
        result = bound_obligation(ob)
    finally:
        _remove(links)
    sufficient = result.status == "bounded" and not any(c.insufficient for c in result.cases)
    assert not sufficient, "bounded sufficient, but the claim fails on ints at num_reqs == 37"


def test_a_counterexample_through_a_link_fails_on_a_plain_call(spec_file):
    """Trusted (linked) code asks ``capproof.symbolic.active_trace()``: set on the symbolic runs and
    on capproof's own int replay (``encode.evaluate``), so the counterexample "replays"; a plain
    call of the model, as Python runs it, holds everywhere."""
    from _soundness_harness import HEADER

    from capproof import Options, Verdict
    from capproof.prover import prove_obligation

    link = os.path.join(PACKAGE, f"_adv_linked_inside_{os.getpid()}.link")
    links = [("symlink", os.path.join(PAYLOADS, "inside.py"), link)]
    body = (
        _read()
        + _loaded(repr(link), "inside", "inside")
        + A
        + "def f(a):\n    return at_most(demand=select(all_of(a == 37, inside()), 1, 0), capacity=0)\n"
    )
    try:
        _make(links)
        (ob,) = load_file(spec_file(HEADER + body, "adv_counterexample_through_a_link.py"))
        result = prove_obligation(ob, Options(density="off"))
        assert all(ob.func(a).holds for a in range(101))  # the model called as Python calls it
    finally:
        _remove(links)
    assert result.verdict is not Verdict.COUNTEREXAMPLE, (
        f"counterexample {result.counterexample.params}, a plain call holds"
    )
