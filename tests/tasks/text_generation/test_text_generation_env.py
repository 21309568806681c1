"""lm_gym/TextGeneration-v0: local jsonl/csv/parquet files, columns and templates, metric and function rewards,
per-episode and corpus metrics, the token level, and a typed error for each bad input."""

import csv
import json
import textwrap

import gymnasium
import numpy as np
import pyarrow
import pyarrow.parquet
import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.metrics import corpus_metrics
from lm_gym.tasks.text_generation import TextGenerationEnv

ROWS = [
    {"id": "a", "document": "The cat sat on the mat all day.", "summary": "A cat sat on a mat.", "lang": "en"},
    {"id": "b", "document": "Rain fell over the hills at night.", "summary": "It rained on the hills.", "lang": "en"},
    {"id": "c", "document": "The team won the cup final at home.", "summary": "The team won the cup.", "lang": "en"},
]
TEMPLATE = "Summarize: {document}\nTL;DR:"


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def jsonl(tmp_path):
    return write_jsonl(tmp_path / "train.jsonl", ROWS)


def make(path, **kwargs):
    kwargs = {"prompt_template": TEMPLATE, "reference_column": "summary", **kwargs}
    return TextGenerationEnv(data_files=path, **kwargs)


def test_default_env_plays_the_example_data_offline_at_both_levels():
    env = gymnasium.make("lm_gym/TextGeneration-v0")
    observation, info = env.reset(seed=0)
    assert observation.startswith("Summarize: ") and observation == info["prompt"] and len(info["references"]) == 1
    assert set(info["meta"]["row"]) == {"id", "topic"}
    _, reward, terminated, truncated, info = env.step(info["references"][0])
    assert reward == pytest.approx(1.0) and terminated and not truncated
    assert set(info["metrics"]) == {"rouge1", "num_words"}
    assert [len(TextGenerationEnv(split=split).samples) for split in ("train", "validation", "test")] == [30, 10, 10]

    token_env = gymnasium.make("lm_gym/TextGeneration-v0", action_level="token")  # trains a tokenizer offline
    token_env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = token_env.step(token_env.action_space.sample())
    assert terminated and np.isfinite(reward) and "rouge1" in info["metrics"]

    vector = gymnasium.make_vec("lm_gym/TextGeneration-v0", num_envs=4, vectorization_mode="vector_entry_point")
    vector.reset(seed=0)
    _, rewards, terminated, _, _ = vector.step(["a summary"] * 4)
    assert rewards.shape == (4,) and terminated.all()


def test_jsonl_with_a_template_and_reference_metrics(jsonl):
    env = make(jsonl, metrics=["rouge2", "rougeL", "rougeLsum", "meteor", "bleu", "num_words"])
    observation, info = env.reset(options={"index": 1})
    assert observation == "Summarize: Rain fell over the hills at night.\nTL;DR:"
    assert info["references"] == ["It rained on the hills."]
    assert info["meta"] == {"index": 1, "row": {"id": "b", "lang": "en"}}  # the template's and references' columns not
    _, reward, _, _, info = env.step("It rained on the hills.")
    metrics = info["metrics"]
    assert reward == metrics["rouge1"] == pytest.approx(1.0)
    assert metrics["bleu"] == pytest.approx(1.0) and metrics["rougeLsum"] == pytest.approx(1.0)
    assert metrics["num_words"] == 5 and set(metrics) == {
        "rouge1",
        "rouge2",
        "rougeL",
        "rougeLsum",
        "meteor",
        "bleu",
        "num_words",
    }
    assert env.demonstrations()[1] == (observation, "It rained on the hills.")


@pytest.mark.parametrize("reward", ["rouge1", "rouge2", "rougeL", "rougeLsum", "meteor", "bleu", "sacrebleu", "cider"])
def test_each_metric_is_a_reward(jsonl, reward):
    pytest.importorskip("sacrebleu")
    pytest.importorskip("pycocoevalcap")
    env = make(jsonl, reward=reward)
    env.reset(options={"index": 0})
    _, good, *_ = env.step("A cat sat on a mat.")
    env.reset(options={"index": 0})
    _, bad, _, _, info = env.step("Stocks fell sharply in early trading.")
    assert good > bad >= 0 and info["metrics"][reward] == bad
    if reward == "sacrebleu":
        assert good == pytest.approx(100.0)  # SacreBLEU's own 0-100 scale


