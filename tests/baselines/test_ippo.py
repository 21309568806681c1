"""Multi-agent training: per-agent demonstrations, sft.py --agent, and baselines/ippo.py on both multi-agent envs."""

import json
import math

import numpy as np
import pytest
import torch
from conftest import load_baseline

pytest.importorskip("pettingzoo")

from transformers import AutoTokenizer  # noqa: E402

from lm_gym.multiagent import visdial_v0  # noqa: E402
from lm_gym.multiagent.demonstrations import demonstrations, play_game  # noqa: E402
from lm_gym.offline import load_trajectories, save_trajectories  # noqa: E402
from lm_gym.results import load_result  # noqa: E402
from lm_gym.tasks.visdial.policies import InformativeQuestioner, SceneTextAnswerer  # noqa: E402
from lm_toolkit.models import load_policy  # noqa: E402
from lm_toolkit.multiagent_rollouts import play_games  # noqa: E402

GPT2 = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 1024}'
AGENTS = {"lm_gym/VisDial-v0": ["questioner", "answerer"], "lm_gym/DailyDialog-v0": ["speaker_0", "speaker_1"]}


def test_each_agent_gets_its_own_trajectory_of_each_game(tmp_path):
    data = demonstrations("visdial_v0", "expert", num_games=4, seed=3)
    assert data.num_rows == 8 and data["agent"] == ["questioner", "answerer"] * 4
    for questioner, answerer in zip(data.select(range(0, 8, 2)), data.select(range(1, 8, 2))):
        # cooperative: both get each round's reward; a question is rewarded when it is answered
        assert questioner["rewards"] == answerer["rewards"] and questioner["return"] == answerer["return"]
        assert len(questioner["actions"]) == len(answerer["actions"]) and questioner["dones"][-1]
        game = play_game(
            visdial_v0.parallel_env(),
            {"questioner": InformativeQuestioner(), "answerer": SceneTextAnswerer()},
            questioner["seed"],
        )
        assert game["questioner"]["actions"] == questioner["actions"]
        assert math.isclose(sum(game["answerer"]["rewards"]), answerer["return"], abs_tol=1e-5)
    assert all(". main: " in text.split("\n")[0] for text in data[1]["observations"])  # the answerer sees the scene
    save_trajectories(data, tmp_path / "pairs.parquet")
    assert load_trajectories(tmp_path / "pairs.parquet").num_rows == 8
    mixture = demonstrations("visdial_v0", "mixture", num_games=6, seed=0)
    assert min(mixture["return"]) < max(mixture["return"])  # skills vary per game
    explore = demonstrations("visdial_v0", "explore", num_games=6, seed=0).filter(
        lambda row: row["agent"] == "answerer"
    )
    reader, questions = SceneTextAnswerer(), set()
    for row in explore:  # every kind of question, answered right
        assert row["actions"] == [reader(observation) for observation in row["observations"]]
        questions |= {observation.split("\n")[-1].split()[0] for observation in row["observations"]}
    assert {"what", "where", "how", "is", "are"} <= questions  # the expert's are "what" (else, colour) only
    dialogue = demonstrations("dailydialog_v0", "dataset", num_games=2, env_kwargs={"source": "synthetic"})
    assert set(dialogue["agent"]) == {"speaker_0", "speaker_1"} and all(
        r > 0.9 for row in dialogue["rewards"] for r in row
    )


def test_sft_warm_starts_one_agent(tmp_path):
    save_trajectories(demonstrations("visdial_v0", "expert", num_games=8), tmp_path / "pairs.parquet")
    sft = load_baseline("sft")
    common = dict(
        env_id="lm_gym/VisDial-v0",
        env_kwargs='{"source": "synthetic"}',
        dataset=str(tmp_path / "pairs.parquet"),
        model_config=GPT2,
        max_prompt_length=512,
        max_steps=2,
        batch_size=8,
        eval_episodes=0,
    )
    result = sft.main(sft.Args(**common, agent="answerer", out_dir=str(tmp_path / "sft")))
    assert result["algorithm"] == "bc-answerer" and (tmp_path / "sft" / "checkpoint" / "model.safetensors").is_file()
    with pytest.raises(ValueError, match=r"--agent 'referee'.*\['answerer', 'questioner'\]"):
        sft.main(sft.Args(**common, agent="referee", out_dir=str(tmp_path / "bad")))


