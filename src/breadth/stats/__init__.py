"""Reusable statistics, numpy and scipy only: the seeded bootstrap over problems
(`bootstrap`), the t interval over seeds and Holm's step-down (`seed_interval`), how many seeds
an interval needs (`sizing`), and the calibration of those intervals by simulation
(`calibration`). Formulas and sources: docs/design/algorithms.md.
"""
