"""TensorRT-LLM formulas, with the PR each one is taken from."""
