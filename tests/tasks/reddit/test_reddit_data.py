"""Reddit data sources: ILQL's comment-score CSVs (the shared sample, skipped when absent, and
files made here), Pushshift JSON lines and ``.zst`` dumps with parent resolution, the synthetic
generator, and the errors bad data and arguments get."""

import csv
import json
import sys

import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.rewards.toxicity import LexiconToxicityScorer
from lm_gym.tasks.reddit import data, synthetic
from lm_gym.tasks.reddit.comments import Comment
from lm_gym.tasks.reddit.pushshift import read_dumps

NO_DROPS = {"deleted": 0, "missing_parent": 0}


# ---- ILQL's comment-score CSVs --------------------------------------------------------------


def test_shared_ilql_csvs_exact_counts_and_splits(shared_data):
    folder = shared_data / "reddit"
    loaded = data.read_local(folder)
    # 564 + 59 = 623 rows, all kept; 36 reply to a [deleted]/[removed] parent, kept with that text as ILQL did
    assert loaded.dropped == NO_DROPS
    assert len(loaded.comments) == 623 and sum(c.score > 0 for c in loaded.comments) == 564
    assert sum(c.parent_text in ("[deleted]", "[removed]") for c in loaded.comments) == 36
    first = loaded.comments[0]  # comments_positive.csv comes first, as ILQL concatenates
    assert (first.id, first.parent_id, first.link_id, first.score) == ("c8du4n0", "t3_18dmb4", "t3_18dmb4", 2)
    assert first.parent_text == "Even ants won't eat aspartame!" and first.text.startswith(
        "Wikipedia would be a good start, I think."
    )
    assert any("&gt;" in c.text for c in loaded.comments)  # HTML entities kept, as ILQL
    assert all(text.isascii() for c in loaded.comments for text in (c.text, c.parent_text))
    splits = {split: data.load_comments("local", split, folder).comments for split in ("train", "validation", "test")}
    assert [len(comments) for comments in splits.values()] == [489, 63, 71]
    assert sorted(c.id for comments in splits.values() for c in comments) == sorted(c.id for c in loaded.comments)
    assert all(data.split_of(c.id) == split for split, comments in splits.items() for c in comments)


def write_csv(path, rows, fieldnames):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)


def test_csv_columns_are_read_by_name_and_unusable_rows_counted(tmp_path):
    fields = ["score", "parent_text", "text", "author", "link_id", "parent_id", "id"]  # any order, extra columns
    rows = [
        {
            "id": "a1",
            "parent_id": "t3_x",
            "link_id": "t3_x",
            "text": "caf\u00e9 \u2014 nice",
            "score": "4",
            "parent_text": "Post",
            "author": "u",
        },
        {
            "id": "a2",
            "parent_id": "t1_a1",
            "link_id": "t3_x",
            "text": "[removed]",
            "score": "-2",
            "parent_text": "cafe",
            "author": "u",
        },
        {
            "id": "a3",
            "parent_id": "t1_zz",
            "link_id": "t3_x",
            "text": "Reply",
            "score": "0",
            "parent_text": " [deleted] ",
            "author": "u",
        },
    ]
    write_csv(tmp_path / "comments_negative.csv", rows[1:], fields)
    write_csv(tmp_path / "comments_positive.csv", rows[:1], fields)
    loaded = data.read_local(tmp_path)
    assert loaded.comments == (
        Comment("a1", "t3_x", "t3_x", "cafe - nice", "Post", 4),
        Comment("a3", "t1_zz", "t3_x", "Reply", " [deleted] ", 0),
    )
    assert loaded.dropped == {"deleted": 1, "missing_parent": 0}
    assert data.read_local(tmp_path / "comments_positive.csv").comments == loaded.comments[:1]  # one file as data_dir

    (tmp_path / "bad").mkdir()
    write_csv(tmp_path / "bad" / "comments_positive.csv", [{**rows[0], "score": "many"}], fields)
    with pytest.raises(DataUnavailableError, match=r"comments_positive.csv:2: score must be an integer"):
        data.read_local(tmp_path / "bad")
    (tmp_path / "columns").mkdir()
    write_csv(tmp_path / "columns" / "comments_negative.csv", [{"body": "x", "score": 1}], ["body", "score"])
    with pytest.raises(DataUnavailableError, match="must have columns id,parent_id,link_id,text,score,parent_text"):
        data.read_local(tmp_path / "columns")


