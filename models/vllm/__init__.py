"""vLLM formulas, per file, with the version or PR each one is taken from."""
