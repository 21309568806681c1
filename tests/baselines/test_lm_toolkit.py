"""baselines/lm_toolkit on its own: the sampler and teacher-forced log-probs (causal, seq2seq, shared
prompts, value head, a logits hook), prompt encoding, task settings without building an env,
argument checks, evaluation and the checkpoint round trip."""

import copy
import gc
import json
import weakref

import gymnasium
import numpy as np
import pytest
import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    T5Config,
    T5ForConditionalGeneration,
    set_seed,
)

from lm_gym.results.evaluation import Evaluation
from lm_toolkit import arguments, optimization, rollouts, runs, sampling, tasks, tokens

EOS, PAD = 49, 0
LENGTHS = tasks.Lengths(max_prompt_length=8, max_new_tokens=6, min_new_tokens=2)


class Tokenizer:
    eos_token_id, pad_token_id = EOS, PAD


def tiny_causal():
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=50,
        n_layer=2,
        n_embd=32,
        n_head=4,
        n_positions=64,
        bos_token_id=EOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    return GPT2LMHeadModel(config).eval()


def tiny_seq2seq():
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=50,
        d_model=32,
        d_ff=64,
        d_kv=8,
        num_layers=1,
        num_heads=4,
        eos_token_id=EOS,
        pad_token_id=PAD,
        decoder_start_token_id=PAD,
    )
    return T5ForConditionalGeneration(config).eval()


def sample_and_rescore(model, queries, value_head=None, hook=None, temperature=1.0):
    policy = rollouts.TextPolicy(model, Tokenizer(), LENGTHS, temperature, value_head, hook)
    torch.manual_seed(3)
    samples = policy.sample(queries)
    response_ids, response_mask = tokens.pad(samples.responses, PAD, "right")
    with torch.no_grad():
        scores = policy.score(queries, response_ids, response_mask, value_head=value_head)
    return samples, scores


