"""NLG metrics: each equals its library called directly on the same inputs, as a function and as an evaluate module."""

import math

import evaluate
import nltk
import numpy as np
import pytest
import sacrebleu
import torch
from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu
from nltk.translate.meteor_score import meteor_score
from pycocoevalcap.cider.cider import Cider
from rouge_score.rouge_scorer import RougeScorer
from tokenizers import (
    Tokenizer,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

from lm_gym.core.errors import ConfigurationError
from lm_gym.metrics import (
    MODULE_NAMES,
    CiderD,
    bertscore,
    cider,
    concept_coverage,
    corpus_bleu,
    corpus_rouge,
    corpus_sacrebleu,
    diversity,
    load,
    meteor_scores,
    perplexity,
    rouge_scores,
    split_sentences,
    tokenize,
    wordnet,
)

PREDICTIONS = [
    "the cat sat on the mat near the door",
    "a dog is running in the green park",
    "children are playing football outside today",
    "he reads a long book every night",
]
REFERENCES = [
    ["the cat is sitting on the mat by the door", "the cat sat on a mat"],
    ["a dog runs in the park", "the dog was running through a green park", "dogs run"],
    ["kids play football outside"],
    ["every night he reads a book", "he is reading a long novel at night"],
]
SINGLE_REFERENCES = [refs[:1] for refs in REFERENCES]
# ROUGE-Lsum reads sentences from lines.
SUMMARIES = ["the storm hit the coast.\nmany homes lost power.", "prices rose again.\nbuyers waited for a drop."]
SUMMARY_REFERENCES = [
    ["power was lost in many homes.\nthe storm reached the coast."],
    ["buyers waited.\nprices rose again in may."],
]


def token_lists(texts):
    return [tokenize(text) for text in texts]


# --- tokenization ---------------------------------------------------------------


def test_tokenize_is_the_lowercased_treebank_tokenizer_on_each_sentence():
    assert tokenize("Dogs aren't cats, Mr. Smith!") == ["dogs", "are", "n't", "cats", ",", "mr.", "smith", "!"]
    assert tokenize("Sit at the table. Take a bite") == ["sit", "at", "the", "table", ".", "take", "a", "bite"]


def test_split_sentences_puts_one_sentence_per_line():
    text = 'It rained. "Stay in!" she said?  Yes.\nFine'
    assert split_sentences(text) == 'It rained.\n"Stay in!"\nshe said?\nYes.\nFine'
    text = "The U.S. army met Dr. Who at 5 p.m. today. J. Smith came, e.g. by car. Then it rained... What?"
    assert (
        split_sentences(text)
        == "The U.S. army met Dr. Who at 5 p.m. today.\nJ. Smith came, e.g. by car.\nThen it rained...\nWhat?"
    )


# Texts given as their sentences: evaluate's METEOR tokenizes a text with nltk's word_tokenize,
# i.e. punkt's sentences (these), each by the Treebank tokenizer; METEOR lowercases.
SENTENCE_PREDICTIONS = [
    ["Please sit at the table.", "Take a bite of the hamburger"],
    ["The storm hit the coast.", "Many homes lost power!", "Officials say repairs will take days."],
    ["a dog is running in the green park"],
    ["He bought an automobile.", "It was quick and cheap."],
]
SENTENCE_REFERENCES = [
    [["He sat at the table and took a bite of his hamburger."]],
    [
        ["Power was lost in many houses after the storm struck the shore.", "Repairs will need several days."],
        ["The coast was hit."],
    ],
    [["a dog runs in the park"], ["the dog was running through a green park.", "It was happy."]],
    [["She purchased a fast, inexpensive car."], ["He got a new car.", "It was fast."]],
]


def test_meteor_equals_evaluates_pipeline_on_single_and_multi_sentence_texts():
    def words(sentences):
        return [token for sentence in sentences for token in nltk.word_tokenize(sentence, preserve_line=True)]

    expected = [
        meteor_score([words(r) for r in refs], words(p), wordnet=wordnet())
        for p, refs in zip(SENTENCE_PREDICTIONS, SENTENCE_REFERENCES)
    ]
    predictions = [" ".join(sentences) for sentences in SENTENCE_PREDICTIONS]
    references = [[" ".join(sentences) for sentences in refs] for refs in SENTENCE_REFERENCES]
    np.testing.assert_allclose(meteor_scores(predictions, references), expected, atol=1e-6)
    assert expected[0] == pytest.approx(0.4893, abs=1e-4)  # 0.399 with "table." as one token


# --- metrics against their libraries ---------------------------------------------------------


@pytest.mark.parametrize("references", [SINGLE_REFERENCES, REFERENCES], ids=["single", "multi"])
def test_meteor_equals_nltk(references):
    expected = [
        meteor_score(token_lists(refs), tokenize(p), wordnet=wordnet()) for p, refs in zip(PREDICTIONS, references)
    ]
    np.testing.assert_allclose(meteor_scores(PREDICTIONS, references), expected, atol=1e-6)
    assert load("meteor").compute(predictions=PREDICTIONS, references=references)["meteor"] == pytest.approx(
        np.mean(expected), abs=1e-6
    )


def test_meteor_keeps_the_best_reference():
    per_reference = [[meteor_scores([p], [[r]])[0] for r in refs] for p, refs in zip(PREDICTIONS, REFERENCES)]
    np.testing.assert_allclose(meteor_scores(PREDICTIONS, REFERENCES), [max(s) for s in per_reference], atol=1e-6)


@pytest.mark.parametrize(
    ("rouge_type", "predictions", "references"),
    [
        ("rouge1", PREDICTIONS, REFERENCES),
        ("rouge2", PREDICTIONS, REFERENCES),
        ("rougeL", PREDICTIONS, REFERENCES),
        ("rougeLsum", SUMMARIES, SUMMARY_REFERENCES),
    ],
)
def test_rouge_equals_rouge_score(rouge_type, predictions, references):
    scorer = RougeScorer([rouge_type], use_stemmer=True)
    expected = [scorer.score_multi(refs, p)[rouge_type].fmeasure for p, refs in zip(predictions, references)]
    np.testing.assert_allclose(rouge_scores(predictions, references, rouge_type), expected, atol=1e-6)
    assert corpus_rouge(predictions, references, [rouge_type]) == {
        rouge_type: pytest.approx(np.mean(expected), abs=1e-6)
    }


def test_rouge_lsum_uses_the_sentence_lines():
    lsum, l_ = (
        rouge_scores(SUMMARIES, SUMMARY_REFERENCES, "rougeLsum"),
        rouge_scores(SUMMARIES, SUMMARY_REFERENCES, "rougeL"),
    )
    assert (lsum > l_).all()
    flat = [s.replace("\n", " ") for s in SUMMARIES]
    np.testing.assert_allclose(
        rouge_scores(flat, [[r.replace("\n", " ") for r in refs] for refs in SUMMARY_REFERENCES], "rougeLsum"), l_
    )


def test_empty_predictions_score_zero():
    scores = [
        meteor_scores([""], [["a cat"]]),
        rouge_scores([""], [["a cat"]], "rougeLsum"),
        CiderD([["a cat"]]).scores([""], [["a cat"]]),
    ]
    assert all(s.dtype == np.float64 and s.tolist() == [0.0] for s in scores)


def test_rouge_module_reports_every_type():
    result = load("rouge").compute(predictions=SUMMARIES, references=SUMMARY_REFERENCES)
    expected = {
        t: rouge_scores(SUMMARIES, SUMMARY_REFERENCES, t).mean() for t in ("rouge1", "rouge2", "rougeL", "rougeLsum")
    }
    assert result == pytest.approx(expected, abs=1e-6)
    assert load("rouge").compute(predictions=PREDICTIONS, references=REFERENCES, rouge_types=["rouge2"]).keys() == {
        "rouge2"
    }


def test_nltk_bleu_equals_nltk_multi_reference():
    expected = nltk_corpus_bleu([token_lists(refs) for refs in REFERENCES], token_lists(PREDICTIONS))
    assert 0.1 < expected < 1  # with 4-gram matches: no zero precision
    assert corpus_bleu(PREDICTIONS, REFERENCES) == pytest.approx(expected, abs=1e-6)
    assert load("bleu").compute(predictions=PREDICTIONS, references=REFERENCES)["bleu"] == pytest.approx(
        expected, abs=1e-6
    )


def test_sacrebleu_equals_sacrebleu_multi_reference():
    references = [refs[:2] for refs in REFERENCES[:2]] + [[REFERENCES[2][0], "children play outside"], REFERENCES[3]]
    expected = sacrebleu.corpus_bleu(PREDICTIONS, [list(stream) for stream in zip(*references)]).score
    assert corpus_sacrebleu(PREDICTIONS, references) == pytest.approx(expected, abs=1e-6)
    assert load("sacrebleu").compute(predictions=PREDICTIONS, references=references)["score"] == pytest.approx(
        expected, abs=1e-6
    )


def test_sacrebleu_takes_unequal_reference_counts():
    # Repeating one of a sample's references changes no clipped count nor its closest
    # reference length, so a sample with fewer references scores as if padded with a repeat.
    predictions = [
        *PREDICTIONS[:2],
        "kids play",
        PREDICTIONS[3],
    ]  # short, so that a length-0 reference would be closest
    width = max(len(refs) for refs in REFERENCES)
    padded = [refs + [refs[0]] * (width - len(refs)) for refs in REFERENCES]
    expected = sacrebleu.corpus_bleu(predictions, [list(stream) for stream in zip(*padded)]).score
    assert corpus_sacrebleu(predictions, REFERENCES) == pytest.approx(expected, abs=1e-6)
    assert load("sacrebleu").compute(predictions=predictions, references=REFERENCES)["score"] == pytest.approx(
        expected, abs=1e-6
    )
    # Padding with "" instead of None would add empty references, which change the brevity penalty.
    empty_padded = [refs + [""] * (width - len(refs)) for refs in REFERENCES]
    assert sacrebleu.corpus_bleu(predictions, [list(stream) for stream in zip(*empty_padded)]).score != pytest.approx(
        expected
    )


def coco_cider(predictions, references):
    gts = {i: [" ".join(tokenize(r)) for r in refs] for i, refs in enumerate(references)}
    res = {i: [" ".join(tokenize(p))] for i, p in enumerate(predictions)}
    return Cider().compute_score(gts, res)


def test_cider_equals_pycocoevalcap():
    expected, expected_per_sample = coco_cider(PREDICTIONS, REFERENCES)
    assert expected > 0
    assert cider(PREDICTIONS, REFERENCES) == pytest.approx(expected, abs=1e-6)
    assert load("cider").compute(predictions=PREDICTIONS, references=REFERENCES)["cider"] == pytest.approx(
        expected, abs=1e-6
    )
    per_sample = CiderD(REFERENCES).scores(PREDICTIONS, REFERENCES)
    np.testing.assert_allclose(per_sample, expected_per_sample, atol=1e-6)
    assert per_sample.mean() == pytest.approx(expected, abs=1e-6)


def test_cider_d_scores_do_not_depend_on_the_batch():
    scorer = CiderD(REFERENCES)
    whole = scorer.scores(PREDICTIONS, REFERENCES)
    for i in range(len(PREDICTIONS)):
        assert scorer.scores([PREDICTIONS[i]], [REFERENCES[i]])[0] == pytest.approx(whole[i], abs=1e-9)
    repeated = scorer.scores(PREDICTIONS * 3, REFERENCES * 3)
    np.testing.assert_allclose(repeated, np.tile(whole, 3), atol=1e-9)
    scorer.scores(["zebras quietly juggle"], [REFERENCES[0]])
    assert len(scorer.document_frequency) == len(CiderD(REFERENCES).document_frequency)  # unseen n-grams not stored


def test_concept_coverage_matches_inflections():
    predictions = ["Dogs running after a ball", "the cat sleeps", "geese flew south"]
    concepts = [["dog", "run"], ["dog", "cat", "sleep", "ball"], ["goose", "fly", "north"]]
    np.testing.assert_allclose(concept_coverage(predictions, concepts), [1.0, 0.5, 2 / 3])
    result = load("concept_coverage").compute(predictions=predictions, concepts=concepts)
    assert result["concept_coverage"] == pytest.approx((1.0 + 0.5 + 2 / 3) / 3)


def test_diversity_follows_its_definition():
    predictions = ["The cat sat", "the cat ran fast"]
    tokens = ["the", "cat", "sat", "the", "cat", "ran", "fast"]
    bigrams = [("the", "cat"), ("cat", "sat"), ("the", "cat"), ("cat", "ran"), ("ran", "fast")]
    counts = {"the": 2, "cat": 2, "sat": 1, "ran": 1, "fast": 1}
    expected = {
        "distinct_1": len(counts) / len(tokens),
        "distinct_2": len(set(bigrams)) / len(bigrams),
        "msttr": len(counts) / len(tokens),  # under 100 tokens: the whole text's type-token ratio
        "unigram_entropy": -sum(c / len(tokens) * math.log2(c / len(tokens)) for c in counts.values()),
        "vocab_size": len(counts),
        "mean_length": len(tokens) / len(predictions),
    }
    assert diversity(predictions) == pytest.approx(expected)
    assert load("diversity").compute(predictions=predictions) == pytest.approx(expected)


def test_msttr_averages_full_100_token_segments():
    distinct_words = " ".join(f"w{i}" for i in range(100))  # segment 1: ratio 1
    repeated_word = " ".join(["a"] * 100)  # segment 2: ratio 1/100
    leftover = " ".join(f"x{i}" for i in range(50))  # a partial segment, left out
    assert diversity([distinct_words, repeated_word, leftover])["msttr"] == pytest.approx((1 + 1 / 100) / 2)
    assert diversity([""]) == {
        "distinct_1": 0,
        "distinct_2": 0,
        "msttr": 0,
        "unigram_entropy": 0,
        "vocab_size": 0,
        "mean_length": 0,
    }


# --- model-based metrics ---------------------------------------------------------------------

LM_SENTENCES = ["the cat sat on the mat", "a dog runs in the park", "the dog sat", "a cat runs"]


def word_level_tokenizer(special_tokens, **token_names):
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(LM_SENTENCES, trainers.WordLevelTrainer(special_tokens=["<unk>", *special_tokens]))
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", **token_names)


@pytest.fixture(scope="module")
def tiny_lm():
    """A randomly initialised one-layer GPT-2 and a word-level tokenizer with EOS (= BOS) and no pad token."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = word_level_tokenizer(["<|endoftext|>"], eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=len(tokenizer), n_positions=64))
    return model, tokenizer


def direct_perplexities(model, tokenizer, texts, prefixes=None):
    """Per-text (summed NLL, scored tokens) from the model's own loss, one text at a time."""
    start = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    results = []
    for i, text in enumerate(texts):
        context = start + (tokenizer.encode(prefixes[i], add_special_tokens=False) if prefixes else [])
        ids = torch.tensor([context + tokenizer.encode(text, add_special_tokens=False)])
        labels = ids.clone()
        labels[0, : max(len(context), 1)] = -100  # the model shifts labels itself
        with torch.no_grad():
            loss = model(input_ids=ids, labels=labels).loss.item()
        results.append((loss * (labels != -100).sum().item(), (labels != -100).sum().item()))
    nll, counts = np.array(results).T
    return {"perplexity": math.exp(nll.sum() / counts.sum()), "mean_perplexity": np.exp(nll / counts).mean()}


@pytest.mark.parametrize("prefixes", [None, ["dog", "", "a cat runs", "the"]], ids=["plain", "prefixed"])
def test_perplexity_equals_the_models_own_loss(tiny_lm, prefixes):
    model, tokenizer = tiny_lm
    texts = ["the cat sat on the mat", "a dog", "the dog runs in the park", "cat"]
    model.train()
    result = perplexity(texts, model, tokenizer, prefixes=prefixes, batch_size=3)
    assert model.training  # restored after scoring in eval mode
    expected = direct_perplexities(model.eval(), tokenizer, texts, prefixes)
    assert result["perplexity"] == pytest.approx(expected["perplexity"], rel=1e-6)
    assert result["mean_perplexity"] == pytest.approx(expected["mean_perplexity"], rel=1e-6)
    module_result = load("perplexity").compute(predictions=texts, model=model, tokenizer=tokenizer, prefixes=prefixes)
    assert module_result["perplexity"] == pytest.approx(expected["perplexity"], rel=1e-6)


def test_perplexity_loads_a_saved_model_and_needs_a_token_to_score(tiny_lm, tmp_path):
    model, tokenizer = tiny_lm
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    expected = perplexity(["a cat sat"], model, tokenizer)["perplexity"]
    assert perplexity(["a cat sat"], str(tmp_path), None, device="cpu")["perplexity"] == pytest.approx(
        expected, rel=1e-5
    )
    no_start_token = word_level_tokenizer([])
    with pytest.raises(ConfigurationError, match=r"texts\[1\] has no token to score"):
        perplexity(["a cat", "dog"], model, no_start_token)  # "dog" is only context without BOS/EOS


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    """A randomly initialised two-layer BERT saved with a word-level tokenizer."""
    from transformers import BertConfig, BertModel

    fast = word_level_tokenizer(
        ["[PAD]", "[CLS]", "[SEP]", "[MASK]"],
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast._tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", fast.cls_token_id), ("[SEP]", fast.sep_token_id)],
    )
    fast.model_max_length = 64
    directory = tmp_path_factory.mktemp("tiny-bert")
    fast.save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(fast),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(directory)
    return str(directory)


def test_bertscore_equals_bert_score(tiny_bert_dir):
    bert_score = pytest.importorskip("bert_score")
    predictions, references = (
        LM_SENTENCES[:3],
        [["a cat sat on a mat"], ["the dog runs", "a dog runs in a park"], ["the cat sat"]],
    )
    try:
        precision, recall, f1 = bert_score.score(
            predictions, references, model_type=tiny_bert_dir, num_layers=2, device="cpu"
        )
    except (OSError, ValueError) as error:
        pytest.skip(f"bert_score cannot load a local model offline here: {error}")
    expected = {"precision": precision.mean().item(), "recall": recall.mean().item(), "f1": f1.mean().item()}
    result = bertscore(predictions, references, model_type=tiny_bert_dir, num_layers=2, device="cpu")
    assert result == pytest.approx(expected, abs=1e-6)
    module = load("bertscore")
    assert module.compute(
        predictions=predictions, references=references, model_type=tiny_bert_dir, num_layers=2, device="cpu"
    ) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ConfigurationError, match="num_layers"):
        bertscore(predictions, references, model_type=tiny_bert_dir)


