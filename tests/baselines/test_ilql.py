"""ILQL (baselines/ilql.py): its pieces on hand-computed tensors, then smoke trainings on Wordle and IMDB;
BC / %BC of sft.py on the same offline data."""

import math

import gymnasium
import numpy as np
import pytest
import torch
from conftest import load_baseline
from torch import nn

from lm_gym.core.registration import resolve_tokenizer
from lm_gym.offline import load_trajectories, save_trajectories
from lm_gym.results import load_result
from lm_gym.tasks.wordle import offline_data
from lm_toolkit.offline import encode_turns, load_offline_dataset
from lm_toolkit.sampling import sample
from lm_toolkit.tasks import Lengths

GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2}'
WORDLE = {"env_id": "lm_gym/Wordle-v0", "env_kwargs": '{"num_answers": 100}'}


@pytest.fixture(scope="module")
def ilql():
    return load_baseline("ilql")


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory):
    """A small suboptimal Wordle dataset (mixture policy) on disk."""
    config = offline_data.GenerationConfig(dataset="mixture", num_games=24, seed=0, num_answers=100)
    return str(
        save_trajectories(
            offline_data.generate(config, progress=False), tmp_path_factory.mktemp("wordle") / "mixture.parquet"
        )
    )


# ---- the pieces, on small hand-computed tensors ---------------------------------------------
def test_expectile_loss_weights_each_side_of_zero(ilql):
    loss = ilql.expectile_loss(torch.tensor([2.0, -2.0, 0.0]), tau=0.7)
    assert torch.allclose(loss, torch.tensor([0.7 * 4, 0.3 * 4, 0.0]))


def test_bellman_targets_bootstrap_inside_and_across_turns(ilql):
    # two turns: [p, p, a, a(EOS), pad]; V after each token = 0.1 .. 0.5
    action_mask = torch.tensor([[0, 0, 1, 1, 0], [0, 0, 1, 1, 0]], dtype=torch.bool)
    values = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.5]] * 2)
    rewards, dones = torch.tensor([-1.0, 2.0]), torch.tensor([False, True])
    next_turn_values = torch.tensor([0.9, 0.9])  # V of each turn's next first state; the second turn ended the episode
    targets = ilql.bellman_targets(values, action_mask, rewards, dones, next_turn_values, gamma=0.5)
    expected = torch.tensor(
        [
            [0.0, 0.5 * 0.3, -1.0 + 0.5 * 0.9, 0.0],  # inside: gamma V(s'); last token: r + gamma V(next turn)
            [0.0, 0.5 * 0.3, 2.0, 0.0],  # done: no bootstrap
        ]
    )
    assert torch.allclose(targets, expected)


def test_cql_term_is_logsumexp_minus_the_taken_q(ilql):
    q = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    loss = ilql.cql_loss(q, torch.tensor([2, 0]))
    assert torch.allclose(loss, torch.tensor([math.log(math.e + math.e**2 + math.e**3) - 3.0, math.log(3.0)]))


def test_polyak_update_moves_targets_a_fraction_of_the_way(ilql):
    source, target = nn.Linear(2, 2), nn.Linear(2, 2)
    nn.init.constant_(source.weight, 1.0), nn.init.constant_(source.bias, 1.0)
    nn.init.zeros_(target.weight), nn.init.zeros_(target.bias)
    ilql.polyak_update(source, target, 0.1)
    assert torch.allclose(target.weight, torch.full((2, 2), 0.1))
    ilql.polyak_update(source, target, 0.1)
    assert torch.allclose(target.bias, torch.full((2,), 0.19))
    assert torch.allclose(source.weight, torch.ones(2, 2))  # the source is untouched


def test_perturbed_logits_add_beta_times_the_advantage(ilql):
    logits = ilql.perturbed_logits(
        torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0, 3.0]]), torch.tensor([2.0]), beta=2.0
    )
    assert torch.allclose(logits, torch.tensor([[math.log(0.5) - 2.0, math.log(0.5) + 2.0]]))


def test_heads_targets_are_the_minimum_of_the_target_copies(ilql):
    heads = ilql.ILQLHeads(hidden_size=4, vocab_size=3)
    hidden = torch.randn(5, 4)
    assert torch.equal(heads.target_q(hidden), torch.minimum(heads.target_q1(hidden), heads.target_q2(hidden)))
    assert not any(p.requires_grad for p in heads.target_q1.parameters())


