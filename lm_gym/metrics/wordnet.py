"""WordNet for METEOR and concept coverage, from nltk's data, the system's database or a download.

nltk reads WordNet from ``corpora/wordnet`` under one of the ``nltk.data.path`` roots. Where
nltk's own copy is missing, :func:`wordnet` uses a WordNet 3.0 database installed by the
system (Debian/Ubuntu ``wordnet-base``: ``/usr/share/wordnet``, or ``$WNSEARCHDIR``): it
builds, once, an nltk data root under the lm-gym cache holding a copy of those files. With
neither, it downloads nltk's copy into the lm-gym cache once (as ``evaluate``'s METEOR does),
unless ``HF_HUB_OFFLINE`` is set; when that fails too, the error names the ways to install it.

Two files nltk needs are not in ``wordnet-base``: ``lexnames`` (the lexicographer file
names, written here) and ``index.sense`` (copied when present, e.g. from Debian's
``wordnet-sense-index``; else written empty, which leaves only sense-key lookups such as
``lemma_from_key`` without data; METEOR, ``synsets`` and ``morphy`` do not use it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import socket
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import nltk

from lm_gym.core.cache import cached_directory
from lm_gym.core.errors import DataUnavailableError

if TYPE_CHECKING:
    from nltk.corpus.reader import WordNetCorpusReader

DEFAULT_DATABASE_DIRECTORY = Path("/usr/share/wordnet")

DATABASE_FILES = (
    *(f"{kind}.{pos}" for kind in ("data", "index") for pos in ("adj", "adv", "noun", "verb")),
    *(f"{pos}.exc" for pos in ("adj", "adv", "noun", "verb")),
    "cntlist.rev",
)

# WordNet 3.0's lexicographer files, in the order of their numbers (lexnames(5WN)).
LEXICOGRAPHER_FILES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)  # fmt: skip
_SYNTACTIC_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

INSTALL_HINT = (
    "Install it with `apt-get install wordnet-base` (Debian/Ubuntu; or point $WNSEARCHDIR at a "
    "WordNet 3.0 database directory) or with `python -m nltk.downloader wordnet`."
)


@functools.cache
def wordnet() -> WordNetCorpusReader:
    """nltk's WordNet reader: nltk's own data if present, else the system's WordNet 3.0 database."""
    if not _nltk_has_wordnet():
        root = str(_nltk_root())
        if root not in nltk.data.path:
            nltk.data.path.append(root)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        nltk.corpus.wordnet.ensure_loaded()
    return nltk.corpus.wordnet


def _nltk_has_wordnet() -> bool:
    for resource in ("corpora/wordnet", "corpora/wordnet.zip"):
        try:
            nltk.data.find(resource)
        except LookupError:
            continue
        return True
    return False


def _nltk_root() -> Path:
    """An nltk data root holding WordNet: a copy of the system's database, else nltk's download."""
    try:
        return _nltk_root_from_database(_database_directory())
    except DataUnavailableError as missing:
        if os.environ.get("HF_HUB_OFFLINE", "0").lower() not in ("0", "false", ""):
            raise
        try:
            return cached_directory("nltk_data", "wordnet-download", _download_wordnet)
        except Exception as error:  # no network, a proxy, a firewall: the install hint is the way out
            raise DataUnavailableError(f"{missing} Downloading nltk's copy failed too: {error}") from None


def _download_wordnet(root: Path) -> None:
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(30)  # nltk's urlopen has no timeout of its own
    try:
        nltk.download("wordnet", download_dir=str(root), quiet=True, raise_on_error=True)
    finally:
        socket.setdefaulttimeout(previous)


def _database_directory() -> Path:
    """``$WNSEARCHDIR`` (WordNet's own variable), else ``/usr/share/wordnet``, if it holds the database."""
    directory = Path(os.environ.get("WNSEARCHDIR") or DEFAULT_DATABASE_DIRECTORY)
    missing = [name for name in DATABASE_FILES if not (directory / name).is_file()]
    if "data.noun" in missing:
        raise DataUnavailableError(f"WordNet is not available: nltk has no 'corpora/wordnet' and {directory} holds no WordNet database. {INSTALL_HINT}")
    if missing:
        raise DataUnavailableError(f"the WordNet database in {directory} is incomplete (missing {', '.join(missing)}). {INSTALL_HINT}")
    return directory


def _nltk_root_from_database(database: Path) -> Path:
    """The cached nltk data root whose ``corpora/wordnet`` is built from ``database``."""
    noun_data = (database / "data.noun").stat()
    identity = f"{database.resolve()}|{noun_data.st_size}|{noun_data.st_mtime_ns}"  # rebuilt if the database changes
    key = "wordnet-" + hashlib.sha256(identity.encode()).hexdigest()[:16]
    return cached_directory("nltk_data", key, functools.partial(_build_nltk_root, database))


def _build_nltk_root(database: Path, root: Path) -> None:
    corpus = root / "corpora" / "wordnet"
    corpus.mkdir(parents=True)
    # Copies, not links: nltk refuses symlinks leaving its root and, since 3.10, any file
    # with more than one hard link (it could be an outside inode).
    for name in DATABASE_FILES:
        shutil.copyfile(database / name, corpus / name)
    if (database / "lexnames").is_file():
        shutil.copyfile(database / "lexnames", corpus / "lexnames")
    else:
        lines = (f"{number:02d}\t{name}\t{_SYNTACTIC_CATEGORY[name.split('.')[0]]}\n" for number, name in enumerate(LEXICOGRAPHER_FILES))
        (corpus / "lexnames").write_text("".join(lines))
    if (database / "index.sense").is_file():
        shutil.copyfile(database / "index.sense", corpus / "index.sense")
    else:
        (corpus / "index.sense").touch()  # nltk opens it when it loads WordNet
