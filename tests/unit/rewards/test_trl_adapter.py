import inspect
import pickle

import numpy as np
import pytest

from breadth.rewards.groups import IncompleteGroupError
from breadth.rewards.passk import passk_advantages
from breadth.rewards.scoring import completion_text
from breadth.rewards.trl_adapter import build_trl_rewards

from ._fakes import CountingVerify, call, combined, fake_verify, make_batch, reward_plan

BUILD_TABLE = [
    # spec, names, weights, GRPO settings the plan requires, stateful names
    ("correctness", ["correctness"], [1.0], {}, []),
    ("correctness+ucb", ["correctness", "ucb"], [1.0, 1.0], {}, ["ucb"]),
    ("correctness+batch", ["correctness", "batch"], [1.0, 1.0], {}, []),
    ("correctness+ucb*0.5+batch", ["correctness", "ucb", "batch"], [1.0, 0.5, 1.0], {}, ["ucb"]),
    ("darling", ["darling"], [1.0], {"scale_rewards": "none"}, []),
    ("passk:k=2", ["passk"], [1.0], {"scale_rewards": "none"}, []),
    ("vector", ["vector"], [1.0], {}, []),
    ("unlikeliness", ["unlikeliness"], [1.0], {}, []),
    ("correctness+format", ["correctness", "format"], [1.0, 1.0], {}, []),
]


@pytest.mark.parametrize(
    ("spec", "names", "weights", "extra", "stateful"), BUILD_TABLE, ids=[b[0] for b in BUILD_TABLE]
)
def test_build_table(spec, names, weights, extra, stateful):
    plan = reward_plan(spec)
    setup = build_trl_rewards(plan, num_generations=4, verify_fn=fake_verify)
    assert [f.__name__ for f in setup.reward_funcs] == names
    assert setup.reward_weights == weights
    assert plan.grpo_settings == extra
    assert [s.__name__ for s in setup.stateful] == stateful


def test_callables_have_trl_signature_and_pickle():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb+batch"), num_generations=2, verify_fn=fake_verify
    )
    batch = make_batch([("p", "4", ["4", "5"]), ("q", "1", ["1", "1"])])
    for func in setup.reward_funcs:
        params = inspect.signature(func.__call__).parameters
        assert list(params)[:3] == ["prompts", "completions", "completion_ids"]
        clone = pickle.loads(pickle.dumps(func))
        assert clone.__name__ == func.__name__
    # A pickled copy of the stateful term carries its counts with it.
    ucb = setup.reward_funcs[1]
    call(ucb, batch)
    assert pickle.loads(pickle.dumps(ucb)).ucb.count("p", "4") == 1


def test_correctness_plus_ucb_is_correctness_plus_bonus_and_counts_update_after():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb", ucb_coef=0.5, ucb_variant="ucb"),
        num_generations=4, verify_fn=fake_verify,
    )
    batch = make_batch([("p", "4", ["4", "4", "4", "7"])])
    # First batch: no history, every bonus is c * min(1, 1/sqrt(0)) = c; the counts of this
    # batch do not count for its own bonuses.
    np.testing.assert_allclose(combined(setup, batch), [1.5, 1.5, 1.5, 0.5])
    # Second batch: N(p, "4") = 3 gives c/sqrt(3); N(p, "7") = 1 still gives the cap.
    np.testing.assert_allclose(
        combined(setup, batch), [1 + 0.5 / np.sqrt(3)] * 3 + [0.5], atol=1e-12
    )


def test_ucb_variants_and_apply_to_from_config_and_inline_params():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb:coef=1.0,apply_to=correct", ucb_variant="ucb_mean"),
        num_generations=4,
        verify_fn=fake_verify,
    )
    ucb = setup.reward_funcs[1].ucb
    assert (ucb.coef, ucb.variant, ucb.apply_to) == (1.0, "ucb_mean", "correct")
    batch = make_batch([("p", "4|8", ["4", "4", "4", "7"])])
    np.testing.assert_allclose(call(setup.reward_funcs[1], batch), [0.0, 0.0, 0.0, 0.0])
    # counts now: "4" x3, "7" x1. Both "4" and "8" are correct; raw bonuses 1/sqrt(3) and
    # 1 (never seen). apply_to=correct + ucb_mean: only correct ones get a bonus, centred
    # among them.
    batch2 = make_batch([("p", "4|8", ["4", "8", "7", "9"])])
    half_gap = (1 - 1 / np.sqrt(3)) / 2
    np.testing.assert_allclose(call(setup.reward_funcs[1], batch2), [-half_gap, half_gap, 0, 0])


