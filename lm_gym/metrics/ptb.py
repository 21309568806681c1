"""Stanford's PTBTokenizer in pure Python, as COCO's caption evaluation runs it: ``-preserveLines -lowerCase``.

pycocoevalcap tokenizes captions with Stanford CoreNLP 3.4.1's ``PTBTokenizer`` (Java) and
then drops its punctuation tokens (:data:`PUNCTUATIONS`). :func:`ptb_tokens` gives the Java
tokenizer's tokens for one line of text without Java; :func:`coco_tokenize` the text COCO
scores. The rules and word lists below were read off the jar's output (see the tests):

* words keep inner hyphens, slashes, underscores and periods before a letter (``e-mail``,
  ``and/or``, ``mr.zhang``); numbers keep ``. , :`` between digits (``10,000``, ``2:30``);
* clitics split off: ``do n't``, ``ca n't``, ``it 's``, ``we 're``, ``cannot`` -> ``can not``;
* a period stays on known abbreviations (``mr.``, ``etc.``, ``u.s.``, single letters), and
  on any word before ``, ; :``; elsewhere it is a token;
* brackets become ``-lrb-``, ``-rrb-``, ``-lsb-``, ... (lower-cased, so COCO keeps them: its
  punctuation list has the upper-case ``-LRB-``); quotes become ``` `` ```, ``''``, ``` ` ```, ``'``.

After COCO's punctuation removal the tokens equal the jar's on all 4,018 CommonGen dev scenes,
and on all but 7 of 19,172 lines of CommonGen, DailyDialog and CNN/DailyMail text (phone
numbers the jar keeps whole, ``have'em``). Tokens COCO removes may differ (a quote's
direction, the jar's extra period after a sentence-final abbreviation).
"""

from __future__ import annotations

import re

#: Tokens pycocoevalcap removes after tokenizing (``pycocoevalcap.tokenizer.ptbtokenizer.PUNCTUATIONS``).
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)

# Words that keep a following period, in any case (the jar's list, found by probing it).
_ABBREVIATIONS = frozenset(
    [
        "adj",
        "adm",
        "adv",
        "al",
        "ala",
        "alex",
        "apr",
        "ariz",
        "assn",
        "atty",
        "attys",
        "aug",
        "ave",
        "bancorp",
        "bhd",
        "blvd",
        "brig",
        "bros",
        "calif",
        "capt",
        "cf",
        "cie",
        "cmdr",
        "co",
        "col",
        "colo",
        "comdr",
        "conn",
        "corp",
        "cos",
        "cpl",
        "ct",
        "dak",
        "dec",
        "dept",
        "det",
        "dr",
        "drs",
        "ens",
        "esq",
        "est",
        "etc",
        "ext",
        "feb",
        "fla",
        "fri",
        "ft",
        "ga",
        "gen",
        "gov",
        "govs",
        "hon",
        "inc",
        "ind",
        "intl",
        "jan",
        "jos",
        "jr",
        "jul",
        "jun",
        "kan",
        "ky",
        "lieut",
        "lt",
        "ltd",
        "maj",
        "mar",
        "md",
        "messrs",
        "mich",
        "minn",
        "mlle",
        "mme",
        "mo",
        "mon",
        "mont",
        "mr",
        "mrs",
        "ms",
        "mt",
        "neb",
        "nev",
        "nov",
        "oct",
        "okla",
        "penn",
        "pfc",
        "ph",
        "plc",
        "prof",
        "profs",
        "pvt",
        "rd",
        "rep",
        "reps",
        "rev",
        "rt",
        "sen",
        "sens",
        "sep",
        "sept",
        "seq",
        "sfc",
        "sgt",
        "spc",
        "sq",
        "sr",
        "st",
        "ste",
        "supt",
        "supts",
        "sys",
        "tel",
        "tenn",
        "thu",
        "thurs",
        "tue",
        "tues",
        "univ",
        "va",
        "vs",
        "vt",
        "wed",
        "wis",
        "wisc",
        "wm",
        "wyo",
    ]
)
# ... only when capitalized (lower-case they are words: "ill.", "mass.")
_CAPITALIZED_ABBREVIATIONS = frozenset(["ark", "az", "del", "ill", "la", "mass", "miss", "ore", "pa", "tex", "wash"])
# ... in lower or title case only
_MIXED_CASE_ABBREVIATIONS = frozenset(["mfg", "mtg", "pte", "pty", "ptys"])
# ... only before a number: "No. 5", "Fig. 3"
_NUMBER_ABBREVIATIONS = frozenset(["art", "ca", "fig", "figs", "no", "nos", "op", "pp", "prop"])
# A single letter's period ends the sentence before these capitalized words.
_SENTENCE_STARTS = frozenset(
    [
        "a",
        "about",
        "according",
        "additionally",
        "after",
        "an",
        "as",
        "at",
        "but",
        "earlier",
        "he",
        "her",
        "here",
        "however",
        "if",
        "in",
        "it",
        "last",
        "many",
        "more",
        "now",
        "once",
        "one",
        "other",
        "our",
        "she",
        "since",
        "so",
        "some",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "we",
        "what",
        "when",
        "while",
        "yet",
        "you",
    ]
)
# Words the jar splits after their third letter: cannot -> can not.
_SPLIT_WORDS = frozenset(["cannot", "gonna", "gotta", "wanna", "lemme", "gimme"])

