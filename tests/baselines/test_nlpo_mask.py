"""NLPO's top-p mask: its fast paths give what the plain computation gives (same masks, same tokens
from the same random numbers, same log-probs), and it refreshes the mask model on schedule."""

import copy

import pytest
import torch
from conftest import load_baseline
from transformers import GPT2Config, GPT2LMHeadModel

from lm_toolkit import sampling, tasks

EOS, PAD, VOCAB = 49, 0, 50
LENGTHS = tasks.Lengths(max_prompt_length=8, max_new_tokens=10, min_new_tokens=3)
QUERIES = [[5, 6, 7, 8], [9, 10], [5, 6, 7, 8], [11, 12, 13]]


class Tokenizer:
    eos_token_id, pad_token_id = EOS, PAD


@pytest.fixture(scope="module")
def nlpo():
    return load_baseline("nlpo")


def tiny_policy(seed=0):
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=VOCAB, n_layer=2, n_embd=32, n_head=4, n_positions=64, eos_token_id=EOS)
    return GPT2LMHeadModel(config).eval()


def sorted_top_p_keep(log_probs, top_p):
    """The plain definition (RL4LMs' top-p): sort the row, keep while the mass before the token is below top_p."""
    sorted_log_probs, order = log_probs.float().sort(dim=-1, descending=True)
    probs = sorted_log_probs.softmax(-1)
    keep_sorted = probs.cumsum(-1) - probs < top_p
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


@pytest.mark.parametrize("scale", [0.05, 0.5, 2.0, 8.0, 40.0])
@pytest.mark.parametrize("top_p", [0.1, 0.5, 0.9, 0.99])
def test_the_sort_free_top_p_keeps_the_sorted_set(nlpo, scale, top_p):
    generator = torch.Generator().manual_seed(int(scale * 100) + int(top_p * 1000))
    logits = torch.randn(64, 4000, generator=generator) * scale
    logits[:, 3] = float("-inf")  # EOS before min_new_tokens
    logits[5, 100:] = float("-inf")  # a row with few possible tokens
    log_probs = logits.log_softmax(-1)
    keep = nlpo.top_p_keep(log_probs, top_p)
    assert torch.equal(keep, sorted_top_p_keep(log_probs, top_p))
    assert keep.any(-1).all() and not keep[:, 3].any()


def test_the_sort_free_top_p_on_a_flat_row_and_a_one_hot_row(nlpo):
    """One bin holds every token of a flat row; a one-hot row keeps its token alone."""
    logits = torch.stack([torch.zeros(50), torch.full((50,), -30.0)])
    logits[1, 7] = 0.0
    log_probs = logits.log_softmax(-1)
    for top_p in (0.2, 0.9):
        keep, expected = nlpo.top_p_keep(log_probs, top_p), sorted_top_p_keep(log_probs, top_p)
        assert torch.equal(keep[1], expected[1])
        assert keep[0].sum() == expected[0].sum()  # ties: which of the equal tokens is either sort's choice


def masked_sample(nlpo, policy, mask_model, same_as_policy, uniforms, top_p=0.8):
    mask = nlpo.TopPMask(mask_model, Tokenizer, LENGTHS.min_new_tokens, top_p, 5, same_as_policy)
    samples = sampling.sample(policy, QUERIES, LENGTHS, eos_id=EOS, pad_id=PAD, hook=mask, uniforms=uniforms)
    return samples, mask


def test_a_mask_model_equal_to_the_policy_is_not_run_and_gives_the_same_samples(nlpo):
    policy = tiny_policy()
    mask_model = copy.deepcopy(policy)
    uniforms = torch.rand(len(QUERIES), LENGTHS.max_new_tokens, generator=torch.Generator().manual_seed(3))
    plain, plain_mask = masked_sample(nlpo, policy, mask_model, False, uniforms)

    def not_called(*args, **kwargs):
        raise AssertionError("the mask model ran although it equals the policy")

    mask_model.forward = not_called
    fast, fast_mask = masked_sample(nlpo, policy, mask_model, True, uniforms)
    assert fast.responses == plain.responses
    for a, b in zip(fast.log_probs, plain.log_probs, strict=True):
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b), rtol=0, atol=1e-5)
    for a, b in zip(fast.hook_rows, plain.hook_rows, strict=True):
        assert torch.equal(a, b)  # the same allowed sets, bit for bit
    assert fast_mask.vocab_size == plain_mask.vocab_size == VOCAB
    kept = nlpo.unpack_bits(torch.stack([row[0] for row in fast.hook_rows]), VOCAB)
    assert 1 < int(kept.sum(-1).min()) and int(kept.sum(-1).max()) < VOCAB  # a real restriction


def test_a_mask_model_that_differs_restricts_to_its_own_top_p(nlpo):
    policy, mask_model = tiny_policy(0), tiny_policy(1)
    uniforms = torch.rand(len(QUERIES), LENGTHS.max_new_tokens, generator=torch.Generator().manual_seed(4))
    samples, _ = masked_sample(nlpo, policy, mask_model, False, uniforms)
    own, _ = masked_sample(nlpo, policy, copy.deepcopy(policy), True, uniforms)
    assert samples.responses != own.responses or any(
        not torch.equal(a, b) for a, b in zip(samples.hook_rows, own.hook_rows, strict=True)
    )
    for response, rows in zip(samples.responses, samples.hook_rows, strict=True):  # every token in its set
        allowed = nlpo.unpack_bits(rows, VOCAB)
        assert all(bool(allowed[t, token]) for t, token in enumerate(response))


def test_refresh_refreshes_on_schedule_and_knows_when_the_models_are_equal(nlpo):
    policy, mask_model = tiny_policy(0), tiny_policy(1)
    mask = nlpo.TopPMask(mask_model, Tokenizer, 0, 0.9, 3, same_as_policy=False)
    for iteration, refreshed in ((1, False), (2, False), (3, True), (4, False), (6, True)):
        with torch.no_grad():
            next(policy.parameters()).add_(0.01)  # the update of this iteration
        mask.refresh(iteration, policy)
        equal = all(torch.equal(a, b) for a, b in zip(policy.state_dict().values(), mask_model.state_dict().values()))
        assert mask.same_as_policy == refreshed == equal, iteration
