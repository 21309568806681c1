"""Decode steps at fixed shapes, replayed as a CUDA graph: the sampler's GPU path behind a flag.

A decode step of a small model on a GPU is launch-bound: a GPT-2-small step is some two hundred
kernels of microseconds each, and the host's Python launches them one by one. :class:`StaticDecoder`
keeps the KV cache in buffers of a fixed size (:class:`FixedLayer`: rows, kv heads, capacity, head
dim), feeds the step's token, positions and a 4-D attention mask from buffers of fixed addresses,
and on a CUDA device captures the model's forward once in a CUDA graph that each later step
replays: one launch a step. Elsewhere (the CPU) it runs the same forward eagerly, which is how the
tests check it.

The flag is **off** by default: no GPU run has measured it yet. ``sample(..., cuda_graphs=True)``
turns it on for a call; :func:`cuda_graphs_enabled` reads ``LM_GYM_CUDA_GRAPHS=1`` from the
environment for callers that leave it ``None`` (the speed benchmark's ``--cuda-graphs``). The
static path computes what the growing cache does up to rounding (attention reads masked slots
as zero weights, a longer sum), not bit for bit.
"""

from __future__ import annotations

import contextlib
import os
import warnings
import weakref
from collections import OrderedDict

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

CUDA_GRAPHS_ENV = "LM_GYM_CUDA_GRAPHS"  #: "1": sample() captures its decode steps where it may
CAPACITY_MULTIPLE = 32  #: capacities are rounded up to this, so later batches of similar prompts reuse a graph
KEPT_DECODERS = 4  #: per model: the graphs of this many (rows, capacity, ...) shapes are kept


def cuda_graphs_enabled(flag: bool | None = None) -> bool:
    """``flag`` when given, else whether the environment sets ``LM_GYM_CUDA_GRAPHS=1`` (the one place it is read)."""
    if flag is not None:
        return flag
    value = os.environ.get(CUDA_GRAPHS_ENV, "0")
    if value not in ("0", "1"):
        raise ValueError(f"{CUDA_GRAPHS_ENV} must be 0 or 1, got {value!r}")
    return value == "1"


def decodes_statically(model) -> bool:
    """Whether :class:`StaticDecoder` can run ``model``: a causal model with SDPA attention (its 4-D boolean mask)
    and no sliding window (whose layers would hold fewer keys than the capacity)."""
    config = model.config
    return (
        not config.is_encoder_decoder
        and config._attn_implementation == "sdpa"
        and getattr(config, "sliding_window", None) is None
    )


class FixedLayer(DynamicLayer):
    """A KV-cache layer of fixed buffers (rows, kv heads, capacity, head dim): a step's keys and values are written at
    ``slot`` (a one-element long tensor on the device, set before the step) and attention reads the whole buffers,
    the slots not yet written masked out. Fixed shapes and addresses: what a CUDA graph replays."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, slot: torch.Tensor):
        super().__init__()
        self.keys, self.values, self.slot = keys, values, slot
        self.device, self.is_initialized = keys.device, True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.keys.index_copy_(2, self.slot, key_states)
        self.values.index_copy_(2, self.slot, value_states)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.keys.shape[-2]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.keys.shape[-2], 0


def _capture_autocast() -> contextlib.AbstractContextManager:
    """Autocast as the caller has it, without its cache of cast weights: a captured graph must cast the weights
    itself, or it would read casts freed when the caller's autocast ends (and stale after an optimizer step)."""
    if torch.is_autocast_enabled("cuda"):
        return torch.autocast("cuda", dtype=torch.get_autocast_dtype("cuda"), cache_enabled=False)
    return contextlib.nullcontext()


