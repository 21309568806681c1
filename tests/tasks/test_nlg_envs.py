"""CommonGen, CNN/DailyMail and DailyDialog envs: prompts, rewards (shaping, choices, intent),
batched scoring, corpus metrics, local data end to end. The contract suite covers the rest."""

import shutil

import gymnasium
import numpy as np
import pytest
from transformers import GPT2Config, GPT2LMHeadModel

from lm_gym import metrics
from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.core.tokenizer import train_tokenizer
from lm_gym.rewards.intent import TransformersActClassifier
from lm_gym.tasks.cnn_dailymail.env import CNNDailyMailEnv
from lm_gym.tasks.commongen.env import CommonGenEnv, repeats_prompt
from lm_gym.tasks.dailydialog.data import load_dialogues
from lm_gym.tasks.dailydialog.env import DailyDialogEnv

NLG_IDS = ("lm_gym/CommonGen-v0", "lm_gym/CNNDailyMail-v0", "lm_gym/DailyDialog-v0")


@pytest.fixture(scope="module")
def commongen():
    return CommonGenEnv(split="validation", source="synthetic")


@pytest.fixture(scope="module")
def dailydialog():
    return DailyDialogEnv(split="validation", source="synthetic")


def test_commongen_prompt_reward_and_repeat_penalty(commongen):
    _, info = commongen.reset(seed=3)
    concepts, references = info["meta"]["concepts"], info["references"]
    assert info["prompt"] == f"generate a sentence with: {' '.join(concepts)}."
    assert len(references) >= 1
    meteor = metrics.meteor_scores([references[0]], [references])[0]
    _, reward, terminated, _, step_info = commongen.step(references[0])
    assert terminated and reward == pytest.approx(meteor) and step_info["metrics"]["coverage"] == 1.0
    copy = f"Here is {' '.join(concepts)} again"
    commongen.reset(seed=3)
    _, copied_reward, *_, copied_info = commongen.step(copy)
    assert copied_info["metrics"]["repeats_prompt"] == 1.0
    assert copied_reward == pytest.approx(metrics.meteor_scores([copy], [references])[0] - 1.0)
    assert repeats_prompt("generate a sentence with: dog run.", "A Sentence about a dog.")
    assert not repeats_prompt("generate a sentence with: dog run.", "The dog ran home.")
    without_shaping = CommonGenEnv(split="validation", source="synthetic", repeat_penalty=0.0)
    without_shaping.reset(seed=3)
    assert without_shaping.step(copy)[1] == pytest.approx(copied_reward + 1.0)


@pytest.mark.parametrize("reward", ["rouge1", "rouge2", "rougeL", "cider"])
def test_commongen_reward_choices_match_the_metrics(reward):
    env = CommonGenEnv(split="validation", source="synthetic", reward=reward)
    sample = env.samples[7]
    utterance = sample.references[0].replace("the", "a")
    env.reset(options={"index": 7})
    _, value, *_ = env.step(utterance)
    if reward == "cider":  # CIDEr-D with the split's document frequencies, whatever the batch
        expected = metrics.CiderD([s.references for s in env.samples]).scores([utterance], [list(sample.references)])[0]
    else:
        expected = metrics.rouge_scores([utterance], [list(sample.references)], rouge_type=reward)[0]
    assert value == pytest.approx(expected) and value > 0.2
    with pytest.raises(ConfigurationError, match="reward"):
        CommonGenEnv(source="synthetic", reward="spice")


def test_cnn_dailymail_keeps_the_article_start_at_token_level():
    env = gymnasium.make(
        "lm_gym/CNNDailyMail-v0", source="synthetic", split="validation", action_level="token", max_prompt_length=6
    )
    observation, info = env.reset(seed=0)
    tokenizer = env.unwrapped.tokenizer
    shown = tokenizer.decode(observation["prompt_ids"][observation["prompt_mask"] == 1])
    assert info["prompt"].startswith("Summarize: ") and info["prompt"].startswith(shown.strip())
    assert env.unwrapped.prompt_truncation_side == "right"