# ---- Pushshift dumps ------------------------------------------------------------------------

SUBMISSION = {"id": "s1", "title": "Ask: best pan?", "selftext": "I cook a lot.", "score": 10}
LINK_POST = {"id": "s2", "title": "A link post", "selftext": "[removed]"}
DUMP = [
    {"id": "c1", "body": "Cast iron.", "score": 12, "parent_id": "t3_s1", "link_id": "t3_s1", "author": "a"},
    {
        "id": "c2",
        "body": "Why cast iron?",
        "score": "3",
        "parent_id": "t1_c1",
        "link_id": "t3_s1",
    },  # a decimal string score
    {"id": "c3", "body": "[deleted]", "score": 1, "parent_id": "t1_c1", "link_id": "t3_s1"},
    {
        "id": "c4",
        "body": "Agreed with that.",
        "score": -4,
        "parent_id": "t1_c3",
        "link_id": "t3_s1",
    },  # parent deleted: kept
    {
        "id": "c5",
        "body": "Replying to a comment outside the dump.",
        "score": 0,
        "parent_id": "t1_zz9",
        "link_id": "t3_s1",
    },
    {"id": "c6", "body": "Top-level under a missing post.", "score": 2, "parent_id": "t3_s9", "link_id": "t3_s9"},
    {"id": "c7", "body": "  ", "score": 1, "parent_id": "t1_c1", "link_id": "t3_s1"},
    {"id": "c8", "body": "Nice link.", "score": 5, "parent_id": "t3_s2", "link_id": "t3_s2"},
    {"id": "c9", "body": "Its body is [removed]?", "score": 1, "parent_id": "t1_c10", "link_id": "t3_s1"},
    {"id": "c10", "body": "[removed]", "score": 1, "parent_id": "t1_c1", "link_id": "t3_s1"},
]
EXPECTED = (
    Comment("c1", "t3_s1", "t3_s1", "Cast iron.", "Ask: best pan?\n\nI cook a lot.", 12),
    Comment("c2", "t1_c1", "t3_s1", "Why cast iron?", "Cast iron.", 3),
    Comment("c4", "t1_c3", "t3_s1", "Agreed with that.", "[deleted]", -4),
    Comment("c8", "t3_s2", "t3_s2", "Nice link.", "A link post", 5),
    Comment("c9", "t1_c10", "t3_s1", "Its body is [removed]?", "[removed]", 1),
)
EXPECTED_DROPS = {"deleted": 3, "missing_parent": 2}


def write_lines(path, records):
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n\n")  # a trailing blank line is skipped


def test_pushshift_json_lines_resolve_parents_and_count_drops(tmp_path):
    write_lines(tmp_path / "RC_sample.jsonl", DUMP[:5])
    write_lines(tmp_path / "RC_sample2.ndjson", DUMP[5:])
    write_lines(tmp_path / "RS_sample.json", [SUBMISSION, LINK_POST])  # submissions, in a third file
    loaded = data.read_local(tmp_path)
    assert loaded.comments == EXPECTED and loaded.dropped == EXPECTED_DROPS
    # without the submissions, the top-level comments have no parent
    comments_only = read_dumps([tmp_path / "RC_sample.jsonl", tmp_path / "RC_sample2.ndjson"])
    assert comments_only.comments == (EXPECTED[1], EXPECTED[2], EXPECTED[4]) and comments_only.dropped == {
        **EXPECTED_DROPS,
        "missing_parent": 4,
    }


