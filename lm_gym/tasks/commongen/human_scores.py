"""COCO scores of CommonGen's human references against each other: how well a person scores.

``python -m lm_gym.tasks.commongen.human_scores <commongen.dev.jsonl>`` prints them on the
CommonGen paper's scale (pycocoevalcap's scores times 100, CIDEr times 10) for two protocols
over the release's ``scene`` sentences, read as written:

* ``leave-one-out``: every scene in turn is the prediction, the other scenes of its concept
  set are its references (CommonGen's dev split: 4,018 samples);
* ``commongen-human``: the CommonGen paper's human row (its ``human_performance.py``): per
  concept set the three shortest scenes, and every ordered pair of them, a scene paired
  with itself included, one as the prediction and the other as its only reference. The
  self-pairs score perfectly, which is why the paper calls the row an upper bound.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

from lm_gym.metrics.coco import SCORE_NAMES, coco_evaluate

PROTOCOLS = ("leave-one-out", "commongen-human")
_PAPER_SCALE = {"cider": 10}  # CommonGen prints CIDEr-D times 10, the other scores times 100


def read_scenes(path: str | Path) -> list[list[str]]:
    """Each concept set's ``scene`` sentences from an official CommonGen ``.jsonl`` file, unchanged."""
    with open(path, encoding="utf-8") as file:
        return [json.loads(line)["scene"] for line in file if line.strip()]


def leave_one_out(scene_sets: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Every scene as a prediction, with the other scenes of its set as references (sets of two or more scenes)."""
    predictions, references = [], []
    for scenes in scene_sets:
        if len(scenes) < 2:
            continue
        for i, scene in enumerate(scenes):
            predictions.append(scene)
            references.append(scenes[:i] + scenes[i + 1 :])
    return predictions, references


def commongen_human(scene_sets: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """The CommonGen paper's human-performance pairs: the three shortest scenes of each set, every ordered pair."""
    predictions, references = [], []
    for scenes in scene_sets:
        shortest = sorted(scenes, key=len)[:3]  # a stable sort, as the paper's script
        for reference in shortest:
            for prediction in shortest:
                predictions.append(prediction)
                references.append([reference])
    return predictions, references


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(
        prog="python -m lm_gym.tasks.commongen.human_scores", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("file", type=Path, help="an official CommonGen file with references, e.g. commongen.dev.jsonl")
    parser.add_argument(
        "--pipeline",
        choices=("auto", "java", "python"),
        default="auto",
        help="the COCO pipeline (lm_gym.metrics.coco); auto: java when Java is installed",
    )
    parser.add_argument("--protocol", choices=PROTOCOLS, nargs="+", default=list(PROTOCOLS))
    args = parser.parse_args(argv)
    scene_sets = read_scenes(args.file)
    results = {}
    for protocol in args.protocol:
        pairs = leave_one_out(scene_sets) if protocol == "leave-one-out" else commongen_human(scene_sets)
        with warnings.catch_warnings():  # a skipped score's reason is printed below
            warnings.simplefilter("ignore")
            evaluation = coco_evaluate(*pairs, pipeline=args.pipeline)
        results[protocol] = evaluation.scores
        shown = "  ".join(
            f"{name} {_PAPER_SCALE.get(name, 100) * evaluation.scores[name]:.2f}"
            for name in SCORE_NAMES
            if name in evaluation.scores
        )
        print(f"{protocol} ({len(pairs[0])} samples, {evaluation.pipeline} pipeline): {shown}")
        for name, reason in evaluation.skipped.items():
            print(f"  {name} not computed: {reason}")
    return results


if __name__ == "__main__":
    main()