def test_eval_batches_do_not_touch_ucb_counts():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb"), num_generations=4, verify_fn=fake_verify
    )
    ucb_term = setup.reward_funcs[1]
    eval_batch = make_batch([("e1", "4", ["4", "4", "5", "?"])], split="eval")
    first = call(ucb_term, eval_batch)
    assert ucb_term.state_dict()["counts"] == {}
    assert call(ucb_term, eval_batch) == first  # still no history
    call(ucb_term, make_batch([("t1", "4", ["4", "4", "5", "?"])], split="train"))
    assert ucb_term.state_dict()["counts"] == {"t1": [["4", 2], ["5", 1], [None, 1]]}


def test_ucb_without_split_column_fails_clearly():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb"), num_generations=2, verify_fn=fake_verify
    )
    prompts, completions, kwargs = make_batch([("p", "4", ["4", "5"])])
    del kwargs["split"]
    with pytest.raises(ValueError, match="no `split` column"):
        setup.reward_funcs[1](prompts, completions, **kwargs)


def test_split_group_fails_with_problem_id_sizes_and_fix():
    setup = build_trl_rewards(
        reward_plan("correctness+batch"), num_generations=4, verify_fn=fake_verify
    )
    batch = make_batch([("p", "4", ["4", "4", "4", "4"]), ("q", "4", ["4", "5"])])
    with pytest.raises(IncompleteGroupError) as info:
        call(setup.reward_funcs[1], batch)
    message = str(info.value)
    for fragment in (
        "'batch'",
        "problem_id 'q'",
        "2 completion(s)",
        "[2, 4]",
        "multiple of num_generations",
    ):
        assert fragment in message
    # Correctness needs no groups: it still scores, and leaves out the group diagnostics.
    assert call(setup.reward_funcs[0], batch) == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    assert "breadth/distinct_outcomes_per_group" not in setup.reward_funcs[0].last_stats


def test_eval_groups_use_num_generations_eval():
    setup = build_trl_rewards(
        reward_plan("correctness+batch"),
        num_generations=4,
        num_generations_eval=2,
        verify_fn=fake_verify,
    )
    eval_batch = make_batch([("e", "4", ["4", "4"]), ("f", "4", ["4", "5"])], split="eval")
    assert call(setup.reward_funcs[1], eval_batch) == [-0.25, -0.25, 0.0, 0.0]
    with pytest.raises(IncompleteGroupError):
        call(setup.reward_funcs[1], make_batch([("t", "4", ["4", "4"])], split="train"))


def test_batch_penalty_values():
    setup = build_trl_rewards(
        reward_plan("correctness+batch", batch_coef=1.0), num_generations=4, verify_fn=fake_verify
    )
    batch = make_batch([("p", "4", ["4", "4", "4", "?"]), ("q", "2", ["1", "2", "3", "?"])])
    np.testing.assert_allclose(
        call(setup.reward_funcs[1], batch), [-0.5, -0.5, -0.5, 0, 0, 0, 0, 0]
    )
    np.testing.assert_allclose(combined(setup, batch), [0.5, 0.5, 0.5, 0, 0, 1, 0, 0])


def test_darling_is_correctness_times_diversity():
    setup = build_trl_rewards(reward_plan("darling"), num_generations=4, verify_fn=fake_verify)
    batch = make_batch([("p", "4", ["4", "4", "5", "6"]), ("q", "1", ["1", "2", "3", "?"])])
    np.testing.assert_allclose(call(setup.reward_funcs[0], batch), [2 / 3, 2 / 3, 0, 0, 1, 0, 0, 0])
    assert setup.reward_funcs[0].last_stats["breadth/darling/classes_per_group"] == 3.5


def test_darling_text_judge():
    setup = build_trl_rewards(
        reward_plan("darling:judge=text"), num_generations=3, verify_fn=fake_verify
    )
    # The fake verifier marks only exact "4" correct; the text judge groups "4" with " 4 ".
    batch = make_batch([("p", "4", ["4", " 4 ", "5"])])
    np.testing.assert_allclose(call(setup.reward_funcs[0], batch), [0.5, 0.5, 0.0])