def test_pushshift_zst_reads_like_json_lines(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    lines = "".join(json.dumps(record) + "\n" for record in [SUBMISSION, LINK_POST, *DUMP]).encode()
    (tmp_path / "RC_sample.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(lines))
    loaded = data.read_local(tmp_path / "RC_sample.zst")
    assert loaded.comments == EXPECTED and loaded.dropped == EXPECTED_DROPS
    (tmp_path / "broken.zst").write_bytes(b"not zstandard data")
    with pytest.raises(DataUnavailableError, match="could not read .*broken.zst"):
        data.read_local(tmp_path / "broken.zst")


def test_zst_without_zstandard_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "RC.zst").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard now fails
    with pytest.raises(DataUnavailableError, match=r"lm-gym\[reddit\]"):
        read_dumps([tmp_path / "RC.zst"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"dump.jsonl:2: not a JSON object"),
        ("[1, 2]", r"dump.jsonl:2: expected a JSON object, got list"),
        (
            json.dumps({"id": "x", "body": "hi", "score": 1, "link_id": "t3_s"}),
            r"dump.jsonl:2: a comment needs .*missing \['parent_id'\]",
        ),
        (
            json.dumps({"id": "x", "body": "hi", "score": "lots", "parent_id": "t1_c1", "link_id": "t3_s"}),
            r"dump.jsonl:2: score must be an integer",
        ),
        (json.dumps({"kind": "t5", "name": "a subreddit"}), r"dump.jsonl:2: neither a comment"),
    ],
)
def test_pushshift_bad_lines_name_the_file_and_line(tmp_path, line, message):
    (tmp_path / "dump.jsonl").write_text(json.dumps(DUMP[0]) + "\n" + line + "\n")
    with pytest.raises(DataUnavailableError, match=message):
        read_dumps([tmp_path / "dump.jsonl"])


def test_source_arguments_are_checked(tmp_path):
    with pytest.raises(ConfigurationError, match=r"source must be one of \('local', 'synthetic'\), got str 'hub'"):
        data.load_comments("hub", "train")
    with pytest.raises(
        ConfigurationError, match="source='local' needs data_dir=.*comments_positive.csv.*source='synthetic'"
    ):
        data.load_comments("local", "train")
    with pytest.raises(ConfigurationError, match="split must be one of"):
        data.load_comments("synthetic", "dev")
    with pytest.raises(ConfigurationError, match="data_dir is only used with source='local'"):
        data.load_comments("synthetic", "train", tmp_path)
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(DataUnavailableError, match="holds no Reddit comments"):
        data.load_comments("local", "train", tmp_path)
    write_lines(tmp_path / "one.jsonl", DUMP[:2] + [SUBMISSION])
    split = data.split_of("c1")
    other = next(s for s in ("train", "validation", "test") if s not in {split, data.split_of("c2")})
    with pytest.raises(DataUnavailableError, match=f"the '{other}' split of source='local' holds no comments"):
        data.load_comments("local", other, tmp_path)


# ---- synthetic ------------------------------------------------------------------------------


def test_synthetic_threads_are_fixed_per_split_and_the_lexicon_labels_them_exactly():
    train = synthetic.generate_threads("train")
    assert train == synthetic.generate_threads("train") and len(train) == 3000
    assert synthetic.generate_threads("test", 5) != train[:5] and len(synthetic.generate_threads("validation")) == 300
    scorer = LexiconToxicityScorer(synthetic.UNSAFE_TERMS, synthetic.SENSITIVE_TERMS)
    assert scorer.levels([t.reply for t in train]).tolist() == [t.toxicity for t in train]
    assert all(t.reply.isascii() and t.parent.isascii() for t in train)
    shares = [sum(t.toxicity == level for t in train) / len(train) for level in (0, 1, 2)]
    assert 0.6 < shares[0] < 0.75 and 0.12 < shares[1] < 0.19 and 0.13 < shares[2] < 0.2
    hostile = [t for t in train if scorer.level(t.parent) == 2]
    calm = [t for t in train if scorer.level(t.parent) == 0]
    assert sum(t.toxicity == 2 for t in hostile) / len(hostile) > 0.35
    assert sum(t.toxicity == 2 for t in calm) / len(calm) < 0.15
    # the score's sign follows the kind of reply: low-effort replies are mostly not upvoted, and repeat
    low_effort = [t for t in train if t.reply in synthetic.LOW_EFFORT]
    assert (
        len({t.reply for t in low_effort}) < len(low_effort) / 20
        and sum(t.score > 0 for t in low_effort) / len(low_effort) < 0.25
    )
    comments = data.load_comments("synthetic", "train").comments
    assert comments[7] == Comment(
        "synthetic-train-7",
        "t1_synthetic-train-7-parent",
        "t3_synthetic-train-7",
        train[7].reply,
        train[7].parent,
        train[7].score,
        train[7].toxicity,
    )
