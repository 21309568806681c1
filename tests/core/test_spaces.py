"""lm-gym's Text space: its charset, how text is mapped into it, and batches in AsyncVectorEnv's shared memory."""

import copy
import string

import numpy as np
from anyascii import anyascii
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from lm_gym.core.spaces import SharedTexts, text_space, to_charset


def test_shared_memory_reads_the_current_strings():
    space = text_space(12)
    assert isinstance(space, spaces.Text) and space == spaces.Text(12, min_length=0, charset=space.characters)
    memory = create_shared_memory(space, n=3)
    texts = read_from_shared_memory(space, memory, n=3)  # read once, as AsyncVectorEnv does
    assert isinstance(texts, SharedTexts)
    for index, value in enumerate(("crane", "", "a b\tc\n~!")):
        write_to_shared_memory(space, index, value, memory)
    assert tuple(texts) == ("crane", "", "a b\tc\n~!") and texts[-1] == "a b\tc\n~!" and texts[:2] == ("crane", "")
    snapshot = copy.deepcopy(texts)  # what AsyncVectorEnv returns with copy=True
    write_to_shared_memory(space, 0, "x" * 12, memory)
    assert snapshot == ("crane", "", "a b\tc\n~!") and type(snapshot) is tuple
    assert texts[0] == "x" * 12 and len(texts) == 3


def test_to_charset_is_anyascii_then_printable_ascii_only():
    """``to_charset`` transliterates only the non-ASCII runs; the result is that of the whole text."""
    rng = np.random.default_rng(0)
    texts = ["Caf\u00e9 \u6771\u4eac\t\x00bell\x07 \U0001f600 e\u0301 \ud800 \u00a0end\r\n", "\u00ff" * 3, "plain", ""]
    texts += [
        "".join(map(chr, rng.choice([*range(0x250), *range(0x2000, 0x2100), 0x4E2D, 0x1F600], 40))) for _ in range(200)
    ]
    for text in texts:
        assert to_charset(text) == "".join(ch for ch in anyascii(text) if ch in string.printable)