def test_passk_returns_the_advantages():
    plan = reward_plan("passk")
    setup = build_trl_rewards(plan, num_generations=8, verify_fn=fake_verify)
    texts = ["4", "4", "4", "1", "2", "3", "5", "?"]
    got = call(setup.reward_funcs[0], make_batch([("p", "4", texts)]))
    np.testing.assert_allclose(got, [0.27735] * 3 + [-0.16641] * 5, atol=1e-5)
    np.testing.assert_allclose(got, passk_advantages([1, 1, 1, 0, 0, 0, 0, 0], 4))
    assert plan.grpo_settings["scale_rewards"] == "none"


def test_passk_inline_k_overrides_config_and_is_checked_against_group_size():
    setup = build_trl_rewards(
        reward_plan("passk:k=2", passk_k=4), num_generations=4, verify_fn=fake_verify
    )
    assert setup.reward_funcs[0].k == 2
    with pytest.raises(ValueError, match="k=8 must be between 1 and num_generations=4"):
        build_trl_rewards(reward_plan("passk:k=8"), num_generations=4, verify_fn=fake_verify)
    # k = G: every advantage would be zero (see test_passk_with_k_equal_to_group_size_...).
    with pytest.raises(ValueError, match="k=4 equals num_generations=4"):
        build_trl_rewards(reward_plan("passk:k=4"), num_generations=4, verify_fn=fake_verify)
    with pytest.raises(ValueError, match="num_generations_eval=2"):
        build_trl_rewards(
            reward_plan("passk"), num_generations=8, num_generations_eval=2, verify_fn=fake_verify
        )


def test_passk_with_k_equal_to_group_size_would_give_zero_advantage_everywhere():
    # Why build_trl_rewards refuses k = num_generations for training groups.
    for correct in range(5):
        flags = [1] * correct + [0] * (4 - correct)
        np.testing.assert_array_equal(passk_advantages(flags, 4), np.zeros(4))


def test_vector_is_mean_centred_seeded_and_prefers_rare_correct():
    setup = build_trl_rewards(
        reward_plan("vector"), seed=3, num_generations=4, verify_fn=fake_verify
    )
    func = setup.reward_funcs[0]
    batch = make_batch(
        [("p", "4", ["4", "4", "5", "5"]), ("q", "4", ["4", "1", "2", "3"])], global_step=5
    )
    first = np.array(call(func, batch))
    assert first[:4].sum() == pytest.approx(0.0, abs=1e-12)
    assert first[4:].sum() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(first, call(func, batch))  # same seed and step: same draws
    # Group q: the correct answer is also as unique as the others, so it dominates every draw.
    np.testing.assert_allclose(first[4:], [0.75, -0.25, -0.25, -0.25])


def test_vector_draws_follow_the_run_seed():
    # Common-but-correct against rare-but-wrong: the value depends on the Dirichlet draws.
    batch = make_batch([("r", "4", ["4", "4", "4", "7"])], global_step=1)
    values = {
        seed: call(build_trl_rewards(reward_plan("vector:draws=4"), seed=seed,
                                     num_generations=4, verify_fn=fake_verify).reward_funcs[0],
                   batch)
        for seed in (0, 1)
    }
    assert values[0] != values[1]


def test_unlikeliness_needs_logprobs_and_uses_them():
    setup = build_trl_rewards(
        reward_plan("unlikeliness"), num_generations=4, verify_fn=fake_verify
    )
    func = setup.reward_funcs[0]
    batch = make_batch([("p", "4", ["4", "4", "5", "4"])])
    with pytest.raises(ValueError, match="completion_mean_logprob"):
        call(func, batch)
    with_logprobs = make_batch(
        [("p", "4", ["4", "4", "5", "4"])], completion_mean_logprob=[-0.5, -2.0, -1.0, -0.1]
    )
    np.testing.assert_allclose(call(func, with_logprobs), [0.875, 1.0, 0.0, 0.8125])
    per_token = make_batch(
        [("p", "4", ["4", "4", "5", "4"])],
        completion_logprobs=[[-0.5], [-2.0, -2.0], [-1.0], [-0.1]],
    )
    np.testing.assert_allclose(call(func, per_token), [0.875, 1.0, 0.0, 0.8125])


def test_format_bonus():
    setup = build_trl_rewards(
        reward_plan("correctness+format:bonus=0.2"), num_generations=2, verify_fn=fake_verify
    )
    assert call(setup.reward_funcs[1], make_batch([("p", "4", ["5", "?"])])) == [0.2, 0.0]


def test_conversational_completions():
    setup = build_trl_rewards(
        reward_plan("correctness"), num_generations=2, verify_fn=fake_verify
    )
    prompts, completions, kwargs = make_batch([("p", "4", ["4", "5"])])
    chat = [[{"role": "assistant", "content": text}] for text in completions]
    assert setup.reward_funcs[0](prompts, chat, **kwargs) == [1.0, 0.0]
    blocks = [{"role": "assistant", "content": [{"type": "text", "text": "4"}]}]
    assert completion_text(blocks) == "4"


