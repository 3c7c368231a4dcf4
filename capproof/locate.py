"""Find the source line of a ``models/…py::name`` reference, for links in reports and SARIF.

Lines come from parsing the file (``ast``), not importing it, so rendering never runs model code
and gives the same answer from a JSON run file as from a fresh run.
"""

from __future__ import annotations

import ast
import functools
import os

__all__ = ["split_ref", "definition_line"]


def split_ref(ref: str) -> tuple[str, str]:
    """``"models/x.py::Class.method"`` -> ``("models/x.py", "Class.method")``; no ``::`` -> ``(ref, "")``."""
    path, _, qualname = ref.partition("::")
    return path, qualname


@functools.lru_cache(maxsize=256)
def _definitions(path: str, mtime_ns: int) -> dict[str, int]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out: dict[str, int] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                # decorators: link the ``def`` line, which is what a reader looks for
                out.setdefault(name, node.lineno)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, name + ".")

    walk(tree.body, "")
    return out


def definition_line(ref: str, root: str = ".") -> int | None:
    """Line of the ``def``/``class`` named by ``ref`` (``"path.py::qualname"``), relative to ``root``.

    Returns ``None`` when the file is missing, does not parse, or has no such definition
    (a link without a line is still rendered by callers). Never raises for bad input.
    """
    path, qualname = split_ref(ref)
    if not qualname:
        return None
    full = os.path.join(root, path)
    try:
        defs = _definitions(full, os.stat(full).st_mtime_ns)
    except (OSError, SyntaxError, ValueError):
        return None
    return defs.get(qualname)