# --- evaluate modules and bad input ----------------------------------------------------------


@pytest.mark.parametrize("name", MODULE_NAMES)
def test_every_module_loads_offline_from_the_package(name):
    module = load(name)
    assert isinstance(module, evaluate.EvaluationModule) and module.name == name
    assert module.citation and module.description and "predictions" in module.features


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: meteor_scores("a cat", [["a cat"]]), "predictions must be a non-empty sequence of str"),
        (lambda: rouge_scores([], []), "predictions must be a non-empty sequence of str"),
        (lambda: rouge_scores(["a", 1], [["a"], ["b"]]), r"predictions\[1\] must be a str"),
        (lambda: corpus_bleu(["a", "b"], [["a"]]), "references has 1 items but predictions has 2"),
        (lambda: corpus_sacrebleu(["a"], ["a"]), r"references\[0\] must be a non-empty list of str"),
        (lambda: cider(["a"], [[]]), r"references\[0\] must be a non-empty list of str"),
        (lambda: concept_coverage(["a"], [["dog", None]]), r"concepts\[0\]\[1\] must be a str"),
        (lambda: rouge_scores(["a"], [["a"]], "rouge3"), "rouge_type must be one of"),
        (lambda: corpus_rouge(["a"], [["a"]], "rouge1"), "rouge_types must be a non-empty sequence"),
        (lambda: CiderD([]), "corpus_references must be a non-empty sequence"),
        (lambda: diversity(None), "predictions must be a non-empty sequence of str"),
        (lambda: perplexity(["a"], "unused", "unused", batch_size=0), "batch_size must be an int >= 1"),
        (lambda: perplexity(["a"], "unused", "unused", prefixes=["a", "b"]), "prefixes has 2 items but texts has 1"),
        (lambda: perplexity(["a"], "unused", "unused", device="gpu7"), "device must be None or a torch device"),
        (lambda: bertscore(["a"], [["a"]], model_type=""), "model_type must be a model name"),
        (lambda: load("bleurt"), r"name must be one of \('meteor'"),
    ],
)
def test_bad_input_raises_configuration_error(call, message):
    with pytest.raises(ConfigurationError, match=message):
        call()


def test_perplexity_fits_long_contexts_into_the_model_positions(tiny_lm):
    """A context longer than the model's 64 positions keeps its last tokens instead of crashing the model."""
    model, tokenizer = tiny_lm
    text = LM_SENTENCES[0]
    long_prefix = " ".join([LM_SENTENCES[1]] * 40)
    kept = len(tokenizer.encode(text, add_special_tokens=False))
    context_ids = tokenizer.encode(long_prefix, add_special_tokens=False)[-(64 - kept) :]
    ids = torch.tensor([context_ids + tokenizer.encode(text, add_special_tokens=False)])
    labels = ids.clone()
    labels[0, : len(context_ids)] = -100
    with torch.no_grad():
        loss = model.eval()(input_ids=ids, labels=labels).loss.item()
    assert perplexity([text], model, tokenizer, prefixes=[long_prefix])["perplexity"] == pytest.approx(
        math.exp(loss), rel=1e-5
    )
