"""VisDial-v0's arguments: bad ones name the argument, every split trains the train split's tokenizer
(the checkers run in tests/contract)."""

import pytest

from lm_gym.core.errors import ConfigurationError
from lm_gym.tasks.visdial import VisDialEnv


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"source": "hub"}, "source='hub' is not available"),
        ({"source": "web"}, "source must be one of"),
        ({"split": "dev"}, "split must be one of"),
        ({"cutoff": 0.0}, r"cutoff must be a number in \(0, 1\]"),
        ({"cutoff": 1.5}, r"cutoff must be a number in \(0, 1\]"),
        ({"goal_value": float("nan")}, "goal_value must be a finite number"),
        ({"yn_reward_kind": "maybe"}, "yn_reward_kind must be one of"),
        ({"yn_reward": "-2"}, "yn_reward must be a finite number"),
        ({"max_turns": 0}, r"max_turns must be an int in \[1, 20\]"),
        ({"num_images": 5}, r"num_images must be an int in \[10, 5000\]"),
        ({"data_dir": "/tmp"}, "data_dir is only used with source='local'"),
        ({"source": "local"}, "source='local' needs data_dir"),
        ({"answerer": 42}, "answerer must be an object with answer"),
        ({"ranker": "best"}, "ranker must be an object with percentiles"),
        ({"image_features": {0: [1.0]}}, "image_features are sent to the server"),
        ({"server_url": "ftp://example.org"}, "server_url must be an http"),
        ({"server_url": "http://127.0.0.1:9"}, "server_url needs image_features"),
        (
            {"server_url": "http://127.0.0.1:9", "ranker": len, "image_features": {}},
            "either server_url or answerer/ranker",
        ),
        (
            {"server_url": "http://127.0.0.1:9", "num_images": 10, "image_features": {0: [1.0]}},
            "image_features lacks 9 image ids",
        ),
        ({"server_timeout": 0}, "server_timeout must be a finite number"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        VisDialEnv(**kwargs)


def test_bad_reset_index_and_bad_components_outputs():
    env = VisDialEnv(num_images=10)
    with pytest.raises(ConfigurationError, match=r"options\['index'\] must be an int in \[0, 9\]"):
        env.reset(options={"index": 10})
    env = VisDialEnv(num_images=10, answerer=lambda image, dialogue, question: 3)
    env.reset(seed=0)
    with pytest.raises(ConfigurationError, match="answerer must return a str"):
        env.step("q?")
    with pytest.raises(ConfigurationError, match="ranker must return 1 finite percentiles"):
        VisDialEnv(num_images=10, ranker=lambda images, dialogues: [float("nan")]).reset(seed=0)


def test_every_split_gets_the_train_splits_tokenizer():
    corpora = [VisDialEnv(split=split).tokenizer_corpus() for split in ("train", "validation", "test")]
    assert len({key for key, _ in corpora}) == 1
    train_captions = {image.caption for image in VisDialEnv(split="train").images}
    assert {text.splitlines()[0] for text in corpora[1][1]} == train_captions
