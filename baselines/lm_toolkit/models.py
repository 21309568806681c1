"""The policy: a hub model, a local checkpoint (an sft.py run, a LoRA run's adapters on their base), or a small
random one (its tokenizer: ``lm_gym.core.task_setup.policy_tokenizer``)."""

from __future__ import annotations

import copy
import functools
import inspect
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM


def fuse_activation(config) -> None:
    """GPT-2's ``gelu_new`` computed by PyTorch's fused tanh GELU: the same function, one kernel
    instead of eight (about a quarter off a forward and backward pass of a small GPT-2 on CPU)."""
    if getattr(config, "activation_function", None) == "gelu_new":
        config.activation_function = "gelu_pytorch_tanh"


ADAPTER_CONFIG = "adapter_config.json"  #: what marks a folder of LoRA adapters (peft's format)
BASE_MODEL = "base_model"  #: a LoRA checkpoint's folder of the base weights its adapters apply to


def is_adapter_checkpoint(source: str | Path | None) -> bool:
    """Whether ``source`` is a local folder of LoRA adapters (a LoRA run's checkpoint, or any peft adapter)."""
    return source is not None and (Path(source) / ADAPTER_CONFIG).is_file()


def load_policy(
    source: str | None,
    model_config: dict[str, Any],
    tokenizer,
    seed: int,
    causal_only: str | None = None,
    *,
    merge_adapters: bool = True,
    trainable_adapters: bool = False,
    dtype: torch.dtype = torch.float32,
):
    """The policy: ``from_pretrained(source)``, or (``source=None``) a random model of ``model_config``
    with the tokenizer's vocabulary and special tokens, initialised from ``seed`` whatever building
    the env drew from torch's RNG before. An encoder-decoder config gives a seq2seq policy, unless
    ``causal_only`` (the script's name) refuses it. Its weights in ``dtype``.

    A folder of LoRA adapters (``adapter_config.json``) loads on its base (the checkpoint's ``base_model/``,
    else the adapters' ``base_model_name_or_path``) with peft: merged into it (``merge_adapters``: a plain
    transformers model), or as a ``PeftModel`` (``trainable_adapters``: to go on training them)."""
    if is_adapter_checkpoint(source):
        return load_adapters(source, tokenizer, seed, causal_only, merge_adapters, trainable_adapters, dtype)
    if source is not None:
        try:
            config = AutoConfig.from_pretrained(source)
        except OSError as error:
            raise ValueError(
                f"could not load model {source!r} ({error}). Offline, pass a local directory or leave "
                "--model-name unset to train a small model from --model-config."
            ) from error
    else:
        special = {
            "vocab_size": len(tokenizer),
            "bos_token_id": tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        }
        try:
            config = AutoConfig.for_model(**{**model_config, **special})
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"--model-config {model_config!r} is not a valid transformers config: {error}") from error
        if config.is_encoder_decoder:  # T5's convention: the decoder starts from the pad token
            config.decoder_start_token_id = model_config.get("decoder_start_token_id", tokenizer.pad_token_id)
    if config.is_encoder_decoder and causal_only:
        raise ValueError(
            f"{causal_only} trains causal language models, and {source or '--model-config'} is an encoder-decoder model"
        )
    fuse_activation(config)
    model_class = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    if source is None:
        torch.manual_seed(seed)
        return model_class.from_config(config).to(dtype)
    model = model_class.from_pretrained(source, config=config, dtype=dtype)
    if model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    return model


def load_adapters(
    source: str, tokenizer, seed: int, causal_only: str | None, merge: bool, trainable: bool, dtype: torch.dtype
):
    """:func:`load_policy` of a folder of LoRA adapters."""
    from peft import PeftConfig, PeftModel  # peft takes seconds to import: only where adapters are

    base = Path(source) / BASE_MODEL
    base_source = str(base) if base.is_dir() else PeftConfig.from_pretrained(source).base_model_name_or_path
    if base_source is None:
        raise ValueError(f"the LoRA adapters in {source} have no {BASE_MODEL}/ folder and name no base model")
    model = load_policy(base_source, {}, tokenizer, seed, causal_only, dtype=dtype)
    model = PeftModel.from_pretrained(model, source, is_trainable=trainable and not merge)
    return model.merge_and_unload() if merge else model


def frozen_copy(model, source=None):
    """A frozen copy of ``model`` in eval mode (the KL reference, NLPO's mask model): loaded from
    ``source`` (a checkpoint's saved copy) or copied from ``model``'s current weights."""
    if source is None:
        frozen = copy.deepcopy(model)
    else:
        frozen = type(model).from_pretrained(source, dtype=torch.float32).to(model.device)
    return frozen.eval().requires_grad_(False)


def check_positions(model, max_prompt_length: int, max_new_tokens: int) -> None:
    """Absolute-position models must fit prompt + utterance (a seq2seq decoder, the utterance)."""
    limit = getattr(model.config, "max_position_embeddings", None)
    needed = max_prompt_length + (0 if model.config.is_encoder_decoder else max_new_tokens)
    if isinstance(limit, int) and 0 < limit < needed:
        raise ValueError(
            f"the model has {limit} positions but max_prompt_length + max_new_tokens = {needed}; "
            "pass a larger position limit in --model-config or smaller --max-prompt-length/--max-new-tokens"
        )


@functools.cache
def takes_logits_to_keep(model_class) -> bool:
    """Whether the causal LM can compute only its last logits (most transformers models can)."""
    return "logits_to_keep" in inspect.signature(model_class.forward).parameters
