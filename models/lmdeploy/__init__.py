"""LMDeploy formulas, with the PR each one is taken from."""