def test_decoding_follows_the_q_heads_when_beta_is_large(ilql):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    policy = GPT2LMHeadModel(GPT2Config(vocab_size=7, n_layer=1, n_embd=8, n_head=2, n_positions=32)).eval()
    heads = ilql.ILQLHeads(8, 7)
    for target in (heads.target_q1, heads.target_q2):  # Q' = 10 on token 3, 0 elsewhere, whatever the state
        nn.init.zeros_(target[2].weight)
        nn.init.zeros_(target[2].bias)
        target[2].bias.data[3] = 10.0
    prompts = [[1, 2, 4], [5]]
    lengths = Lengths(max_prompt_length=8, max_new_tokens=4)

    def decode(beta, queries, value_trunk=None):
        hook = ilql.QSteering(heads, value_trunk, pad_id=0, beta=beta)
        return sample(policy, queries, lengths, eos_id=6, pad_id=0, greedy=True, hook=hook).responses

    assert decode(100.0, prompts) == [[3, 3, 3, 3], [3, 3, 3, 3]]
    assert decode(100.0, prompts, value_trunk=policy.base_model) == [
        [3, 3, 3, 3],
        [3, 3, 3, 3],
    ]  # heads on a separate trunk
    # beta = 0 is the policy alone: its greedy tokens, batched or not, from the same sampler as every baseline
    plain = decode(0.0, prompts)
    assert plain == [decode(0.0, [p])[0] for p in prompts]
    assert plain == sample(policy, prompts, lengths, eos_id=6, pad_id=0, greedy=True).responses


def test_encoded_turns_link_each_turn_to_the_next_observation(ilql, wordle_dataset):
    dataset = load_trajectories(wordle_dataset).select(range(3))
    tokenizer = resolve_tokenizer(gymnasium.make("lm_gym/Wordle-v0", num_answers=100).unwrapped, None)
    turns = encode_turns(dataset, tokenizer, Lengths(max_prompt_length=128, max_new_tokens=8))
    assert len(turns.rewards) == sum(len(row["actions"]) for row in dataset)
    assert turns.dones.sum() == 3 and all(
        (turns.next_prompts[i] is None) == turns.dones[i] for i in range(len(turns.dones))
    )
    first = dataset[0]
    if len(first["actions"]) > 1:
        assert (
            turns.next_prompts[0] == tokenizer(first["observations"][1], add_special_tokens=False)["input_ids"][-128:]
        )
    assert all(action[-1] == tokenizer.eos_token_id for action in turns.actions)


# ---- smoke trainings ------------------------------------------------------------------------
def run(ilql, out_dir, **overrides):
    settings = dict(
        **WORDLE,
        model_config=GPT2_CONFIG,
        batch_size=16,
        max_steps=3,
        warmup_steps=1,
        eval_episodes=4,
        eval_batch_size=4,
        log_every=1,
        out_dir=str(out_dir),
    )
    return ilql.main(ilql.Args(**{**settings, **overrides}))


@pytest.mark.parametrize("separate_trunk", [False, True])
def test_smoke_training_on_wordle(ilql, wordle_dataset, tmp_path, separate_trunk):
    # shared trunk: plain BC loss and --track (an offline wandb run); separate trunk: the awac loss
    run(
        ilql,
        tmp_path,
        dataset=wordle_dataset,
        separate_trunk=separate_trunk,
        policy_loss="awac" if separate_trunk else "bc",
        track=not separate_trunk,
    )
    saved = load_result(tmp_path)  # validates against lm_gym.results' schema
    assert saved["samples"] and saved["samples"][0]["prompt"].startswith("Wordle")
    assert saved["algorithm"] == "ilql" and saved["env_id"] == "lm_gym/Wordle-v0"
    assert [row["step"] for row in saved["curves"]] == [1, 2, 3]
    for row in saved["curves"]:
        assert all(math.isfinite(row[key]) for key in ("loss", "q_loss", "v_loss", "cql_loss", "policy_loss"))
    assert -6 <= saved["final_eval"]["mean_return"] <= 0 and saved["final_eval"]["num_episodes"] == 4
    checkpoint = tmp_path / saved["checkpoint"]
    assert (checkpoint / "ilql_heads.pt").is_file() and (checkpoint / "value_trunk").is_dir() == separate_trunk
    assert bool(list((tmp_path / "wandb").glob("offline-run-*/*.wandb"))) != separate_trunk