def test_reference_column_lists_and_cells_holding_lists(tmp_path):
    rows = [
        {"prompt": "p1", "refs": ["one ref", "two ref"], "alt": "third ref"},
        {"prompt": "p2", "refs": [], "alt": "x"},
    ]
    env = TextGenerationEnv(data_files=write_jsonl(tmp_path / "d.jsonl", rows), reference_column=["refs", "alt"])
    assert [s.references for s in env.samples] == [("one ref", "two ref", "third ref"), ("x",)]
    env.reset(options={"index": 0})
    assert env.step("two ref")[1] == pytest.approx(1.0)  # the best reference counts


def test_csv_and_parquet_files_and_a_dict_of_splits(tmp_path):
    with open(tmp_path / "train.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["prompt", "completion", "code"])
        writer.writeheader()
        writer.writerows(
            [
                {"prompt": "Say 007", "completion": "007", "code": "0042"},
                {"prompt": "Say hi", "completion": "hi", "code": ""},
            ]
        )
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(ROWS[:2]), tmp_path / "validation.parquet")
    train = TextGenerationEnv(data_files=str(tmp_path / "train.csv"))
    assert [s.references for s in train.samples] == [("007",), ("hi",)]  # CSV cells stay text
    assert train.samples[0].meta["row"] == {"code": "0042"}
    files = {"train": [tmp_path / "train.csv"], "validation": tmp_path / "validation.parquet"}
    validation = TextGenerationEnv(
        data_files=files, split="validation", prompt_column="document", reference_column="summary"
    )
    assert [s.prompt for s in validation.samples] == [row["document"] for row in ROWS[:2]]
    with pytest.raises(
        ConfigurationError, match=r"data_files has no 'test' split; its splits are \['train', 'validation'\]"
    ):
        TextGenerationEnv(data_files=files, split="test")


def test_num_samples_keeps_the_first_rows(jsonl):
    assert [s.meta["row"]["id"] for s in make(jsonl, num_samples=2).samples] == ["a", "b"]
    assert len(make(jsonl, num_samples=10).samples) == 3
    with pytest.raises(ConfigurationError, match="num_samples"):
        make(jsonl, num_samples=0)


def test_a_datasets_object_and_the_hub_path_offline(jsonl):
    import datasets

    table = datasets.Dataset.from_list(ROWS)
    env = TextGenerationEnv(dataset=table, prompt_column="document", reference_column="summary")
    assert [s.meta["row"]["id"] for s in env.samples] == ["a", "b", "c"]
    kwargs = {"prompt_template": TEMPLATE, "reference_column": "summary"}
    assert len(TextGenerationEnv(dataset=datasets.DatasetDict({"test": table}), split="test", **kwargs).samples) == 3
    with pytest.raises(ConfigurationError, match=r"dataset has no 'train' split; its splits are \['test'\]"):
        TextGenerationEnv(dataset=datasets.DatasetDict({"test": table}), **kwargs)
    with pytest.raises(DataUnavailableError, match="EdinburghNLP/xsum"):  # the real hub code path; offline here
        TextGenerationEnv(
            dataset="EdinburghNLP/xsum", split="validation", prompt_column="document", reference_column="summary"
        )
    with pytest.raises(ConfigurationError, match="not both"):
        TextGenerationEnv(dataset="EdinburghNLP/xsum", data_files=jsonl)


TRL_REWARDS = """
    def overlap(prompts, completions, references, lang, **kwargs):
        assert all(code == "en" for code in lang) and "id" in kwargs
        return [float(len(set(c.split()) & set(r[0].split()))) for c, r in zip(completions, references)]

    def only_named(prompts, completions, id):
        return [float(ord(i)) for i in id]

    def raises(prompts, completions, **kwargs):
        raise RuntimeError("boom")

    def too_few(prompts, completions, **kwargs):
        return [1.0] * (len(completions) - 1)

    def not_finite(prompts, completions, **kwargs):
        return [float("nan")] * len(completions)

    def not_numbers(prompts, completions, **kwargs):
        return ["1.0"] * len(completions)

    def no_completions(prompts):
        return [0.0]

    def needs_a_column(prompts, completions, title):
        return [0.0] * len(completions)
"""


