"""The offline trajectory format (lm_gym.offline): validator, save/load, reference and recorded trajectories."""

import math

import datasets
import gymnasium
import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.offline import (
    TrajectoryFormatError,
    load_trajectories,
    record_trajectories,
    reference_trajectories,
    save_trajectories,
    trajectories_from_rows,
    trajectory_features,
    validate_trajectories,
)
from lm_gym.tasks.wordle.policies import InfoGainPolicy

EXTRA = {"answer": datasets.Value("string")}
WORDLE_KWARGS = {"num_answers": 100}


def good_columns() -> dict:
    """Two trajectories: two turns, then one turn ended by a time limit."""
    return {
        "env_id": ["lm_gym/Wordle-v0", "lm_gym/Wordle-v0"],
        "observations": [["board 0", "board 1"], ["board 0"]],
        "actions": [["crane", "slate"], ["plumb"]],
        "rewards": [[-1.0, 0.0], [-1.0]],
        "dones": [[False, True], [True]],
        "truncated": [False, True],
        "return": [-1.0, -1.0],
        "answer": ["slate", "hello"],
    }


def trajectories(columns: dict, features=None) -> datasets.Dataset:
    return datasets.Dataset.from_dict(columns, features=features or trajectory_features(EXTRA))


def test_validator_accepts_good_trajectories():
    validate_trajectories(trajectories(good_columns()))
    validate_trajectories(trajectories(good_columns()).select([]))


def set_cell(column, row, value):
    def mutate(columns):
        columns[column][row] = value

    return mutate


def drop_turns(columns):
    for name in ("observations", "actions", "rewards", "dones"):
        columns[name][1] = []
    columns["return"][1] = 0.0


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (set_cell("env_id", 1, ""), "column 'env_id', row 1"),
        (set_cell("env_id", 0, None), "column 'env_id', row 0: expected a value, not null"),
        (drop_turns, "column 'actions', row 1: expected at least one turn"),
        (set_cell("observations", 0, ["board 0"]), "column 'observations', row 0: expected one entry per action"),
        (set_cell("rewards", 1, [-1.0, 0.0]), "column 'rewards', row 1: expected one entry per action"),
        (set_cell("actions", 0, ["crane", None]), "column 'actions', row 0: expected no null entries"),
        (set_cell("dones", 0, [True, True]), "column 'dones', row 0: expected True on the last turn only"),
        (set_cell("dones", 1, [False]), "column 'dones', row 1: expected True on the last turn only"),
        (set_cell("rewards", 1, [math.nan]), "column 'rewards', row 1: expected finite rewards"),
        (set_cell("return", 0, -2.0), "column 'return', row 0: expected the sum of the row's rewards, -1"),
    ],
    ids=[
        "empty-env-id",
        "null-env-id",
        "empty",
        "short-observations",
        "long-rewards",
        "null-action",
        "early-done",
        "last-not-done",
        "nan-reward",
        "wrong-return",
    ],
)
def test_validator_names_the_column_and_row_of_bad_data(mutate, expected):
    columns = good_columns()
    mutate(columns)
    with pytest.raises(TrajectoryFormatError, match=expected.replace("(", r"\(")):
        validate_trajectories(trajectories(columns))


def test_validator_rejects_missing_columns_wrong_types_and_non_datasets():
    columns = good_columns()
    del columns["dones"]
    features = datasets.Features({name: f for name, f in trajectory_features(EXTRA).items() if name != "dones"})
    with pytest.raises(TrajectoryFormatError, match=r"lack the core columns \['dones'\]"):
        validate_trajectories(trajectories(columns, features))
    wrong = trajectory_features(EXTRA)
    wrong["rewards"] = datasets.Sequence(datasets.Value("float64"))
    with pytest.raises(TrajectoryFormatError, match="column 'rewards' must be"):
        validate_trajectories(trajectories(good_columns(), wrong))
    with pytest.raises(ConfigurationError, match="dataset must be a datasets.Dataset"):
        validate_trajectories(good_columns())


def test_validator_rows_are_those_of_the_dataset_as_selected():
    columns = good_columns()
    columns["dones"][1] = [False]
    with pytest.raises(TrajectoryFormatError, match="row 0"):
        validate_trajectories(trajectories(columns).select([1, 0]))


def test_rows_builder_sums_returns_and_checks_columns():
    columns = good_columns()
    rows = [{name: columns[name][i] for name in columns if name != "return"} for i in range(2)]
    del rows[0]["truncated"]
    data = trajectories_from_rows(rows, EXTRA)
    assert data["return"] == [-1.0, -1.0] and data["truncated"] == [False, True]
    with pytest.raises(TrajectoryFormatError, match=r"row 0: missing columns \[\], unknown columns \['answer'\]"):
        trajectories_from_rows(rows)
    with pytest.raises(ConfigurationError, match="names of core trajectory columns"):
        trajectory_features({"return": datasets.Value("float64")})


