"""SGLang sizing formulas (plain Python over ints, in capproof's arithmetic vocabulary)."""
