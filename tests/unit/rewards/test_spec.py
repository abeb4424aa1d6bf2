import pytest

from breadth.rewards.registry import reward_names
from breadth.rewards.spec import RewardTerm, parse_reward_spec

VALID = [
    ("correctness", [("correctness", {}, 1.0)]),
    ("correctness+ucb", [("correctness", {}, 1.0), ("ucb", {}, 1.0)]),
    ("correctness+batch", [("correctness", {}, 1.0), ("batch", {}, 1.0)]),
    ("darling", [("darling", {}, 1.0)]),
    ("passk:k=4", [("passk", {"k": 4}, 1.0)]),
    ("vector", [("vector", {}, 1.0)]),
    (
        "correctness+ucb*0.5+batch",
        [("correctness", {}, 1.0), ("ucb", {}, 0.5), ("batch", {}, 1.0)],
    ),
    (
        " correctness + ucb:coef=1.5,variant=ucb_mean,apply_to=correct*2 ",
        [
            ("correctness", {}, 1.0),
            ("ucb", {"coef": 1.5, "variant": "ucb_mean", "apply_to": "correct"}, 2.0),
        ],
    ),
    (
        "darling:judge=text,n=3,threshold=0.6",
        [("darling", {"judge": "text", "n": 3, "threshold": 0.6}, 1.0)],
    ),
    ("vector:draws=16,alpha=0.5", [("vector", {"draws": 16, "alpha": 0.5}, 1.0)]),
    ("unlikeliness:beta=0.5", [("unlikeliness", {"beta": 0.5}, 1.0)]),
    ("correctness+format:bonus=0.2", [("correctness", {}, 1.0), ("format", {"bonus": 0.2}, 1.0)]),
    ("batch*-1", [("batch", {}, -1.0)]),
    ("darling+batch*0.5", [("darling", {}, 1.0), ("batch", {}, 0.5)]),
]


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[v[0].strip() for v in VALID])
def test_parse_valid_specs(text, expected):
    spec = parse_reward_spec(text)
    assert spec.terms == tuple(
        RewardTerm(name, params, weight) for name, params, weight in expected
    )
    assert spec.names == tuple(name for name, _, _ in expected)


def test_params_are_typed():
    term = parse_reward_spec("passk:k=8").terms[0]
    assert term.params["k"] == 8 and isinstance(term.params["k"], int)
    assert parse_reward_spec("passk:k=8").term("passk") == term
    assert parse_reward_spec("passk:k=8").term("ucb") is None


ERRORS = [
    ("corectness", ["unknown reward 'corectness'", "Did you mean 'correctness'?",
                    ", ".join(reward_names())]),
    ("zzz", ["unknown reward 'zzz'. Allowed names"]),
    ("", ["non-empty string", "allowed names"]),
    ("correctness+", ["empty term"]),
    ("correctness+ucb*abc", ["weight 'abc'", "ucb*0.5"]),
    ("correctness+ucb*inf", ["must be finite"]),
    ("passk:k=four", ["passk:k='four' must be int"]),
    ("passk:m=4", ["passk has no parameter 'm'", "allowed: k"]),
    ("correctness:k=4", ["correctness has no parameter 'k'", "allowed: none"]),
    ("passk:k", ["not key=value"]),
    ("passk:k=2,k=3", ["given twice"]),
    ("ucb:variant=max", ["variant='max' is not allowed", "ucb, ucb_mean"]),
    ("passk:k=0", ["passk:k='0' is out of range; allowed: >= 1"]),
    ("passk:k=2.5", ["passk:k='2.5' must be int"]),
    ("unlikeliness:beta=1.5", ["beta='1.5' is out of range; allowed: >= 0, <= 1"]),
    ("correctness+batch:coef=-1", ["batch:coef='-1' is out of range"]),
    ("correctness+ucb+ucb", ["repeats ucb"]),
    ("correctness+darling", ["combines correctness and darling"]),
    ("passk+vector", ["combines passk and vector"]),
]


@pytest.mark.parametrize(("text", "fragments"), ERRORS, ids=[e[0] or "empty" for e in ERRORS])
def test_parse_errors_explain_the_fix(text, fragments):
    with pytest.raises(ValueError) as info:
        parse_reward_spec(text)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_spec_is_frozen():
    spec = parse_reward_spec("correctness")
    with pytest.raises(AttributeError):
        spec.terms = ()  # type: ignore[misc]
