"""The engine-neutral half of ``capproof inventory --engine NAME==X``: read entries, write, check.

An engine module builds its entries (static scan + tracer) and hands them to :func:`finish`, which
keeps the committed verdicts, writes ``proofs/inventory/<engine>-<version>.json``/``.md``
(``--write``), compares them with the committed files (``--check``) or prints the JSON
(``--json``). :func:`read_entry` turns one scanned allocation into a ``read`` entry, with the
engine's config spellings renamed to the inventory's vocabulary.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from typing import Callable, Mapping, Sequence

from ...errors import SpecError
from ...inventory import (
    Entry,
    classify,
    diff,
    diff_lines,
    dump,
    dumps,
    expression_names,
    load,
    render_markdown,
    summary_line,
)
from .scan import Allocation

__all__ = ["INVENTORY_DIR", "paths", "normalise", "read_entry", "finish", "build_elsewhere", "run_diff"]

INVENTORY_DIR = os.path.join("proofs", "inventory")


def paths(engine: str, version: str, root: str = "") -> tuple[str, str]:
    """``(json, md)`` paths of the committed inventory of ``engine`` ``version``."""
    base = os.path.join(root, INVENTORY_DIR, f"{engine}-{version}")
    return base + ".json", base + ".md"


class _Names(ast.NodeTransformer):
    """``self.x.y`` -> ``y``; ``max``/``min`` -> ``maximum``/``minimum``; config spellings renamed."""

    def __init__(self, rename: Mapping[str, str]):
        self.rename = rename

    def visit_Attribute(self, node: ast.Attribute):
        return ast.copy_location(ast.Name(id=self.rename.get(node.attr, node.attr), ctx=ast.Load()), node)

    def visit_Name(self, node: ast.Name):
        return ast.copy_location(ast.Name(id=self.rename.get(node.id, node.id), ctx=node.ctx), node)

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
            node.func = ast.Name(id={"max": "maximum", "min": "minimum"}[node.func.id], ctx=ast.Load())
        return node


def normalise(text: str, rename: Mapping[str, str]) -> str:
    """An allocation argument's source text in the shape language's spelling (names renamed)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text
    return ast.unparse(_Names(rename).visit(tree))


def read_entry(a: Allocation, why: str, rename: Mapping[str, str], dtypes: Mapping[str, str]) -> Entry:
    """The ``read`` entry of one scanned allocation: its argument text, names normalised."""
    shape = [normalise(x, rename) for x in a.args]
    params: set[str] = set()
    for expr in shape:
        try:
            params.update(expression_names(expr))
        except SpecError:
            try:
                params.update(
                    n.id
                    for n in ast.walk(ast.parse(expr, mode="eval"))
                    if isinstance(n, ast.Name)
                    and n.id not in ("len", "maximum", "minimum", "cdiv", "round_up", "int", "sum")
                )
            except SyntaxError:
                pass
    return Entry(
        id=a.id,
        file=a.file,
        line=a.line,
        owner=a.owner,
        attribute=a.attribute,
        dtype=dtypes.get(a.dtype, a.dtype),
        shape=shape,
        how="read",
        why=why,
        sized_by=classify(params),
        params=sorted(params),
        verdicts={},
    )


#: A trace problem caused by a module missing from this Python (the engine's dependencies).
_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")


def problem_lines(problems: Sequence[str]) -> list[str]:
    """The warnings for a build's trace problems: one line per problem, except that the problems
    caused by a module missing from this Python (``torch`` outside the real venv: every
    constructor fails the same way) are one line per module, naming how many, the first few and
    how to trace them."""
    missing: dict[str, list[str]] = {}
    lines: list[str] = []
    for p in problems:
        m = _MISSING_MODULE.search(p)
        if m is None:
            lines.append(p)
        else:
            missing.setdefault(m.group(1).split(".")[0], []).append(p.partition(":")[0].removesuffix(" failed"))
    for module, names in missing.items():
        shown = ", ".join(names[:3]) + (f", … ({len(names) - 3} more)" if len(names) > 3 else "")
        lines.append(
            f"{len(names)} constructors and demand derivations not traced: no module named '{module}' in this "
            f"Python ({shown}); their buffers are read from the allocation calls only. To trace them: make "
            "real-install, then .capproof/real-venv/bin/capproof inventory (or give --no-trace to skip tracing)"
        )
    return lines


