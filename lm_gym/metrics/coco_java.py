"""The Java parts of pycocoevalcap, run robustly: Stanford's PTBTokenizer, METEOR 1.5 and SPICE.

The commands and protocols are pycocoevalcap's own (its jars, flags and line formats), so the
numbers are the same; what differs is the plumbing. pycocoevalcap's ``PTBTokenizer`` writes
its temporary file into the installed package and checks nothing; its ``Meteor`` leaves a
lock held when Java fails, which hangs the interpreter when the object is collected. Here:
a missing or failing Java raises :class:`JavaError` with Java's own message, temporary files
live in a temporary directory that is always removed, and Java prints nothing to the console.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import pycocoevalcap.meteor.meteor as _meteor_module
import pycocoevalcap.spice.spice as _spice_module
import pycocoevalcap.tokenizer.ptbtokenizer as _tokenizer_module

from lm_gym.core.errors import LMGymError

PTB_JAR = Path(_tokenizer_module.__file__).with_name(_tokenizer_module.STANFORD_CORENLP_3_4_1_JAR)
METEOR_DIRECTORY = Path(_meteor_module.__file__).parent
SPICE_DIRECTORY = Path(_spice_module.__file__).parent
#: The Stanford CoreNLP jars SPICE needs in ``spice/lib``; pycocoevalcap downloads them on first use.
SPICE_MODEL_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
_PTB_TIMEOUT_S = 600


class JavaError(LMGymError, RuntimeError):
    """Java is missing, or one of pycocoevalcap's Java programs failed."""


def java_available() -> bool:
    """Whether a ``java`` executable is on the ``PATH``."""
    return shutil.which("java") is not None


def ptb_tokenize(lines: Sequence[str]) -> list[list[str]]:
    """Each line's tokens by Stanford CoreNLP 3.4.1's ``PTBTokenizer -preserveLines -lowerCase``.

    The tokenizer runs as pycocoevalcap runs it.

    A line must not contain line breaks (the tokenizer keeps one output line per input line).
    Blank lines are not sent: they have no tokens.
    """
    sent = [i for i, line in enumerate(lines) if line.strip()]
    tokens: list[list[str]] = [[] for _ in lines]
    if not sent:
        return tokens
    with tempfile.TemporaryDirectory(prefix="lm_gym_ptb_") as directory:
        path = Path(directory) / "captions.txt"
        path.write_text("\n".join(lines[i] for i in sent) + "\n", encoding="utf-8")
        command = [
            _java(),
            "-cp",
            str(PTB_JAR),
            "edu.stanford.nlp.process.PTBTokenizer",
            "-preserveLines",
            "-lowerCase",
            "-encoding",
            "utf-8",
            str(path),
        ]
        result = _run(command, "Stanford's PTBTokenizer")
    output = result.stdout.decode("utf-8").split("\n")
    if output and output[-1] == "":
        output.pop()
    if len(output) != len(sent):
        raise JavaError(f"Stanford's PTBTokenizer returned {len(output)} lines for {len(sent)} captions")
    for i, line in zip(sent, output):
        tokens[i] = line.split()
    return tokens


def meteor(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, list[float]]:
    """METEOR 1.5 (pycocoevalcap's jar, ``-l en -norm``): the corpus score and each hypothesis's score.

    Texts are already tokenized. The jar takes about 20 seconds to load its paraphrase
    table, so one process serves every call of this Python process (closed at exit).
    """
    return _meteor_process().score(hypotheses, references)


def spice_missing_models() -> list[str]:
    """The Stanford CoreNLP jars SPICE needs that are not in pycocoevalcap's ``spice/lib``."""
    return [name for name in SPICE_MODEL_JARS if not (SPICE_DIRECTORY / "lib" / name).is_file()]


def spice(gts: dict, res: dict) -> float:
    """pycocoevalcap's ``Spice().compute_score(gts, res)`` corpus score; its models must be installed."""
    if spice_missing_models():
        raise JavaError(f"SPICE needs {', '.join(spice_missing_models())} in {SPICE_DIRECTORY / 'lib'}")
    _java()
    try:
        score, _ = _spice_module.Spice().compute_score(gts, res)
    except (OSError, subprocess.CalledProcessError) as error:
        raise JavaError(f"SPICE (java) failed: {error}") from error
    return float(score)


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise JavaError(
            "the official COCO pipeline needs Java (a `java` on the PATH, e.g. Debian's default-jre-headless); "
            "pipeline='python' needs none"
        )
    return java


def _run(command: list[str], name: str) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(command, capture_output=True, timeout=_PTB_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise JavaError(f"{name} (java) could not run: {error}") from error
    if result.returncode != 0:
        raise JavaError(f"{name} (java) failed with exit status {result.returncode}: {_tail(result.stderr)}")
    return result


def _tail(stderr: bytes, lines: int = 5) -> str:
    text = stderr.decode("utf-8", errors="replace").strip()
    return " | ".join(text.splitlines()[-lines:]) or "(no message)"


class _MeteorProcess:
    """pycocoevalcap's METEOR 1.5 command and line protocol, with Java's errors reported."""

    def __init__(self):
        command = [_java(), "-jar", "-Xmx2G", _meteor_module.METEOR_JAR, "-", "-", "-stdio", "-l", "en", "-norm"]
        # a file, not a pipe: a pipe nobody reads can fill and block Java; closed by close()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                command, cwd=METEOR_DIRECTORY, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
            )
        except OSError as error:
            self._stderr.close()
            raise JavaError(f"METEOR 1.5 (java) could not start: {error}") from error
        self._lock = threading.Lock()

    def score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, list[float]]:
        with self._lock:
            # SCORE ||| reference 1 ||| ... ||| hypothesis -> the hypothesis's statistics
            statistics = [
                self._ask(" ||| ".join(("SCORE", *(_field(r) for r in refs), _field(h))))
                for h, refs in zip(hypotheses, references)
            ]
            # EVAL ||| statistics ... -> one score per hypothesis, then the corpus score
            self._send(" ||| ".join(("EVAL", *statistics)))
            scores = [float(self._read()) for _ in statistics]
            return float(self._read()), scores

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._stderr.close()

    def _ask(self, line: str) -> str:
        self._send(line)
        return self._read()

    def _send(self, line: str) -> None:
        try:
            self._process.stdin.write(line.encode("utf-8") + b"\n")
            self._process.stdin.flush()
        except OSError as error:
            raise self._failure() from error

    def _read(self) -> str:
        line = self._process.stdout.readline()
        if not line:
            raise self._failure()
        return line.decode("utf-8").strip()

    def _failure(self) -> JavaError:
        _reset_meteor_process()
        self._process.wait()
        self._stderr.seek(0)
        return JavaError(
            f"METEOR 1.5 (java) stopped with exit status {self._process.returncode}: {_tail(self._stderr.read())}"
        )


def _field(text: str) -> str:
    # the protocol's separator and line breaks must not occur in a text (pycocoevalcap cleans hypotheses so)
    return " ".join(text.replace("|||", "").split())


_meteor_lock = threading.Lock()
_meteor_instance: _MeteorProcess | None = None


def _meteor_process() -> _MeteorProcess:
    global _meteor_instance
    with _meteor_lock:
        if _meteor_instance is None:
            _meteor_instance = _MeteorProcess()
            atexit.register(_meteor_instance.close)
        return _meteor_instance


def _reset_meteor_process() -> None:
    """Forget a failed METEOR process, so that the next call starts a new one."""
    global _meteor_instance
    with _meteor_lock:
        _meteor_instance = None