def test_shared_prompts_give_the_log_probs_and_gradients_of_separate_passes():
    model = tiny_causal()
    queries = [[5, 6, 7, 8], [5, 6, 7, 8], [9, 10], [9, 10], [11, 12, 13]]
    responses = [[1, 2, 3], [4, 5], [6], [7, 8, 9], [10, 11]]
    response_ids, response_mask = tokens.pad(responses, PAD, "right")
    log_probs = sampling.response_log_probs(
        model, queries, response_ids, response_mask, pad_id=PAD, eos_id=EOS, temperature=0.7, min_new_tokens=1
    ).log_probs
    (log_probs * response_mask).sum().backward()
    shared_grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    total = 0
    for i, (query, response) in enumerate(zip(queries, responses, strict=True)):
        logits = model(input_ids=torch.tensor([query + response])).logits[0, len(query) - 1 : -1] / 0.7
        logits[:1, EOS] = float("-inf")
        separate = torch.log_softmax(logits, -1).gather(-1, torch.tensor(response)[:, None]).squeeze(-1)
        torch.testing.assert_close(log_probs[i, : len(response)], separate, atol=1e-5, rtol=0)
        total = total + separate.sum()
    total.backward()
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(shared_grads[name], parameter.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("architecture", ["causal", "seq2seq"])
def test_sampling_keeps_the_log_probs_and_values_a_forward_pass_computes(architecture):
    model = tiny_causal() if architecture == "causal" else tiny_seq2seq()
    value_head = torch.nn.Linear(32, 1)
    queries = [[5, 6, 7, 8], [5, 6, 7, 8], [9, 10], [11, 12, 13]]
    samples, scores = sample_and_rescore(model, queries, value_head, temperature=0.8)
    assert all(2 <= len(r) <= 6 for r in samples.responses) and all(EOS not in r[:2] for r in samples.responses)
    assert all(r[-1] == EOS or len(r) == 6 for r in samples.responses)  # a response ends at EOS or at the limit
    for i, (row_log_probs, row_values) in enumerate(zip(samples.log_probs, samples.values, strict=True)):
        np.testing.assert_allclose(scores.log_probs[i, : len(row_log_probs)].numpy(), row_log_probs, atol=1e-5)
        np.testing.assert_allclose(scores.values[i, : len(row_values)].numpy(), row_values, atol=1e-5)


def test_greedy_decoding_is_the_same_batched_or_alone():
    model = tiny_causal()
    policy = rollouts.TextPolicy(model, Tokenizer(), LENGTHS)
    queries = [[1, 2, 4], [5], [7, 8, 9, 10, 11]]
    together = policy.sample(queries, greedy=True).responses
    assert together == [
        policy.sample([q], greedy=True).responses[0] for q in queries
    ]  # left padding and positions are right


def tiny_llama():  # grouped-query attention: 4 query heads share 2 key/value heads
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=50,
        num_hidden_layers=2,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=EOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    return LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("make_model", [tiny_causal, tiny_llama])
def test_a_query_shared_by_a_group_is_kept_once_and_samples_what_one_copy_per_row_does(make_model):
    model, value_head = make_model(), torch.nn.Linear(32, 1)
    queries = [q for q in ([5, 6, 7, 8, 9], [10, 11], [12, 13, 14]) for _ in range(3)]  # padded, groups of 3
    prefix = sampling.Prefix(model, queries, PAD, growing=True, share_queries=True)
    assert prefix.shared and all(isinstance(layer, sampling.SharedQueryLayer) for layer in prefix.cache.layers)
    assert prefix.cache.layers[0].query_keys.shape[0] == 3  # one copy of each query's keys

    uniforms = torch.rand(len(queries), LENGTHS.max_new_tokens)
    runs_ = [
        sampling.sample(
            model,
            queries,
            LENGTHS,
            eos_id=EOS,
            pad_id=PAD,
            temperature=0.9,
            value_head=value_head,
            uniforms=uniforms,
            share_queries=share,
        )
        for share in (True, False)
    ]
    assert runs_[0].responses == runs_[1].responses
    for kept, plain in zip(runs_[0].log_probs + runs_[0].values, runs_[1].log_probs + runs_[1].values, strict=True):
        np.testing.assert_allclose(kept, plain, atol=1e-5)
    assert model.config._attn_implementation == "sdpa"  # the model's own attention outside sampling

    # several new tokens at once see the sampled tokens up to themselves, as the plain cache's attention does
    new = torch.randint(1, 40, (len(queries), 3))
    plain = sampling.Prefix(model, queries, PAD, growing=True)
    assert not plain.shared
    with torch.no_grad():
        for step in (new[:, :1], new[:, 1:]):
            torch.testing.assert_close(prefix.extend(step)[0], plain.extend(step)[0], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="token_mask"):
        prefix.extend(new[:, :1], torch.ones_like(new[:, :1]))

    buffer = weakref.ref(prefix.cache.layers[0].sampled.buffers[0])
    gc.disable()
    try:
        del prefix
        assert buffer() is None  # freed with the prefix: no reference cycle left for the garbage collector
    finally:
        gc.enable()


def test_rows_not_in_equal_consecutive_groups_keep_a_copy_each():
    model = tiny_causal()
    for queries in ([[5, 6], [7, 8], [5, 6], [7, 8]], [[5, 6], [5, 6], [7, 8]]):
        assert not sampling.Prefix(model, queries, PAD, growing=True, share_queries=True).shared


def test_next_tokens_draws_the_inverse_cdf_of_the_sampling_distribution():
    torch.manual_seed(0)
    logits = torch.randn(6, 50) * 3
    logits[:, 30:] = float("-inf")  # tokens a hook masked: never drawn, even by u at the very ends
    before = logits.clone()
    uniforms = torch.tensor([0.0, 0.1, 0.5, 0.9, 0.999, 1.0 - 2**-30])
    tokens_, log_probs = sampling.next_tokens(logits, 0.7, EOS, min_new_tokens=2, position=1, uniforms=uniforms)
    assert torch.equal(logits, before)  # the caller's logits are left alone

    expected_log_probs = sampling.log_probs_of(logits[:, None], 0.7, EOS, 2, 1)[:, 0].double()
    cdf = expected_log_probs.exp().cumsum(-1)
    expected = torch.searchsorted(cdf, (uniforms.double() * cdf[:, -1])[:, None], right=True).squeeze(-1)
    assert torch.equal(tokens_, expected.clamp(max=29)) and int(tokens_.max()) < 30
    torch.testing.assert_close(
        log_probs.double(), expected_log_probs.gather(-1, tokens_[:, None])[:, 0], atol=1e-5, rtol=0
    )

    greedy, greedy_log_probs = sampling.next_tokens(logits, 1.0, 5, 2, 1, greedy=True)
    assert torch.equal(greedy, logits.argmax(-1)) and (greedy_log_probs <= 0).all()
    favoured = logits.clone()
    favoured[:, EOS] = 100.0
    assert not (sampling.next_tokens(favoured, 1.0, EOS, 2, 1, uniforms=uniforms)[0] == EOS).any()  # blocked
    assert (sampling.next_tokens(favoured[1:], 1.0, EOS, 2, 2, uniforms=uniforms[1:])[0] == EOS).all()  # allowed


class OnlyToken:
    """A logits hook that allows one token (and EOS once allowed), keeping how often it was called."""

    needs_hidden = False

    def __init__(self, token):
        self.token, self.calls = token, []

    def start(self, queries):
        self.calls.append(("start", len(queries)))

    def __call__(self, position, logits, hidden):
        keep = torch.zeros_like(logits, dtype=torch.bool)
        keep[:, self.token] = True
        keep[:, EOS] = position >= 4
        return logits.masked_fill(~keep, float("-inf"))

    def advance(self, tokens_):
        self.calls.append(("advance", tokens_.shape[0]))

    def rows(self, lengths):
        return list(lengths)


def test_a_logits_hook_restricts_sampling():
    hook = OnlyToken(17)
    samples = rollouts.TextPolicy(tiny_causal(), Tokenizer(), LENGTHS, hook=hook).sample([[1, 2], [3]])
    assert all(set(r) <= {17, EOS} and r[:4] == [17] * 4 for r in samples.responses)
    assert samples.hook_rows == [len(r) for r in samples.responses] and hook.calls[0] == ("start", 2)


def test_prompts_are_cut_by_the_core_rule():
    class Words:
        eos_token_id = EOS

        def __call__(self, texts, add_special_tokens):
            return {"input_ids": [[int(w) for w in text.split()] for text in texts]}

    left = tasks.Lengths(max_prompt_length=3, max_new_tokens=4)
    right = tasks.Lengths(max_prompt_length=3, max_new_tokens=4, truncation_side="right")
    assert tokens.encode_prompts(Words(), ["1 2 3 4 5", ""], left) == [[3, 4, 5], [EOS]]
    assert tokens.encode_prompts(Words(), ["1 2 3 4 5"], right) == [[1, 2, 3]]
    assert tokens.encode_targets(Words(), ["1 2 3 4 5"], left) == [[1, 2, 3, EOS]]
    ids, mask = tokens.pad([[1, 2], [3]], PAD, "left")
    assert ids.tolist() == [[1, 2], [PAD, 3]] and mask.tolist() == [[1, 1], [0, 1]]


def test_task_settings_are_read_without_building_an_env(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an env was built to read a setting")

    monkeypatch.setattr(gymnasium, "make", refuse)
    assert tasks.kwargs_for_split("lm_gym/IMDB-v0", {"source": "synthetic"}, "validation") == {
        "source": "synthetic",
        "split": "validation",
    }
    assert tasks.kwargs_for_split("lm_gym/Wordle-v0", {}, "validation") == {}  # no splits: played as it is
    assert tasks.task_lengths("lm_gym/IMDB-v0") == tasks.Lengths(64, 48, 48, "left")
    assert tasks.task_lengths("lm_gym/CNNDailyMail-v0").truncation_side == "right"
    assert tasks.task_lengths("lm_gym/IMDB-v0", max_new_tokens=20).min_new_tokens == 20  # the default is capped
    with pytest.raises(ValueError, match=r"--min-new-tokens must be in \[0, 48\]"):
        tasks.task_lengths("lm_gym/IMDB-v0", min_new_tokens=49)


def test_flags_out_of_range_are_named():
    args = arguments.OnlineArgs(temperature=0.0)
    with pytest.raises(ValueError, match="--temperature must be > 0, got 0.0"):
        arguments.check_args(args, "x.py")
    with pytest.raises(ValueError, match="--env-kwargs must be a JSON object"):
        arguments.check_args(arguments.OnlineArgs(env_kwargs="[1]"), "x.py")
    with pytest.raises(ValueError, match="--env-kwargs: x.py plays the utterance-level env"):
        arguments.check_args(arguments.OnlineArgs(env_kwargs=json.dumps({"action_level": "token"})), "x.py")
    with pytest.raises(ValueError, match="--batch-size must be an int >= 1, got 'eight'"):
        arguments.check_args(arguments.OfflineArgs(batch_size="eight"), "x.py")
    with pytest.raises(ValueError, match=r"--group-size must be in \[2, 8\]"):
        arguments.check_flags(type("A", (), {"group_size": 1})(), group_size=arguments.within(2, 8))

    with pytest.raises(ValueError, match=r"--temperature must be > 0, got nan"):
        arguments.check_args(arguments.OnlineArgs(temperature=float("nan")), "x.py")
    with pytest.raises(ValueError, match=r"--clip-coef must be > 0, got inf"):
        arguments.check_args(arguments.OnlineArgs(clip_coef=float("inf")), "x.py")


def test_flags_must_be_finite_numbers_while_env_metrics_keep_nan():
    """One ``is_number``: a flag's range check refuses NaN and infinities; an env's metrics keep them."""
    for value in (1, 0.5, np.float32(0.5), np.int64(3)):
        assert arguments.is_number(value, finite=True) and arguments.is_number(value, finite=False)
    for value in (float("nan"), float("inf")):
        assert arguments.is_number(value, finite=False) and not arguments.is_number(value, finite=True)
    for value in (True, "1", None, [1.0], np.timedelta64(3)):
        assert not arguments.is_number(value, finite=False)
    metrics = rollouts.numeric_metrics({"meteor": np.float32(0.25), "nan": float("nan"), "done": True, "text": "x"})
    assert set(metrics) == {"meteor", "nan"} and metrics["meteor"] == 0.25 and type(metrics["meteor"]) is float


def test_evaluation_replays_the_same_episodes_and_leaves_training_rngs_alone():
    venv = tasks.vector_env_for_split("lm_gym/Prompts-v0", {"prompt_words": 4, "num_prompts": 16}, "validation", 3)
    from lm_gym.core.registration import resolve_tokenizer

    tokenizer = resolve_tokenizer(venv.envs[0], None)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_layer=1, n_embd=16, n_head=2, eos_token_id=tokenizer.eos_token_id)
    policy = rollouts.TextPolicy(
        GPT2LMHeadModel(config).eval(), tokenizer, tasks.task_lengths("lm_gym/Prompts-v0", max_new_tokens=6)
    )
    torch.manual_seed(1)
    before = torch.get_rng_state()
    first = rollouts.evaluate(venv, policy, 5, seed=7, greedy=False)
    assert torch.equal(torch.get_rng_state(), before)
    again = rollouts.evaluate(venv, policy, 5, seed=7, greedy=False)
    assert first == again and first.summary["num_episodes"] == 5 and len(first.samples) == 5
    assert first.tasks == {}  # one task: no per-task summaries
    assert rollouts.evaluate(venv, policy, 0, seed=7, greedy=False) is None


def test_a_checkpoint_restores_the_run_and_its_random_numbers(tmp_path):
    args = arguments.OnlineArgs(out_dir=str(tmp_path), resume=True)
    model = tiny_causal()

    class Saved:  # a tokenizer's save_pretrained
        @staticmethod
        def save_pretrained(directory):
            (directory / "tokenizer.json").write_text("{}")

    run = runs.Run(args, "test")
    assert not run.resuming and run.source("gpt2") == "gpt2"
    run.step, run.curves = 3, [{"step": 3, "loss": 1.5}]
    run.initial = Evaluation({"mean_return": 0.25})
    run.final = Evaluation(
        {"mean_return": 0.5}, {"a/B-v0": {"mean_return": 0.5}}, [{"prompt": "p", "generation": "g", "return": 0.5}]
    )
    run.count(tokens=10, token_seconds=2.0)
    run.save(model, Saved(), {"coefficient": 0.5}, models={"reference": model}, frozen=["reference"])
    reference_file = tmp_path / "checkpoint" / "reference" / "model.safetensors"
    assert (tmp_path / "checkpoint" / "reference" / "tokenizer.json").is_file()  # a sub-model loads on its own
    inode = reference_file.stat().st_ino
    set_seed(5)
    run.save(
        model, Saved(), {"coefficient": 0.5}, models={"reference": model}, frozen=["reference"]
    )  # linked, not rewritten
    expected = torch.rand(3)
    assert reference_file.stat().st_ino == inode  # the frozen reference is the same file, not a new copy
    assert not (tmp_path / "checkpoint.tmp").exists() and not (tmp_path / "checkpoint.old").exists()

    resumed = runs.Run(args, "test")
    assert resumed.resuming and resumed.source("gpt2") == str(tmp_path / "checkpoint")
    assert resumed.restore() == {"coefficient": 0.5}
    assert (resumed.step, resumed.curves, resumed.initial, resumed.final) == (3, run.curves, run.initial, run.final)
    assert resumed.counters["tokens"] == 10 and torch.equal(torch.rand(3), expected)


def test_fused_adamw_makes_the_default_update_and_resumes_its_state():
    """The baselines' AdamW takes PyTorch's fused kernel on CPU: the same parameters as AdamW's default
    after a few steps (float rounding apart), and it continues from a default AdamW's saved state."""
    plain_model, fused_model = tiny_causal(), tiny_causal()
    plain = torch.optim.AdamW(plain_model.parameters(), lr=1e-2, eps=1e-5)
    fused = optimization.fused_adamw(fused_model.parameters(), lr=1e-2, eps=1e-5)
    assert fused.defaults["fused"] is True and not plain.defaults["fused"]
    generator = torch.Generator().manual_seed(0)
    for step in range(4):
        if step == 2:  # a checkpoint of the default optimizer, resumed by the fused one
            fused.load_state_dict(copy.deepcopy(plain.state_dict()))  # as from a file: no shared tensors
            fused_model.load_state_dict(plain_model.state_dict())
        for a, b in zip(plain_model.parameters(), fused_model.parameters(), strict=True):
            a.grad = torch.randn(a.shape, generator=generator)
            b.grad = a.grad.clone()
        plain.step()
        fused.step()
    for a, b in zip(plain_model.parameters(), fused_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert not torch.equal(plain_model.transformer.wte.weight, tiny_causal().transformer.wte.weight)  # it trained
