"""COCO caption evaluation (lm_gym.metrics.coco): the Python PTB tokenizer, both pipelines, their agreement,
CommonGen's human scores."""

import json
import tempfile

import gymnasium
import pytest
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from lm_gym.core.errors import ConfigurationError
from lm_gym.metrics import coco_java, corpus_metrics
from lm_gym.metrics.coco import coco_evaluate, coco_tokenized, resolve_pipeline
from lm_gym.metrics.coco_java import JavaError
from lm_gym.metrics.ptb import coco_tokenize, ptb_tokens
from lm_gym.tasks.commongen import human_scores

needs_java = pytest.mark.skipif(
    not coco_java.java_available(), reason="needs Java (e.g. Debian's default-jre-headless)"
)

# Captions and the text pycocoevalcap scores for them; test_cases_are_the_jars_output checks
# every one against Stanford's jar.
PTB_CASES = [
    ("A man throws a frisbee, and his dog catches it.", "a man throws a frisbee and his dog catches it"),
    ("The dog's owner isn't happy; they can't stop it!", "the dog 's owner is n't happy they ca n't stop it"),
    (
        "I'm sure we'll go, you'd say they're here and we've won.",
        "i 'm sure we 'll go you 'd say they 're here and we 've won",
    ),
    ("She cannot believe they're gonna win... Wow!!", "she can not believe they 're gon na win wow !!"),
    ("A well-known e-mail about T-shirts and/or x-rays.", "a well-known e-mail about t-shirts and/or x-rays"),
    (
        "The cat (a tabby) sits on [the mat] {quietly}.",
        "the cat -lrb- a tabby -rrb- sits on -lsb- the mat -rsb- -lcb- quietly -rcb-",
    ),
    ("He said \"hello\" and 'goodbye' -- then left.", "he said hello and goodbye then left"),
    (
        "Mr. Smith met Dr. Jones at 5 p.m. in the U.S. yesterday.",
        "mr. smith met dr. jones at 5 p.m. in the u.s. yesterday",
    ),
    ("Prices rose 3.5% to $10,000 at 10:30 on 2-1 odds.", "prices rose 3.5 % to $ 10,000 at 10:30 on 2-1 odds"),
    (
        "It was 5:30pm, the 1990s' music played, and etc. followed.",
        "it was 5:30 pm the 1990s music played and etc. followed",
    ),
    ("Washington D.C. is the capital; see Fig. 3 and No. 5.", "washington d.c. is the capital see fig. 3 and no. 5"),
    ("rock'n'roll at o'clock with O'Neil, y'all.", "rock 'n' roll at o'clock with o'neil y' all"),
    ("The dogs' bones and James' car, 'tis true.", "the dogs bones and james car 't is true"),
    ("A fish., a bird; a cat: a dog.", "a fish. a bird a cat a dog"),
    ("A boy is on the T.V.", "a boy is on the t.v."),
    ("He went home.Then he slept at 8.Then", "he went home.then he slept at 8 then"),
    (
        "Email me@example.com or visit http://example.com/a?b=c.",
        "email me@example.com or visit http://example.com/a?b=c",
    ),
    ("AT&T and R&D cost 5 & 6 points; #1 in #sports.", "at&t and r&d cost 5 & 6 points # 1 in #sports"),
    ("I don’t know “why” – it’s fine … ok", "i do n't know why it 's fine ok"),
    ("A woman\nrides a bike.", "a woman rides a bike"),
    ("  ", ""),
]
PREDICTIONS = [
    "A dog catches a frisbee in the park.",
    "The cat (black) isn't sleeping!",
    "",
    "Two men ride horses on a beach.",
]
REFERENCES = [
    ["A dog jumps to catch a frisbee in the park.", "The dog catches the frisbee."],
    ["A black cat sleeps.", "The cat is sleeping on the mat.", "A cat naps."],
    ["Nothing happens here."],
    ["Two men are riding horses along the beach.", "Men ride horses by the sea."],
]


@pytest.mark.parametrize(("text", "scored"), PTB_CASES)
def test_python_tokenizer_gives_the_scored_text(text, scored):
    assert coco_tokenize(text) == scored


