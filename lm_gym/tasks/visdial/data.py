"""The VisDial v1.0 release (``source="local"``): the json files of visualdialog.org.

A file is ``{"version", "split", "data": {"questions": [str], "answers": [str], "dialogs":
[{"image_id", "caption", "dialog": [{"question": int, "answer": int, "answer_options": [int],
"gt_index": int}]}]}}``; the rounds index the question and answer pools. Train and val have
ten rounds per dialog; in test the last round has no answer and is left out here.

Questions get a "?" appended, as the ILQL code base did (the release has none). Texts are
mapped to printable ASCII on one line (``clean_line``: curly apostrophes become ``'``).

``data_dir`` is the json file itself or a folder holding ``visdial_1.0_<name>*.json`` with
``<name>`` ``train``, ``val`` or ``test`` for the splits ``train``, ``validation`` and ``test``.
A file's own ``split`` field (``train``, ``val2018``, ``test2018``) must be the requested split.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.tasks.visdial.dialogue import MAX_ANSWER_LENGTH, MAX_CAPTION_LENGTH, MAX_QUESTION_LENGTH, Dialogue, HiddenImage, clean_line

#: The file-name part and the ``split`` field values of each split.
RELEASE_SPLITS = {"train": ("train", ("train",)), "validation": ("val", ("val", "val2018")), "test": ("test", ("test", "test2018"))}


@dataclass(frozen=True)
class HumanDialog:
    """One dialog of the release: the image id, its caption and the people's rounds."""

    image_id: int
    caption: str
    rounds: Dialogue


def find_release_file(data_dir: str | Path, split: str) -> Path:
    """The json file of ``split`` in ``data_dir`` (or ``data_dir`` itself when it is a file)."""
    path = Path(data_dir)
    if path.is_file():
        return path
    name = RELEASE_SPLITS[split][0]
    matches = sorted(path.glob(f"visdial_1.0_{name}*.json")) if path.is_dir() else []
    if len(matches) != 1:
        found = "none" if not matches else ", ".join(m.name for m in matches)
        raise DataUnavailableError(
            f"data_dir={str(path)!r} must be a VisDial v1.0 json file or a folder with exactly one "
            f"visdial_1.0_{name}*.json for split {split!r}; found {found}"
        )
    return matches[0]


@functools.lru_cache(maxsize=4)
def load_dialogs(path: Path, split: str) -> tuple[HumanDialog, ...]:
    """The dialogs of the release file ``path`` (cached per process); checks its ``split`` field."""
    try:
        release = json.loads(path.read_text(encoding="utf-8"))
        file_split = release["split"]
        pools, dialogs = release["data"], release["data"]["dialogs"]
        questions, answers = pools["questions"], pools["answers"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DataUnavailableError(
            f"{path} is not a VisDial v1.0 json file (data.questions, data.answers, data.dialogs): {error!r}"
        ) from error
    if file_split not in RELEASE_SPLITS[split][1]:
        raise ConfigurationError(f"split={split!r} but {path} holds the {file_split!r} split; pass the split it holds or another file")
    loaded = []
    try:
        for number, dialog in enumerate(dialogs):
            rounds = tuple(
                (clean_line(questions[r["question"]] + "?", MAX_QUESTION_LENGTH), clean_line(answers[r["answer"]], MAX_ANSWER_LENGTH))
                for r in dialog["dialog"]
                if r.get("answer", -1) >= 0  # the test split's last round has no answer
            )
            loaded.append(HumanDialog(int(dialog["image_id"]), clean_line(dialog["caption"], MAX_CAPTION_LENGTH), rounds))
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise DataUnavailableError(f"{path}: dialog {number} does not follow the VisDial v1.0 format: {error!r}") from error
    if not loaded:
        raise DataUnavailableError(f"{path} holds no dialogs")
    return tuple(loaded)


def release_images(data_dir: str | Path, split: str) -> tuple[HiddenImage, ...]:
    """The dialogs of ``split`` as hidden images whose content is the :class:`HumanDialog`."""
    dialogs = load_dialogs(find_release_file(data_dir, split).resolve(), split)
    return tuple(HiddenImage(i, dialog.image_id, dialog.caption, dialog) for i, dialog in enumerate(dialogs))
