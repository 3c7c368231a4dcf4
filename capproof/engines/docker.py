"""``docker run`` / ``podman run`` launch lines, shared by every engine's line reader.

A container line is ``docker run [OPTIONS] IMAGE [ARGS]``: the options are docker's (``-v`` mounts a
volume, ``-e`` sets a variable), the ARGS the engine's.
"""

from __future__ import annotations

import os

__all__ = ["DOCKER_VALUE_OPTIONS", "strip_docker"]


#: ``docker run`` options that take a value as the next word (the rest are flags or ``--opt=value``).
DOCKER_VALUE_OPTIONS = frozenset(
    {
        "-v",
        "--volume",
        "-p",
        "--publish",
        "-e",
        "--env",
        "--env-file",
        "--name",
        "--gpus",
        "--ipc",
        "--shm-size",
        "--runtime",
        "--network",
        "--net",
        "-w",
        "--workdir",
        "-u",
        "--user",
        "--entrypoint",
        "--mount",
        "--device",
        "--ulimit",
        "--cpus",
        "-m",
        "--memory",
        "--label",
        "-l",
        "--cap-add",
        "--security-opt",
        "--platform",
        "--pull",
        "--restart",
        "--hostname",
        "-h",
        "--add-host",
        "--group-add",
        "--pid",
        "--uts",
        "--log-driver",
        "--log-opt",
    }
)


def strip_docker(argv: list[str]) -> tuple[dict[str, str], str | None, list[str]]:
    """``docker run [OPTIONS] IMAGE [ARGS]`` -> (``-e``/``--env`` variables, IMAGE, ARGS); ``(
    {}, None, argv)`` for anything else. ``--entrypoint`` is not followed (the image's is assumed)."""
    if len(argv) < 2 or os.path.basename(argv[0]) not in ("docker", "podman") or argv[1] != "run":
        return {}, None, list(argv)
    env: dict[str, str] = {}
    i = 2
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            return env, arg, list(argv[i + 1 :])
        option, eq, value = arg.partition("=")
        if not eq and option in DOCKER_VALUE_OPTIONS:
            value = argv[i + 1] if i + 1 < len(argv) else ""
            i += 1
        if option in ("-e", "--env") and "=" in value:
            name, _, val = value.partition("=")
            env[name] = val
        i += 1
    return env, None, []
