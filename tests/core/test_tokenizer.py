"""Tokenizers: trained offline on a task's text and cached, or loaded by name/path."""

import pytest

from lm_gym.core import tokenizer as tokenizer_module
from lm_gym.core.cache import cache_root
from lm_gym.core.errors import DataUnavailableError
from lm_gym.core.tokenizer import EOS_TOKEN, load_tokenizer, train_tokenizer
from lm_gym.tasks.imdb import IMDBEnv

CORPUS = ["The acting was brilliant and the ending was wonderful."] * 20 + [
    "A dull, tedious film with awful dialogue."
] * 20


def test_trained_tokenizer_round_trips_and_is_cached():
    tokenizer = train_tokenizer(CORPUS, "unit-test", vocab_size=400)
    text = "The ending was dull, but the acting? Brilliant!"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert tokenizer.eos_token == EOS_TOKEN and tokenizer.pad_token_id != tokenizer.eos_token_id
    assert (cache_root() / "tokenizers" / "unit-test-bpe400" / "tokenizer.json").is_file()
    again = train_tokenizer(["entirely different text"], "unit-test", vocab_size=400)  # same key: loaded, not retrained
    assert again.get_vocab() == tokenizer.get_vocab()


def test_a_big_corpus_trains_on_evenly_spaced_texts(monkeypatch):
    corpus = ["the acting was brilliant"] * 51 + ["zyzzyva quokka zyzzyva quokka"] + ["the ending was wonderful"] * 48
    characters = sum(map(len, corpus))
    monkeypatch.setattr(tokenizer_module, "MAX_TRAINING_CHARS", -(-characters // 2))  # every 2nd text: not text 51
    sampled = train_tokenizer(corpus, "unit-test-sampled", vocab_size=400)
    assert (cache_root() / "tokenizers" / "unit-test-sampled-bpe400-every2" / "tokenizer.json").is_file()
    monkeypatch.setattr(tokenizer_module, "MAX_TRAINING_CHARS", characters)
    whole = train_tokenizer(corpus, "unit-test-sampled", vocab_size=400)
    assert (cache_root() / "tokenizers" / "unit-test-sampled-bpe400" / "tokenizer.json").is_file()
    assert len(sampled.tokenize(" zyzzyva")) > len(whole.tokenize(" zyzzyva"))
    assert sampled.tokenize(" acting ending") == whole.tokenize(" acting ending")


def test_task_tokenizer_is_trained_on_the_task_corpus():
    key, corpus = IMDBEnv(source="synthetic").tokenizer_corpus()
    assert key.startswith("imdb-synthetic-")
    tokenizer = train_tokenizer(corpus, key)
    assert 258 < len(tokenizer) <= 4096  # fewer when the corpus runs out of merges
    assert len(tokenizer(corpus[0])["input_ids"]) < len(corpus[0]) / 3  # real merges, not bytes


def test_load_tokenizer_from_a_local_directory(tmp_path):
    train_tokenizer(CORPUS, "unit-test-save", vocab_size=400).save_pretrained(tmp_path)
    tokenizer = load_tokenizer(str(tmp_path))
    assert tokenizer.eos_token == EOS_TOKEN


def test_a_tokenizer_saved_beside_a_qwen2_config_loads_as_it_was_saved(tmp_path):
    """transformers 5's AutoTokenizer takes a folder's model type (qwen2: Qwen2Tokenizer) over the saved class;
    lm-gym's own tokenizer, saved beside a Qwen2 policy (sft.py, then --init-from), must come back as it was."""
    from transformers import Qwen2Config

    corpus = [*CORPUS, *(f"In 1999 the year 2024 saw 123 films, {n}00 reviews." for n in range(50))]
    tokenizer = train_tokenizer(corpus, "unit-test-qwen2-folder", vocab_size=400)  # merges across digits
    tokenizer.save_pretrained(tmp_path)
    Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(
        tmp_path
    )
    text = CORPUS[0] + "\n\nIn 1999 the   movie was GREAT!! 123 films"
    loaded = load_tokenizer(str(tmp_path))
    assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert (loaded.eos_token, loaded.pad_token) == (tokenizer.eos_token, tokenizer.pad_token)


def test_unknown_hub_tokenizer_fails_clearly_offline():
    with pytest.raises(DataUnavailableError, match="tokenizer=None"):
        load_tokenizer("no-such-org/no-such-tokenizer")
