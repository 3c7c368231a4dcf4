"""A seeded sample of mutants of capproof's own code, each run against the fast tests of its module.

``make mutation`` mutates models/ and the spec helpers (mutmut; the oracle is ``capproof prove``
and the fast tier). This measures the other side: how many small changes to the prover itself
(``capproof/symbolic.py``, ``prover.py``, ``runner.py``, ...) the fast tests notice. mutmut's
trampolines cannot be put into capproof itself (the guard and the exception watch read
capproof's own frames and files), so the mutants are made here with :mod:`ast`:

- operators: ``<``/``<=``/``>``/``>=``/``==``/``!=`` swapped for their neighbour or negation,
  ``+``/``-``, ``*``/``//``, ``and``/``or``, ``not x`` -> ``x``, ``True``/``False`` swapped, an int
  constant ``k`` -> ``k + 1``, ``return x`` -> ``return None``, ``is``/``is not``, ``in``/``not in``;
- one mutant per site, docstrings left alone; the sites of each
  file are listed in order, shuffled with ``--seed`` and the first ``--sample`` taken (a random
  sample whatever part finishes).

Each mutant is written over the file in a scratch copy of the working tree (``--copy``, a ``git
worktree`` made by the caller) and its file's test files run there with ``pytest -x`` (the files'
mutants in turn, so a run stopped early is a sample of each)
(a failure = killed; a run past ``--timeout`` seconds = timeout, counted apart), after a
baseline run of the same tests on the unmutated file as :func:`ast.unparse` writes it (site -1:
it must pass, else the file is skipped). One JSON line per mutant in ``--out``. Run from the project root::

    git worktree add --detach /tmp/mut HEAD
    nice -n 10 .venv/bin/python tests/mutation/sample_capproof.py --copy /tmp/mut --sample 30 \\
        --file capproof/prover.py tests/test_prover.py ... --file capproof/runner.py tests/test_batching.py ...
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import random
import subprocess
import sys
import time

_SWAP_CMP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SWAP_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult}


def _docstring_ids(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def sites(source: str) -> list[tuple[int, str, int]]:
    """``(node index in ast.walk order, operator, line)`` of every mutable site of ``source``."""
    tree = ast.parse(source)
    docs = _docstring_ids(tree)
    out = []
    for i, node in enumerate(ast.walk(tree)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAP_CMP:
            out.append((i, "compare", line))
        elif isinstance(node, ast.BinOp) and type(node.op) in _SWAP_BIN:
            out.append((i, "binop", line))
        elif isinstance(node, ast.BoolOp):
            out.append((i, "boolop", line))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append((i, "not", line))
        elif isinstance(node, ast.Constant) and id(node) not in docs:
            if isinstance(node.value, bool):
                out.append((i, "bool", line))
            elif isinstance(node.value, int) and not isinstance(node.value, bool):
                out.append((i, "int", line))
        elif isinstance(node, ast.Return) and node.value is not None:
            out.append((i, "return", line))
    return out


def mutate(source: str, index: int, kind: str) -> str:
    """``source`` with the site ``index`` (ast.walk order) changed by operator ``kind``."""
    tree = ast.parse(source)
    node = list(ast.walk(tree))[index]
    if kind == "compare":
        node.ops[0] = _SWAP_CMP[type(node.ops[0])]()
    elif kind == "binop":
        node.op = _SWAP_BIN[type(node.op)]()
    elif kind == "boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "not":  # replace the UnaryOp by its operand, in its parent
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, node.operand)
                elif isinstance(value, list) and any(v is node for v in value):
                    setattr(parent, field, [node.operand if v is node else v for v in value])
    elif kind == "bool":
        node.value = not node.value
    elif kind == "int":
        node.value = node.value + 1
    elif kind == "return":
        node.value = ast.Constant(None)
    return ast.unparse(tree)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copy", required=True, help="scratch copy of the tree (a git worktree)")
    parser.add_argument(
        "--file",
        action="append",
        nargs="+",
        required=True,
        metavar=("FILE", "TEST"),
        help="a capproof file to mutate and the test files run on its mutants (repeatable)",
    )
    parser.add_argument("--sample", type=int, default=30, help="mutants per file")
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--out", default="mutants-capproof.jsonl")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    args.tests = {group[0]: group[1:] for group in args.file}
    args.file = list(args.tests)
    done = set()
    if os.path.exists(args.out):
        with open(args.out) as fh:
            done = {(r["file"], r["site"], r["kind"]) for r in map(json.loads, fh)}
    originals = {path: open(path).read() for path in args.file}
    plains = {path: ast.unparse(ast.parse(src)) for path, src in originals.items()}
    queues = []
    for path, src in originals.items():
        chosen = sites(src)
        random.Random(f"{args.seed}:{path}").shuffle(chosen)
        # first the baseline: the tests pass on the unmutated file as ast.unparse writes it
        queues.append([(path, -1, "none", 0)] + [(path, *site) for site in chosen[: args.sample]])
    order = [m for group in itertools.zip_longest(*queues) for m in group if m is not None]  # files in turn
    broken: set[str] = set()
    for path, index, kind, line in order:
        if (path, index, kind) in done or path in broken:
            continue
        mutated = plains[path] if index < 0 else mutate(originals[path], index, kind)
        if index >= 0 and mutated == plains[path]:
            continue
        target = os.path.join(args.copy, path)
        with open(target, "w") as fh:
            fh.write(mutated)
        started = time.monotonic()
        try:
            run = subprocess.run(
                [
                    args.python,
                    "-m",
                    "pytest",
                    "-x",
                    "-q",
                    "-p",
                    "no:randomly",
                    "-p",
                    "no:cacheprovider",
                    *args.tests[path],
                ],
                cwd=args.copy,
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
            outcome = "survived" if run.returncode == 0 else "killed"
            tail = run.stdout.strip().splitlines()[-1:] if run.stdout else []
        except subprocess.TimeoutExpired:
            outcome, tail = "timeout", []
        finally:
            with open(target, "w") as fh:
                fh.write(originals[path])
        record = {
            "file": path,
            "site": index,
            "kind": kind,
            "line": line,
            "outcome": outcome,
            "seconds": round(time.monotonic() - started, 1),
            "tail": tail,
        }
        with open(args.out, "a") as fh:
            fh.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)
        if index < 0 and outcome != "survived":  # the tests fail unmutated: no oracle for this file
            broken.add(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
