"""The toolkit's sampling uses no deprecated transformers API: a sampling run (causal and seq2seq,
the bare trunk ILQL reads hidden states from, a PPO iteration) emits no transformers deprecation.

transformers deprecates in two ways: ``warnings.warn(..., FutureWarning)`` (a renamed argument,
e.g. ``past_key_values`` -> ``cache`` of a model's ``forward``, removed in 5.40) and
``logger.warning_once`` on its ``transformers`` logger (e.g. reading ``output.past_key_values``).
Both are caught: the warnings raise, the log records are collected.
"""

import contextlib
import logging
import warnings
from pathlib import Path

import pytest
import torch
import transformers
from conftest import load_baseline
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model, T5Config, T5ForConditionalGeneration

from lm_toolkit import sampling, tasks, tokens

EOS, PAD = 49, 0
TRANSFORMERS_DIR = Path(transformers.__file__).resolve().parent
DEPRECATION_WORDS = ("deprecat", "will be removed", "no longer supported")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def no_transformers_deprecations():
    """Fails on any deprecation transformers emits in the block: every ``FutureWarning`` and transformers'
    ``DeprecationWarning`` s raise, and a deprecation logged by transformers fails the check at the end."""
    library_logger = logging.getLogger("transformers")
    records, level = _Records(), library_logger.level
    library_logger.addHandler(records)
    library_logger.setLevel(logging.WARNING)  # whatever TRANSFORMERS_VERBOSITY says
    clear_once = getattr(logging.Logger.warning_once, "cache_clear", None)  # warning_once logs a message once
    if clear_once is not None:
        clear_once()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("error", FutureWarning)
            for category in (DeprecationWarning, PendingDeprecationWarning):
                warnings.filterwarnings("error", category=category, module="transformers")
            yield
    finally:
        library_logger.removeHandler(records)
        library_logger.setLevel(level)
    from_transformers = [
        f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
        for w in caught
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
        and Path(w.filename).resolve().is_relative_to(TRANSFORMERS_DIR)
    ]
    assert not from_transformers, from_transformers
    logged = [message for message in records.messages if any(word in message.lower() for word in DEPRECATION_WORDS)]
    assert not logged, logged


def tiny_causal(model_class=GPT2LMHeadModel):
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=50, n_layer=2, n_embd=32, n_head=4, n_positions=64, bos_token_id=EOS, eos_token_id=EOS,
        pad_token_id=PAD,
    )  # fmt: skip
    return model_class(config).eval()


def tiny_seq2seq():
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=50, d_model=32, d_ff=64, d_kv=8, num_layers=1, num_decoder_layers=1, num_heads=4,
        eos_token_id=EOS, pad_token_id=PAD, decoder_start_token_id=PAD,
    )  # fmt: skip
    return T5ForConditionalGeneration(config).eval()


class HiddenHook:
    """A logits hook that reads the policy's hidden states (as ILQL's does) and changes nothing."""

    needs_hidden = True

    def start(self, queries):
        pass

    def __call__(self, position, logits, hidden):
        assert hidden is not None
        return logits

    def advance(self, tokens_):
        pass

    def rows(self, lengths):
        return None


@pytest.mark.parametrize("architecture", ["causal", "seq2seq"])
def test_sampling_and_rescoring_use_no_deprecated_transformers_api(architecture):
    model = tiny_causal() if architecture == "causal" else tiny_seq2seq()
    value_head = torch.nn.Linear(32, 1)
    queries = [[5, 6, 7, 8], [5, 6, 7, 8], [9, 10], [11, 12, 13]]  # a shared prompt: the cache's rows are selected
    lengths = tasks.Lengths(max_prompt_length=8, max_new_tokens=6, min_new_tokens=2)
    torch.manual_seed(3)
    with no_transformers_deprecations():
        samples = sampling.sample(model, queries, lengths, eos_id=EOS, pad_id=PAD, value_head=value_head)
        greedy = sampling.sample(model, queries, lengths, eos_id=EOS, pad_id=PAD, greedy=True, hook=HiddenHook())
        response_ids, response_mask = tokens.pad(samples.responses, PAD, "right")
        scores = sampling.response_log_probs(
            model, queries, response_ids, response_mask, pad_id=PAD, eos_id=EOS, temperature=1.0,
            min_new_tokens=lengths.min_new_tokens, value_head=value_head, entropy="statistic",
        )  # fmt: skip
    assert all(2 <= len(r) <= 6 for r in samples.responses + greedy.responses)
    for i, row in enumerate(samples.log_probs):  # the sampler and the teacher-forced pass agree
        torch.testing.assert_close(scores.log_probs[i, : len(row)], torch.tensor(row), atol=1e-5, rtol=0)


def test_a_bare_trunk_extended_with_its_cache_uses_no_deprecated_transformers_api():
    trunk = tiny_causal(GPT2Model)  # ILQL's value trunk: hidden states, no logits
    with no_transformers_deprecations(), torch.no_grad():
        prefix = sampling.Prefix(trunk, [[1, 2], [1, 2], [7]], PAD, with_hidden=True, growing=True)
        for token in range(3, 6):
            prefix.extend(torch.full((3, 1), token))
        _, hidden = sampling.Prefix(trunk, [[1, 2], [3]], PAD, with_hidden=True).extend(
            torch.tensor([[4, 5], [6, PAD]]), torch.tensor([[1, 1], [1, 0]])
        )
    assert prefix.logits is None and prefix.hidden.shape == (3, 32) and hidden.shape == (2, 2, 32)


@pytest.mark.parametrize(
    "model_config",
    [
        '{"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2}',
        '{"model_type": "t5", "d_model": 32, "d_ff": 64, "num_layers": 1, "num_decoder_layers": 1, "num_heads": 2, '
        '"d_kv": 16}',
    ],
    ids=["causal", "seq2seq"],
)
def test_a_ppo_iteration_uses_no_deprecated_transformers_api(model_config, tmp_path):
    ppo = load_baseline("ppo")
    args = ppo.Args(
        env_id="lm_gym/IMDB-v0", env_kwargs='{"source": "synthetic"}', model_config=model_config, num_envs=4,
        iterations=1, update_epochs=1, num_minibatches=1, eval_episodes=2, eval_batch_size=2, eval_every=0,
        out_dir=str(tmp_path),
    )  # fmt: skip
    with no_transformers_deprecations():
        result = ppo.main(args)
    assert result["seed"] == 1


def test_the_check_catches_a_deprecation_transformers_logs_once():
    logger = transformers.utils.logging.get_logger("transformers.models.gpt2.modeling_gpt2")
    for _ in range(2):  # the second time too: warning_once remembers messages across checks
        with pytest.raises(AssertionError, match="deprecated"):
            with no_transformers_deprecations():
                logger.warning_once("`past_key_values`/`cache_params` are deprecated. Use `cache` instead.")
