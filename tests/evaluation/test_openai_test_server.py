"""The OpenAI-compatible test server itself, in this process (FastAPI's test client, no socket): the API's
replies, its sampling, its chat prompt, its fault schedule and its refusals."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402
from openai_servers import save_tiny_model  # noqa: E402

from benchmark.evaluation.test_server import LocalModel, build_app, main, parse_faults  # noqa: E402

NAME = "tiny"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> LocalModel:
    return LocalModel(save_tiny_model(tmp_path_factory.mktemp("tiny-gpt2")))


def served(model: LocalModel, faults: str = "", **settings) -> TestClient:
    return TestClient(build_app(model, NAME, parse_faults(faults), **settings))


def complete(client: TestClient, **body):
    return client.post("/v1/completions", json={"model": NAME, "prompt": "the movie was", "max_tokens": 6, **body})


def test_it_lists_its_model_and_answers_in_the_apis_shapes(model):
    client = served(model)
    assert [entry["id"] for entry in client.get("/v1/models").json()["data"]] == [NAME]
    reply = complete(client, seed=3).json()
    assert reply["object"] == "text_completion" and reply["model"] == NAME
    assert set(reply["choices"][0]) == {"index", "text", "logprobs", "finish_reason"}
    assert reply["usage"]["completion_tokens"] <= 6
    messages = [{"role": "user", "content": "the movie was"}]
    chat = client.post("/v1/chat/completions", json={"model": NAME, "messages": messages, "max_tokens": 4}).json()
    assert chat["object"] == "chat.completion" and chat["choices"][0]["message"]["role"] == "assistant"


def test_a_seed_gives_the_same_text_and_another_seed_another(model):
    client = served(model)
    texts = [complete(client, seed=seed, temperature=1.0).json()["choices"][0]["text"] for seed in (1, 1, 2)]
    assert texts[0] == texts[1] != texts[2]


def test_a_stop_string_cuts_the_text(model):
    client = served(model)
    text = complete(client, seed=5, max_tokens=12).json()["choices"][0]["text"]
    stop = text[len(text) // 2 :][:2]
    choice = complete(client, seed=5, max_tokens=12, stop=[stop]).json()["choices"][0]
    assert choice["text"] == text[: text.index(stop)] and choice["finish_reason"] == "stop"


def test_the_chat_prompt_is_the_tokenizers_template_or_the_messages_joined(model):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert model.chat_prompt(messages) == "system: Be brief.\nuser: Hi\nassistant:"
    model.tokenizer.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>"
    try:
        assert model.chat_prompt(messages) == "<system>Be brief.<user>Hi<assistant>"
    finally:
        model.tokenizer.chat_template = None


def test_the_fault_schedule_is_served_in_the_order_the_requests_come(model):
    client = served(model, "429,500*2,malformed,empty", retry_after_s=2.5)
    limited = complete(client)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2.5"
    assert [complete(client).status_code for _ in range(2)] == [500, 500]
    assert complete(client).text.startswith('{"id": "cmpl-broken", "choices": [{"text": ')
    assert complete(client).json()["choices"] == []
    assert complete(client).json()["choices"][0]["text"]  # the schedule is over
    stats = client.get("/stats").json()
    assert stats["completion_requests"] == 6
    assert stats["faults_served"] == {"429": 1, "500": 2, "malformed": 1, "empty": 1, "ok": 1}


def test_a_dropped_connection_ends_the_reply_before_its_body(model):
    client = served(model, "drop")
    with pytest.raises(Exception, match="injected fault: the connection drops"):
        complete(client)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"model": "other"}, 404, "The model `other` does not exist."),
        ({"temperature": 3}, 400, r"temperature must be a number in \[0.0, 2.0\]"),
        ({"max_tokens": 0}, 400, "max_tokens must be a positive integer"),
        ({"n": 2}, 400, "n must be 1"),
        ({"max_tokens": 2000}, 400, "maximum context length is 1024 tokens"),
        ({"prompt": ["a", "b"]}, 400, "prompt must be a string"),
    ],
)
def test_bad_requests_get_the_apis_errors(model, body, status, message):
    reply = complete(served(model), **body)
    assert reply.status_code == status
    assert re.search(message, reply.json()["error"]["message"])


def test_a_key_is_required_when_one_is_set(model):
    client = served(model, api_key="secret")
    assert complete(client).status_code == 401
    assert complete(client, seed=1).json()["error"]["type"] == "AuthenticationError"
    assert client.get("/v1/models", headers={"Authorization": "Bearer secret"}).status_code == 200


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ("drop,teapot", "unknown fault 'teapot'"),
        ("429*0", r"'429\*0' repeats a fault a positive whole number of times"),
    ],
)
def test_a_bad_fault_schedule_names_faults(faults, message):
    with pytest.raises(ValueError, match=f"--faults: {message}"):
        parse_faults(faults)


def test_a_folder_without_a_model_is_refused_naming_model(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--model", str(tmp_path)])
    assert f"--model {tmp_path}: no transformers model there (no config.json)" in capsys.readouterr().err
