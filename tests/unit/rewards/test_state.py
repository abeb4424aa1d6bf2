import json

import pytest

from breadth.rewards.state import (
    REWARD_STATE_FILENAME,
    load_reward_state,
    reward_state_digest,
    save_reward_state,
)
from breadth.rewards.trl_adapter import build_trl_rewards
from breadth.rewards.ucb import OutcomeUCB

from ._fakes import call, fake_verify, make_batch, reward_plan


def _trained_ucb_setup():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb"), num_generations=2, verify_fn=fake_verify
    )
    call(setup.reward_funcs[1], make_batch([("p", "4", ["4", "4"]), ("q", "1", [" ? ", "2"])]))
    return setup


def test_save_and_load_round_trip(tmp_path):
    setup = _trained_ucb_setup()
    path = save_reward_state(setup.stateful, tmp_path / "checkpoint-2")
    assert path.name == REWARD_STATE_FILENAME
    payload = json.loads(path.read_text())
    assert payload["states"]["ucb"]["counts"] == {"p": [["4", 2]], "q": [[None, 1], ["2", 1]]}
    fresh = build_trl_rewards(
        reward_plan("correctness+ucb"), num_generations=2, verify_fn=fake_verify
    )
    assert load_reward_state(fresh.stateful, tmp_path / "checkpoint-2") is True
    assert fresh.stateful[0].state_dict() == setup.stateful[0].state_dict()
    assert not list((tmp_path / "checkpoint-2").glob("*.tmp"))  # atomic write left nothing behind


def test_one_file_and_a_digest_that_tells_states_apart(tmp_path):
    a, b = OutcomeUCB(), OutcomeUCB()
    assert reward_state_digest([a]) == reward_state_digest([b])
    a.update("p", ["x"])
    assert reward_state_digest([a]) != reward_state_digest([b])
    save_reward_state([a], tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == [REWARD_STATE_FILENAME]
    load_reward_state([b], tmp_path)
    assert b.count("p", "x") == 1 and reward_state_digest([a]) == reward_state_digest([b])


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="RewardStateCallback"):
        load_reward_state([OutcomeUCB()], tmp_path)
    assert load_reward_state([OutcomeUCB()], tmp_path, missing_ok=True) is False
    assert load_reward_state([], tmp_path) is False  # nothing stateful: nothing to restore


def test_spec_changed_between_save_and_resume(tmp_path):
    save_reward_state([OutcomeUCB()], tmp_path)  # saved under the class name
    setup = _trained_ucb_setup()
    with pytest.raises(KeyError, match="no state for reward 'ucb'"):
        load_reward_state(setup.stateful, tmp_path)


def test_duplicate_names_rejected(tmp_path):
    with pytest.raises(ValueError, match="share the name"):
        save_reward_state([OutcomeUCB(), OutcomeUCB()], tmp_path)