_BRACKETS = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}
_ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": "''", "&apos;": "'"}
_CURRENCIES = {"£": "#", "€": "$", "¢": "cents"}
_QUOTES = {"“": "``", "”": "''", "‘": "`"}

# Token patterns; at each position the longest match wins (the first on a tie), as in the
# jar's JFlex lexer.
_PATTERNS = [
    ("space", r"(?:[\s\u200b\ufeff]|&nbsp;)+"),
    ("url", r"(?:https?|ftp)://[^\s<>\"]*[^\s<>\".,;:!?'()\[\]{}]"),
    ("email", r"[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    ("mention", r"@\w+"),
    ("hashtag", r"#[A-Za-z]+"),
    ("acronym", r"(?:[A-Za-z](?:\.[A-Za-z])+\.|[PpEe][hd]\.[Dd]\.)(?:-[^\W_]+)*"),
    ("word", r"[^\W_]+(?:(?:[-‑/]|_+)[^\W_]+)*"),
    ("dotted_word", r"[^\W\d_][^\W_]*(?:\.[^\W\d_][^\W_]*)+"),
    ("number", r"[-+]?(?:\d+(?:[.,:]\d+)*(?:-[^\W_]+)*|\.\d+)"),
    ("ampersand_word", r"[A-Z]+(?:&[A-Z]+)+"),
    ("name", r"(?:[OoDdLl]|[Qq]u|[Ll]e)['’][A-Za-z]{2,}|[Mm]a['’]am|[Cc]['’]mon"),
    ("y_apostrophe", r"[Yy]['’](?=[A-Za-z])"),
    ("clitic", r"['’](?:[sSmMdD]|[lL][lL]|[rR][eE]|[vV][eE])(?![^\W_])"),
    ("negation", r"[nN]['’][tT](?![^\W_])"),
    ("apostrophe_word", r"['’](?:[Nn]['’]|(?:[Ee][Mm]|[Cc]ause|[Tt]ill?|[Nn])(?![^\W_])|\d\d[sS]?(?=\s|$))"),
    ("apostrophe_t", r"['’][Tt](?=(?:is|was)(?![^\W_]))"),
    ("ellipsis", r"\.{2,}|…"),
    ("exclamations", r"[?!]+"),
    ("dashes", r"-{2,}|[–—]"),
    ("repeated_symbol", r"#+|\*+|_+"),
    ("latex_quote", r"``|''"),
    ("entity", r"&(?:amp|lt|gt|quot|apos|#\d+);"),
    ("symbol", r"."),
]
_MATCHERS = [(name, re.compile(pattern, re.DOTALL)) for name, pattern in _PATTERNS]
_NUMBER_AHEAD = re.compile(r"\s*\d")
_WORD_AHEAD = re.compile(r"\s+([A-Z][A-Za-z]*)")
_NEGATION_AHEAD = re.compile(r"['’][tT](?![^\W_])")


def ptb_tokens(line: str) -> list[str]:
    """The lower-cased tokens Stanford's ``PTBTokenizer -preserveLines -lowerCase`` makes of ``line``."""
    tokens: list[str] = []
    position = 0
    while position < len(line):
        name, match = max(((name, matcher.match(line, position)) for name, matcher in _MATCHERS), key=_match_length)
        text, position = match.group(), match.end()
        if name in ("word", "dotted_word"):
            position = _add_word(tokens, line, text, position)
        elif text == "..":
            tokens += [".", "."]
        elif name != "space":
            tokens.append(_token(name, text, line, match.start()))
    return [token.lower() for token in tokens]


def coco_tokenize(text: str) -> str:
    """``text`` as pycocoevalcap scores it: PTB tokens without :data:`PUNCTUATIONS`, joined by spaces.

    Line breaks are spaces (COCO joins each caption's lines).
    """
    return " ".join(token for token in ptb_tokens(" ".join(text.splitlines())) if token not in PUNCTUATIONS)


def _match_length(candidate: tuple[str, re.Match | None]) -> int:
    match = candidate[1]
    return -1 if match is None else match.end() - match.start()


def _token(name: str, text: str, line: str, start: int) -> str:
    if name in ("clitic", "negation", "apostrophe_t"):
        return text.replace("’", "'")
    if name == "ellipsis":
        return "..."
    if name == "dashes":
        return "--"
    if name == "entity":
        return _ENTITIES.get(text, text)
    if name == "symbol":
        return _symbol(text, line, start)
    return text


def _symbol(char: str, line: str, start: int) -> str:
    following = line[start + 1 : start + 2]
    if char == '"':  # opens before a word, closes elsewhere
        return "``" if following.isalnum() else "''"
    if char in ("'", "’"):  # opens between a space and a word
        opening = (start == 0 or line[start - 1].isspace()) and following.strip() != ""
        return "`" if opening else "'"
    return _BRACKETS.get(char) or _QUOTES.get(char) or _CURRENCIES.get(char) or char


def _add_word(tokens: list[str], line: str, word: str, end: int) -> int:
    """Append ``word``'s tokens (split clitics and words, a kept period); return where the next token starts."""
    rest = line[end:]
    if len(word) > 1 and word[-1] in "nN" and _NEGATION_AHEAD.match(rest):
        tokens += [word[:-1], word[-1] + "'" + rest[1]]  # do|n't, ca|n't
        return end + 2
    if word.lower() in _SPLIT_WORDS:
        tokens += [word[:3], word[3:]]
    elif rest.startswith(".") and _keeps_period(word, rest[1:]):
        tokens.append(word + ".")
        return end + 1
    else:
        tokens.append(word)
    return end


def _keeps_period(word: str, after: str) -> bool:
    lower = word.lower()
    if lower in _ABBREVIATIONS:
        return True
    if lower in _CAPITALIZED_ABBREVIATIONS:
        return word[0].isupper()
    if lower in _MIXED_CASE_ABBREVIATIONS:
        return not word.isupper()
    if lower in _NUMBER_ABBREVIATIONS:
        return bool(_NUMBER_AHEAD.match(after))
    if len(word) == 1 and word.isalpha():
        starts = _WORD_AHEAD.match(after)
        return not (starts and starts.group(1).lower() in _SENTENCE_STARTS)
    return after[:1] in (",", ";", ":")  # "fish.," keeps its period