def test_smoke_training_on_imdb_references(ilql, tmp_path):
    result = run(
        ilql,
        tmp_path,
        env_id="lm_gym/IMDB-v0",
        env_kwargs='{"source": "synthetic"}',
        max_trajectories=32,
        max_new_tokens=12,
        eval_episodes=2,
        eval_batch_size=2,
    )
    assert result["algorithm"] == "ilql" and all(math.isfinite(row["loss"]) for row in result["curves"])
    assert load_result(tmp_path)["final_eval"]["num_episodes"] == 2


@pytest.mark.slow
def test_smoke_training_on_visdial_questioners(ilql, tmp_path):
    from lm_gym.tasks.visdial.offline_data import scripted_dialogues

    path = save_trajectories(scripted_dialogues("mixture", 16, seed=0), tmp_path / "visdial.parquet")
    result = run(
        ilql, tmp_path / "run", env_id="lm_gym/VisDial-v0", env_kwargs='{"source": "synthetic"}', dataset=str(path)
    )
    assert all(math.isfinite(row["loss"]) for row in result["curves"])
    assert -10 <= load_result(tmp_path / "run")["final_eval"]["mean_return"] <= 0


def test_smoke_training_on_reddit_comments(ilql, tmp_path):
    from lm_gym.tasks.reddit.offline_data import comment_trajectories

    path = save_trajectories(
        comment_trajectories("train", {"source": "synthetic"}, max_samples=64, progress=False),
        tmp_path / "reddit.parquet",
    )
    result = run(
        ilql,
        tmp_path / "run",
        env_id="lm_gym/Reddit-v0",
        env_kwargs='{"source": "synthetic"}',
        dataset=str(path),
        max_new_tokens=16,
    )
    assert all(math.isfinite(row["loss"]) for row in result["curves"])
    assert -10 <= load_result(tmp_path / "run")["final_eval"]["mean_return"] <= 0


def test_resume_continues_from_the_checkpoint(ilql, wordle_dataset, tmp_path):
    first = run(ilql, tmp_path, dataset=wordle_dataset, max_steps=2)
    resumed = run(ilql, tmp_path, dataset=wordle_dataset, max_steps=4, resume=True)
    assert [row["step"] for row in resumed["curves"]] == [1, 2, 3, 4]
    assert resumed["curves"][:2] == first["curves"][:2] and resumed["initial_eval"] == first["initial_eval"]
    fresh = run(ilql, tmp_path / "fresh", dataset=wordle_dataset, max_steps=4)
    for key in ("loss", "q_loss", "v_loss"):  # resuming replays the same data order and random numbers
        assert resumed["curves"][3][key] == pytest.approx(fresh["curves"][3][key], rel=1e-4)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tau": 0.0}, "--tau"),
        ({"gamma": 1.5}, "--gamma"),
        ({"policy_loss": "ppo"}, "--policy-loss"),
        ({"model_config": '{"model_type": "t5"}'}, "encoder-decoder"),
        ({"env_id": "lm_gym/IMDB-v0", "env_kwargs": '{"source": "synthetic"}'}, "not of --env-id"),
    ],
)
def test_bad_arguments_are_named(ilql, wordle_dataset, tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        run(ilql, tmp_path, dataset=wordle_dataset, **overrides)


# ---- BC and %BC (sft.py --dataset, --top-fraction) -------------------------------------------
def test_filtered_bc_clones_the_best_trajectories(wordle_dataset, tmp_path):
    sft = load_baseline("sft")
    trajectories = load_trajectories(wordle_dataset)
    returns = np.asarray(trajectories["return"])
    everything = load_offline_dataset(wordle_dataset, "lm_gym/Wordle-v0", 1.0)
    best = load_offline_dataset(wordle_dataset, "lm_gym/Wordle-v0", 0.25)
    assert everything["return"] == trajectories["return"]
    keep = math.ceil(0.25 * len(trajectories))
    chosen = np.sort(np.argsort(-returns, kind="stable")[:keep])  # the best, in dataset order
    assert best["return"] == [trajectories[int(i)]["return"] for i in chosen]
    assert np.mean([trajectories[int(i)]["return"] for i in chosen]) >= returns.mean()
    result = sft.main(
        sft.Args(
            **WORDLE,
            dataset=wordle_dataset,
            top_fraction=0.25,
            model_config=GPT2_CONFIG,
            max_steps=2,
            eval_episodes=2,
            eval_batch_size=2,
            out_dir=str(tmp_path),
        )
    )
    assert result["algorithm"] == "filtered_bc" and result["config"]["top_fraction"] == 0.25
    with pytest.raises(ValueError, match="--top-fraction"):
        sft.main(sft.Args(**WORDLE, top_fraction=0.5, out_dir=str(tmp_path)))