@pytest.mark.parametrize(
    ("env_id", "options"),
    [
        # two learners' and a shared policy's trainings: the deep run (70-85 s each on two busy cores); the default
        # run trains VisDial's questioner against the scripted answerer (9 s), two learners in the other tests
        pytest.param("lm_gym/VisDial-v0", {}, marks=pytest.mark.slow),
        pytest.param("lm_gym/VisDial-v0", {"shared_policy": True}, marks=pytest.mark.slow),
        ("lm_gym/VisDial-v0", {"scripted": ("answerer",)}),
        pytest.param("lm_gym/DailyDialog-v0", {}, marks=pytest.mark.slow),
    ],
    ids=["visdial", "shared", "scripted-answerer", "dailydialog"],
)
def test_ippo_trains_every_learning_agent(env_id, options, tmp_path):
    ippo = load_baseline("ippo")
    args = ippo.Args(
        env_id=env_id,
        model_config=GPT2,
        num_envs=4,
        iterations=2,
        update_epochs=1,
        num_minibatches=1,
        eval_episodes=4,
        eval_batch_size=4,
        eval_every=0,
        max_cycles=8,
        out_dir=str(tmp_path),
        **options,
    )
    ippo.main(args)
    result = load_result(tmp_path)
    learning = (
        ["shared"]
        if options.get("shared_policy")
        else [a for a in AGENTS[env_id] if a not in options.get("scripted", ())]
    )
    for row in result["curves"]:
        assert all(math.isfinite(row[f"{name}_kl"]) and f"{name}_pg_loss" in row for name in learning)
        assert math.isfinite(row["mean_return"])
    assert {f"mean_{agent}_return" for agent in AGENTS[env_id]} <= set(result["final_eval"])
    assert "mean_utterance_reward" in result["final_eval"] and result["final_eval"]["num_episodes"] == 4
    assert len(result["samples"]) == 4  # the games' texts: the opening, then who said what
    for sample in result["samples"]:
        assert sample["prompt"] and sample["generation"].split(": ", 1)[0] in AGENTS[env_id]
    if options.get("scripted"):
        assert result["algorithm"] == "ippo-scripted-answerer"
    root = AutoTokenizer.from_pretrained(tmp_path / "checkpoint").get_vocab()
    for agent in learning[1:]:  # every other agent's folder loads on its own (e.g. as a --warm-start)
        assert AutoTokenizer.from_pretrained(tmp_path / "checkpoint" / agent).get_vocab() == root
    resumed = ippo.main(ippo.Args(**{**vars(args), "iterations": 3, "resume": True}))
    assert [row["step"] for row in resumed["curves"]] == [1, 2, 3]


