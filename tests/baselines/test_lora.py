"""LoRA (peft) in the baselines (``lm_toolkit.lora``): the reference as the adapters switched off, gradient
checkpointing, checkpoints that resume, LoRA PPO and GRPO learning on IMDB with a tiny Llama, the evaluation
command on LoRA checkpoints (merged or not), and bad LoRA flags named."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import load_baseline
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from benchmark.__main__ import main as benchmark_main
from lm_toolkit import lora, models, rollouts, tasks
from lm_toolkit.policy_gradient import TurnBatch

EOS, PAD = 49, 0
LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
}
IMDB = {"env_id": "lm_gym/IMDB-v0", "env_kwargs": '{"source": "synthetic"}'}
LENGTHS = tasks.Lengths(max_prompt_length=8, max_new_tokens=6, min_new_tokens=2)
QUERIES = [[5, 6, 7], [8, 9], [5, 6, 7], [10, 11, 12, 13]]


class Tokenizer:
    """What the toolkit reads of a tokenizer: its special tokens and its length (the tiny models' vocabulary)."""

    bos_token_id = eos_token_id = EOS
    pad_token_id = PAD

    def __len__(self) -> int:
        return 50


def lora_flags(**flags):
    """The LoRA flags of a run, as the baselines' ``Args`` hold them."""
    settings = {"lora_r": 4, "lora_alpha": None, "lora_dropout": None, "lora_target_modules": ()}
    settings |= {"bf16": False, "gradient_checkpointing": False, "seed": 1}
    return SimpleNamespace(**{**settings, **flags})


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        **{key: value for key, value in LLAMA.items() if key != "model_type"},
        vocab_size=50,
        bos_token_id=EOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    return LlamaForCausalLM(config).eval()


def with_trained_adapters(model, **flags):
    """``model`` with LoRA adapters whose B matrices are not zero: the adapters change what it computes."""
    policy = lora.add_adapters(model, lora_flags(**flags)).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        for name, parameter in policy.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5)
    return policy


def responses_of(actor: rollouts.TextPolicy) -> TurnBatch:
    torch.manual_seed(2)
    samples = actor.sample(QUERIES)
    turns = [
        rollouts.Turn(0, query, response, log_probs, None, None, 0.0, True)
        for query, response, log_probs in zip(QUERIES, samples.responses, samples.log_probs, strict=True)
    ]
    return TurnBatch.of(turns, PAD, torch.device("cpu"))


def actor_of(model) -> rollouts.TextPolicy:
    return rollouts.TextPolicy(model, Tokenizer(), LENGTHS)


def test_the_adapter_off_reference_is_a_frozen_copy_of_the_base_bit_for_bit():
    base = tiny_llama()
    frozen = models.frozen_copy(base)  # the reference a full fine-tune keeps
    policy = with_trained_adapters(base)
    reference = lora.reference_of(policy)
    assert isinstance(reference, lora.AdapterOff)
    actor = actor_of(policy)
    batch = responses_of(actor)
    rows = batch.rows(np.arange(len(QUERIES)))
    with torch.no_grad():
        off = actor.score(*rows, model=reference).log_probs
        copied = actor.score(*rows, model=frozen).log_probs
        own = actor.score(*rows).log_probs
    assert torch.equal(off, copied)  # the same weights, the same computation
    assert not torch.allclose(own, copied)  # the adapters are back on after the reference's pass
    assert torch.allclose(own, batch.old_log_probs, atol=1e-5)  # and the policy's scores are its samples'
    # before training too: fresh adapters (B = 0) compute the base model
    fresh = lora.add_adapters(tiny_llama(), lora_flags()).eval()
    with torch.no_grad():
        assert torch.equal(actor_of(fresh).score(*rows).log_probs, copied)
    # peft's default for Llama: q_proj (64 -> 64) and v_proj (64 -> 32) of each layer, A (r x in) and B (out x r)
    assert sum(p.numel() for p in lora.trainable_parameters(policy)) == 2 * (4 * (64 + 64) + 4 * (64 + 32))