def test_python_tokens_keep_what_coco_removes():
    """The tokens before COCO's punctuation removal, as the jar makes them: brackets lower-cased, quotes in LaTeX
    style."""
    assert ptb_tokens('He said "no (never)."') == ["he", "said", "``", "no", "-lrb-", "never", "-rrb-", ".", "''"]
    assert ptb_tokens("Don't go... It's 5 p.m.!") == ["do", "n't", "go", "...", "it", "'s", "5", "p.m.", "!"]


@needs_java
def test_cases_are_the_jars_output():
    texts, scored = zip(*PTB_CASES)
    assert coco_tokenized(texts, "java") == list(scored)


def test_python_pipeline_is_pycocoevalcaps_scorers_on_the_python_tokens():
    evaluation = coco_evaluate(PREDICTIONS, REFERENCES, "python")
    gts = {i: [coco_tokenize(r) for r in refs] for i, refs in enumerate(REFERENCES)}
    res = {i: [coco_tokenize(p)] for i, p in enumerate(PREDICTIONS)}
    bleu = Bleu(4).compute_score(gts, res, verbose=0)[0]
    assert evaluation.pipeline == "python"
    assert evaluation.scores == {
        "bleu1": bleu[0],
        "bleu2": bleu[1],
        "bleu3": bleu[2],
        "bleu4": bleu[3],
        "rouge_l": Rouge().compute_score(gts, res)[0],
        "cider": Cider().compute_score(gts, res)[0],
    }
    assert set(evaluation.skipped) == {"meteor", "spice"}
    assert evaluation.metrics() == {
        "coco_py_bleu4": bleu[3],
        "coco_py_rouge_l": evaluation.scores["rouge_l"],
        "coco_py_cider": evaluation.scores["cider"],
    }


@pytest.mark.slow
@needs_java
def test_java_pipeline_is_pycocoevalcaps_own(monkeypatch, tmp_path):
    monkeypatch.setattr(coco_java, "SPICE_DIRECTORY", tmp_path)  # no SPICE models there, whatever is installed
    with pytest.warns(UserWarning, match="SPICE skipped: SPICE needs Stanford CoreNLP 3.6.0"):
        evaluation = coco_evaluate(PREDICTIONS, REFERENCES, "java")
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(REFERENCES)})
    res = tokenizer.tokenize({i: [{"caption": p}] for i, p in enumerate(PREDICTIONS)})
    bleu = Bleu(4).compute_score(gts, res, verbose=0)[0]
    meteor = Meteor()
    expected_meteor = meteor.compute_score(gts, res)[0]
    del meteor  # stops its Java process
    assert evaluation.pipeline == "java"
    assert evaluation.scores == {
        "bleu1": bleu[0],
        "bleu2": bleu[1],
        "bleu3": bleu[2],
        "bleu4": bleu[3],
        "meteor": expected_meteor,
        "rouge_l": Rouge().compute_score(gts, res)[0],
        "cider": Cider().compute_score(gts, res)[0],
    }
    assert "stanford-corenlp-3.6.0-models.jar" in evaluation.skipped["spice"]
    assert set(evaluation.metrics()) == {"coco_bleu4", "coco_meteor", "coco_rouge_l", "coco_cider"}
    assert (
        coco_java.meteor(["a dog runs", "a dog runs"], [["a dog runs"], ["a cat sleeps"]])[1][0] > 0.9
    )  # the process serves again


def test_without_java_auto_is_python_and_java_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolve_pipeline("auto") == "python"
    assert coco_evaluate(["a dog"], [["a dog runs"]]).pipeline == "python"
    with pytest.raises(JavaError, match="needs Java .* pipeline='python' needs none"):
        coco_evaluate(["a dog"], [["a dog runs"]], "java")
    with pytest.raises(ConfigurationError, match="pipeline must be one of"):
        coco_evaluate(["a dog"], [["a dog runs"]], "perl")


