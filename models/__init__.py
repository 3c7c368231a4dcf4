"""The engines' sizing formulas and indexers as plain Python over integers.

Every function is written once with the shared vocabulary of :mod:`capproof.arith` and runs on
Python ints, on capproof's symbolic ints (Z3) and under CrossHair. Each cites its engine file and
version or PR.
"""