def test_missing_columns_are_named():
    setup = build_trl_rewards(
        reward_plan("correctness"), num_generations=2, verify_fn=fake_verify
    )
    prompts, completions, kwargs = make_batch([("p", "4", ["4", "5"])])
    del kwargs["answer"]
    with pytest.raises(
        ValueError, match=r"lacks the column\(s\) \['answer'\].*remove_unused_columns"
    ):
        setup.reward_funcs[0](prompts, completions, **kwargs)


def test_diagnostics_go_to_last_stats_and_trl_log_metric():
    setup = build_trl_rewards(
        reward_plan("correctness+ucb+batch"), num_generations=4, verify_fn=fake_verify
    )
    logged: dict[str, float] = {}
    batch = make_batch(
        [("p", "4", ["4", "4", "5", "?"]), ("q", "1", ["1", "2", "3", "9"])],
        log_metric=lambda name, value: logged.__setitem__(name, value),
    )
    for func in setup.reward_funcs:
        call(func, batch)
    first = setup.reward_funcs[0].last_stats
    assert first["breadth/accuracy"] == 0.375
    assert first["breadth/answered"] == 0.875
    assert first["breadth/distinct_outcomes_per_group"] == 3.5  # {4, 5, None} and {1, 2, 3, 9}
    assert first["breadth/distinct_outcome_fraction"] == 0.875
    # Defaults (ucb_con, c = 0.2, b0 = 0.5), no history: every bonus is 0.2 * (1 - 0.5).
    assert setup.reward_funcs[1].last_stats["breadth/ucb/bonus_mean"] == pytest.approx(0.1)
    assert setup.reward_funcs[2].last_stats["breadth/batch/penalty_mean"] == pytest.approx(
        0.5 / 4 * 2 / 8
    )
    # Only the first term logs the batch diagnostics; every logged value reached TRL's hook.
    assert "breadth/accuracy" not in setup.reward_funcs[1].last_stats
    for func in setup.reward_funcs:
        for key, value in func.last_stats.items():
            assert logged[key] == value


def test_batch_is_verified_once_for_all_terms():
    verify = CountingVerify()
    setup = build_trl_rewards(
        reward_plan("correctness+ucb+batch"), num_generations=2, verify_fn=verify
    )
    batch = make_batch([("p", "4", ["4", "5"]), ("q", "1", ["1", "1"])])
    for func in setup.reward_funcs:
        call(func, batch)
    assert verify.calls == 4
    call(setup.reward_funcs[0], make_batch([("p", "4", ["4", "6"]), ("q", "1", ["1", "1"])]))
    assert verify.calls == 8  # a new batch is verified again


def test_real_verifier_on_rendered_rows():
    tasks = pytest.importorskip("breadth.data.generators")
    formats = pytest.importorskip("breadth.data.formats")
    records = tasks.generate_arithmetic(2, seed=0, difficulty=1, split="train")
    rows = [formats.render(record, "free_form") for record in records]
    prompts, completions, columns = [], [], {}
    for row in rows:
        for text in (row["target"], "garbage"):
            prompts.append(row["prompt"])
            completions.append(text)
            for key, value in row.items():
                if key not in ("prompt", "completion"):
                    columns.setdefault(key, []).append(value)
    setup = build_trl_rewards(reward_plan("correctness+batch"), num_generations=2)
    assert setup.reward_funcs[0].scorer.verify_fn is tasks.verify
    got = setup.reward_funcs[0](prompts, completions, **columns)
    assert got == [1.0, 0.0, 1.0, 0.0]


