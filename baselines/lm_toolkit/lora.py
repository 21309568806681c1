"""Training at the users' model sizes: LoRA adapters (peft), the reference as the adapters switched off,
gradient checkpointing, and the checkpoints of a LoRA run.

* :func:`policy_to_train`: the policy a baseline trains (``--lora-r`` > 0: a peft ``PeftModel`` whose
  adapters alone are trainable; resuming, its adapters as saved), with ``--gradient-checkpointing``.
* :func:`reference_of`: the KL reference. A LoRA policy's is :class:`AdapterOff`, its own weights with
  the adapters disabled (peft's ``disable_adapter``): no second copy of the model. Otherwise a frozen copy.
* :func:`snapshot_of`: a frozen snapshot of the policy that is refreshed now and then (NLPO's mask model).
  A LoRA policy's is :class:`AdapterSnapshot`, a second adapter on the same weights.
* :func:`weights_of`: the transformers model to run a forward pass with, under the weights a policy, a
  reference or a snapshot stands for (the sampler reads ``forward``'s signature, which a ``PeftModel``
  hides).
* :func:`checkpointed_teacher_forced`: the update's teacher-forced pass under gradient checkpointing.
* :func:`save_model`: a LoRA checkpoint is peft's adapter folder (``adapter_config.json``, the
  adapters, a snapshot's in a sub-folder of its name) with the base weights in ``base_model/``, which
  :func:`lm_toolkit.models.load_policy` reads back merged or not.

peft is imported only where adapters are (it takes seconds to import).
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

from lm_toolkit.models import BASE_MODEL, frozen_copy, is_adapter_checkpoint, load_policy, takes_logits_to_keep
from lm_toolkit.tokens import pad

#: the layer types peft's LoRA puts adapters on (a target module must be one of them)
ADAPTABLE = (nn.Linear, nn.Embedding, nn.Conv1d, nn.Conv2d, Conv1D)
DEFAULT_ADAPTER = "default"  # peft's name of a model's first adapter


def is_peft(model: Any) -> bool:
    """Whether ``model`` is a peft ``PeftModel`` (peft, not yet imported, has made none)."""
    peft = sys.modules.get("peft")
    return peft is not None and isinstance(model, peft.PeftModel)


def compute_model(model: Any):
    """The transformers model that computes ``model``'s forward pass (a ``PeftModel``'s, LoRA layers inside)."""
    return model.get_base_model() if is_peft(model) else model


def target_modules(model, names: tuple[str, ...]) -> str | list[str]:
    """``--lora-target-modules`` for ``model``: its names, checked against the model's adaptable layers (a module
    matches a name that is its own or the end of it after a dot, as peft matches); none: peft's default for the
    architecture, else every linear layer (``all-linear``)."""
    if not names:
        from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as DEFAULTS

        return DEFAULTS.get(model.config.model_type, "all-linear")
    if names == ("all-linear",):
        return "all-linear"
    adaptable = [name for name, module in model.named_modules() if isinstance(module, ADAPTABLE)]
    missing = [name for name in names if not any(a == name or a.endswith("." + name) for a in adaptable)]
    if missing:
        raise ValueError(
            f"--lora-target-modules: the {model.config.model_type} model has no layer named {', '.join(missing)} "
            f"that LoRA can adapt; its layers: {', '.join(sorted({a.rsplit('.', 1)[-1] for a in adaptable}))} "
            "(or all-linear)"
        )
    return list(names)


def add_adapters(model, args):
    """``model`` with fresh LoRA adapters of ``args``' flags (peft's ``LoraConfig``, ``get_peft_model``): only
    they are trainable. Their A matrices are drawn from torch's RNG, their B matrices are zero: the model
    computes what it did."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha if args.lora_alpha is not None else 2 * args.lora_r,
        lora_dropout=args.lora_dropout or 0.0,
        target_modules=target_modules(model, tuple(args.lora_target_modules)),
        fan_in_fan_out=any(isinstance(module, Conv1D) for module in model.modules()),  # GPT-2's weights: (in, out)
        task_type=TaskType.SEQ_2_SEQ_LM if model.config.is_encoder_decoder else TaskType.CAUSAL_LM,
    )
    return get_peft_model(model, config)