@pytest.fixture
def reward_module(tmp_path, monkeypatch):
    (tmp_path / "my_tg_rewards.py").write_text(textwrap.dedent(TRL_REWARDS), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_tg_rewards"


def test_a_trl_reward_function_by_name_gets_references_and_columns(jsonl, reward_module):
    env = make(jsonl, reward=f"{reward_module}:overlap", metrics=["meteor", "num_words"])
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step("A cat sat")
    assert (
        reward == 3.0 and info["metrics"]["reward"] == 3.0 and set(info["metrics"]) == {"reward", "meteor", "num_words"}
    )
    env = make(jsonl, reward=f"{reward_module}:only_named")
    env.reset(options={"index": 1})
    assert env.step("x")[1] == float(ord("b"))
    vector = gymnasium.make_vec(
        "lm_gym/TextGeneration-v0",
        num_envs=3,
        vectorization_mode="vector_entry_point",
        data_files=str(jsonl),
        prompt_template=TEMPLATE,
        reference_column="summary",
        reward=f"{reward_module}:overlap",
    )
    vector.reset(seed=0)
    assert vector.step(["A cat sat"] * 3)[1].shape == (3,)


def test_a_reward_function_without_references(tmp_path, reward_module):
    path = write_jsonl(tmp_path / "prompts.jsonl", [{"prompt": "hello", "id": "z"}])
    env = TextGenerationEnv(data_files=path, reference_column=None, reward=f"{reward_module}:only_named")
    _, info = env.reset()
    _, reward, _, _, final = env.step("x")
    assert info["references"] == [] and reward == float(ord("z"))
    results = corpus_metrics(env, [final])
    assert "distinct_1" in results and "bleu" not in results  # no reference metrics without references
    with pytest.raises(ConfigurationError, match="reference_column=None gives none"):
        TextGenerationEnv(data_files=path, reference_column=None)  # the default reward, rouge1, needs references
    with pytest.raises(ConfigurationError, match=r"metrics: 'meteor' scores against references"):
        TextGenerationEnv(
            data_files=path, reference_column=None, reward=f"{reward_module}:only_named", metrics=["meteor"]
        )
    with pytest.raises(ConfigurationError, match="demonstrations only with references"):
        env.demonstrations()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("raises", r"my_tg_rewards:raises raised RuntimeError: boom"),
        ("too_few", r"my_tg_rewards:too_few must return 1 finite numbers"),
        ("not_finite", r"my_tg_rewards:not_finite must return 1 finite numbers"),
        ("not_numbers", r"my_tg_rewards:not_numbers must return 1 finite numbers"),
    ],
)
def test_a_bad_reward_function_gets_a_typed_error_naming_it(jsonl, reward_module, name, message):
    env = make(jsonl, reward=f"{reward_module}:{name}")
    env.reset(seed=0)
    with pytest.raises(ConfigurationError, match=message):
        env.step("text")


def test_reward_functions_that_cannot_be_used(jsonl, reward_module):
    with pytest.raises(ConfigurationError, match="prompts= and completions="):
        make(jsonl, reward=f"{reward_module}:no_completions")
    with pytest.raises(ConfigurationError, match=r"needs_a_column requires \['title'\].*the columns \['id', 'lang'\]"):
        make(jsonl, reward=f"{reward_module}:needs_a_column")
    with pytest.raises(ConfigurationError, match="could not import module 'no_such_module_tg'"):
        make(jsonl, reward="no_such_module_tg:f")
    with pytest.raises(ConfigurationError, match="is not a callable"):
        make(jsonl, reward=f"{reward_module}:missing")
    with pytest.raises(ConfigurationError, match=r"reward: unknown metric 'rogue1'; known metrics: \('rouge1'"):
        make(jsonl, reward="rogue1")
    with pytest.raises(ConfigurationError, match="reward must be a metric name"):
        make(jsonl, reward=3)
    with pytest.raises(ConfigurationError, match=r"metrics: unknown metric 'bleurt'; known metrics: .*'num_words'"):
        make(jsonl, metrics=["bleurt"])
    with pytest.raises(ConfigurationError, match="metrics must be None or a list"):
        make(jsonl, metrics="meteor")