def test_gradient_checkpointing_gives_the_cached_pass_s_log_probs_values_and_gradients():
    def scored(checkpointing: bool):
        policy = with_trained_adapters(tiny_llama())
        if checkpointing:
            lora.enable_gradient_checkpointing(policy)
        torch.manual_seed(3)
        value_head = torch.nn.Linear(64, 1)
        actor = actor_of(policy)
        batch = responses_of(actor)
        scores = actor.score(*batch.rows(np.arange(len(QUERIES))), value_head=value_head)
        loss = (scores.log_probs * batch.response_mask).sum() + (scores.values * batch.response_mask).sum()
        loss.backward()
        grads = [p.grad for p in lora.trainable_parameters(policy, value_head)]
        return scores, grads, batch.response_mask.bool(), policy

    plain, plain_grads, mask, _ = scored(False)
    checkpointed, grads, _, policy = scored(True)
    assert torch.allclose(checkpointed.log_probs[mask], plain.log_probs[mask], atol=1e-5)
    assert torch.allclose(checkpointed.values[mask], plain.values[mask], atol=1e-5)
    assert all(torch.allclose(g, p, atol=1e-5) for g, p in zip(grads, plain_grads, strict=True))
    assert not policy.training and policy.get_base_model().is_activation_checkpointing  # eval mode kept


def test_the_nlpo_mask_snapshot_is_a_frozen_second_adapter():
    policy = with_trained_adapters(tiny_llama())
    snapshot = lora.snapshot_of(policy, "mask_model")
    actor = actor_of(policy)
    batch = responses_of(actor)
    rows = batch.rows(np.arange(len(QUERIES)))
    with torch.no_grad():
        before = actor.score(*rows).log_probs
        assert torch.equal(actor.score(*rows, model=snapshot).log_probs, before)  # a copy of the policy's adapter
        for name, parameter in policy.named_parameters():
            if "lora_B.default" in name:
                parameter.add_(0.3)
        after = actor.score(*rows).log_probs
        assert torch.equal(actor.score(*rows, model=snapshot).log_probs, before)  # frozen: the old policy
        lora.refresh_snapshot(snapshot, policy)
        assert torch.equal(actor.score(*rows, model=snapshot).log_probs, after)
    trainable = {name for name, p in policy.named_parameters() if p.requires_grad}
    assert trainable and all(".default." in name for name in trainable)  # only the policy's adapter trains


def test_a_lora_checkpoint_saves_the_adapters_and_the_base_and_loads_merged_or_not(tmp_path):
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_layer=1, n_embd=32, n_head=2, eos_token_id=EOS))
    policy = with_trained_adapters(model.eval())  # GPT-2: peft's default c_attn, a Conv1D
    lora.save_model(policy, tmp_path / "first")
    lora.save_model(policy, tmp_path / "second", previous=tmp_path / "first")
    base = tmp_path / "second" / models.BASE_MODEL / "model.safetensors"
    assert base.stat().st_ino == (tmp_path / "first" / models.BASE_MODEL / "model.safetensors").stat().st_ino
    assert not any("lora" in name for name in load_file(base))
    assert models.is_adapter_checkpoint(tmp_path / "second")
    merged = models.load_policy(str(tmp_path / "second"), {}, Tokenizer(), seed=0)
    unmerged = models.load_policy(str(tmp_path / "second"), {}, Tokenizer(), seed=0, merge_adapters=False)
    assert not lora.is_peft(merged) and lora.is_peft(unmerged)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        expected = policy(input_ids=ids).logits
        assert torch.equal(unmerged.eval()(input_ids=ids).logits, expected)
        assert torch.allclose(merged.eval()(input_ids=ids).logits, expected, atol=1e-5)


def test_a_bfloat16_base_keeps_float32_adapters():
    """What ``--bf16`` with LoRA loads on CUDA (here on the CPU): the frozen base in bfloat16, the adapters in
    float32, and a pass under autocast gives finite log-probs with gradients for the adapters alone."""
    base = models.load_policy(None, LLAMA, Tokenizer(), seed=0, dtype=torch.bfloat16)
    policy = lora.add_adapters(base, lora_flags()).eval()
    dtypes = {p.dtype for name, p in policy.named_parameters() if "lora_" not in name}
    assert dtypes == {torch.bfloat16}
    assert {p.dtype for p in lora.trainable_parameters(policy)} == {torch.float32}
    actor = actor_of(policy)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        batch = responses_of(actor)
        scores = actor.score(*batch.rows(np.arange(len(QUERIES)))).log_probs
    (scores * batch.response_mask).sum().backward()
    assert torch.isfinite(scores[batch.response_mask.bool()]).all()
    assert all(p.grad is not None for p in lora.trainable_parameters(policy))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"lora_r": -1}, "--lora-r must be an int >= 0"),
        ({"lora_alpha": 16.0}, "--lora-alpha must be left unset without --lora-r > 0"),
        ({"lora_dropout": 0.1}, "--lora-dropout must be left unset without --lora-r > 0"),
        ({"lora_target_modules": ("q_proj",)}, "--lora-target-modules must be left unset without --lora-r > 0"),
        ({"lora_r": 4, "lora_alpha": 0.0}, "--lora-alpha must be > 0"),
        ({"lora_r": 4, "lora_dropout": 1.0}, r"--lora-dropout must be in \[0, 1\)"),
        ({"lora_r": 4, "lora_dropout": -0.1}, r"--lora-dropout must be in \[0, 1\)"),
        ({"lora_r": 4, "lora_target_modules": ("q_proj", "attention")}, "--lora-target-modules: the llama model"),
    ],
)
@pytest.mark.parametrize("script", ["ppo", "grpo", "sft"])
def test_bad_lora_arguments_are_named(script, flags, message, tmp_path):
    baseline = load_baseline(script)
    args = baseline.Args(**IMDB, model_config=json.dumps(LLAMA), out_dir=str(tmp_path), eval_episodes=0, **flags)
    with pytest.raises(ValueError, match=message):
        baseline.main(args)