def finish(
    engine: str,
    version: str,
    entries: list[Entry],
    json_out: str | None,
    write: bool,
    check: bool,
    scanned: int,
    seconds: float,
    out: Callable[[str], None] = print,
    err: Callable[[str], None] | None = None,
    facts: list | None = None,
) -> int:
    """Keep the committed verdicts, then ``--json``/``--check``/``--write`` as the command says;
    print the summary line. ``facts``: the engine facts checked over the release's code
    (:mod:`capproof.facts`), written and checked next to the inventory; None: the engine has none
    (no facts file is written or checked). Returns the exit code (0 ok, 1 stale, 2 bad output path)."""
    err = err or (lambda s: print(s, file=sys.stderr))
    jpath, mpath = paths(engine, version)
    # the verdicts are the coverage tooling's (capproof coverage --write): keep the committed ones
    if os.path.exists(jpath):
        try:
            kept = {e.id: (e.verdicts, e.coverage) for e in load(jpath)}
        except SpecError:
            kept = {}
        for e in entries:
            verdicts, kind = kept.get(e.id, ({}, "uncovered"))
            e.verdicts, e.coverage = dict(verdicts), kind or "uncovered"
    text = dumps(entries, engine, version)
    md = render_markdown(entries, engine, version, generator=f"capproof inventory --engine {engine}=={version} --write")
    generated = [(jpath, text), (mpath, md)]
    if facts is not None:
        from ... import facts as _facts

        generated.append((_facts.facts_path(jpath), _facts.dumps(facts, engine, version)))
    code = 0
    if json_out == "-":
        sys.stdout.write(text)
    elif json_out:
        try:
            dump(entries, engine, version, json_out)
        except OSError as exc:
            err(f"error: cannot write --json {json_out}: {exc.strerror}")
            return 2
    if check:
        stale = []
        for path, want in generated:
            try:
                with open(path, encoding="utf-8") as fh:
                    have = fh.read()
            except FileNotFoundError:
                have = None
            if have != want:
                stale.append(path)
        if stale:
            err(f"stale {', '.join(stale)} (run `capproof inventory --engine {engine}=={version} --write` and commit)")
            if os.path.exists(jpath):
                try:
                    committed = load(jpath)
                    for line in diff_lines(diff(committed, entries), "committed", "traced now")[:60]:
                        err(line)
                except SpecError as exc:
                    err(str(exc))
            code = 1
    if write:
        for path, want in generated:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(want)
        out(f"wrote {', '.join(p for p, _ in generated[:-1])} and {generated[-1][0]}")
    if json_out != "-":
        out(summary_line(entries, engine, version) + f" ({scanned} allocations scanned, {seconds:.1f} s)")
    return code


def build_elsewhere(
    engine: str, version: str, trace: bool, module: str, warn: Callable[[str], None] | None = None
) -> list[Entry]:
    """``version``'s inventory of ``engine``, built in a fresh interpreter by ``python -m module
    build VERSION OUT.json [--no-trace]`` (two releases of one engine cannot share an interpreter).
    The child's ``warning: `` lines on stderr (its trace problems: a constructor or derivation
    that did not run on this release, whose buffers stay ``read``) reach ``warn`` as one line per
    release: how many, the first, and the command that lists them all. Raises :class:`SpecError`
    (one line: the child's last stderr line) when the build fails."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "inv.json")
        cmd = [sys.executable, "-m", module, "build", version, out] + ([] if trace else ["--no-trace"])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise SpecError(f"building the {engine}=={version} inventory failed: {last}")
        problems = [line[len("warning: ") :] for line in proc.stderr.splitlines() if line.startswith("warning: ")]
        if problems and warn is not None:
            first = problems[0] if len(problems[0]) <= 200 else problems[0][:199] + "…"
            warn(
                f"warning: {engine}=={version}: {len(problems)} trace problem{'s' if len(problems) > 1 else ''} "
                f"(buffers they size are compared as read), first: {first}; all of them: "
                f"capproof inventory --engine {engine}=={version}"
            )
        return load(out)


def run_diff(
    engine: str,
    specs: Sequence[str],
    version_of: Callable[[str], str],
    fetch: Callable[[str], object],
    unavailable: tuple[type[BaseException], int],
    module: str,
    out: Callable[[str], None] = print,
    err: Callable[[str], None] | None = None,
    trace: bool = True,
    source_root: Callable[[str], str] | None = None,
    positive: Sequence[str] = (),
) -> int:
    """``capproof inventory --diff ENGINE==A ENGINE==B``: buffers added, removed and changed between
    two releases (exit 0; :func:`capproof.inventory.diff` says what counts as a change).
    ``version_of`` turns a spec into a version (raises :class:`SpecError`, exit 2);
    ``fetch(version)`` makes the release's wheel and sources available (the engine's wheel cache:
    ``pip download --no-deps``, nothing installed; raises ``unavailable[0]``, exit
    ``unavailable[1]``); each release is built in its own interpreter by ``python -m module``
    (:func:`build_elsewhere`; its trace problems are one ``warning:`` line per release on ``err``).
    ``source_root(version)``, where the release's sources were
    extracted, gives each entry's sizing code and access statements to compare (:class:`.sizing.Release`);
    ``positive``: the engine's config names that are at least 1 when shapes are compared."""
    from .sizing import Release

    err = err or (lambda s: print(s, file=sys.stderr))
    exc_type, exit_code = unavailable
    built = []
    try:
        for spec in specs:
            version = version_of(spec)
            fetch(version)
            built.append((version, build_elsewhere(engine, version, trace, module, warn=err)))
    except SpecError as exc:
        err(f"error: {exc}")
        return 2
    except exc_type as exc:
        err(f"capproof: real engine unavailable: {exc}")
        return exit_code
    (va, a), (vb, b) = built
    sources = (None, None)
    if source_root is not None:
        sources = (Release(source_root(va)), Release(source_root(vb)))
    for line in diff_lines(diff(a, b, *sources, positive=positive), f"{engine}=={va}", f"{engine}=={vb}"):
        out(line)
    return 0
