"""The VisDial v1.0 release (``source="local"``): the json files of visualdialog.org.

A file is ``{"version", "split", "data": {"questions": [str], "answers": [str], "dialogs":
[{"image_id", "caption", "dialog": [{"question": int, "answer": int, "answer_options": [int],
"gt_index": int}]}]}}``; the rounds index the question and answer pools. Train and val have
ten rounds per dialog; in test the last round has no answer and is left out here.

Questions get a "?" appended, as the ILQL code base did (the release has none). Texts are
mapped to printable ASCII on one line (``clean_line``: curly apostrophes become ``'``).

The ILQL code base reads VisDial v0.5's files instead (``data/vis_dialogue/raw/visdial_0.5/
visdial_0.5_<name>.json``): a json list of dialogs whose rounds hold the question and answer
texts themselves (``{"caption", "dialog": [{"question": str, "answer": str}]}``). Both formats
load.

``data_dir`` is the json file itself or a folder laid out as a release unpacks: the v1.0
folder (``visdial_1.0_<name>.json`` beside the dense annotations
``visdial_1.0_val_dense_annotations.json`` and ``visdial_1.0_train_dense_sample.json``, and the
image-feature ``.h5`` files), a folder of ILQL's (``visdial_0.5_<name>.json``), or ILQL's
``data/vis_dialogue`` folder (its ``raw/visdial_0.5/``). ``<name>`` is ``train``, ``val`` or
``test`` for the splits ``train``, ``validation`` and ``test``; a dialog file may carry a suffix
(``visdial_1.0_val_vispro.json``) when it is the only one of its split. A v1.0 file's own
``split`` field (``train``, ``val2018``, ``test2018``) must be the requested split.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.tasks.visdial.dialogue import Dialogue, HiddenImage, clean_answer, clean_caption, clean_question

#: The file-name part and the ``split`` field values of each split.
RELEASE_SPLITS = {
    "train": ("train", ("train",)),
    "validation": ("val", ("val", "val2018")),
    "test": ("test", ("test", "test2018")),
}


@dataclass(frozen=True)
class HumanDialog:
    """One dialog of the release: the image id, its caption and the people's rounds."""

    image_id: int
    caption: str
    rounds: Dialogue


def find_release_file(data_dir: str | Path, split: str) -> Path:
    """The dialog file of ``split`` in ``data_dir`` (or ``data_dir`` itself when it is a file)."""
    path = Path(data_dir)
    if path.is_file():
        return path
    name = RELEASE_SPLITS[split][0]
    # dialog files only: the dense annotations (visdial_1.0_val_dense_annotations.json) sit beside them
    dialog_file = re.compile(rf"visdial_(?:1\.0|0\.5)_{name}(?:_(?!dense)\w+)?\.json")
    for folder in (path, path / "raw" / "visdial_0.5"):  # a release folder; ILQL's data/vis_dialogue
        files = (
            sorted(file for file in folder.glob(f"visdial_*_{name}*.json") if dialog_file.fullmatch(file.name))
            if folder.is_dir()
            else []
        )
        exact = [file for file in files if file.stem.endswith(f"_{name}")]
        if len(exact or files) == 1:
            return (exact or files)[0]
        if files:
            raise DataUnavailableError(
                f"data_dir={str(path)!r} holds several dialog files for split {split!r} "
                f"({', '.join(f.name for f in files)}); pass the one to use as data_dir"
            )
    raise DataUnavailableError(
        f"data_dir={str(path)!r} must be a VisDial json file or a folder holding visdial_1.0_{name}.json "
        f"(the v1.0 release) or visdial_0.5_{name}.json (ILQL's data/vis_dialogue/raw/visdial_0.5) "
        f"for split {split!r}; found none"
    )


@functools.lru_cache(maxsize=4)
def load_dialogs(path: Path, split: str) -> tuple[HumanDialog, ...]:
    """The dialogs of the release file ``path`` (cached per process); checks its ``split`` field."""
    try:
        release = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(release, list):  # v0.5 (ILQL's files): the texts in the rounds, no pools, no split field
            dialogs, questions, answers = release, None, None
        else:
            file_split, dialogs = release["split"], release["data"]["dialogs"]
            questions, answers = release["data"]["questions"], release["data"]["answers"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DataUnavailableError(
            f"{path} is not a VisDial json file "
            f"(v1.0: data.questions, data.answers, data.dialogs; v0.5: a list of dialogs): {error!r}"
        ) from error
    if not isinstance(release, list) and file_split not in RELEASE_SPLITS[split][1]:
        raise ConfigurationError(
            f"split={split!r} but {path} holds the {file_split!r} split; pass the split it holds or another file"
        )
    loaded, number = [], 0
    try:
        for number, dialog in enumerate(dialogs):
            rounds = tuple(
                (
                    clean_question(_text(questions, r["question"]) + "?"),
                    clean_answer(_text(answers, r["answer"])),
                )
                for r in dialog["dialog"]
                if r.get("answer", -1) != -1  # the v1.0 test split's last round has no answer
            )
            loaded.append(HumanDialog(int(dialog.get("image_id", number)), clean_caption(dialog["caption"]), rounds))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        raise DataUnavailableError(f"{path}: dialog {number} does not follow the VisDial format: {error!r}") from error
    if not loaded:
        raise DataUnavailableError(f"{path} holds no dialogs")
    return tuple(loaded)


def _text(pool: list[str] | None, value: int | str) -> str:
    """A round's question or answer: an index into the pool (v1.0) or the text itself (v0.5)."""
    if pool is None:
        if not isinstance(value, str):
            raise TypeError(f"a v0.5 round holds texts, got {value!r:.40}")
        return value
    return pool[value]


def release_images(data_dir: str | Path, split: str) -> tuple[HiddenImage, ...]:
    """The dialogs of ``split`` as hidden images whose content is the :class:`HumanDialog`."""
    dialogs = load_dialogs(find_release_file(data_dir, split).resolve(), split)
    return tuple(HiddenImage(i, dialog.image_id, dialog.caption, dialog) for i, dialog in enumerate(dialogs))
