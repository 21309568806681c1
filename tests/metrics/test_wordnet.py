"""The WordNet shipped for METEOR: offline everywhere, and exactly the full WordNet 3.0 where METEOR looks.

The comparisons with the full database run where one is at hand: ``$LM_GYM_REFERENCE_WORDNET``
(a WordNet 3.0 ``dict`` directory; ``.ci/run`` unpacks Debian's ``wordnet-base`` into a private
folder for it, not into the system), else ``/usr/share/wordnet``.
"""

import os
import random
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import nltk
import numpy as np
import pytest
from nltk.data import FileSystemPathPointer
from nltk.translate.meteor_score import meteor_score

from lm_gym.metrics import concept_coverage, meteor_scores, tokenize, wordnet
from lm_gym.metrics import coverage as coverage_module
from lm_gym.metrics.wordnet import SHIPPED, LemmaWordNet
from lm_gym.metrics.wordnet_build import LEXICOGRAPHER_FILES, build

# Single- and multi-sentence texts with inflections, synonyms and paraphrases, where WordNet matters.
PREDICTIONS = [
    "the cat sat on the mat near the door",
    "a dog is running in the green park",
    "children are playing football outside today",
    "Please sit at the table. Take a bite of the hamburger",
    "The storm hit the coast. Many homes lost power! Officials say repairs take days.",
    "He bought an automobile. It was quick and cheap.",
    "geese flew over the lakes while the boys were swimming",
]
REFERENCES = [
    ["the cat is sitting on the mat by the door", "the cat sat on a mat"],
    ["a dog runs in the park", "the dog was running through a green park", "dogs run"],
    ["kids play football outside"],
    ["He sat at the table and took a bite of his hamburger."],
    ["Power was lost in many houses after the storm struck the shore. Repairs will need several days."],
    ["She purchased a fast, inexpensive car.", "He got a new car. It was fast."],
    ["a goose flies above the lake as boys swim"],
]


def test_wordnet_is_nltks_reader_on_the_shipped_lemma_database():
    reader = wordnet()
    assert isinstance(reader, nltk.corpus.reader.WordNetCorpusReader)
    assert wordnet() is reader
    assert reader.get_version() == "3.0"
    dog = reader.synsets("dog")[0]
    assert (dog.name(), dog.lexname(), dog.lemma_names()[:2]) == ("dog.n.01", "noun.animal", ["dog", "domestic_dog"])
    assert reader.morphy("running", "v") == "run" and reader.morphy("geese", "n") == "goose"
    assert "automobile" in {name for synset in reader.synsets("car") for name in synset.lemma_names()}
    satellite = reader.synsets("quick", "s")[0]  # a satellite's sense key names its head adjective
    assert satellite.lemmas()[0].key() == "quick%5:00:00:fast:01"


def test_the_license_ships_beside_the_data():
    license_text = SHIPPED.with_name("LICENSE-WordNet").read_text()
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in license_text
    assert license_text == wordnet().open("LICENSE").read()