def test_bad_columns_and_templates_name_the_argument_and_list_the_columns(jsonl):
    columns = r"\['id', 'document', 'summary', 'lang'\]"
    with pytest.raises(
        ConfigurationError, match=rf"prompt_column: the dataset has no column 'prompt'; its columns are {columns}"
    ):
        TextGenerationEnv(data_files=jsonl, reference_column="summary")
    with pytest.raises(
        ConfigurationError,
        match=rf"reference_column: the dataset has no column 'completion'; its columns are {columns}",
    ):
        TextGenerationEnv(data_files=jsonl, prompt_column="document")
    with pytest.raises(
        ConfigurationError, match=rf"prompt_template: the dataset has no column 'article'; its columns are {columns}"
    ):
        make(jsonl, prompt_template="Summarize: {article}")
    with pytest.raises(ConfigurationError, match="positional fields"):
        make(jsonl, prompt_template="Summarize: {}")
    with pytest.raises(ConfigurationError, match="not a str.format template"):
        make(jsonl, prompt_template="Summarize: {document")
    with pytest.raises(ConfigurationError, match="prompt_template must be None or a str"):
        make(jsonl, prompt_template=["{document}"])
    with pytest.raises(ConfigurationError, match="reference_column must be None, a column name or a non-empty list"):
        make(jsonl, reference_column=[])
    with pytest.raises(ConfigurationError, match="prompt_column must be a column name"):
        make(jsonl, prompt_column=None)


def test_bad_rows(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"prompt": "p", "completion": "c"}, {"prompt": "q", "completion": ""}])
    with pytest.raises(ConfigurationError, match=r"row 1 has no reference: its \['completion'\] cells are empty"):
        TextGenerationEnv(data_files=path)
    path = write_jsonl(tmp_path / "b.jsonl", [{"prompt": "p", "completion": "c"}, {"prompt": None, "completion": "c"}])
    with pytest.raises(ConfigurationError, match="prompt_column 'prompt' of row 1 must be text"):
        TextGenerationEnv(data_files=path)
    path = write_jsonl(tmp_path / "c.jsonl", [{"prompt": "p", "completion": {"text": "c"}}])
    with pytest.raises(
        ConfigurationError, match="reference_column 'completion' of row 0 must hold a str or a list of str"
    ):
        TextGenerationEnv(data_files=path)


def test_bad_files(tmp_path, jsonl):
    import datasets

    with pytest.raises(ConfigurationError, match="is not a file"):
        TextGenerationEnv(data_files=tmp_path / "missing.jsonl")
    (tmp_path / "data.txt").write_text("hello\n")
    with pytest.raises(ConfigurationError, match=r"must end in one of \('.jsonl', '.json', '.csv', '.parquet'\)"):
        TextGenerationEnv(data_files=tmp_path / "data.txt")
    (tmp_path / "broken.jsonl").write_text('{"prompt": "p", "completion": \n')
    with pytest.raises(ConfigurationError, match="data_files: could not read .*broken.jsonl.* as json"):
        TextGenerationEnv(data_files=tmp_path / "broken.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ConfigurationError, match="data_files: .*empty.jsonl.* hold no rows"):
        TextGenerationEnv(data_files=tmp_path / "empty.jsonl")
    (tmp_path / "header.csv").write_text("prompt,completion\n")
    with pytest.raises(ConfigurationError, match="data_files: .*header.csv.* hold no rows"):
        TextGenerationEnv(data_files=tmp_path / "header.csv")
    with pytest.raises(ConfigurationError, match="the dataset's split has no rows"):
        TextGenerationEnv(dataset=datasets.Dataset.from_list([]))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ConfigurationError, match="empty.csv' is empty"):
        TextGenerationEnv(data_files=tmp_path / "empty.csv")
    (tmp_path / "other.csv").write_text("prompt,completion\np,c\n")
    with pytest.raises(ConfigurationError, match="one format"):
        TextGenerationEnv(data_files=[jsonl, tmp_path / "other.csv"])
    for bad in ([], 3, [3], {"train": []}, b"x.jsonl"):
        with pytest.raises(ConfigurationError, match="data_files"):
            TextGenerationEnv(data_files=bad)
    with pytest.raises(ConfigurationError, match="split must be a non-empty str"):
        TextGenerationEnv(split=None)
    with pytest.raises(ConfigurationError, match="data_files has no 'dev' split"):
        TextGenerationEnv(split="dev")  # the example data has train, validation and test


