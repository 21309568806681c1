"""The English helpers the synthetic generators share: their exact output is part of every generated split."""

from lm_gym.tasks.english import upper_first, with_article


def test_with_article_goes_by_the_first_letter():
    assert with_article("apple") == "an apple" and with_article("umbrella") == "an umbrella"
    assert with_article("dog") == "a dog" and with_article("young architect") == "a young architect"
    # the letter, not the sound; upper-case vowels take "a"
    assert with_article("hour") == "a hour" and with_article("Apple") == "a Apple"


def test_upper_first_keeps_the_rest():
    assert upper_first("in the Park, a dog runs") == "In the Park, a dog runs"
    assert upper_first("{times} a day") == "{times} a day" and upper_first("x") == "X"
