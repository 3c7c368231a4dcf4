"""vLLM-Ascend formulas, with the PR each one is taken from."""