class StaticDecoder:
    """Decode steps of ``model`` for ``rows`` rows at a fixed ``capacity`` of keys, with the interface of a
    sampling :class:`~lm_toolkit.sampling.Prefix`: :meth:`load` takes a prefix's cache, ``logits`` and ``hidden``
    predict the next token, :meth:`extend` feeds one token per row. On CUDA the step is captured in a CUDA graph
    at the first :meth:`extend` and replayed after; :meth:`for_prefix` keeps a model's decoders (and graphs)
    for later calls of the same shapes."""

    def __init__(self, model, rows: int, capacity: int, cache_name: str, with_hidden: bool, layers: list):
        self.model, self.cache_name, self.with_hidden = model, cache_name, with_hidden
        device = model.device
        self.ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.positions = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.slot = torch.zeros(1, dtype=torch.long, device=device)
        self.mask = torch.zeros((rows, 1, 1, capacity), dtype=torch.bool, device=device)
        # zeros, not empty: a masked slot gets weight 0, and 0 x NaN of an unwritten buffer would be NaN
        buffers = [
            (keys.new_zeros((rows, keys.shape[1], capacity, keys.shape[3])),
             values.new_zeros((rows, values.shape[1], capacity, values.shape[3])))
            for keys, values in layers
        ]  # fmt: skip
        self.cache = DynamicCache()
        self.cache.layers = [FixedLayer(keys, values, self.slot) for keys, values in buffers]
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_outputs: tuple[torch.Tensor, torch.Tensor | None] | None = None  # what a replay rewrites
        self.capture = device.type == "cuda"
        self.logits = self.hidden = None
        self.length, self.steps, self.next_position = 0, 0, None

    @classmethod
    def for_prefix(cls, prefix, max_new_tokens: int) -> StaticDecoder:
        """A decoder (a kept one where the shapes match) loaded with ``prefix``'s cache, room for ``max_new_tokens``."""
        model, layers = prefix.model, [(layer.keys, layer.values) for layer in prefix.cache.layers]
        rows, length = prefix.mask.shape
        capacity = -(-(length + max_new_tokens) // CAPACITY_MULTIPLE) * CAPACITY_MULTIPLE
        shapes = tuple((k.shape[1], k.shape[3], v.shape[1], v.shape[3], k.dtype) for k, v in layers)
        autocast = torch.is_autocast_enabled(model.device.type) and torch.get_autocast_dtype(model.device.type)
        weights = next(model.parameters()).data_ptr()  # a model moved or reloaded: graphs of its old weights go
        key = (rows, capacity, prefix.with_hidden, shapes, autocast, weights)
        kept = _DECODERS.setdefault(model, OrderedDict())
        decoder = kept.pop(key, None)
        if decoder is None:
            decoder = cls(model, rows, capacity, prefix.cache_name, prefix.with_hidden, layers)
        kept[key] = decoder
        while len(kept) > KEPT_DECODERS:
            kept.popitem(last=False)
        decoder.load(prefix)
        return decoder

    def load(self, prefix) -> None:
        """Start from ``prefix``: its keys and values in the first slots, its mask, its next-token predictions."""
        length = prefix.mask.shape[1]
        for layer, source in zip(self.cache.layers, prefix.cache.layers, strict=True):
            layer.keys[..., :length, :] = source.keys
            layer.values[..., :length, :] = source.values
        self.mask.zero_()
        self.mask[:, 0, 0, :length] = prefix.mask.bool()
        self.length, self.steps, self.next_position = length, 0, prefix.next_position
        self.logits, self.hidden = prefix.logits, prefix.hidden

    def extend(self, tokens: torch.Tensor) -> None:
        """Feed ``tokens`` (rows, 1): a step at the next slot; ``logits`` and ``hidden`` then predict the one after."""
        slot = self.length + self.steps
        self.ids.copy_(tokens)
        torch.add(self.next_position[:, None], self.steps, out=self.positions)
        self.slot.fill_(slot)
        self.mask[:, 0, 0, slot] = True
        self.steps += 1
        if self.graph is not None:
            self.graph.replay()
            self.logits, self.hidden = self.graph_outputs
        elif self.capture:
            self._capture()
        else:
            self._forward()

    def _forward(self) -> None:
        out = self.model(
            input_ids=self.ids,
            **{self.cache_name: self.cache},
            attention_mask=self.mask,
            position_ids=self.positions,
            use_cache=True,
            output_hidden_states=self.with_hidden,
        )
        self.logits = out.logits[:, -1]
        self.hidden = out.hidden_states[-1][:, -1] if self.with_hidden else None

    def _capture(self) -> None:
        """Warm the step up on a side stream (it writes the same slot each time), capture it, replay it; a model
        whose forward cannot be captured (a host sync inside it) runs eagerly from then on, with a warning."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), _capture_autocast():
            for _ in range(2):
                self._forward()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph), _capture_autocast():
                self._forward()
        except RuntimeError as error:
            warnings.warn(f"the decode step cannot be captured in a CUDA graph, eager from now: {error}", stacklevel=3)
            self.capture = False
            self._forward()
            return
        self.graph, self.graph_outputs = graph, (self.logits, self.hidden)
        graph.replay()


#: Each model's decoders, newest last; gone with the model.
_DECODERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
