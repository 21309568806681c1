"""The standard workload of the speed benchmark, shared by every contender.

A GPT-2 of 4 layers, 4 heads and width 256, randomly initialised with seed 0 (dropout 0, so
every trainer computes the same function); the 4,000-token word-level tokenizer of the
synthetic prompts of ``lm_gym/Prompts-v0`` (3,997 words and three special tokens); prompts
of exactly 64 tokens; exactly 48 new tokens at temperature 1 (EOS and PAD never sampled);
the reward ``vowel_words``, a Python function of the completion text; a KL penalty against
the frozen starting model.

Per iteration every contender generates 64 completions: PPO from 64 prompts, GRPO/RLOO from
16 prompts x 4 samples. The update is one epoch over 4 minibatches of 16.
"""

from __future__ import annotations

from pathlib import Path

from lm_gym.core.tokenizer import word_tokenizer
from lm_gym.tasks.prompts import synthetic_prompts, vowel_words, word_list

SEQUENCES_PER_ITERATION = 64
PROMPT_TOKENS = 64
NEW_TOKENS = 48
MINIBATCHES = 4
GROUP_SIZE = 4  # GRPO/RLOO samples per prompt: 16 prompts x 4 = 64 completions per iteration
WARMUP_ITERATIONS = 2
KL_COEF = 0.05
LEARNING_RATE = 1e-5
NO_DROPOUT = {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
#: The standard (CPU) model, the GPT-2-small-sized one of the GPU comparison, and a tiny one for dry runs.
MODEL_CONFIGS = {
    "tiny": {"n_layer": 1, "n_head": 2, "n_embd": 32, "n_positions": 128, **NO_DROPOUT},
    "standard": {"n_layer": 4, "n_head": 4, "n_embd": 256, "n_positions": 128, **NO_DROPOUT},
    "gpt2-small": {"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 128, **NO_DROPOUT},
}
#: The reward, a Python function of the text: TRL's reward-function signature, as lm-gym's Prompts env calls it.
reward = vowel_words


def tokenizer():
    return word_tokenizer(word_list(), "perf-workload")


def build(directory: str | Path, size: str = "standard") -> Path:
    """The seed-0 model of ``size`` (``MODEL_CONFIGS``) and its tokenizer saved in ``directory/model``
    (``directory/model-<size>`` for other sizes), made once; returns that path."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if size not in MODEL_CONFIGS:
        raise ValueError(f"size must be one of {sorted(MODEL_CONFIGS)}, got {size!r}")
    model_dir = Path(directory) / ("model" if size == "standard" else f"model-{size}")
    if (model_dir / "config.json").is_file():
        return model_dir
    tok = tokenizer()
    config = GPT2Config(
        vocab_size=len(tok),
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **MODEL_CONFIGS[size],
    )
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    tmp = model_dir.with_name(model_dir.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(model_dir)
    return model_dir


def prompts(count: int, split: str = "train") -> list[str]:
    """``count`` prompts of exactly 64 tokens (the Prompts env's synthetic ones, repeated if needed)."""
    texts = synthetic_prompts(split, prompt_words=PROMPT_TOKENS)
    return [texts[i % len(texts)] for i in range(count)]
