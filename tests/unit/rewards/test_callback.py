# breadth.rewards.callback (a transformers TrainerCallback) is imported in each test: at the top
# it loaded transformers and torch (about 4.6 CPU s) while every xdist worker collected the suite.
import numpy as np

from breadth.rewards.state import load_reward_state
from breadth.rewards.trl_adapter import build_trl_rewards

from ._fakes import call, fake_verify, make_batch, reward_plan


def _setup():
    return build_trl_rewards(
        reward_plan("correctness+ucb"), num_generations=4, verify_fn=fake_verify
    )


def test_ucb_state_survives_checkpoint_round_trip_through_the_trainer_callback(tmp_path):
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_callback import CallbackHandler

    from breadth.rewards.callback import RewardStateCallback

    setup = _setup()
    ucb = setup.reward_funcs[1]
    train = make_batch([("p", "4", ["4", "4", "5", "?"])])
    call(ucb, train)
    call(ucb, make_batch([("e", "4", ["4", "4", "4", "4"])], split="eval"))  # must not count

    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    handler = CallbackHandler([RewardStateCallback(setup.stateful)], None, None, None, None)
    handler.on_save(args, TrainerState(global_step=7), TrainerControl())
    checkpoint = tmp_path / "checkpoint-7"
    assert (checkpoint / "breadth_reward_state.json").exists()

    resumed = _setup()
    load_reward_state(resumed.stateful, checkpoint)
    resumed_ucb = resumed.reward_funcs[1]
    assert resumed_ucb.ucb.count("p", "4") == 2 and resumed_ucb.ucb.count("e", "4") == 0
    # The next training batch gets the same bonuses as in the run that was never interrupted.
    np.testing.assert_array_equal(call(resumed_ucb, train), call(ucb, train))


def test_callback_is_a_trainer_callback_and_skips_when_nothing_is_stateful(tmp_path):
    from types import SimpleNamespace

    import transformers

    from breadth.rewards.callback import RewardStateCallback

    callback = RewardStateCallback([])
    assert isinstance(callback, transformers.TrainerCallback)
    args = SimpleNamespace(output_dir=str(tmp_path), process_index=0)
    callback.on_save(args, SimpleNamespace(global_step=1), None)
    assert not (tmp_path / "checkpoint-1").exists()


def test_process_zero_alone_writes_the_global_counts_after_all_processes_agree(tmp_path):
    from types import SimpleNamespace

    import pytest

    from breadth.rewards.callback import RewardStateCallback
    from breadth.rewards.state import reward_state_digest

    setup = _setup()
    call(setup.reward_funcs[1], make_batch([("p", "4", ["4", "4", "5", "?"])]))
    other = _setup()  # a process whose counts missed that batch
    seen: list[str] = []

    def gather_with(peer_digest):
        def gather(digest):
            seen.append(digest)
            return [digest, peer_digest]

        return gather

    state = SimpleNamespace(global_step=3)
    agree = gather_with(reward_state_digest(setup.stateful))
    for rank in (1, 0):
        args = SimpleNamespace(output_dir=str(tmp_path), process_index=rank)
        RewardStateCallback(setup.stateful, agree).on_save(args, state, None)
        written = (tmp_path / "checkpoint-3" / "breadth_reward_state.json").exists()
        assert written == (rank == 0)
    assert seen == [reward_state_digest(setup.stateful)] * 2  # every process took part

    disagree = gather_with(reward_state_digest(other.stateful))
    args = SimpleNamespace(output_dir=str(tmp_path / "bad"), process_index=0)
    with pytest.raises(RuntimeError, match="differs between the 2 training processes at step 3"):
        RewardStateCallback(setup.stateful, disagree).on_save(args, state, None)
    assert not (tmp_path / "bad").exists()