@needs_java
def test_java_failures_raise_java_error_and_leave_no_files(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(coco_java, "PTB_JAR", tmp_path / "missing.jar")
    with pytest.raises(JavaError, match=r"PTBTokenizer \(java\) failed with exit status 1: .*PTBTokenizer"):
        coco_java.ptb_tokenize(["a dog runs"])
    monkeypatch.setattr(coco_java._meteor_module, "METEOR_JAR", "missing.jar")
    monkeypatch.setattr(coco_java, "_meteor_instance", None)
    with pytest.raises(JavaError, match=r"METEOR 1.5 \(java\) stopped with exit status 1: .*missing.jar"):
        coco_java.meteor(["a dog"], [["a dog runs"]])
    assert coco_java._meteor_instance is None  # the next call starts a new process
    assert list(tmp_path.iterdir()) == []


def test_commongen_human_score_protocols():
    scene_sets = [["a b c", "a b", "a b c d"], ["x y", "y x"], ["only one"]]
    predictions, references = human_scores.leave_one_out(scene_sets)
    assert predictions == ["a b c", "a b", "a b c d", "x y", "y x"]
    assert references == [["a b", "a b c d"], ["a b c", "a b c d"], ["a b c", "a b"], ["y x"], ["x y"]]
    predictions, references = human_scores.commongen_human(scene_sets)
    shortest = ["a b", "a b c", "a b c d"]
    assert predictions[:9] == shortest * 3 and references[:9] == [[r] for r in shortest for _ in range(3)]
    assert len(predictions) == 9 + 4 + 1 and predictions[-1] == references[-1][0] == "only one"


def test_human_scores_command(tmp_path, capsys):
    rows = [
        {"concept_set": "dog_N#run_V", "scene": ["A dog runs.", "The dog is running fast.", "Dogs run."]},
        {"concept_set": "cat_N#sit_V", "scene": ["A cat sits.", "The cat sat down."]},
    ]
    path = tmp_path / "commongen.dev.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    results = human_scores.main([str(path), "--pipeline", "python"])
    predictions, references = human_scores.leave_one_out(human_scores.read_scenes(path))
    assert results["leave-one-out"] == coco_evaluate(predictions, references, "python").scores
    output = capsys.readouterr().out
    assert (
        "leave-one-out (5 samples, python pipeline): bleu1" in output
        and "commongen-human (13 samples, python pipeline)" in output
    )
    assert f"cider {10 * results['commongen-human']['cider']:.2f}" in output and "meteor not computed" in output


def test_commongen_corpus_metrics_name_their_pipeline():
    finals = []
    env = gymnasium.make(
        "lm_gym/CommonGen-v0", source="synthetic", split="validation", coco_pipeline="python"
    ).unwrapped
    for seed in range(4):
        _, info = env.reset(seed=seed)
        finals.append(env.step(info["references"][-1] if seed else "a dog and a cat")[4])
    results = corpus_metrics(env, finals)
    utterances, references = [f["utterance"] for f in finals], [list(f["references"]) for f in finals]
    expected = coco_evaluate(utterances, references, "python").metrics()
    assert (
        set(expected) == {"coco_py_bleu4", "coco_py_rouge_l", "coco_py_cider"}
        and {k: results[k] for k in expected} == expected
    )
    off = gymnasium.make("lm_gym/CommonGen-v0", source="synthetic", split="validation", coco_pipeline="off").unwrapped
    assert not any(name.startswith("coco") for name in corpus_metrics(off, finals))
    with pytest.raises(ConfigurationError, match="coco_pipeline must be one of"):
        gymnasium.make("lm_gym/CommonGen-v0", source="synthetic", coco_pipeline="perl")


@pytest.mark.slow
@needs_java
def test_python_pipeline_agrees_with_java_on_commongen_dev(shared_data):
    """CommonGen's dev references scored leave-one-out: the Python pipeline within 0.5% of the official one."""
    scene_sets = human_scores.read_scenes(shared_data / "commongen" / "commongen.dev.jsonl")
    predictions, references = human_scores.leave_one_out(scene_sets)
    assert len(predictions) == 4018
    java = coco_evaluate(predictions, references, "java", spice=False).scores
    python = coco_evaluate(predictions, references, "python").scores
    for name in ("bleu4", "cider", "rouge_l"):
        assert python[name] == pytest.approx(java[name], rel=0.005), name