def policy_to_train(
    args, source: str | None, model_config: dict, tokenizer, device: torch.device, resuming: bool, causal_only=None
):
    """The policy a run trains, on ``device``: ``load_policy(source)`` (a LoRA checkpoint merged into its base,
    e.g. an sft.py LoRA run for ``--init-from``), with fresh adapters when ``--lora-r`` > 0; resuming a LoRA
    run, its base and its adapters as saved. With LoRA and ``--bf16`` on CUDA the frozen base weights are
    bfloat16 (the adapters stay float32); otherwise every weight is float32. ``--gradient-checkpointing`` on."""
    lora = args.lora_r > 0
    if resuming and lora != is_adapter_checkpoint(source):
        saved = "LoRA adapters" if is_adapter_checkpoint(source) else "a full model"
        raise ValueError(f"--resume: {source} holds {saved}; resume with the --lora-r the run was started with")
    dtype = torch.bfloat16 if lora and args.bf16 and device.type == "cuda" else torch.float32
    load = {"causal_only": causal_only, "dtype": dtype}
    if resuming and lora:
        load |= {"merge_adapters": False, "trainable_adapters": True}
        model = load_policy(source, model_config, tokenizer, args.seed, **load)
        saved_r = model.peft_config[DEFAULT_ADAPTER].r
        if saved_r != args.lora_r:
            raise ValueError(f"--lora-r {args.lora_r}: the run in {source} trains adapters of rank {saved_r}")
    else:
        model = load_policy(source, model_config, tokenizer, args.seed, **load)
        if lora:
            model = add_adapters(model, args)
    model.to(device)
    if args.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model


def enable_gradient_checkpointing(model) -> None:
    """transformers' gradient (activation) checkpointing, non-reentrant, on ``model``'s layers; a LoRA model's
    embeddings' output requires grad too, as peft needs for checkpoints whose frozen inputs carry no gradient."""
    transformer = compute_model(model)
    if not transformer.supports_gradient_checkpointing:
        raise ValueError(f"--gradient-checkpointing: {type(transformer).__name__} does not support it")
    transformer.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    if is_peft(model):
        transformer.enable_input_require_grads()


def checkpointed_teacher_forced(
    model,
    queries: Sequence[Sequence[int]],
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    pad_id: int,
    with_hidden: bool = False,
):
    """:func:`lm_toolkit.sampling.teacher_forced` in one pass over each query and its response, without a KV
    cache: gradient checkpointing recomputes a layer in the backward pass, and a cache would be written twice.
    The layers checkpoint only in training mode; the policy stays in eval mode (dropout off), its checkpointed
    layers are put in training mode for this pass alone."""
    device, steps = model.device, responses.shape[1]
    checkpointed = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True]
    modes = [m.training for m in checkpointed]
    for module in checkpointed:
        module.training = True
    try:
        if model.config.is_encoder_decoder:
            ids, mask = pad(list(queries), pad_id, "right", device)
            start = torch.full((len(queries), 1), model.config.decoder_start_token_id, device=device)
            decoder_ids = torch.cat([start, responses[:, :-1]], 1)
            out = model(
                input_ids=ids,
                attention_mask=mask,
                decoder_input_ids=decoder_ids,
                use_cache=False,
                output_hidden_states=with_hidden,
            )
            hidden = out.decoder_hidden_states[-1] if with_hidden else None
            return out.logits, hidden
        ids, mask = pad(list(queries), pad_id, "left", device)
        ids, mask = torch.cat([ids, responses[:, :-1]], 1), torch.cat([mask, response_mask[:, :-1]], 1)
        keep = {"logits_to_keep": steps} if takes_logits_to_keep(type(model)) else {}
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=False,
            output_hidden_states=with_hidden,
            **keep,
        )
        return out.logits[:, -steps:], out.hidden_states[-1][:, -steps:] if with_hidden else None
    finally:
        for module, mode in zip(checkpointed, modes, strict=True):
            module.training = mode


def trainable_parameters(*modules) -> list[torch.Tensor]:
    """The parameters of ``modules`` that train (a LoRA policy's: its adapters')."""
    return [p for module in modules for p in module.parameters() if p.requires_grad]


