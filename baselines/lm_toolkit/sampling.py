"""One KV-cache sampler for every baseline, and the teacher-forced log-probs of finished sequences.

* :class:`Prefix` runs a batch of queries through a causal or seq2seq model once and extends it
  with its KV cache. Each distinct query is run once; rows sharing a query (a GRPO group's
  prompt) share its cache rows, and gradients of all of them reach the one computation. While
  sampling, a query shared by a group of consecutive rows keeps its keys and values once
  (:class:`SharedQueryLayer`), and attention reads them once per group, not once per row.
* :func:`sample` is a short loop over :class:`Prefix` (not ``generate``) that draws each token
  by inverse-CDF sampling (:func:`next_tokens`) and keeps each token's log-prob and, with a
  value head, its value, so no forward pass recomputes them. A :class:`LogitsHook` may change
  the next-token logits at every step (NLPO's top-p mask, ILQL's Q-value perturbation) with
  models of its own.
* :func:`response_log_probs` gives per-token log-probs (entropies, values) of right-padded
  responses under the same distribution as :func:`sample` (temperature, EOS impossible before
  ``min_new_tokens``, an optional mask of allowed tokens).

On a GPU :func:`sample` waits on the host only every ``GPU_STOP_CHECK_EVERY`` tokens (whether every row
has ended), and its decode steps hand transformers a 4-D mask, so that it reads no padding flag back
from the device; its cache is preallocated to the episode's length everywhere (the same numbers, bit
for bit). ``cuda_graphs`` (off by default) replays the decode step as a CUDA graph
(:mod:`lm_toolkit.static_decoding`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.cache_utils import DynamicCache, DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask
from transformers.modeling_outputs import BaseModelOutput

from lm_toolkit.lora import checkpointed_teacher_forced
from lm_toolkit.models import takes_logits_to_keep
from lm_toolkit.static_decoding import StaticDecoder, cuda_graphs_enabled, decodes_statically
from lm_toolkit.tasks import Lengths
from lm_toolkit.tokens import pad


class GrowingLayer(DynamicLayer):
    """A KV-cache layer whose keys and values sit in a buffer with room to grow: a sampled token is written
    into it, where ``DynamicLayer`` copies the whole cache (``torch.cat``) for every token and layer, a third
    of a small model's sampling time on CPU. For sampling only (``no_grad``): it writes in place. ``room``: the
    least capacity of a new buffer (the episode's length: one buffer, never copied; else it doubles as it fills)."""

    buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    def __init__(self, room: int = 0):
        super().__init__()
        self.room = room

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length, new = self.get_seq_length(), key_states.shape[-2]
        keys = self.buffers[0] if self.buffers is not None else None
        # a new buffer when there is none, it is full, or the cache was replaced (select_rows)
        if (
            keys is None
            or keys.shape[-2] < length + new
            or keys.shape[0] != key_states.shape[0]
            or self.keys.data_ptr() != keys.data_ptr()
        ):
            capacity = max(2 * (length + new), self.room)
            self.buffers = tuple(
                t.new_empty((*t.shape[:-2], capacity, t.shape[-1])) for t in (key_states, value_states)
            )
            if length:
                self.buffers[0][..., :length, :] = self.keys
                self.buffers[1][..., :length, :] = self.values
        self.buffers[0][..., length : length + new, :] = key_states
        self.buffers[1][..., length : length + new, :] = value_states
        self.keys, self.values = self.buffers[0][..., : length + new, :], self.buffers[1][..., : length + new, :]
        return self.keys, self.values


class GrowingCache(DynamicCache):
    """A ``DynamicCache`` of :class:`GrowingLayer` s with ``room`` keys each."""

    def __init__(self, room: int = 0):
        super().__init__()
        self.layer_class_to_replicate = functools.partial(GrowingLayer, room)


class SharedQueryLayer(DynamicLayer):
    """A sampling KV-cache layer of rows whose queries come in equal groups of consecutive rows (a GRPO
    group's prompt): each query's keys and values are kept once, the sampled tokens' per row (in a
    :class:`GrowingLayer`). :func:`shared_query_attention` reads a query's keys once per group, not once
    per row: on CPU a decode step's attention is bound by reading the cache from memory, and a 64-token
    prompt shared by 4 rows is most of it. The rows' sampled tokens are never padding (as :func:`sample`
    feeds them)."""

    def __init__(self, layer: DynamicLayer, group_size: int, query_mask: torch.Tensor, room: int = 0):
        super().__init__()
        self.query_keys, self.query_values = layer.keys, layer.values  # (queries, kv heads, query length, head dim)
        self.group_size, self.query_mask = group_size, query_mask.bool()  # (queries, query length)
        # the sampled tokens' room, else as much as the plain path's first buffer leaves
        self.sampled = GrowingLayer(room or layer.keys.shape[-2] + 2)
        self.device, self.is_initialized = layer.keys.device, True

    def get_seq_length(self) -> int:
        return self.query_keys.shape[-2] + self.sampled.get_seq_length()

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        keys, values = self.sampled.update(key_states, value_states)
        # a view of its own, which this layer does not hold: marked on the layer's tensor, the mark would make a
        # reference cycle, and the cache would wait for the garbage collector (GRPO's peak memory: +150 MB)
        keys = keys.view(keys.shape)
        keys.shared_query = self  # what shared_query_attention reads beside these rows' own keys
        return keys, values

    def attend(self, query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scaling: float) -> torch.Tensor:
        """Attention of ``query`` (rows, heads, new tokens, head dim) to each row's query and its sampled tokens
        (``keys``/``values``, the last of them the new ones), as HF's attention functions return it:
        (rows, new tokens, heads, head dim)."""
        rows, heads, new, dim = query.shape
        queries, kv_heads, query_length, _ = self.query_keys.shape
        group, per_kv = self.group_size, heads // kv_heads  # query heads that share a key/value head
        # a group's rows, a kv head's query heads and the new tokens as one batch of queries of that group
        grouped = query.reshape(queries, group, kv_heads, per_kv * new, dim).transpose(1, 2)
        grouped = grouped.reshape(queries, kv_heads, group * per_kv * new, dim)
        to_query = (grouped @ self.query_keys.transpose(-1, -2)) * scaling
        to_query = to_query.masked_fill(~self.query_mask[:, None, None, :], float("-inf"))
        to_query = to_query.view(queries, kv_heads, group, per_kv * new, query_length).transpose(1, 2)
        to_query = to_query.reshape(rows, kv_heads, per_kv * new, query_length)
        own = query.reshape(rows, kv_heads, per_kv * new, dim)
        to_sampled = (own @ keys.transpose(-1, -2)) * scaling  # (rows, kv heads, per_kv * new, sampled)
        if new > 1:  # a new token sees the sampled tokens up to itself
            sampled = keys.shape[-2]
            seen = (
                torch.arange(sampled, device=query.device)
                <= torch.arange(sampled - new, sampled, device=query.device)[:, None]
            )
            to_sampled = to_sampled.masked_fill(~seen.repeat(per_kv, 1), float("-inf"))
        weights = torch.cat([to_query, to_sampled], -1).softmax(-1, dtype=torch.float32).to(query.dtype)
        from_query = weights[..., :query_length].reshape(queries, group, kv_heads, per_kv * new, query_length)
        from_query = from_query.transpose(1, 2).reshape(queries, kv_heads, group * per_kv * new, query_length)
        from_query = (from_query @ self.query_values).view(queries, kv_heads, group, per_kv * new, dim)
        out = from_query.transpose(1, 2).reshape(rows, kv_heads, per_kv * new, dim)
        out = out + weights[..., query_length:] @ values
        return out.view(rows, heads, new, dim).transpose(1, 2)


SHARED_QUERY_ATTENTION = "lm_gym_shared_query_sdpa"
#: Model types whose attention is plain scaled dot-product attention over the cached keys (no ALiBi, sliding
#: window or soft-capping), so that shared_query_attention computes what their SDPA attention does.
PLAIN_ATTENTION_MODELS = frozenset({"gpt2", "llama", "qwen2", "qwen3", "mistral"})


def shared_query_attention(module, query, key, value, attention_mask, scaling=None, **kwargs):
    """HF's SDPA attention, except for keys of a :class:`SharedQueryLayer`, which it attends to itself."""
    layer = getattr(key, "shared_query", None)
    if layer is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    return layer.attend(query, key, value, scaling if scaling is not None else query.shape[-1] ** -0.5), None


AttentionInterface.register(SHARED_QUERY_ATTENTION, shared_query_attention)
AttentionMaskInterface.register(SHARED_QUERY_ATTENTION, sdpa_mask)


def shares_queries(model) -> bool:
    """Whether sampling with ``model`` keeps a shared query's cache once (:class:`SharedQueryLayer`): on CPU,
    where a decode step's attention waits on memory (measured: benchmark/perf/README.md). On a GPU the fused
    SDPA kernel reads the cache from fast memory in one launch, where this takes about ten; not measured
    there yet, so a GPU keeps SDPA."""
    config = model.config
    return (
        model.device.type == "cpu"
        and config.model_type in PLAIN_ATTENTION_MODELS
        and config._attn_implementation == "sdpa"
        and getattr(config, "sliding_window", None) is None
    )


def select_rows(cache, index: torch.Tensor) -> None:
    """Make ``cache`` hold rows ``index`` of itself (a shared query's rows repeated). Key/value layers use
    ``index_select``: ``batch_select_indices`` indexes with ``tensor[index]``, whose backward (an accumulating
    ``index_put``) took 2% of a GRPO iteration of the standard workload on CPU, against ``index_add``'s."""
    for layer in cache.layers:
        if type(layer).batch_select_indices is DynamicLayer.batch_select_indices and layer.get_seq_length() > 0:
            layer.keys, layer.values = layer.keys.index_select(0, index), layer.values.index_select(0, index)
        else:
            layer.batch_select_indices(index)


@functools.cache
def cache_argument(model_class) -> str:
    """The name under which the model's ``forward`` takes its KV cache and its output returns it: ``cache``
    where transformers has it (``past_key_values`` is then deprecated, and removed in 5.40), else
    ``past_key_values`` (earlier 5.x releases)."""
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


class Prefix:
    """A batch of queries run once through ``model``, then extended with the KV cache.

    ``logits`` (B, V) and ``hidden`` (B, H; with ``with_hidden``) predict the next token of each
    row (a causal transformer without an LM head gives ``hidden`` only). Causal models read
    left-padded queries with explicit positions; seq2seq models encode right-padded queries and
    start the decoder from ``decoder_start_token_id``. ``growing``: a causal model's cache is a
    :class:`GrowingCache` (sampling, without gradients) with ``room`` keys for the tokens to come
    (0: it doubles as it fills); ``share_queries`` too: queries shared by equal groups of consecutive rows
    are kept once (:class:`SharedQueryLayer`; models of ``PLAIN_ATTENTION_MODELS`` with SDPA), and
    :meth:`extend` then takes no ``token_mask``. ``mask_4d``: one-token steps pass the attention mask as
    (B, 1, 1, keys) booleans (SDPA models), for which transformers builds nothing: from a 2-D mask it
    reads back whether any key is padding (``fast_all``), a host-device sync per step on a GPU.
    """

    def __init__(
        self,
        model,
        queries: Sequence[Sequence[int]],
        pad_id: int,
        with_hidden: bool = False,
        growing: bool = False,
        share_queries: bool = False,
        room: int = 0,
        mask_4d: bool = False,
    ):
        self.model, self.with_hidden, self.shared = model, with_hidden, False
        self.cache_name = cache_argument(type(model))
        self.is_seq2seq = bool(model.config.is_encoder_decoder)
        device = model.device
        distinct: dict[tuple[int, ...], int] = {}
        rows = [distinct.setdefault(tuple(query), len(distinct)) for query in queries]
        index = torch.tensor(rows, device=device)
        if self.is_seq2seq:
            ids, mask = pad(list(distinct), pad_id, "right", device)
            encoded = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
            self.fixed = {
                "encoder_outputs": BaseModelOutput(last_hidden_state=encoded[index]),
                "attention_mask": mask[index],
            }
            start = torch.full((len(rows), 1), model.config.decoder_start_token_id, device=device)
            out = model(decoder_input_ids=start, use_cache=True, output_hidden_states=with_hidden, **self.fixed)
            self.cache = getattr(out, self.cache_name)
            self.logits, self.hidden = out.logits[:, -1], out.decoder_hidden_states[-1][:, -1] if with_hidden else None
            return
        ids, mask = pad(list(distinct), pad_id, "left", device)
        keep = {"logits_to_keep": 1} if takes_logits_to_keep(type(model)) else {}
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        query_length = ids.shape[1]
        cache = {self.cache_name: GrowingCache(query_length + room if room else 0)} if growing else {}
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=position_ids,
            use_cache=True,
            output_hidden_states=with_hidden,
            **keep,
            **cache,
        )
        self.cache = getattr(out, self.cache_name)
        group = len(rows) // len(distinct)  # equal groups of consecutive rows, when rows is [0]*G + [1]*G + ...
        self.shared = (
            growing
            and share_queries
            and group > 1
            and rows == [i // group for i in range(len(rows))]
            and shares_queries(model)
        )
        if self.shared:
            self.cache.layers = [SharedQueryLayer(layer, group, mask, room) for layer in self.cache.layers]
        elif len(distinct) < len(rows):
            select_rows(self.cache, index)
        self.mask, self.next_position = mask[index], mask.sum(1)[index]
        self.mask_4d = mask_4d and model.config._attn_implementation == "sdpa" and not self.shared
        logits = getattr(out, "logits", None)  # a bare transformer (ILQL's value trunk) has hidden states only
        self.logits = logits[index, -1] if logits is not None else None
        self.hidden = out.hidden_states[-1][index, -1] if with_hidden else None

    def extend(
        self, tokens: torch.Tensor, token_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Feed ``tokens`` (B, n); the logits (B, n, V) and hidden states after each of them."""
        if self.is_seq2seq:  # tokens after EOS are padding that only later padding sees: no decoder mask needed
            out = self.model(
                decoder_input_ids=tokens,
                **{self.cache_name: self.cache},
                use_cache=True,
                output_hidden_states=self.with_hidden,
                **self.fixed,
            )
            hidden = out.decoder_hidden_states[-1] if self.with_hidden else None
        else:
            if self.shared and token_mask is not None:
                raise ValueError("a Prefix with share_queries=True extends without padding: token_mask must be None")
            self.mask = torch.cat([self.mask, torch.ones_like(tokens) if token_mask is None else token_mask], 1)
            positions = self.next_position[:, None] + torch.arange(tokens.shape[1], device=tokens.device)
            config, attention = self.model.config, self.model.config._attn_implementation
            given_mask = self.mask[:, None, None, :].bool() if self.mask_4d and tokens.shape[1] == 1 else self.mask
            if self.shared:  # for this pass only: the model's own attention elsewhere
                config._attn_implementation = SHARED_QUERY_ATTENTION
            try:
                out = self.model(
                    input_ids=tokens,
                    **{self.cache_name: self.cache},
                    attention_mask=given_mask,
                    position_ids=positions,
                    use_cache=True,
                    output_hidden_states=self.with_hidden,
                )
            finally:
                config._attn_implementation = attention
            self.next_position = self.next_position + tokens.shape[1]
            hidden = out.hidden_states[-1] if self.with_hidden else None
        self.cache = getattr(out, self.cache_name)
        logits = getattr(out, "logits", None)
        self.logits = logits[:, -1] if logits is not None else None
        self.hidden = hidden[:, -1] if hidden is not None else None
        return logits, hidden


def sampling_logits(
    logits: torch.Tensor, temperature: float, eos_id: int, min_new_tokens: int, first_position: int = 0
) -> torch.Tensor:
    """``logits`` (B, T, V) of response positions ``first_position``.. as the sampling distribution's (float):
    at ``temperature``, EOS impossible before ``min_new_tokens``. A new tensor where they change."""
    logits = logits.float()
    blocked = min_new_tokens - first_position
    if temperature != 1.0:
        logits = logits / temperature
    elif blocked > 0:
        logits = logits.clone()  # not the caller's tensor
    if blocked > 0:
        logits[:, :blocked, eos_id] = float("-inf")
    return logits


def log_probs_of(
    logits: torch.Tensor,
    temperature: float,
    eos_id: int,
    min_new_tokens: int,
    first_position: int = 0,
    keep: torch.Tensor | None = None,
) -> torch.Tensor:
    """The sampling distribution's log-probs from ``logits`` (B, T, V) of response positions
    ``first_position``..: :func:`sampling_logits`, and only the ``keep`` tokens (B, T, V booleans)
    possible when given."""
    logits = sampling_logits(logits, temperature, eos_id, min_new_tokens, first_position)
    if keep is not None:
        logits = logits.masked_fill(~keep, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def next_tokens(
    logits: torch.Tensor,
    temperature: float,
    eos_id: int,
    min_new_tokens: int,
    position: int,
    greedy: bool = False,
    uniforms: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row of ``logits`` (B, V) at response position ``position``, and its log-prob, under the
    distribution of :func:`log_probs_of`: drawn by inverse-CDF sampling, one uniform number per row
    (``uniforms``, shape (B,), else fresh from torch's generator), or (``greedy``) the most likely.

    Three passes over the vocabulary (maximum, exponentials, their running sum), where a log-softmax, its
    exponentials, their running sum and a fallback argmax took five times longer on CPU for the standard
    workload's 64 x 4,000 logits (``torch.multinomial`` about 50 times longer)."""
    logits = sampling_logits(logits[:, None], temperature, eos_id, min_new_tokens, position)[:, 0]
    top = logits.amax(-1, keepdim=True)
    cdf = (logits - top).exp_().cumsum_(-1)
    total = cdf[:, -1:]
    if greedy:
        tokens = logits.argmax(-1)
    else:
        u = torch.rand_like(total) if uniforms is None else uniforms.to(cdf.device, cdf.dtype)[:, None]
        # kept below the total (u * total may round up to it): the first token past it has a probability above 0
        below = torch.minimum(u * total, total.nextafter(torch.zeros_like(total)))
        tokens = torch.searchsorted(cdf, below, right=True).squeeze(-1)
    log_probs = logits.gather(-1, tokens[:, None]).squeeze(-1) - top.squeeze(-1) - total.squeeze(-1).log()
    return tokens, log_probs


#: On a GPU the sampling loop asks whether every row has ended only every this many tokens: each answer waits
#: for the device to finish the step, where the host could otherwise launch steps ahead of it.
GPU_STOP_CHECK_EVERY = 8


class LogitsHook(Protocol):
    """Changes the next-token logits at every sampling step, e.g. with a model of its own run alongside."""

    needs_hidden: bool  # whether ``__call__`` reads the policy's last hidden states

    def start(self, queries: Sequence[Sequence[int]]) -> None:
        """A new batch of queries begins."""

    def __call__(self, position: int, logits: torch.Tensor, hidden: torch.Tensor | None) -> torch.Tensor:
        """The logits (B, V) to sample response position ``position`` from."""

    def advance(self, tokens: torch.Tensor) -> None:
        """The tokens (B,) just sampled."""

    def rows(self, lengths: list[int]) -> list[Any] | None:
        """What the hook kept per row, cut to the responses' ``lengths`` (or ``None``)."""


@dataclass
class Samples:
    """Sampled responses, each up to and including its EOS, with what sampling kept per token."""

    responses: list[list[int]]
    log_probs: list[list[float]]
    values: list[list[float]] | None = None
    hook_rows: list[Any] | None = None


@torch.no_grad()
def sample(
    model,
    queries: Sequence[Sequence[int]],
    lengths: Lengths,
    *,
    eos_id: int,
    pad_id: int,
    greedy: bool = False,
    temperature: float = 1.0,
    value_head=None,
    hook: LogitsHook | None = None,
    uniforms: torch.Tensor | None = None,
    share_queries: bool = True,
    cuda_graphs: bool | None = None,
    stop_check_every: int | None = None,
    preallocate: bool = True,
) -> Samples:
    """Responses to ``queries`` sampled (or, ``greedy``, decoded) with the KV cache; ``uniforms``
    (B, max_new_tokens) are the random numbers of the draws, row by row (default: torch's generator).
    ``share_queries``: a query shared by a group of consecutive rows is kept and read once (``False``: once
    per row, the plain computation, for checks).

    ``stop_check_every``: how many tokens apart the loop asks the device whether every row has ended (each
    answer a host-device sync; default 1 on the CPU, where it is free, ``GPU_STOP_CHECK_EVERY`` elsewhere). The
    steps past the last row's end sample padding: the same Samples. ``preallocate``: the cache has room for the
    whole episode from the start (``False``: it doubles as it fills, for checks; the same numbers).
    ``cuda_graphs`` (default: ``LM_GYM_CUDA_GRAPHS=1`` in the environment, else off; no GPU has measured it
    yet): the decode steps run at fixed shapes (:class:`~lm_toolkit.static_decoding.StaticDecoder`), replayed
    as a CUDA graph on a GPU, eagerly elsewhere; causal SDPA models only (others take the growing cache)."""
    needs_hidden = value_head is not None or (hook is not None and hook.needs_hidden)
    batch, max_new = len(queries), lengths.max_new_tokens
    static = cuda_graphs_enabled(cuda_graphs) and decodes_statically(model)
    on_cpu = model.device.type == "cpu"
    prefix = Prefix(
        model,
        queries,
        pad_id,
        needs_hidden,
        growing=True,
        share_queries=share_queries and not static,
        room=max_new if preallocate and not static else 0,
        mask_4d=not on_cpu,
    )
    steps = StaticDecoder.for_prefix(prefix, max_new) if static else prefix
    if static:
        del prefix  # its cache is in the decoder's buffers
    if hook is not None:
        hook.start(queries)
    check_every = stop_check_every if stop_check_every is not None else 1 if on_cpu else GPU_STOP_CHECK_EVERY
    if check_every < 1:
        raise ValueError(f"stop_check_every must be a positive number of tokens, got {check_every}")
    device = steps.logits.device
    if uniforms is not None:  # one copy to the device, not one per token
        uniforms = uniforms.to(device, torch.float32)
    tokens = torch.full((batch, max_new), pad_id, dtype=torch.long, device=device)
    log_probs, values = torch.zeros((batch, max_new), device=device), torch.zeros((batch, max_new), device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    response_lengths = torch.full((batch,), max_new, device=device)
    for t in range(max_new):
        logits = steps.logits if hook is None else hook(t, steps.logits, steps.hidden)
        u = None if uniforms is None else uniforms[:, t]
        token, token_log_prob = next_tokens(logits, temperature, eos_id, lengths.min_new_tokens, t, greedy, u)
        token = token.masked_fill(finished, pad_id)
        tokens[:, t], log_probs[:, t] = token, token_log_prob
        if value_head is not None:
            values[:, t] = value_head(steps.hidden.float()).squeeze(-1)
        ends = (token == eos_id) & ~finished
        response_lengths = torch.where(ends, t + 1, response_lengths)
        finished |= ends
        # no row can end before min_new_tokens (EOS is impossible there): no device sync until then, and then
        # one every check_every tokens
        checked = t + 1 >= lengths.min_new_tokens and (t + 1 - lengths.min_new_tokens) % check_every == 0
        if t == max_new - 1 or (checked and bool(finished.all())):
            break
        steps.extend(token[:, None])
        if hook is not None:
            hook.advance(token)
    ends = [int(n) for n in response_lengths.tolist()]

    def cut(rows: torch.Tensor) -> list[list]:
        return [row[:n] for row, n in zip(rows.tolist(), ends, strict=True)]

    return Samples(
        cut(tokens), cut(log_probs), cut(values) if value_head is not None else None, hook.rows(ends) if hook else None
    )


class TokenScores(NamedTuple):
    """Per-token results of :func:`response_log_probs`, shape (B, T)."""

    log_probs: torch.Tensor
    entropy: torch.Tensor | None
    values: torch.Tensor | None


def teacher_forced(
    model,
    queries: Sequence[Sequence[int]],
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    pad_id: int,
    with_hidden: bool = False,
):
    """Logits (B, T, V) predicting each token of right-padded ``responses`` (and the hidden states
    they come from), each distinct query run once. A model with gradient checkpointing, computing
    gradients: :func:`lm_toolkit.lora.checkpointed_teacher_forced`."""
    if torch.is_grad_enabled() and getattr(model, "is_activation_checkpointing", False):
        return checkpointed_teacher_forced(model, queries, responses, response_mask, pad_id, with_hidden)
    prefix = Prefix(model, queries, pad_id, with_hidden)
    logits = prefix.logits[:, None]
    hidden = prefix.hidden[:, None] if with_hidden else None
    if responses.shape[1] > 1:
        more_logits, more_hidden = prefix.extend(responses[:, :-1], response_mask[:, :-1])
        logits = torch.cat([logits, more_logits], 1)
        hidden = torch.cat([hidden, more_hidden], 1) if with_hidden else None
    return logits, hidden


def response_log_probs(
    model,
    queries: Sequence[Sequence[int]],
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    pad_id: int,
    eos_id: int,
    temperature: float,
    min_new_tokens: int,
    value_head=None,
    keep: torch.Tensor | None = None,
    entropy: str | None = None,
) -> TokenScores:
    """Log-probs of right-padded ``responses`` (B, T) under the distribution :func:`sample` draws from.

    ``keep`` (B, T, V booleans) restricts it to the kept tokens and renormalises; the token taken
    always counts as kept (padding, and a sampled token on a top-p boundary that a full forward
    pass ranks a hair differently, stay finite). ``entropy``: ``"statistic"`` (no gradient) or
    ``"loss"`` (with gradient); ``value_head``: values from the same hidden states.
    """
    logits, hidden = teacher_forced(model, queries, responses, response_mask, pad_id, value_head is not None)
    if keep is not None:
        keep = keep.scatter(-1, responses.unsqueeze(-1), True)
    all_log_probs = log_probs_of(logits, temperature, eos_id, min_new_tokens, keep=keep)
    log_probs = all_log_probs.gather(-1, responses.unsqueeze(-1)).squeeze(-1)
    token_entropy = None
    if entropy is not None:
        with torch.set_grad_enabled(torch.is_grad_enabled() and entropy == "loss"):
            token_entropy = -(all_log_probs.exp() * all_log_probs.masked_fill(all_log_probs.isinf(), 0.0)).sum(-1)
    values = value_head(hidden.float()).squeeze(-1) if value_head is not None else None
    return TokenScores(log_probs, token_entropy, values)
