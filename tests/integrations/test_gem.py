"""lm_gym.integrations.gem: GEM (gem-llm 0.1) plays lm-gym tasks as the local envs play them.

Episodes run through ``gem.make``, ``gem.make_vec`` (both vector envs) and GEM's wrappers, and are
compared with fresh ``gymnasium.make`` envs replaying the same seeds and replies, read through
lm-gym's chat view. GEM 0.1 ships no env checker, so these plays are the check.
"""

import gem
import gymnasium
import pytest
import user_tasks  # noqa: F401  (registers user/CountUp-v0 and user/Echo-v0)
from gem.envs.registration import ENV_REGISTRY
from gem.wrappers.wrapper_factory import get_wrapper_fns
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import PreTrainedTokenizerFast

from lm_gym.core.chat import ChatTranscript
from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.integrations.chat_session import CHARS_CUT_KEY, json_info
from lm_gym.integrations.gem import OBSERVATION_KEY, LmGymEnv, register_all

WORDLE = "lm_gym/Wordle-v0"
COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})
WORDLE_REPLIES = ["crane", "xylophonezzzzzzz" * 8, "moist", "pious", "  CLOUD ", "fghij", "tempo"]


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_all()


def local_episodes(env_id, env_kwargs, replies, seed=None, index=None, episodes=1):
    """``episodes`` episodes of a fresh local env (the first reset with ``seed`` / ``index``, the others
    with no arguments, as GEM's autoreset): per episode, the observation GEM should give at reset and,
    per step, (GEM's observation, reward, terminated, truncated, JSON info with the lm-gym observation)."""
    env = gymnasium.make(env_id, **env_kwargs)
    played = []
    for episode in range(episodes):
        if episode == 0:
            observation, _ = env.reset(seed=seed, options=None if index is None else {"index": index})
        else:
            observation, _ = env.reset()
        chat = ChatTranscript.start(env, observation)
        start = "\n\n".join(message["content"] for message in chat.messages)
        steps = []
        for reply in replies:
            action = reply[: env.action_space.max_length]  # the adapter's rule for over-long replies
            observation, reward, terminated, truncated, info = env.step(action)
            before = len(chat.messages)
            chat.record(action, observation, terminated, truncated)
            answer = chat.messages[before + 1]["content"] if len(chat.messages) > before + 1 else ""
            steps.append((answer, reward, terminated, truncated, {**json_info(info), OBSERVATION_KEY: observation}))
            if terminated or truncated:
                break
        played.append((start, steps))
    return played


