"""VisDial offline data: human dialogues of the release with ILQL's env_stops rewards, scripted questioners' games."""

import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError
from lm_gym.offline import load_trajectories, record_trajectories, save_trajectories
from lm_gym.tasks.visdial import VisDialEnv
from lm_gym.tasks.visdial.offline_data import human_dialogues, main, replay, scripted_dialogues
from lm_gym.tasks.visdial.policies import InformativeQuestioner, RandomQuestioner

RELEASE = "visdial/visdial_1.0_val_vispro.json"


def test_human_dialogues_are_cut_at_the_cutoff_with_yes_no_penalties(shared_data):
    env_kwargs = {"source": "local", "split": "validation", "data_dir": shared_data / RELEASE, "yn_reward_kind": "hard"}
    dataset = human_dialogues(env_kwargs)
    env = VisDialEnv(**env_kwargs)
    assert len(dataset) == 76 and set(dataset["kind"]) == {"human"} and dataset["image_id"][0] == 97915
    for row in dataset:
        rounds = env.images[row["image_index"]].content.rounds
        turns = row["num_turns"]
        assert row["actions"] == [q for q, _ in rounds[:turns]]
        assert row["reached_cutoff"] or turns == 10
        base = [-1.0] * (turns - 1) + [0.0 if row["reached_cutoff"] else -1.0]
        expected = [b - 2.0 * (answer in ("yes", "no")) for b, (_, answer) in zip(base, rounds)]
        assert row["rewards"] == expected
        assert replay(row, env) == (row["observations"], row["rewards"])  # the env gives each human question its answer
    human_turns = np.mean(dataset["num_turns"])
    random_turns = np.mean(scripted_dialogues("random", 76, env_kwargs=env_kwargs)["num_turns"])
    assert (
        human_turns < random_turns
    )  # people's questions find their image faster than random ones in the text-only world


def test_scripted_datasets_replay_exactly_and_keep_their_metadata(tmp_path):
    mixture = scripted_dialogues("mixture", 40, seed=1)
    assert mixture.to_dict() == scripted_dialogues("mixture", 40, seed=1).to_dict()
    assert mixture["actions"] != scripted_dialogues("mixture", 40, seed=2)["actions"]
    env = VisDialEnv()
    for row in mixture:
        observations, rewards = replay(row, env)
        assert observations == row["observations"] and np.allclose(rewards, row["rewards"])
        assert row["policy"] == "mixture" and 0.0 <= row["prob_informative"] <= 1.0
        assert row["num_turns"] == len(row["actions"]) and row["image_index"] == row["image_id"]
    returns = {name: np.mean(scripted_dialogues(name, 40)["return"]) for name in ("informative", "yes_no", "random")}
    assert returns["informative"] > np.mean(mixture["return"]) > returns["random"]
    assert returns["informative"] > returns["yes_no"] > returns["random"]
    path = save_trajectories(mixture, tmp_path / "mixture.jsonl")
    assert load_trajectories(path)["actions"] == mixture["actions"]


def test_any_batched_questioner_records_through_the_shared_recorder():
    kwargs = {"num_episodes": 6, "env_kwargs": {"num_images": 10}, "progress": False}
    informative = record_trajectories("lm_gym/VisDial-v0", InformativeQuestioner().batch, **kwargs)
    random = record_trajectories("lm_gym/VisDial-v0", RandomQuestioner(seed=0).batch, **kwargs)
    assert np.mean(informative["return"]) > np.mean(random["return"])


def test_bad_arguments_and_the_command_line(tmp_path):
    with pytest.raises(ConfigurationError, match="questioner must be one of"):
        scripted_dialogues("smart", 3)
    with pytest.raises(ConfigurationError, match="prob_informative must be a"):
        scripted_dialogues("mixture", 3, prob_informative=(0.8, 0.2))
    with pytest.raises(ConfigurationError, match="source='local'"):
        human_dialogues({"source": "synthetic"})
    out = str(tmp_path / "yn.parquet")
    main(["--dataset", "yes_no", "--num-episodes", "4", "--num-images", "10", "--yn-reward-kind", "hard", "--out", out])
    dataset = load_trajectories(tmp_path / "yn.parquet")
    assert (
        len(dataset) == 4 and set(dataset["policy"]) == {"yes_no"} and min(min(r) for r in dataset["rewards"]) <= -2.0
    )