class SharedWeights:
    """A model that is a view of a LoRA policy's own weights: nothing of its own to save."""

    def __init__(self, policy):
        self.policy = policy

    def weights(self) -> contextlib.AbstractContextManager:
        raise NotImplementedError


class AdapterOff(SharedWeights):
    """The KL reference of a LoRA policy: its base weights, the adapters disabled while it runs."""

    def weights(self) -> contextlib.AbstractContextManager:
        return self.policy.disable_adapter()


class AdapterSnapshot(SharedWeights):
    """A frozen snapshot of a LoRA policy (NLPO's mask model): a second adapter ``name`` on the same weights,
    a copy of the policy's adapter, active only while the snapshot runs. ``saved``: a checkpoint's copy of it."""

    def __init__(self, policy, name: str, saved: Path | None = None):
        super().__init__(policy)
        self.name = name
        with torch.random.fork_rng():  # a new adapter's initial draws would shift the run's RNG (a resumed run's)
            if saved is not None:
                policy.load_adapter(str(saved), name, is_trainable=False)
            else:
                policy.add_adapter(name, copy.deepcopy(policy.peft_config[DEFAULT_ADAPTER]))
                self.refresh()
        policy.set_adapter(DEFAULT_ADAPTER)  # the policy's adapter trains; the snapshot's is frozen

    def refresh(self) -> None:
        """The snapshot becomes the policy's adapter as it is now."""
        from peft import get_peft_model_state_dict, set_peft_model_state_dict

        state = get_peft_model_state_dict(self.policy, adapter_name=DEFAULT_ADAPTER)
        with torch.no_grad():
            set_peft_model_state_dict(self.policy, state, adapter_name=self.name)

    @contextlib.contextmanager
    def weights(self) -> Iterator[None]:
        self.policy.set_adapter(self.name, inference_mode=True)
        try:
            yield
        finally:
            self.policy.set_adapter(DEFAULT_ADAPTER)


@contextlib.contextmanager
def weights_of(model) -> Iterator[Any]:
    """The transformers model to run ``model`` (a policy, a :class:`SharedWeights` view of one) with, under its
    weights while the context lasts."""
    if isinstance(model, SharedWeights):
        with model.weights():
            yield compute_model(model.policy)
    else:
        yield compute_model(model)


def reference_of(policy, saved: Path | None = None):
    """The KL reference of ``policy``: :class:`AdapterOff` for a LoRA policy, else a frozen copy (``saved``: a
    checkpoint's copy)."""
    return AdapterOff(policy) if is_peft(policy) else frozen_copy(policy, saved)


def snapshot_of(policy, name: str, saved: Path | None = None):
    """A frozen snapshot of ``policy`` to refresh with :func:`refresh_snapshot`: an :class:`AdapterSnapshot`
    named ``name`` for a LoRA policy, else a frozen copy (``saved``: a checkpoint's copy)."""
    if is_peft(policy):
        return AdapterSnapshot(policy, name, saved if saved is not None and saved.is_dir() else None)
    return frozen_copy(policy, saved)


def refresh_snapshot(snapshot, policy) -> None:
    """``snapshot`` (of :func:`snapshot_of`) becomes ``policy`` as it is now."""
    if isinstance(snapshot, AdapterSnapshot):
        snapshot.refresh()
    else:
        snapshot.load_state_dict(policy.state_dict())


def save_model(model, directory: Path, previous: Path | None = None) -> None:
    """``model.save_pretrained(directory)``; a LoRA model's: its adapters (peft's folder) and its base weights in
    ``directory/base_model`` (hard links to ``previous/base_model`` when there is one: the base never changes)."""
    model.save_pretrained(directory, safe_serialization=True)
    if not is_peft(model):
        return
    base = directory / BASE_MODEL
    if previous is not None and (previous / BASE_MODEL).is_dir():
        shutil.copytree(previous / BASE_MODEL, base, copy_function=os.link)
        return
    transformer = model.get_base_model()
    weights = {
        name.replace(".base_layer.", "."): tensor
        for name, tensor in transformer.state_dict().items()
        if ".lora_" not in name
    }
    transformer.save_pretrained(base, state_dict=weights, safe_serialization=True)