def gem_episode(env, replies, **reset):
    start, _ = env.reset(**reset)
    steps = []
    for reply in replies:
        observation, reward, terminated, truncated, info = env.step(reply)
        steps.append((observation, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return start, steps


def assert_same(local, played):
    (local_start, local_steps), (start, steps) = local, played
    assert start == local_start
    assert len(steps) == len(local_steps)
    for (observation, reward, terminated, truncated, info), expected in zip(steps, local_steps):
        assert (observation, terminated, truncated) == (expected[0], expected[2], expected[3])
        assert reward == pytest.approx(expected[1])
        assert {key: info[key] for key in expected[4]} == expected[4]


def test_register_all_registers_every_task_once():
    assert {WORDLE, COMMONGEN[0], "user/CountUp-v0", "user/Echo-v0"} <= set(ENV_REGISTRY)
    assert register_all() == []  # again: nothing new, no error
    spec = ENV_REGISTRY.pop(WORDLE)
    gem.register(WORDLE, "gem.envs.game_env.wordle:WordleEnv")
    try:
        with pytest.raises(ConfigurationError, match="GEM already has an environment 'lm_gym/Wordle-v0'"):
            register_all()
    finally:
        ENV_REGISTRY[WORDLE] = spec


@pytest.mark.parametrize("seed", [0, 7, 123])
def test_a_wordle_episode_is_the_local_envs(seed):
    env = gem.make(WORDLE)
    played = gem_episode(env, WORDLE_REPLIES, seed=seed)
    assert_same(local_episodes(WORDLE, {}, WORDLE_REPLIES, seed=seed)[0], played)
    start, steps = played
    assert start.startswith(env.task.chat_system_message() + "\n\nWordle:")
    assert steps[1][4][CHARS_CUT_KEY] == len(WORDLE_REPLIES[1]) - env.task.action_space.max_length
    assert steps[0][0] and len(steps[0][0]) == 5  # the feedback of "crane", as a chat's user message
    assert steps[-1][2] and steps[-1][0] == ""  # the episode ended: no answer


def test_the_constructor_seed_starts_the_stream_and_reset_seeds_are_respected():
    env = gem.make(WORDLE, seed=11)
    local = local_episodes(WORDLE, {}, ["crane", "moist"], seed=11, episodes=3)
    for expected in local:  # reset() with no seed: the constructor's seed, then the env's own stream
        assert_same(expected, gem_episode(env, ["crane", "moist"]))
    feedback = {gem_episode(env, ["crane"], seed=seed)[1][0][0] for seed in range(8)}
    assert len(feedback) > 1
    assert gem_episode(env, ["crane"], seed=3) == gem_episode(gem.make(WORDLE), ["crane"], seed=3)


@pytest.mark.parametrize("async_mode", [False, True])
def test_vector_envs_play_copy_i_from_seed_plus_i(async_mode):
    """make_vec's copies: copy i starts at seed + i; GEM's autoreset (SameStep) goes on with the copy's stream."""
    env_id, kwargs = COMMONGEN
    envs = gem.make_vec([env_id] * 3, async_mode=async_mode, seed=20, **kwargs)
    replies = ["a dog runs in the park", "x" * 3000, "the girl watches a match"]
    observations, _ = envs.reset()
    rounds = [envs.step(replies) for _ in range(2)]
    for i in range(3):
        local = local_episodes(env_id, kwargs, [replies[i]], seed=20 + i, episodes=3)
        assert observations[i] == local[0][0]
        for round_index, (next_observations, rewards, terminations, truncations, infos) in enumerate(rounds):
            (_, [(_, reward, terminated, truncated, info)]) = local[round_index]
            assert rewards[i] == pytest.approx(reward)
            assert (terminations[i], truncations[i]) == (terminated, truncated)
            assert next_observations[i] == local[round_index + 1][0]  # the autoreset's next episode
            assert infos[i]["prompt"] == local[round_index + 1][0].rpartition("\n\n")[2]  # ... and its info
    assert envs.reset(seed=5)[0][2] == local_episodes(env_id, kwargs, [], seed=7)[0][0]


def test_the_wrappers_build_the_chat():
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    tokenizer.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    wrappers = get_wrapper_fns("concat_chat,episode_tracking", tokenizer=tokenizer)
    envs = gem.make_vec([WORDLE] * 2, wrappers=wrappers, seed=4)
    observations, _ = envs.reset()
    replies = [["crane", "slate"], ["moist", "pious"]]
    for round_replies in replies:
        observations, rewards, _, _, infos = envs.step(round_replies)
    for i in range(2):
        (start, steps) = local_episodes(WORDLE, {}, [reply[i] for reply in replies], seed=4 + i)[0]
        messages = [{"role": "user", "content": start}]
        for reply, step in zip([reply[i] for reply in replies], steps):
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": step[0]}]
        assert observations[i] == tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert infos[i]["cumulative_rewards"] == pytest.approx(sum(step[1] for step in steps))
        assert infos[i]["step_counter"] == 2


def test_a_single_turn_task_by_seed_and_by_index():
    env_id, kwargs = COMMONGEN
    env = gem.make(env_id, **kwargs)
    for index in (0, 4):
        for reply in ("a dog runs in the park", ""):
            played = gem_episode(env, [reply], idx=index)
            assert_same(local_episodes(env_id, kwargs, [reply], index=index)[0], played)
            assert played[1][0][4]["prompt"] == env.task.samples[index].prompt
    played = gem_episode(env, ["a dog"], seed=9)
    assert_same(local_episodes(env_id, kwargs, ["a dog"], seed=9)[0], played)


def test_the_user_tasks_are_the_local_envs():
    env = gem.make("user/CountUp-v0")
    for seed in (0, 1, 2):
        assert_same(local_episodes("user/CountUp-v0", {}, ["4", "5", "nine"], seed=seed)[0],
                    gem_episode(env, ["4", "5", "nine"], seed=seed))  # fmt: skip
    echo = gem.make("user/Echo-v0", num_samples=8)
    for index in (0, 5):
        played = gem_episode(echo, ["word5"], idx=index)
        assert_same(local_episodes("user/Echo-v0", {"num_samples": 8}, ["word5"], index=index)[0], played)


def test_random_actions_and_spawn():
    env = gem.make(WORDLE, seed=2)
    env.reset()
    action = env.sample_random_action()
    assert isinstance(action, str) and len(action) <= env.task.action_space.max_length
    env.step(action)
    child = env.spawn(num_answers=1)
    assert child.seed == 2 and len(child.task.vocabulary.answers) == 1
    child.reset()
    assert child.step(child.task.vocabulary.answers[0])[2]  # the only answer solves it
    with pytest.raises(ConfigurationError, match="same_state=True"):
        env.spawn(same_state=True)


def test_bad_actions_and_bad_arguments_are_refused_as_the_env_refuses_them():
    env = gem.make(WORDLE)
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="must be a str"):
        env.step(["crane"])
    assert env.step("zzzzz")[1] == -1.0  # not a word: the task's own penalty, the episode goes on
    single = gem.make(COMMONGEN[0], **COMMONGEN[1])
    single.reset(idx=0)
    single.step("a dog")
    with pytest.raises(ResetNeededError):
        single.step("again")
    with pytest.raises(ResetNeededError):
        gem.make(WORDLE).step("crane")
    with pytest.raises(ConfigurationError, match="seed must be None or a non-negative int"):
        LmGymEnv(WORDLE, seed=-1)
    with pytest.raises(ConfigurationError, match="unknown reset option"):
        env.reset(idx=1)  # Wordle has no samples
    with pytest.raises(ConfigurationError, match="utterance level"):
        gem.make(WORDLE, action_level="token")
