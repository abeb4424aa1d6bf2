"""Evaluation the way models are deployed: many samples and a selector, plus diversity.

Pure numpy/pandas (no torch); matplotlib is imported only inside the report functions.
Formulas and names: docs/design/algorithms.md, "Metrics" and "Search at test time".
"""

# Each public name and the module that defines it. They are imported on first use (PEP 562):
# Prefect reads a cached search result (a `SearchComparison`) by importing this package, and
# importing every module eagerly would load pandas into a run that needs none of it.
_HOMES = {
    "OutcomeDiversity": "diversity",
    "distinct_classes": "diversity",
    "distinct_k": "diversity",
    "distinct_n": "diversity",
    "distinct_outcome_fraction": "diversity",
    "distinct_outcomes": "diversity",
    "embedding_diversity": "diversity",
    "entropy_threshold": "diversity",
    "forking_token_share": "diversity",
    "mean_token_entropy": "diversity",
    "outcome_diversity": "diversity",
    "outcome_entropy": "diversity",
    "utility_k": "diversity",
    "best_of_k": "metrics",
    "best_of_k_curve": "metrics",
    "chance_corrected_pass_at_k": "metrics",
    "chance_pass_at_k": "metrics",
    "default_ks": "metrics",
    "g_pass_at_k": "metrics",
    "maj_at_k": "metrics",
    "maj_at_k_curve": "metrics",
    "maj_at_k_estimates": "metrics",
    "mg_pass_at_k": "metrics",
    "outcome_codes": "metrics",
    "pass_at_k": "metrics",
    "pass_at_k_curve": "metrics",
    "pass_hat_k": "metrics",
    "EvolutionConfig": "search",
    "SearchComparison": "search",
    "SearchResult": "search",
    "compare_search": "search",
    "evolutionary_search": "search",
    "independent_sampling": "search",
    "DIVERSITY_METRICS": "summary",
    "EvaluationResult": "summary",
    "evaluate_models": "summary",
    "evaluate_rollouts": "summary",
    "per_problem_table": "summary",
    "Crossover": "transfer",
    "TransferResult": "transfer",
    "crossover_k": "transfer",
    "solved_by_base": "transfer",
    "transfer_analysis": "transfer",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value  # found once, then an ordinary module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


def write_report(results, out_dir):
    """Write pass_at_k.png, diversity.png, report.md, metrics.json, paired.json (see
    evaluation.report)."""
    # Imported on use: the report loads pandas and matplotlib.
    from breadth.evaluation.report import write_report as _write_report

    return _write_report(results, out_dir)


__all__ = ["write_report", *_HOMES]  # noqa: PLE0604 - _HOMES holds the names, once