@pytest.mark.parametrize("name", ["data.parquet", "data.jsonl", "data_dir"])
def test_save_load_round_trip_keeps_metadata_columns(tmp_path, name):
    data = trajectories(good_columns())
    loaded = load_trajectories(save_trajectories(data, tmp_path / "nested" / name))
    assert loaded.features == data.features and loaded.to_list() == data.to_list()


def test_save_validates_and_load_names_a_missing_path(tmp_path):
    columns = good_columns()
    columns["return"][0] = 3.0
    with pytest.raises(TrajectoryFormatError, match="'return', row 0"):
        save_trajectories(trajectories(columns), tmp_path / "bad.parquet")
    with pytest.raises(DataUnavailableError, match="missing.parquet"):
        load_trajectories(tmp_path / "missing.parquet")


# ---- producers ------------------------------------------------------------------------------
@pytest.mark.parametrize(("env_id", "max_samples"), [("lm_gym/CommonGen-v0", 8), ("lm_gym/CNNDailyMail-v0", 3)])
def test_reference_trajectories_score_every_reference_as_the_env_does(env_id, max_samples):
    data = reference_trajectories(
        env_id,
        split="validation",
        env_kwargs={"source": "synthetic"},
        max_samples=max_samples,
        batch_size=5,
        progress=False,
    )
    env = gymnasium.make(env_id, source="synthetic", split="validation")
    samples = env.unwrapped.samples
    assert len(data) == sum(len(samples[k].references) for k in range(max_samples))
    assert set(data["source"]) == {"reference"} and set(data["env_id"]) == {env_id}
    for row in data:
        observation, _ = env.reset(options={"index": row["sample_index"]})
        reference = samples[row["sample_index"]].references[row["reference_index"]]
        _, reward, terminated, truncated, _ = env.step(reference)
        assert row["observations"] == [observation] and row["actions"] == [reference]
        assert (
            row["rewards"] == [pytest.approx(reward, rel=1e-6)]
            and row["dones"] == [terminated]
            and row["truncated"] == truncated
        )


def test_reference_trajectories_need_a_single_turn_task():
    with pytest.raises(ConfigurationError, match="'lm_gym/Wordle-v0' is a WordleEnv: record a policy's episodes"):
        reference_trajectories("lm_gym/Wordle-v0")


@pytest.fixture(scope="module")
def expert_policy():
    expert = InfoGainPolicy(gymnasium.make("lm_gym/Wordle-v0", **WORDLE_KWARGS).unwrapped.vocabulary)
    return lambda boards: [expert(board) for board in boards]


def test_recorded_wordle_games_are_deterministic_and_replay(expert_policy):
    data = record_trajectories(
        "lm_gym/Wordle-v0", expert_policy, 7, seed=3, env_kwargs=WORDLE_KWARGS, num_envs=3, progress=False
    )
    assert len(data) == 7 and data["seed"] == list(range(3, 10)) and set(data["env_id"]) == {"lm_gym/Wordle-v0"}
    same = record_trajectories(
        "lm_gym/Wordle-v0", expert_policy, 7, seed=3, env_kwargs=WORDLE_KWARGS, num_envs=4, progress=False
    )
    assert same.to_list() == data.to_list()
    env = gymnasium.make("lm_gym/Wordle-v0", **WORDLE_KWARGS)
    for row in data:
        observation, _ = env.reset(seed=row["seed"])
        for turn, action in enumerate(row["actions"]):
            assert observation == row["observations"][turn]
            observation, reward, *_ = env.step(action)
            assert reward == row["rewards"][turn]


def test_recorded_single_turn_episodes_replay():
    sentence = "A man kicks a ball on the beach."
    data = record_trajectories(
        "lm_gym/CommonGen-v0",
        lambda prompts: [sentence] * len(prompts),
        5,
        seed=0,
        env_kwargs={"source": "synthetic", "split": "validation"},
        num_envs=2,
        progress=False,
    )
    env = gymnasium.make("lm_gym/CommonGen-v0", source="synthetic", split="validation")
    for row in data:
        observation, _ = env.reset(seed=row["seed"])
        _, reward, *_ = env.step(sentence)
        assert row["observations"] == [observation] and row["rewards"] == [pytest.approx(reward, rel=1e-6)]


def test_record_checks_the_policy():
    with pytest.raises(ConfigurationError, match="policy must return a list of 2 utterances"):
        record_trajectories("lm_gym/Wordle-v0", lambda boards: ["crane"], 2, env_kwargs=WORDLE_KWARGS, progress=False)
