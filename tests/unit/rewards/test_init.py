import subprocess
import sys

import breadth.rewards


def test_pure_package_imports_neither_torch_nor_transformers():
    code = (
        "import sys, breadth.rewards; "
        "print(sorted(m for m in ('torch', 'transformers', 'trl', 'prefect') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_of_the_formulas_are_exported():
    for name in (
        "OutcomeUCB",
        "batch_repetition_penalty",
        "equivalence_classes",
        "darling_diversity",
        "passk_advantages",
        "set_level_vector_reward",
        "unlikeliness_reward",
        "parse_reward_spec",
        "build_trl_rewards",
        "load_reward_state",
    ):
        assert callable(getattr(breadth.rewards, name)), name