def test_a_games_metrics_are_the_mean_over_the_utterances_the_env_scores():
    from lm_gym.multiagent import dailydialog_v0

    ippo = load_baseline("ippo")
    envs = [dailydialog_v0.parallel_env(source="synthetic") for _ in range(2)]
    speakers = {  # speaker_0 says the dataset's utterance, speaker_1 always the same thing
        "speaker_0": [ippo.scripted_speaker(env, "speaker_0") for env in envs],
        "speaker_1": [lambda observation: "okay , thank you ."] * 2,
    }
    _, returns, finals, texts = play_games(envs, {}, speakers, seeds=[0, 1], first_env=0, shared_policy=False)
    env, meteors, lines, done = dailydialog_v0.parallel_env(source="synthetic"), [], [], False
    observations, infos = env.reset(seed=1)
    opening = observations[infos[env.agents[0]]["active_agent"]]["text"]
    while not done:  # game 1 again, by hand
        agent = infos[env.agents[0]]["active_agent"]
        utterance = env.current_reference() if agent == "speaker_0" else "okay , thank you ."
        _, _, terminations, truncations, infos = env.step({agent: utterance})
        meteors.append(infos[agent]["metrics"]["meteor"])
        lines.append(f"{agent}: {utterance}")
        done = any(terminations.values()) or any(truncations.values())
    assert finals[1]["utterances"] == len(meteors) and max(meteors) - min(meteors) > 0.3
    assert texts[1] == {"prompt": opening, "utterance": "\n".join(lines)}
    assert finals[1]["meteor"] == pytest.approx(sum(meteors) / len(meteors))  # every utterance, not the last
    pair = [visdial_v0.parallel_env() for _ in range(2)]
    scripted = {"questioner": [InformativeQuestioner()] * 2, "answerer": [SceneTextAnswerer()] * 2}
    _, returns, finals, _ = play_games(pair, {}, scripted, seeds=[0, 1], first_env=0, shared_policy=False)
    assert [final["return"] for final in finals] == pytest.approx(list(returns[:, 0]))  # VisDial scores the game once


def test_the_value_head_learns_normalised_returns(tmp_path, monkeypatch):
    """With --value-norm (the default) each agent's value targets reach PPO's update normalised by their
    running moments (VisDial's returns grow towards -10 as the values learn); without it, as GAE gives them."""
    ippo = load_baseline("ippo")
    targets = []
    update = ippo.ppo.update
    monkeypatch.setattr(
        ippo.ppo,
        "update",
        lambda actor, optimizer, parameters, batch, turns, advantages, returns, old_values, args: (
            targets.append((returns[batch.response_mask.bool()].clone(), old_values.abs().max()))
            or update(actor, optimizer, parameters, batch, turns, advantages, returns, old_values, args)
        ),
    )
    common = dict(model_config=GPT2, num_envs=4, iterations=1, update_epochs=1, num_minibatches=1)
    for norm in (True, False):
        ippo.main(
            ippo.Args(**common, eval_episodes=0, max_cycles=20, value_norm=norm, out_dir=str(tmp_path / str(norm)))
        )
    (normalised, head), _, (raw, _), _ = targets  # questioner then answerer, with and without
    assert float(normalised.mean()) == pytest.approx(0.0, abs=1e-3) and float(normalised.std()) == pytest.approx(
        1.0, abs=0.01
    )
    assert float(raw.mean()) < -0.3 and float(head) == 0.0  # the zero-initialised head's outputs, not shifted
    moments = ippo.RunningMeanStd(shape=())
    moments.update(np.array([-10.0, -8.0, -6.0]))
    values = torch.tensor([-9.0, -3.0])
    assert ippo.normalised(values, moments).tolist() == pytest.approx([-0.6123, 3.0605], abs=1e-3)
    assert ippo.normalised(ippo.normalised(values, moments), moments, inverse=True).tolist() == pytest.approx([-9, -3])
    assert ippo.normalised(values, None) is values


class AnswerLengthRanker:
    """The target moves up 0.05 for each answer of odd length, down 0.03 for each even one (from 0.5)."""

    def percentiles(self, images, dialogues):
        return [0.5 + sum(0.05 if len(answer) % 2 else -0.03 for _, answer in dialogue) for dialogue in dialogues]