def test_cnn_dailymail_rewards_and_lsum_sentences():
    env = CNNDailyMailEnv(split="validation", source="synthetic", reward="rougeLsum")
    _, info = env.reset(seed=1)
    highlights = info["references"][0]
    assert "\n" in highlights
    summary = highlights.replace("\n", " ")  # one line: the env splits it into sentences again
    _, reward, *_, step_info = env.step(summary)
    assert reward == pytest.approx(1.0) and step_info["metrics"]["rougeLsum"] == pytest.approx(1.0)
    lead = " ".join(env.samples[info["meta"]["index"]].prompt.removeprefix("Summarize: ").split(". ")[:3])
    env.reset(seed=1)
    _, lead_reward, *_, lead_info = env.step(lead)
    assert 0.0 < lead_reward < 1.0
    assert lead_info["metrics"]["rouge1"] == pytest.approx(metrics.rouge_scores([lead], [[highlights]])[0])


def test_dailydialog_samples_context_and_reward(dailydialog):
    dialogues = load_dialogues("synthetic", "validation").dialogues
    assert len(dailydialog.samples) == sum(max(0, len(d) - 5) for d in dialogues)
    _, info = dailydialog.reset(seed=2)
    meta = info["meta"]
    dialogue = dialogues[meta["dialogue"]]
    context = [u for u, _, _ in dialogue[meta["turn"] - 5 : meta["turn"]]]
    assert info["prompt"] == " <EOU> ".join(context) + " <EOU>"
    assert (info["references"][0], meta["act_id"], meta["emotion_id"]) == dialogue[meta["turn"]]
    reference = info["references"][0]
    _, reward, *_, step_info = dailydialog.step(reference)
    assert step_info["metrics"]["intent_match"] == 1.0
    assert reward == pytest.approx(0.75 + 0.25 * metrics.meteor_scores([reference], [[reference]])[0])
    with pytest.raises(ConfigurationError, match="context_size"):
        DailyDialogEnv(source="synthetic", context_size=0)


def test_dailydialog_offline_intent_classifier_reads_acts(dailydialog):
    turns = [turn for dialogue in load_dialogues("synthetic", "validation").dialogues for turn in dialogue]
    predicted = dailydialog.reward_fn.classifier.predict([""] * len(turns), [u for u, _, _ in turns])
    assert np.mean(predicted == np.array([a for _, a, _ in turns])) > 0.9
    question, directive = dailydialog.reward_fn.classifier.predict(
        ["", ""], ["Where is the station?", "Please close the door."]
    )
    assert (question, directive) == (2, 3)


