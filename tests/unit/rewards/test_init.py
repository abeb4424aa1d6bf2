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


def test_every_exported_name_is_defined_in_the_package():
    # A stale entry in __all__ (a renamed or moved function) fails here, not in a user's import.
    for name in breadth.rewards.__all__:
        value = getattr(breadth.rewards, name)
        assert getattr(value, "__module__", "breadth.rewards").startswith("breadth.rewards"), name
    assert len(set(breadth.rewards.__all__)) == len(breadth.rewards.__all__)
