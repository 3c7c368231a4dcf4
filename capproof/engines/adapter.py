"""The engine adapter interface: what the command line and ``check-config`` need from an engine.

One adapter per engine family (``engines/<engine>/adapter.py``), registered in
:mod:`capproof.engines.registry`; ``capproof/cli.py`` and ``engines/checkconfig.py`` reach an
engine only through it, so neither names one. An adapter may answer for several ``--engine``
names that share its command line (vLLM-Ascend runs ``vllm serve``).

A *deployment* is what :meth:`EngineAdapter.parse_line` returns for an engine's launch line (vLLM's
``ServeConfig``, SGLang's ``LaunchConfig``): it has ``model``, ``origin`` (flag -> where its value
came from), ``config_file``, ``env`` and ``describe()``, which ``check-config``'s report reads.

Adapter modules import nothing heavy at module level (the registry is imported when the command
line is built): flag tables, parsers and the check itself are imported by the methods that use them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Protocol

__all__ = ["CheckError", "EngineAdapter", "near_miss"]


class CheckError(ValueError):
    """Bad ``--engine``, launch line or ``--model-config`` (one line)."""


def _typo(a: str, b: str) -> bool:
    """One word mistyped as another: one a prefix of the other (``len``/``length``, ``seq``/``seqs``)
    or one edit apart (a letter added, dropped, changed, or two neighbours swapped); both at least
    three letters, so distinct short words (``m``/``n``) are not typos of each other."""
    if a == b or min(len(a), len(b)) < 3:
        return False
    if a.startswith(b) or b.startswith(a):
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def near_miss(name: str, vocabulary: frozenset[str]) -> str | None:
    """The vocabulary name ``name`` is most likely a misspelling of, or None (also when ``name``
    is in the vocabulary).

    A near miss is the same name written without (or with other) underscores or case
    (``blocksize``, ``Max_Model_Len``), or the same words with one word mistyped or cut
    (``max_model_length``, ``max_num_seq``). A name with a word more or less (``block_size_m``,
    ``num_reqs`` beside ``max_num_reqs``) is another name, not a near miss. Ties: the first in
    sorted order."""
    if name in vocabulary:
        return None
    squashed, by_length = _index(vocabulary)
    known = squashed.get(name.replace("_", "").lower())
    if known is not None:
        return known
    words = name.lower().split("_")
    for other in by_length.get(len(words), ()):
        differ = [(a, b) for a, b in zip(words, other.split("_")) if a != b]
        if len(differ) == 1 and _typo(*differ[0]):
            return other
    return None


@functools.lru_cache(maxsize=8)
def _index(vocabulary: frozenset[str]) -> tuple[dict[str, str], dict[int, list[str]]]:
    """``vocabulary`` without underscores and case -> its first name; names by their word count."""
    squashed: dict[str, str] = {}
    by_length: dict[int, list[str]] = {}
    for known in sorted(vocabulary):
        squashed.setdefault(known.replace("_", "").lower(), known)
        by_length.setdefault(len(known.split("_")), []).append(known)
    return squashed, by_length


class EngineAdapter(Protocol):
    """An engine as the command line and ``check-config`` see it."""

    #: The engine's name (``--engine NAME[==VERSION]``, ``proofs/inventory/NAME-VERSION.json``).
    name: str
    #: Every ``--engine`` name this adapter answers for (the first is ``name``).
    engines: tuple[str, ...]
    #: The launch command as an operator types it, for examples in messages (``vllm serve MODEL``).
    command: str
    #: A complete example line for help and error texts.
    example_line: str
    # Optional (read with ``getattr(adapter, "headline_dtypes", None)``): the element types of the
    # engine's index buffers when its coverage headline is over them (``capproof coverage``);
    # absent, the headline is over all inventory entries.

    def usage(self) -> str:
        """How ``--engine`` names this engine (``vllm[==VERSION], vllm-ascend==VERSION``)."""
        ...

    def display(self, engine: str) -> str:
        """The engine's name as its project writes it (``vLLM``, ``vLLM-Ascend``, ``SGLang``)."""
        ...

    def versions(self) -> tuple[str, ...]:
        """The releases capproof models (flag tables, batch defaults), oldest first."""
        ...

    def default_version(self) -> str:
        """The release checked when ``--engine NAME`` gives none."""
        ...

    def resolve(self, engine: str, version: str | None, text: str) -> tuple[str, str]:
        """``--engine`` ``text`` split into ``engine`` and ``version`` (None: not given) ->
        (engine, the release's own spelling of the version). Raises :class:`CheckError`."""
        ...

    def engine_from_line(self, args: list[str], engine: str, version: str, explicit: bool) -> tuple[str, str, str]:
        """(engine, version, how it was derived or "") once the launch line is known: a container
        image tag may name the release when ``--engine`` was not given (``explicit`` False).
        Raises :class:`CheckError`."""
        ...

    def owns_line(self, args: list[str]) -> bool:
        """Whether the launch line runs this engine's own command (``sglang serve``, ``python -m
        sglang.launch_server``), so ``check-config`` needs no ``--engine`` for it."""
        ...

    def flags(self, engine: str, version: str) -> frozenset[str] | None:
        """The long options of the engine's launch command at ``version`` (None: not known)."""
        ...

    def parser_label(self, engine: str, version: str) -> str:
        """Who parses the launch line, for messages (``vLLM 0.33.0``)."""
        ...

    def parse_line(self, args: list[str], engine: str, version: str) -> Any:
        """The deployment of a launch line (``argv`` after ``--``). Raises :class:`CheckError`
        for a line the engine would refuse or that names no model."""
        ...

    def vocabulary(self) -> frozenset[str]:
        """Parameter names an obligation about this engine may use for a deployment value: the
        engine's config names (``max_model_len``, ``block_size``, …) and what check-config pins."""
        ...

    def did_you_mean(self, name: str) -> str | None:
        """The :meth:`vocabulary` name an obligation parameter ``name`` is a near miss of
        (:func:`near_miss`), or None."""
        ...

    def check(
        self,
        cfg: Any,
        engine: str,
        version: str,
        model: Any,
        paths: tuple[str, ...],
        options: Any,
        gpu: str | None,
        num_sms: int | None,
    ) -> Any:
        """Run every applicable obligation of ``paths`` for the deployment ``cfg``; -> the
        ``CheckOutcome`` of :mod:`capproof.engines.checkconfig`. Raises :class:`CheckError`."""
        ...

    def owns_spec(self, text: str) -> bool:
        """True when ``--engine``/``--diff`` ``text`` (``NAME[==VERSION]``) names this engine."""
        ...

    def run_inventory(
        self,
        spec: str | None,
        json_out: str | None,
        write: bool,
        check: bool,
        out: Callable[[str], None],
        err: Callable[[str], None],
        trace: bool,
    ) -> int:
        """``capproof inventory --engine spec``: -> exit code."""
        ...

    def run_diff(self, old: str, new: str, out: Callable[[str], None], err: Callable[[str], None], trace: bool) -> int:
        """``capproof inventory --diff OLD NEW``: -> exit code."""
        ...