def test_shaping_adds_the_info_changes_to_the_learners_turns_only(tmp_path):
    """--shaping-info percentile_gain: an answer's turn also gets coef x the gain it added (so a game's turns
    get coef x its final gain on top of the env's reward); the returns and the play stay the env's."""
    ippo = load_baseline("ippo")
    envs = [visdial_v0.parallel_env(ranker=AnswerLengthRanker()) for _ in range(3)]
    tokenizer = ippo.policy_tokenizer(envs[0].task, None)
    lengths = ippo.task_lengths("lm_gym/VisDial-v0")
    lengths = ippo.Lengths(384, lengths.max_new_tokens, lengths.min_new_tokens, "left")
    policy = load_policy(None, json.loads(GPT2), tokenizer, 0).eval()
    actor = ippo.TextPolicy(policy, tokenizer, lengths, 1.0, torch.nn.Linear(policy.config.hidden_size, 1))
    policies = {"answerer": actor}
    scripted = {"questioner": [InformativeQuestioner() for _ in envs]}
    games = {
        shaping: play_games(envs, policies, scripted, [4, 5, 6], 0, False, shaping)
        for shaping in (
            None,
            ippo.Shaping("percentile_gain", 10.0, -1.0, 1.0),
            ippo.Shaping("percentile_gain", 10.0, -0.05, 0.15),
            ippo.Shaping("percentile", 2.0, 0.0, 1.0, "log-gap"),
        )
    }
    (plain, plain_returns, finals, _), (shaped, shaped_returns, *_), (clipped, *_), (logged, *_) = games.values()
    assert np.array_equal(plain_returns, shaped_returns) and plain["questioner"] == []  # scripted: no turns
    assert [s.response for s in shaped["answerer"]] == [p.response for p in plain["answerer"]]
    bonus = np.array([s.reward - p.reward for p, s in zip(plain["answerer"], shaped["answerer"], strict=True)])
    assert set(np.round(bonus, 4)) == {1.0, -0.6}  # 10 x (+0.05 or -0.03) / (1 - 0.5)
    chains = np.array([turn.env for turn in plain["answerer"]])
    clipped_bonus = np.array([c.reward - p.reward for p, c in zip(plain["answerer"], clipped["answerer"], strict=True)])
    for game, final in enumerate(finals):  # the answerer's chain in copy `game`: game x 2 agents + 1
        assert bonus[chains == 2 * game + 1].sum() == pytest.approx(10.0 * final["percentile_gain"])
        in_range = min(max(final["percentile_gain"], -0.05), 0.15)
        assert clipped_bonus[chains == 2 * game + 1].sum() == pytest.approx(10.0 * in_range)
    assert not np.allclose(clipped_bonus, bonus)  # some games leave the range
    # log-gap: 2 x ln of the gap to a percentile of 1 before over after (+0.001); a game's sum telescopes
    log_bonus = np.array([g.reward - p.reward for p, g in zip(plain["answerer"], logged["answerer"], strict=True)])
    assert np.array_equal(np.sign(log_bonus), np.sign(bonus))  # the same answers help, the same hurt
    for game, final in enumerate(finals):
        first = log_bonus[chains == 2 * game + 1][0]  # from 0.5 to 0.55 or 0.47
        assert first == pytest.approx(2.0 * np.log(0.501 / 0.451)) or first == pytest.approx(
            2.0 * np.log(0.501 / 0.531)
        )
        gap = 1.0 - final["final_percentile"] + ippo.LOG_GAP_FLOOR
        assert log_bonus[chains == 2 * game + 1].sum() == pytest.approx(2.0 * np.log(0.501 / gap))
    with pytest.raises(ValueError, match=r"--shaping-info 'rank'.*percentile_gain"):
        play_games(envs, policies, scripted, [4, 5, 6], 0, False, ippo.Shaping("rank", 1.0, -1.0, 1.0))
    common = dict(model_config=GPT2, num_envs=2, num_minibatches=1, eval_episodes=0, out_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"--shaping-info 'rank'.*percentile_gain"):
        ippo.main(ippo.Args(**common, shaping_info="rank"))
    with pytest.raises(ValueError, match=r"--shaping-range takes LOW HIGH with LOW < HIGH, got \(1.0, 0.0\)"):
        ippo.main(ippo.Args(**common, shaping_info="percentile_gain", shaping_range=(1.0, 0.0)))
    with pytest.raises(ValueError, match=r"--shaping-potential must be 'clipped' or 'log-gap', got 'log'"):
        ippo.main(ippo.Args(**common, shaping_info="percentile", shaping_potential="log"))