def test_the_error_names_the_layers_a_target_may_be():
    with pytest.raises(ValueError, match="has no layer named qkv that LoRA can adapt; its layers: .*q_proj"):
        lora.add_adapters(tiny_llama(), lora_flags(lora_target_modules=("qkv",)))


def test_resuming_a_full_run_with_lora_is_refused(tmp_path):
    grpo = load_baseline("grpo")
    settings = {**IMDB, "model_config": json.dumps(LLAMA), "out_dir": str(tmp_path), "eval_episodes": 0}
    settings |= {"num_prompts": 2, "group_size": 2, "num_minibatches": 1, "iterations": 1}
    grpo.main(grpo.Args(**settings))
    with pytest.raises(ValueError, match="--resume: .* holds a full model; resume with the --lora-r"):
        grpo.main(grpo.Args(**{**settings, "iterations": 2}, resume=True, lora_r=4))


def ppo_run(out_dir, script="ppo", **overrides):
    baseline = load_baseline(script)
    settings = {**IMDB, "model_config": json.dumps(LLAMA), "out_dir": str(out_dir), "lora_r": 8}
    settings |= {"num_envs": 4, "num_minibatches": 2, "update_epochs": 1, "iterations": 3, "anneal_lr": False}
    settings |= {"eval_episodes": 4, "eval_batch_size": 4, "eval_every": 0, "torch_threads": 1}
    return baseline.main(baseline.Args(**{**settings, **overrides}))


TRAINING_KEYS = ("mean_return", "kl", "kl_coef", "pg_loss", "vf_loss", "entropy", "approx_kl", "clipfrac")


@pytest.mark.parametrize(
    ("script", "flags"),
    [
        ("ppo", {"gradient_checkpointing": True}),
        ("nlpo", {"mask_update_every": 2}),  # the mask model's adapter saved and restored too
    ],
)
def test_a_resumed_lora_run_equals_an_uninterrupted_one(script, flags, tmp_path):
    whole = ppo_run(tmp_path / "whole", script, **flags)
    ppo_run(tmp_path / "resumed", script, **flags, iterations=2)
    resumed = ppo_run(tmp_path / "resumed", script, **flags, resume=True)
    for row, other in zip(whole["curves"], resumed["curves"], strict=True):
        assert {key: row[key] for key in TRAINING_KEYS} == {key: other[key] for key in TRAINING_KEYS}
    assert resumed["final_eval"] == whole["final_eval"]
    checkpoint = tmp_path / "whole" / "checkpoint"
    assert (checkpoint / "adapter_config.json").is_file() and not (checkpoint / "reference").exists()
    adapters = [load_file(tmp_path / run / "checkpoint" / "adapter_model.safetensors") for run in ("whole", "resumed")]
    assert adapters[0].keys() == adapters[1].keys()
    assert all(torch.equal(adapters[0][name], adapters[1][name]) for name in adapters[0])
    assert any(adapters[0][name].abs().sum() > 0 for name in adapters[0] if "lora_B" in name)  # they trained


