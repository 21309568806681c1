"""The sampler's decode loop (baselines/lm_toolkit/sampling.py, static_decoding.py) on the CPU: the cache
preallocated to the episode's length gives today's tokens, log-probs and values bit for bit (GPT-2, Llama,
Qwen2; shared queries, a value head, min_new_tokens); asking whether every row has ended only every k
tokens (the GPU's setting) gives the same Samples; the GPU's 4-D decode mask and the static decode path
(a CUDA graph on a GPU, eager here) compute what the growing cache does, to rounding."""

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from lm_toolkit import sampling, static_decoding, tasks

EOS, PAD, VOCAB, WIDTH = 49, 0, 50, 32
LENGTHS = tasks.Lengths(max_prompt_length=8, max_new_tokens=10, min_new_tokens=2)


def gpt2():
    config = GPT2Config(vocab_size=VOCAB, n_layer=2, n_embd=WIDTH, n_head=4, n_positions=64)
    return GPT2LMHeadModel(config)


def llama():  # grouped-query attention: 4 query heads share 2 key/value heads
    config = LlamaConfig(
        vocab_size=VOCAB,
        num_hidden_layers=2,
        hidden_size=WIDTH,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(config)


def qwen2():
    config = Qwen2Config(
        vocab_size=VOCAB,
        num_hidden_layers=2,
        hidden_size=WIDTH,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_sliding_window=False,
    )
    return Qwen2ForCausalLM(config)


MODELS = {"gpt2": gpt2, "llama": llama, "qwen2": qwen2}


def tiny(name: str):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    model.config.eos_token_id, model.config.pad_token_id = EOS, PAD
    return model


#: GRPO-like groups of 3 rows per query (padded queries of unequal lengths), and PPO-like distinct queries
GROUPED = [q for q in ([5, 6, 7, 8, 9], [10, 11], [12, 13, 14]) for _ in range(3)]
DISTINCT = [[5, 6, 7, 8], [9, 10], [11, 12, 13], [14], [15, 16, 17, 18, 19, 20]]


def uniforms_ending_rows(rows: int) -> torch.Tensor:
    """Draws that end row i at token 4 + i % 5 (u near 1 takes the last token, EOS, once it is allowed), the last row
    at the length limit: the loop stops early, rows end at different steps."""
    generator = torch.Generator().manual_seed(1)
    u = torch.rand(rows, LENGTHS.max_new_tokens, generator=generator) * 0.9
    for row in range(rows - 1):
        u[row, 3 + row % 5] = 0.99999
    return u


class RecordingHook:
    """A logits hook that keeps the tokens it is told of and changes nothing."""

    needs_hidden = True

    def start(self, queries):
        self.seen = []

    def __call__(self, position, logits, hidden):
        return logits

    def advance(self, tokens):
        self.seen.append(tokens.clone())

    def rows(self, lengths):
        seen = torch.stack(self.seen, 1).tolist() if self.seen else [[] for _ in lengths]
        return [row[: n - 1] for row, n in zip(seen, lengths, strict=True)]


def run(model, queries, uniforms, value_head=None, **options) -> sampling.Samples:
    return sampling.sample(
        model, queries, LENGTHS, eos_id=EOS, pad_id=PAD, temperature=0.9, value_head=value_head,
        uniforms=uniforms, **options,
    )  # fmt: skip


def assert_identical(a: sampling.Samples, b: sampling.Samples) -> None:
    assert a.responses == b.responses
    for x, y in zip(a.log_probs, b.log_probs, strict=True):
        assert torch.equal(torch.tensor(x), torch.tensor(y))
    assert (a.values is None) == (b.values is None)
    for x, y in zip(a.values or [], b.values or [], strict=True):
        assert torch.equal(torch.tensor(x), torch.tensor(y))
    assert a.hook_rows == b.hook_rows


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("queries", [GROUPED, DISTINCT], ids=["shared-queries", "distinct-queries"])
@pytest.mark.parametrize("with_value_head", [False, True], ids=["policy", "value-head"])
def test_the_preallocated_cache_gives_todays_tokens_log_probs_and_values_bit_for_bit(name, queries, with_value_head):
    model = tiny(name)
    torch.manual_seed(2)
    value_head = torch.nn.Linear(WIDTH, 1) if with_value_head else None
    uniforms = uniforms_ending_rows(len(queries))
    preallocated = run(model, queries, uniforms, value_head)
    doubling = run(model, queries, uniforms, value_head, preallocate=False)
    assert_identical(preallocated, doubling)
    lengths = [len(r) for r in preallocated.responses]
    assert min(lengths) > LENGTHS.min_new_tokens and max(lengths) == LENGTHS.max_new_tokens
    assert len(set(lengths)) > 2  # rows end at different steps
    if queries is GROUPED:  # the shared-query path was taken
        assert sampling.Prefix(model, queries, PAD, growing=True, share_queries=True).shared


def test_the_preallocated_cache_is_one_buffer_of_the_episodes_length():
    model = tiny("gpt2")
    prefix = sampling.Prefix(model, DISTINCT, PAD, growing=True, room=LENGTHS.max_new_tokens)
    query_length = max(map(len, DISTINCT))
    buffer = prefix.cache.layers[0].buffers[0]
    assert buffer.shape[-2] == query_length + LENGTHS.max_new_tokens
    with torch.no_grad():
        for _ in range(LENGTHS.max_new_tokens - 1):
            prefix.extend(torch.full((len(DISTINCT), 1), 7))
    assert prefix.cache.layers[0].buffers[0] is buffer  # never copied
    shared = sampling.Prefix(model, GROUPED, PAD, growing=True, share_queries=True, room=LENGTHS.max_new_tokens)
    with torch.no_grad():
        shared.extend(torch.full((len(GROUPED), 1), 7))
    assert shared.cache.layers[0].sampled.buffers[0].shape[-2] == LENGTHS.max_new_tokens


@pytest.mark.parametrize("every", [2, 3, sampling.GPU_STOP_CHECK_EVERY, 100])
@pytest.mark.parametrize("queries", [GROUPED, DISTINCT], ids=["shared-queries", "distinct-queries"])
def test_asking_whether_rows_ended_every_k_tokens_gives_the_samples_of_every_token(every, queries):
    model = tiny("llama")
    torch.manual_seed(2)
    value_head = torch.nn.Linear(WIDTH, 1)
    uniforms = uniforms_ending_rows(len(queries))
    uniforms[-1, 6] = 0.99999  # every row ends before the limit: the loop stops early, the k-check later
    every_token = run(model, queries, uniforms, value_head, hook=RecordingHook())
    every_k = run(model, queries, uniforms, value_head, hook=RecordingHook(), stop_check_every=every)
    assert max(len(r) for r in every_token.responses) < LENGTHS.max_new_tokens
    assert_identical(every_token, every_k)
    # without given uniforms: the same draws from torch's generator, whichever step the loop stops at
    torch.manual_seed(5)
    drawn = run(model, queries, None, stop_check_every=1)
    torch.manual_seed(5)
    assert_identical(drawn, run(model, queries, None, stop_check_every=every))
    for wrong in (0, -1):
        with pytest.raises(ValueError, match="stop_check_every"):
            run(model, queries, uniforms, stop_check_every=wrong)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_gpus_4d_decode_mask_computes_what_the_2d_one_does(name):
    model = tiny(name)
    new = torch.randint(1, 40, (len(DISTINCT), 4), generator=torch.Generator().manual_seed(3))
    plain = sampling.Prefix(model, DISTINCT, PAD, growing=True)
    four_d = sampling.Prefix(model, DISTINCT, PAD, growing=True, mask_4d=True)
    assert four_d.mask_4d and not plain.mask_4d
    with torch.no_grad():
        for step in range(new.shape[1]):
            expected, _ = plain.extend(new[:, step : step + 1])
            torch.testing.assert_close(four_d.extend(new[:, step : step + 1])[0], expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("queries", [GROUPED, DISTINCT], ids=["shared-queries", "distinct-queries"])
def test_the_static_decode_path_samples_what_the_growing_cache_does(name, queries):
    """cuda_graphs=True on the CPU: the fixed-shape decode step, run eagerly (a CUDA graph on a GPU)."""
    model = tiny(name)
    torch.manual_seed(2)
    value_head = torch.nn.Linear(WIDTH, 1)
    uniforms = uniforms_ending_rows(len(queries))
    growing = run(model, queries, uniforms, value_head, hook=RecordingHook())
    static = run(model, queries, uniforms, value_head, hook=RecordingHook(), cuda_graphs=True)
    assert static.responses == growing.responses and static.hook_rows == growing.hook_rows
    for kept, expected in zip(static.log_probs + static.values, growing.log_probs + growing.values, strict=True):
        torch.testing.assert_close(torch.tensor(kept), torch.tensor(expected), atol=1e-5, rtol=0)
    decoders = static_decoding._DECODERS[model]
    assert len(decoders) == 1
    (decoder,) = decoders.values()
    assert decoder.mask.shape[-1] % static_decoding.CAPACITY_MULTIPLE == 0
    again = run(model, queries, uniforms, value_head, hook=RecordingHook(), cuda_graphs=True)
    assert again.responses == static.responses and list(decoders.values()) == [decoder]  # the same shapes: reused


def test_the_cuda_graph_flag_is_off_unless_the_environment_sets_it(monkeypatch):
    monkeypatch.delenv(static_decoding.CUDA_GRAPHS_ENV, raising=False)
    assert not static_decoding.cuda_graphs_enabled()
    monkeypatch.setenv(static_decoding.CUDA_GRAPHS_ENV, "1")
    assert static_decoding.cuda_graphs_enabled() and not static_decoding.cuda_graphs_enabled(False)
    monkeypatch.setenv(static_decoding.CUDA_GRAPHS_ENV, "yes")
    with pytest.raises(ValueError, match="LM_GYM_CUDA_GRAPHS must be 0 or 1"):
        static_decoding.cuda_graphs_enabled()


def test_a_lora_policy_takes_the_same_paths():
    """A peft LoRA model (the baselines' --lora-r): the preallocated cache bit for bit, the static path to rounding."""
    peft = pytest.importorskip("peft")
    config = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    model = peft.get_peft_model(tiny("llama"), config).eval()
    uniforms = uniforms_ending_rows(len(GROUPED))
    preallocated = run(model, GROUPED, uniforms)
    assert_identical(preallocated, run(model, GROUPED, uniforms, preallocate=False))
    static = run(model, GROUPED, uniforms, cuda_graphs=True)
    assert static.responses == preallocated.responses
    for kept, expected in zip(static.log_probs, preallocated.log_probs, strict=True):
        torch.testing.assert_close(torch.tensor(kept), torch.tensor(expected), atol=1e-5, rtol=0)