def test_wordnet_needs_no_download_no_system_database_and_no_nltk_data(tmp_path):
    """A fresh process with empty nltk and WordNet folders, a fresh cache and no network scores METEOR."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {
        **os.environ,
        "NLTK_DATA": str(empty),
        "WNSEARCHDIR": str(empty),
        "HOME": str(tmp_path),
        "LM_GYM_CACHE": str(tmp_path / "cache"),
    }
    code = (
        "import socket, nltk\n"
        "socket.socket = None  # any network use fails\n"
        "nltk.download = None\n"
        "from lm_gym.metrics import meteor_scores\n"
        "print(round(float(meteor_scores(['a dog runs'], [['the dogs are running']])[0]), 6))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == pytest.approx(meteor_scores(["a dog runs"], [["the dogs are running"]])[0], abs=1e-6)
    assert not (tmp_path / "cache").exists()  # nothing built or downloaded


# --- against the full WordNet 3.0 database -----------------------------------------------------


@pytest.fixture(scope="module")
def full_database() -> Path:
    """A full WordNet 3.0 database directory (the release's ``dict`` files)."""
    for candidate in (os.environ.get("LM_GYM_REFERENCE_WORDNET"), "/usr/share/wordnet"):
        if candidate and (Path(candidate) / "data.noun").is_file():
            return Path(candidate)
    pytest.skip("no full WordNet 3.0 database: set LM_GYM_REFERENCE_WORDNET to a WordNet 3.0 dict directory")


@pytest.fixture(scope="module")
def full_wordnet(full_database, tmp_path_factory) -> LemmaWordNet:
    """nltk's reader on the full database (with the two files nltk wants that the release lacks)."""
    corpus = tmp_path_factory.mktemp("full_wordnet")
    for path in full_database.iterdir():
        shutil.copyfile(path, corpus / path.name)
    (corpus / "lexnames").write_text(
        "".join(f"{number:02d}\t{name}\t0\n" for number, name in enumerate(LEXICOGRAPHER_FILES))
    )
    (corpus / "index.sense").touch()
    nltk.data.path.append(str(corpus))  # nltk opens corpus files only under its data roots
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The multilingual functions are not available")
            reader = LemmaWordNet(FileSystemPathPointer(str(corpus)), None)
        yield reader
    finally:
        nltk.data.path.remove(str(corpus))


def test_synsets_lemmas_and_morphy_equal_the_full_database(full_wordnet):
    shipped = wordnet()
    lemmas = sorted(full_wordnet._lemma_pos_offset_map)
    assert lemmas == sorted(shipped._lemma_pos_offset_map)
    words = random.Random(0).sample(lemmas, 4000)
    words += [word + suffix for word in words[:1000] for suffix in ("s", "es", "ed", "ing", "er", "est")] + [
        "geese",
        "ran",
        "better",
        "children",
        "mice",
    ]

    def described(reader, word):
        return [
            (s.name(), s.lexname(), s.lemma_names(), [lemma.key() for lemma in s.lemmas()])
            for s in reader.synsets(word)
        ]

    for word in words:
        assert described(shipped, word) == described(full_wordnet, word), word
        assert [shipped.morphy(word, pos) for pos in "nvar"] == [full_wordnet.morphy(word, pos) for pos in "nvar"], word


def test_meteor_and_coverage_equal_nltk_with_the_full_database(full_wordnet, monkeypatch):
    expected = [
        meteor_score([tokenize(r) for r in refs], tokenize(p), wordnet=full_wordnet)
        for p, refs in zip(PREDICTIONS, REFERENCES)
    ]
    np.testing.assert_allclose(meteor_scores(PREDICTIONS, REFERENCES), expected, atol=1e-6)
    assert len(set(np.round(expected, 6))) == len(expected)  # the corpus tells the texts apart

    concepts = [["cat", "sit", "door"], ["dog", "run", "park"], ["child", "play"], ["goose", "fly", "lake", "swim"]]
    coverage = concept_coverage(PREDICTIONS[:3] + PREDICTIONS[-1:], concepts)
    monkeypatch.setattr(coverage_module, "wordnet", lambda: full_wordnet)
    coverage_module._forms.cache_clear()
    try:
        assert (
            concept_coverage(PREDICTIONS[:3] + PREDICTIONS[-1:], concepts).tolist()
            == coverage.tolist()
            == [1.0, 1.0, 1.0, 1.0]
        )
    finally:
        coverage_module._forms.cache_clear()


def test_the_shipped_database_is_rebuilt_byte_for_byte(full_database, tmp_path):
    build(full_database, tmp_path / SHIPPED.name)
    assert (tmp_path / SHIPPED.name).read_bytes() == SHIPPED.read_bytes()
    assert (tmp_path / "LICENSE-WordNet").read_text() == SHIPPED.with_name("LICENSE-WordNet").read_text()