def test_dailydialog_transformers_intent_classifier_input(tmp_path):
    """A hub-style classifier (class i = act i + 1) sees the context's last utterance and the reply, as RL4LMs."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    tokenizer = train_tokenizer(
        ["Where is it ?", "Close the door .", "Sure , I will ."] * 5, "tiny-acts", vocab_size=300
    )
    tokenizer.save_pretrained(tmp_path)
    config = DistilBertConfig(
        vocab_size=len(tokenizer),
        dim=16,
        hidden_dim=32,
        n_layers=1,
        n_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        num_labels=4,
    )
    DistilBertForSequenceClassification(config).save_pretrained(tmp_path)
    classifier = TransformersActClassifier(str(tmp_path), device="cpu")
    seen = []
    original = classifier.classifier.probabilities
    classifier.classifier.probabilities = lambda texts: seen.extend(texts) or original(texts)
    acts = classifier.predict(["Hi . <EOU> Where is it ? <EOU>"], ["Over there ."])
    assert seen == ["Where is it ? Over there ."] and acts[0] in (1, 2, 3, 4)


@pytest.mark.parametrize("env_id", NLG_IDS)
def test_vector_env_scores_like_single_envs(env_id):
    venv = gymnasium.make_vec(
        env_id, num_envs=4, vectorization_mode="vector_entry_point", source="synthetic", split="validation"
    )
    env = gymnasium.make(env_id, source="synthetic", split="validation").unwrapped
    _, infos = venv.reset(seed=10)
    actions = tuple(f"{infos['references'][i][0]} extra" if i % 2 else "a short answer ." for i in range(4))
    _, rewards, terminations, _, step_infos = venv.step(actions)
    assert terminations.all()
    for i in range(4):
        env.reset(seed=10 + i)
        _, reward, *_, info = env.step(actions[i])
        assert (
            rewards[i] == pytest.approx(reward)
            and step_infos["metrics"]["num_words"][i] == info["metrics"]["num_words"]
        )


@pytest.fixture(scope="module")
def tiny_language_model():
    tokenizer = train_tokenizer(["a dog catches a frisbee in the park"] * 20, "tiny-lm", vocab_size=300)
    model = GPT2LMHeadModel(
        GPT2Config(
            n_layer=1,
            n_embd=32,
            n_head=2,
            vocab_size=len(tokenizer),
            n_positions=512,
            bos_token_id=tokenizer.eos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    ).eval()
    return model, tokenizer


@pytest.mark.parametrize("env_id", (*NLG_IDS, "lm_gym/IMDB-v0"))
def test_corpus_metrics(env_id, tiny_language_model):
    env = gymnasium.make(env_id, source="synthetic", split="validation").unwrapped
    finals = []
    for seed in range(3):
        _, info = env.reset(seed=seed)
        finals.append(env.step(info["references"][0] if seed else "")[4])
    results = metrics.corpus_metrics(env, finals, language_model=tiny_language_model)
    utterances = [final["utterance"] for final in finals]
    assert results["distinct_1"] == metrics.diversity(utterances)["distinct_1"]
    assert results["perplexity_generations"] > 1 and results["perplexity_references"] > 1
    if env_id != "lm_gym/IMDB-v0":
        references = [list(final["references"]) for final in finals]
        assert results["bleu"] == pytest.approx(metrics.corpus_bleu(utterances, references))
        assert results["sacrebleu"] == pytest.approx(metrics.corpus_sacrebleu(utterances, references))
    if env_id == "lm_gym/CommonGen-v0":
        assert results["cider"] == pytest.approx(metrics.cider(utterances, [list(f["references"]) for f in finals]))
    with pytest.raises(ConfigurationError):
        metrics.corpus_metrics(env, [])


@pytest.mark.slow
def test_local_sources_end_to_end(shared_data, tmp_path):
    commongen = CommonGenEnv(split="validation", source="local", data_dir=shared_data / "commongen")
    assert len(commongen.samples) == 993
    commongen.reset(seed=0)
    assert np.isfinite(commongen.step("A man stands in a field and looks around.")[1])
    cnn = CNNDailyMailEnv(split="validation", source="local", data_dir=shared_data / "cnn_dailymail")
    _, info = cnn.reset(options={"index": 0})
    assert info["prompt"].startswith("Summarize: (CNN)Share") and len(cnn.samples) == 100
    # the slice has no train split: the offline intent classifier trains on a copy of validation
    for kind in ("", "_act", "_emotion"):
        shutil.copy(
            shared_data / "dailydialog" / "validation" / f"dialogues{kind}_validation.txt",
            tmp_path / f"dialogues{kind}_train.txt",
        )
    dialog = DailyDialogEnv(split="train", source="local", data_dir=tmp_path)
    _, info = dialog.reset(seed=0)
    assert info["prompt"].count("<EOU>") == 5 and info["meta"]["act"] in (
        "inform",
        "question",
        "directive",
        "commissive",
    )
    with pytest.raises(DataUnavailableError, match="dialogues_train.txt"):
        DailyDialogEnv(split="validation", source="local", data_dir=shared_data / "dailydialog" / "validation")


@pytest.mark.parametrize("env_id", NLG_IDS)
def test_default_hub_source_fails_fast_offline_naming_the_switch(env_id):
    with pytest.raises(DataUnavailableError, match="source='synthetic'"):
        gymnasium.make(env_id)
