"""Evaluation the way models are deployed: many samples and a selector, plus diversity.

Pure numpy/pandas (no torch); matplotlib is imported only inside the report functions.
Formulas and names: docs/design/algorithms.md, "Metrics" and "Search at test time".
"""

from breadth.evaluation.bootstrap import (
    ConfidenceInterval,
    bootstrap_ci,
    bootstrap_means,
    bootstrap_weights,
)
from breadth.evaluation.diversity import (
    OutcomeDiversity,
    distinct_classes,
    distinct_k,
    distinct_n,
    distinct_outcome_fraction,
    distinct_outcomes,
    embedding_diversity,
    entropy_threshold,
    forking_token_share,
    mean_token_entropy,
    outcome_diversity,
    outcome_entropy,
    utility_k,
)
from breadth.evaluation.metrics import (
    best_of_k,
    best_of_k_curve,
    chance_corrected_pass_at_k,
    chance_pass_at_k,
    default_ks,
    maj_at_k,
    outcome_codes,
    pass_at_k,
    pass_at_k_curve,
)
from breadth.evaluation.search import (
    EvolutionConfig,
    SearchComparison,
    SearchResult,
    compare_search,
    evolutionary_search,
    independent_sampling,
)
from breadth.evaluation.summary import (
    DIVERSITY_METRICS,
    EvaluationResult,
    evaluate_models,
    evaluate_rollouts,
    per_problem_table,
)
from breadth.evaluation.transfer import (
    Crossover,
    TransferResult,
    crossover_k,
    solved_by_base,
    transfer_analysis,
)


def write_report(results, out_dir):
    """Write pass_at_k.png, diversity.png, report.md, metrics.json (see evaluation.report)."""
    from breadth.evaluation.report import write_report as _write_report

    return _write_report(results, out_dir)


__all__ = [
    "DIVERSITY_METRICS",
    "ConfidenceInterval",
    "Crossover",
    "EvaluationResult",
    "EvolutionConfig",
    "OutcomeDiversity",
    "SearchComparison",
    "SearchResult",
    "TransferResult",
    "best_of_k",
    "best_of_k_curve",
    "bootstrap_ci",
    "bootstrap_means",
    "bootstrap_weights",
    "chance_corrected_pass_at_k",
    "chance_pass_at_k",
    "compare_search",
    "crossover_k",
    "default_ks",
    "distinct_classes",
    "distinct_k",
    "distinct_n",
    "distinct_outcome_fraction",
    "distinct_outcomes",
    "embedding_diversity",
    "entropy_threshold",
    "evaluate_models",
    "evaluate_rollouts",
    "evolutionary_search",
    "forking_token_share",
    "independent_sampling",
    "maj_at_k",
    "mean_token_entropy",
    "outcome_codes",
    "outcome_diversity",
    "outcome_entropy",
    "pass_at_k",
    "pass_at_k_curve",
    "per_problem_table",
    "solved_by_base",
    "transfer_analysis",
    "utility_k",
    "write_report",
]