def test_a_lora_checkpoint_evaluates_as_its_run_did_merged_or_not(tmp_path):
    trained = ppo_run(tmp_path / "ppo", iterations=1)
    checkpoint = str(tmp_path / "ppo" / "checkpoint")
    flags = ["--env-id", IMDB["env_id"], "--env-kwargs", IMDB["env_kwargs"], "--episodes", "4", "--batch-size", "4"]
    results = {}
    for name, merge in (("unmerged", []), ("merged", ["--merge-lora"])):
        out = tmp_path / name
        assert benchmark_main(["evaluate", "--out", str(out), "--model", checkpoint, *flags, *merge]) == 0
        results[name] = json.loads((out / "lm_gym_IMDB-v0" / "result.json").read_text())
    assert results["unmerged"]["final_eval"] == trained["final_eval"]  # the run's sampler, episodes and draws
    assert results["merged"]["final_eval"]["mean_return"] == pytest.approx(trained["final_eval"]["mean_return"])
    assert results["merged"]["config"]["merge_lora"] and not results["unmerged"]["config"]["merge_lora"]
    digests = {results[name]["config"]["model_digest"] for name in results}
    assert len(digests) == 1 and None not in digests  # the adapters' and the base's weights


@pytest.fixture(scope="module")
def imdb_warm_start(tmp_path_factory):
    """A tiny Llama cloned on IMDB's synthetic reviews (sft.py, every weight): text whose sentiment RL can move."""
    sft = load_baseline("sft")
    out_dir = tmp_path_factory.mktemp("sft-imdb")
    args = sft.Args(
        **IMDB, model_config=json.dumps(LLAMA), out_dir=str(out_dir), max_steps=150, learning_rate=3e-3,
        batch_size=32, eval_episodes=0, torch_threads=1,
    )  # fmt: skip
    sft.main(args)
    return out_dir / "checkpoint"


@pytest.mark.slow
@pytest.mark.parametrize("script", ["ppo", "grpo"])
def test_lora_ppo_and_grpo_learn_on_imdb(script, imdb_warm_start, tmp_path):
    """LoRA adapters (r 16 on every linear layer) on the warm start move IMDB's sentiment reward up: 0.52 to 0.83
    (PPO) and 0.62 (GRPO) in 30 iterations. PPO's returns undiscounted (gamma = lambda = 1): the value head
    learns through the adapters only, and with GAE's default 0.99 x 0.95 the early tokens of a 48-token
    review get little of the reward at its end (it did not learn in 30 iterations)."""
    baseline = load_baseline(script)
    settings = {**IMDB, "model_config": json.dumps(LLAMA), "out_dir": str(tmp_path), "init_from": str(imdb_warm_start)}
    settings |= {"lora_r": 16, "lora_target_modules": ("all-linear",), "iterations": 30, "learning_rate": 1e-2}
    settings |= {"update_epochs": 2, "num_minibatches": 4, "eval_episodes": 32, "eval_batch_size": 32}
    settings |= {"eval_every": 0, "torch_threads": 1}
    if script == "ppo":
        settings |= {"num_envs": 32, "kl_coef": 0.0, "kl_target": None, "gamma": 1.0, "gae_lambda": 1.0}
    else:
        settings |= {"num_prompts": 16, "group_size": 4, "beta": 0.0}
    result = baseline.main(baseline.Args(**settings))
    start, final = result["initial_eval"]["mean_return"], result["final_eval"]["mean_return"]
    assert final > start + 0.05, (start, final)
    assert not (tmp_path / "checkpoint" / "model.safetensors").exists()  # the adapters, not a copy of the model


def test_ippo_trains_each_agent_s_adapters_and_resumes(tmp_path):
    pytest.importorskip("pettingzoo")
    ippo = load_baseline("ippo")
    gpt2 = {"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 1024}
    settings = {"env_id": "lm_gym/VisDial-v0", "model_config": json.dumps(gpt2), "out_dir": str(tmp_path)}
    settings |= {"lora_r": 4, "num_envs": 4, "iterations": 2, "update_epochs": 1, "num_minibatches": 1}
    settings |= {"eval_episodes": 4, "eval_batch_size": 4, "eval_every": 0, "max_cycles": 8}
    ippo.main(ippo.Args(**settings))
    checkpoint = tmp_path / "checkpoint"
    for folder in (checkpoint, checkpoint / "answerer"):  # the questioner's at the root, the answerer's by name
        assert models.is_adapter_checkpoint(folder) and (folder / models.BASE_MODEL / "model.safetensors").is_file()
    assert not any(path.name.endswith("-reference") for path in checkpoint.iterdir())  # the adapters off
    resumed = ippo.main(ippo.Args(**{**settings, "iterations": 3, "resume": True}))
    assert [row["step"] for row in resumed["curves"]] == [1, 2, 3]