def test_corpus_metrics(jsonl):
    env = make(jsonl)
    finals = []
    for index, utterance in enumerate(["A cat sat on a mat.", "It rained.", "Nothing here at all."]):
        env.reset(options={"index": index})
        finals.append(env.step(utterance)[4])
    results = corpus_metrics(
        gymnasium.make_vec(
            "lm_gym/TextGeneration-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            data_files=str(jsonl),
            prompt_template=TEMPLATE,
            reference_column="summary",
        ),
        finals,
    )
    assert {"bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "distinct_1"} <= set(results)
    assert results["rouge1"] == pytest.approx(np.mean([f["metrics"]["rouge1"] for f in finals]))
    if "sacrebleu" in results:
        assert 0 <= results["sacrebleu"] <= 100 and results["cider"] >= 0


def test_missing_extras_raise_data_unavailable_naming_them(jsonl, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # import sacrebleu now fails
    with pytest.raises(DataUnavailableError, match=r'reward=.sacrebleu. needs sacrebleu: pip install "lm-gym\[nlg\]"'):
        make(jsonl, reward="sacrebleu")
    env = make(jsonl)
    env.reset(seed=0)
    final = env.step("A cat sat on a mat.")[4]
    with pytest.warns(UserWarning, match="nlg"):
        assert "sacrebleu" not in env.task_corpus_metrics([final])


def test_token_level_trains_a_tokenizer_on_the_train_split(tmp_path, jsonl):
    files = {"train": str(jsonl), "validation": str(write_jsonl(tmp_path / "validation.jsonl", ROWS[:1]))}
    kwargs = {"data_files": files, "prompt_template": TEMPLATE, "reference_column": "summary"}
    train, validation = TextGenerationEnv(**kwargs), TextGenerationEnv(split="validation", **kwargs)
    assert train.tokenizer_corpus()[0] == validation.tokenizer_corpus()[0]  # one tokenizer for every split
    env = gymnasium.make("lm_gym/TextGeneration-v0", action_level="token", max_new_tokens=8, **kwargs)
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        steps += 1
    assert steps <= 8 and "rouge1" in info["metrics"]


def test_the_docs_example_runs(tmp_path, monkeypatch, capsys):
    """The "Your data, no code" block of docs/your-own-task.md, executed."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "your-own-task.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- docs-example: text-generation -->\n```python\n(.*?)```", text, re.DOTALL)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1), "docs/your-own-task.md", "exec"), namespace)  # noqa: S102
    assert namespace["reward"] == pytest.approx(1.0) and set(namespace["info"]["metrics"]) == {
        "rougeL",
        "meteor",
        "bleu",
        "num_words",
    }


def test_bertscore_offline_names_the_model(jsonl):
    pytest.importorskip("bert_score")
    with pytest.raises(DataUnavailableError, match="BERTScore model 'roberta-large'"):
        make(jsonl, reward="bertscore")
    with pytest.raises(ConfigurationError, match="bertscore_layers must be given"):
        make(jsonl, metrics=["bertscore"], bertscore_model="/no/such/model")


def test_bertscore_with_a_local_model_is_a_per_sample_reward(tmp_path, jsonl):
    pytest.importorskip("bert_score")
    from transformers import BertConfig, BertModel

    from lm_gym.core.tokenizer import train_tokenizer

    tokenizer = train_tokenizer([row["summary"] + " " + row["document"] for row in ROWS] * 20, "tg-bert", 300)
    tokenizer.model_max_length = 64
    tokenizer.save_pretrained(tmp_path / "bert")
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2)
    BertModel(config).save_pretrained(tmp_path / "bert")
    env = make(jsonl, reward="bertscore", bertscore_model=str(tmp_path / "bert"), bertscore_layers=1, device="cpu")
    env.reset(options={"index": 0})
    _, same, _, _, info = env.step("A cat sat on a mat.")
    env.reset(options={"index": 0})
    _, other, *_ = env.step("Stocks fell sharply.")
    assert same == pytest.approx(1.0, abs=1e-5) and other < same and info["metrics"]["bertscore"] == same
