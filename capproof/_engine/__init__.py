"""The engine specs and models shipped with capproof (``spec/`` and ``models/`` of the repository,
mapped here by pyproject.toml's package-dir); see :mod:`capproof.project`."""
