"""Where a capproof project lives: its root, its ``[tool.capproof]`` defaults, the bundled engine specs.

- **Root** (like pytest's rootdir): the nearest directory, from the working directory upwards,
  whose ``pyproject.toml`` has a ``[tool.capproof]`` table, or else the nearest one holding a
  ``spec/`` directory. Commands run from the root, so obligation ids read ``spec/<file>.py::<name>``
  from any subdirectory.
- **Defaults** from ``[tool.capproof]``: ``rlimit``, ``jobs``, ``crosshair_timeout``, ``paths``
  (spec paths, relative to the root). Command-line options win.
- **Bundled engine specs**: the vLLM/SGLang ``spec/`` and ``models/`` ship inside the package as
  ``capproof/_engine/{spec,models}`` (``pyproject.toml`` maps them); they import each other as
  ``spec.*``/``models.*``, so they are loaded with ``capproof/_engine`` as their root. In a
  development checkout (editable install) the checkout itself is that root.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

__all__ = ["find_root", "read_settings", "bundled_root", "SETTINGS", "SettingsError"]

#: ``[tool.capproof]`` keys and their types.
SETTINGS = {"rlimit": int, "jobs": int, "crosshair_timeout": (int, float), "paths": list}


class SettingsError(ValueError):
    """A bad ``[tool.capproof]`` table (one line)."""


def _has_tool_table(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return "capproof" in tomllib.load(fh).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False


def find_root(start: str | None = None) -> str | None:
    """The project root for ``start`` (default: the working directory), or None."""
    here = os.path.abspath(start or os.getcwd())
    candidates = [here]
    while True:
        parent = os.path.dirname(candidates[-1])
        if parent == candidates[-1]:
            break
        candidates.append(parent)
    for d in candidates:
        if _has_tool_table(os.path.join(d, "pyproject.toml")):
            return d
    for d in candidates:
        if os.path.isdir(os.path.join(d, "spec")):
            return d
    return None


def read_settings(root: str | None) -> dict[str, Any]:
    """``[tool.capproof]`` of ``root``'s pyproject.toml (empty without one); SettingsError on a bad table."""
    if root is None:
        return {}
    path = os.path.join(root, "pyproject.toml")
    try:
        with open(path, "rb") as fh:
            table = tomllib.load(fh).get("tool", {}).get("capproof", {})
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})") from None
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.capproof] must be a table")
    for key, value in table.items():
        kind = SETTINGS.get(key)
        if kind is None:
            raise SettingsError(f"{path}: [tool.capproof] has no setting {key!r} (known: {', '.join(SETTINGS)})")
        if isinstance(value, bool) or not isinstance(value, kind):
            raise SettingsError(f"{path}: [tool.capproof] {key} = {value!r} has the wrong type")
        if key in ("rlimit", "jobs", "crosshair_timeout") and value <= 0:
            raise SettingsError(f"{path}: [tool.capproof] {key} must be positive, got {value!r}")
    return table


def bundled_root() -> str | None:
    """The directory whose ``spec/`` and ``models/`` are the engine specs shipped with capproof."""
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "_engine")
    if os.path.isdir(os.path.join(packaged, "spec")):
        return packaged
    checkout = os.path.dirname(here)
    if os.path.isdir(os.path.join(checkout, "spec")) and os.path.isdir(os.path.join(checkout, "models")):
        return checkout
    return None
