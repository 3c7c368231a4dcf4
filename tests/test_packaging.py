"""The wheel's package list (pyproject.toml [tool.setuptools] packages) names every package of
capproof/: a package left out installs without error and then fails on import (`capproof
inventory` from a pip-installed capproof: No module named 'capproof.engines.tracing')."""

import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_capproof_package_ships_in_the_wheel():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        listed = set(tomllib.load(fh)["tool"]["setuptools"]["packages"])
    on_disk = {
        os.path.relpath(d, ROOT).replace(os.sep, ".")
        for d, _, files in os.walk(os.path.join(ROOT, "capproof"))
        if "__init__.py" in files and "__pycache__" not in d
    }
    assert on_disk - listed == set(), f"packages missing from pyproject.toml: {sorted(on_disk - listed)}"


#: import name -> distribution name, where they differ
_DIST = {"z3": "z3-solver", "crosshair": "crosshair-tool", "yaml": "pyyaml"}
#: modules only the pytest plugin imports (pytest is the `pytest` extra)
_EXTRA_ONLY = {"capproof/pytest_plugin.py": {"pytest", "_pytest"}}


def test_every_module_level_import_is_a_declared_dependency():
    """A pip-installed capproof has only [project] dependencies: a module-level import of anything
    else fails every command that imports that module (the prover imported hypothesis, not declared)."""
    import ast
    import re
    import sys

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        deps = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0].lower() for d in tomllib.load(fh)["project"]["dependencies"]}
    missing = {}
    for d, _, files in os.walk(os.path.join(ROOT, "capproof")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(d, name)
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in tree.body:  # module level only: imports inside functions are optional uses
                mods = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    else []
                )
                for mod in mods:
                    top = mod.split(".")[0]
                    if top in sys.stdlib_module_names or top == "capproof" or top in _EXTRA_ONLY.get(rel, ()):
                        continue
                    if _DIST.get(top, top).lower() not in deps:
                        missing.setdefault(rel, set()).add(top)
    assert missing == {}, f"module-level imports not in [project] dependencies: {missing}"
