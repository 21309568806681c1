"""Build the WordNet 3.0 lemma database that lm-gym ships, from a WordNet 3.0 ``dict`` directory.

``python -m lm_gym.metrics.wordnet_build --database /usr/share/wordnet`` rewrites
``lm_gym/metrics/data/wordnet-3.0-lemmas.zip``. The input is any copy of the WordNet 3.0
release's database files: the ``dict/`` folder of Princeton's ``WordNet-3.0.tar.gz``, Debian's
``wordnet-base`` (``/usr/share/wordnet``) or nltk's ``corpora/wordnet``. The output depends on
nothing else (fixed zip timestamps, sorted entries), so the same input gives the same bytes;
``tests/metrics/test_wordnet.py`` checks that against the shipped file when a full database is at hand.

What is kept is what nltk's ``WordNetCorpusReader`` needs for ``synsets``, ``lemmas``,
``lemma_names`` and ``morphy`` (METEOR's synonym stage and concept coverage), in nltk's own
format so that nltk's reader, unchanged, reads it:

- ``index.<pos>``: every lemma with its synsets in sense order (pointer symbols dropped);
- ``data.<pos>``: every synset with its lexicographer file, type and lemmas; no gloss, no
  relations but the similar-to pointer of an adjective satellite to its head (nltk builds a
  satellite's sense key from its head), offsets renumbered for the shorter lines;
- ``<pos>.exc``, the morphological exceptions, unchanged; ``lexnames``;
- the WordNet license (the header of every data file, ``LICENSE``, and ``LICENSE-WordNet``
  beside the zip).
"""

from __future__ import annotations

import argparse
import io
import zipfile
from pathlib import Path

from lm_gym.metrics.wordnet import FOLDER, SHIPPED

PARTS_OF_SPEECH = ("adj", "adv", "noun", "verb")

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
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def build(database: Path, out: Path = SHIPPED) -> None:
    """Write the lemma database built from the WordNet 3.0 files in ``database`` to ``out``."""
    files: dict[str, bytes] = {}
    license_text = ""
    for pos in PARTS_OF_SPEECH:
        header, lines = _read_data(database / f"data.{pos}")
        license_text = license_text or _license(header)
        data, offsets = _compact_data(header, lines)
        files[f"data.{pos}"] = data
        files[f"index.{pos}"] = _compact_index(database / f"index.{pos}", offsets)
        files[f"{pos}.exc"] = (database / f"{pos}.exc").read_bytes()
    files["lexnames"] = "".join(
        f"{number:02d}\t{name}\t{_SYNTACTIC_CATEGORY[name.split('.')[0]]}\n"
        for number, name in enumerate(LEXICOGRAPHER_FILES)
    ).encode()
    files["LICENSE"] = license_text.encode()
    # nltk's reader lists these two; neither is read for synsets, lemmas or morphy.
    files["index.sense"] = b""
    files["cntlist.rev"] = b""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(FOLDER + name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name], compresslevel=9)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buffer.getvalue())
    out.with_name("LICENSE-WordNet").write_text(license_text)


def _read_data(path: Path) -> tuple[list[str], list[str]]:
    """A data file's license header (lines starting with a space) and its synset lines."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    header = [line for line in lines if line.startswith(" ")]
    return header, lines[len(header) :]


def _license(header: list[str]) -> str:
    # Header lines are "  <line number> <text>"; the license is the text.
    return "".join(line.strip().partition(" ")[2] + "\n" for line in header)


def _compact_data(header: list[str], lines: list[str]) -> tuple[bytes, dict[int, int]]:
    """The compact data file and the map from each synset's original offset to its new one."""
    parsed = [_parse_synset(line) for line in lines]
    offsets: dict[int, int] = {}
    position = sum(len(line.encode()) for line in header)
    for offset, fields, pointers in parsed:
        offsets[offset] = position
        # Offsets are 8 digits wide, so a line's length does not depend on the numbers.
        position += len(_synset_line(0, fields, [(symbol, 0, pos) for symbol, _, pos in pointers]).encode())
    body = [
        _synset_line(offsets[offset], fields, [(symbol, offsets[target], pos) for symbol, target, pos in pointers])
        for offset, fields, pointers in parsed
    ]
    return "".join(header + body).encode(), offsets


def _parse_synset(line: str) -> tuple[int, list[str], list[tuple[str, int, str]]]:
    """Offset, the fields kept (lex file, type, lemma count and lemmas), satellite head pointers."""
    tokens = line.split("|", 1)[0].split()
    offset, lexicographer_file, synset_type, lemma_count = tokens[:4]
    lemmas_end = 4 + 2 * int(lemma_count, 16)
    pointer_count = int(tokens[lemmas_end])
    pointers = []
    for start in range(lemmas_end + 1, lemmas_end + 1 + 4 * pointer_count, 4):
        symbol, target, pos, _ = tokens[start : start + 4]
        if synset_type == "s" and symbol == "&":
            pointers.append((symbol, int(target), pos))
    return int(offset), [lexicographer_file, synset_type, *tokens[3:lemmas_end]], pointers


def _synset_line(offset: int, fields: list[str], pointers: list[tuple[str, int, str]]) -> str:
    pointer_fields = [f"{symbol} {target:08d} {pos} 0000" for symbol, target, pos in pointers]
    return " ".join([f"{offset:08d}", *fields, f"{len(pointers):03d}", *pointer_fields]) + " | \n"


def _compact_index(path: Path, offsets: dict[int, int]) -> bytes:
    """The index file with pointer symbols dropped and synset offsets renumbered."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith(" "):
            out.append(line)
            continue
        tokens = line.split()
        lemma, pos, synset_count, pointer_count = tokens[:4]
        sense_count, tagged_count = tokens[4 + int(pointer_count) : 6 + int(pointer_count)]
        synsets = [f"{offsets[int(offset)]:08d}" for offset in tokens[6 + int(pointer_count) :]]
        out.append(" ".join([lemma, pos, synset_count, "0", sense_count, tagged_count, *synsets]) + "  \n")
    return "".join(out).encode()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database",
        type=Path,
        required=True,
        help="a WordNet 3.0 dict directory (data.noun, index.noun, noun.exc, ...)",
    )
    parser.add_argument(
        "--out", type=Path, default=SHIPPED, help=f"the zip to write (default: the shipped {SHIPPED.name})"
    )
    args = parser.parse_args(argv)
    build(args.database, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