def test_real_verifier_outcomes_drive_the_group_terms():
    pytest.importorskip("breadth.data.verifiers")
    free = {"format": "free_form", "task": "arithmetic", "answer": "33"}
    mcq = {
        "format": "mcq",
        "task": "generic",
        "answer": "33",
        "options": ["31", "33"],
        "letter": "B",
    }
    groups = [
        ("f", free, ["Answer: 33", "33", "Answer: 34", "xyz"]),
        # "B" and "33" are the same answer under a letter and as text: one outcome.
        ("m", mcq, ["B", "Answer: 33", "A", "zzz"]),
    ]
    prompts, completions, columns = [], [], {}
    for problem_id, row, texts in groups:
        for text in texts:
            prompts.append("Q")
            completions.append(text)
            full = {
                "problem_id": problem_id,
                "split": "train",
                "options": [],
                "letter": "",
                "meta": "{}",
            }
            for key, value in {**full, **row}.items():
                columns.setdefault(key, []).append(value)
    setup = build_trl_rewards(reward_plan("correctness+batch", batch_coef=1.0), num_generations=4)
    correctness, batch = setup.reward_funcs
    assert correctness(prompts, completions, **columns) == [1, 1, 0, 0, 1, 1, 0, 0]
    np.testing.assert_allclose(call(batch, (prompts, completions, columns)),
                               [-0.25, -0.25, 0, 0, -0.25, -0.25, 0, 0])
    assert correctness.last_stats["breadth/distinct_outcomes_per_group"] == 3.0


def test_advantage_placed_terms_give_trl_zeros_and_the_trainer_their_values():
    import torch

    from breadth.training.grpo import add_advantage_terms

    setup = build_trl_rewards(
        reward_plan("correctness+batch*2", batch_coef=1.0), num_generations=4,
        verify_fn=fake_verify,
    )
    penalty = setup.reward_funcs[1]
    assert setup.advantage_terms == [(penalty, 2.0)]
    prompts, completions, kwargs = make_batch([("p", "4", ["4", "4", "4", "?"])])
    assert penalty(prompts, completions, **kwargs) == [0.0] * 4  # nothing in TRL's reward sum
    shaped, stats = add_advantage_terms(torch.zeros(4), setup.advantage_terms)
    # penalty 1/4 * (2 others alike) = 0.5, weight 2, subtracted after normalisation
    np.testing.assert_allclose(shaped.numpy(), [-1.0, -1.0, -1.0, 0.0])
    assert stats["breadth/batch/advantage_std"] == pytest.approx(np.std([-1, -1, -1, 0]))
    with pytest.raises(RuntimeError, match="expected 4 advantage-placed values"):
        add_advantage_terms(torch.zeros(4), setup.advantage_terms)  # consumed: none pending


def test_reward_placement_keeps_the_values_in_trls_sum():
    setup = build_trl_rewards(
        reward_plan("correctness+batch", batch_coef=1.0, batch_placement="reward"),
        num_generations=4, verify_fn=fake_verify,
    )
    assert setup.advantage_terms == []
    prompts, completions, kwargs = make_batch([("p", "4", ["4", "4", "4", "?"])])
    np.testing.assert_allclose(setup.reward_funcs[1](prompts, completions, **kwargs),
                               [-0.5, -0.5, -0.5, 0.0])


def test_ucb_counts_are_global_when_two_processes_each_score_half_of_the_groups():
    # Two "processes" as threads, each with its own reward setup and half of the groups, joined
    # by an all-gather: both end with the counts, and give the bonuses, of one process that
    # scored every group.
    import threading

    barrier, slots = threading.Barrier(2), [None, None]

    def gather_for(rank):
        def gather(obj):
            slots[rank] = obj
            barrier.wait()
            gathered = list(slots)
            barrier.wait()  # nobody overwrites a slot before both have read
            return gathered

        return gather

    halves = [[("p", "4", ["4", "4", "5", "?"])], [("q", "1", ["1", "2", "2", "2"])]]
    later_groups = [("p", "4", ["4", "5", "6", "6"]), ("q", "1", ["2", "1", "1", "7"])]
    later = make_batch(later_groups)
    whole = build_trl_rewards(reward_plan("correctness+ucb"), num_generations=4,
                              verify_fn=fake_verify)
    call(whole.reward_funcs[1], make_batch(halves[0] + halves[1]))
    expected_later = call(whole.reward_funcs[1], later)

    setups = [build_trl_rewards(reward_plan("correctness+ucb"), num_generations=4,
                                verify_fn=fake_verify, gather_objects=gather_for(rank))
              for rank in (0, 1)]
    results: dict[int, list[float]] = {}

    def run(rank):
        call(setups[rank].reward_funcs[1], make_batch(halves[rank]))
        # The next batch: each process gets the problem the *other* one counted before.
        mine = later_groups[1 - rank : 2 - rank]
        results[rank] = call(setups[rank].reward_funcs[1], make_batch(mine))

    threads = [threading.Thread(target=run, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results[1] + results[0] == expected_later  # p was rank 1's, q rank 0's
    for setup in setups:
        assert setup.stateful[0].state_dict() == whole.stateful[0].state_dict()
    assert whole.stateful[0].ucb.count("q", "2") == 4
