"""An OpenAI-compatible server of a local transformers model, with faults on demand.

    python -m benchmark.evaluation.test_server --model DIR [--port 8000] [--served-model-name NAME]
        [--faults "drop,429*2,ok,500,slow,malformed,empty"] [--slow-s 5] [--latency-s 0] [--api-key KEY]

It is written against the OpenAI API, as vLLM's ``vllm serve`` is, and started the same way, so
the evaluation's tests and its docs talk to it as they would to a real server: ``GET /v1/models``,
``POST /v1/chat/completions`` (the tokenizer's chat template applied when it has one, else the
messages joined as ``role: content`` lines) and ``POST /v1/completions``. One request, one sample
(``n`` is 1): sampled with ``temperature`` and ``top_p`` (greedy at temperature 0), at most
``max_tokens`` new tokens, cut at the first ``stop`` string, from torch's generator seeded with the
request's ``seed``, so the same request gives the same text. Requests are taken concurrently and
generated one at a time.

``--faults`` is the fault schedule: the ``i``-th completion request the server receives (retries
count) gets the ``i``-th entry, ``KIND*N`` standing for ``N`` of them; later requests are served
normally. The kinds: ``ok``; ``drop`` (the connection closes before the reply is complete);
``429`` (rate limited; with ``--retry-after-s`` it sends that ``Retry-After``); ``500``; ``slow``
(the reply waits ``--slow-s`` seconds first: a client's timeout is shorter); ``malformed`` (a
reply that is not JSON); ``empty`` (a reply with no choices). ``--latency-s`` delays every reply.

``GET /stats`` tells what the server saw: ``models_requests``, ``completion_requests``,
``max_in_flight`` and ``faults_served`` by kind. It needs fastapi and uvicorn (``pip install "lm-gym[serve]"``).
"""

import argparse
import asyncio
import logging
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAULT_KINDS = ("ok", "drop", "429", "500", "slow", "malformed", "empty")


def parse_faults(spec: str) -> list[str]:
    """The fault schedule ``"drop,429*2,ok"`` as ``["drop", "429", "429", "ok"]``; a bad entry names ``--faults``."""
    schedule = []
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        kind, _, count = entry.partition("*")
        if kind not in FAULT_KINDS:
            raise ValueError(f"--faults: unknown fault {kind!r} in {spec!r}; the kinds are {', '.join(FAULT_KINDS)}")
        if count and not (count.isdigit() and int(count) > 0):
            raise ValueError(f"--faults: {entry!r} repeats a fault a positive whole number of times (KIND*N)")
        schedule += [kind] * (int(count) if count else 1)
    return schedule


class BadRequest(ValueError):
    """A request the server answers with 400 and this message."""


@dataclass(frozen=True)
class SamplingSettings:
    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    stop: tuple[str, ...]


class LocalModel:
    """A transformers model directory (causal or encoder-decoder) and its tokenizer; one generation at a time."""

    def __init__(self, directory: Path):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        config = AutoConfig.from_pretrained(directory)
        self.is_encoder_decoder = bool(config.is_encoder_decoder)
        model_class = AutoModelForSeq2SeqLM if self.is_encoder_decoder else AutoModelForCausalLM
        self.model = model_class.from_pretrained(directory).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(directory)
        self.context_length = None
        if not self.is_encoder_decoder:
            self.context_length = getattr(config, "n_positions", None) or config.max_position_embeddings
        # torch's global generator is seeded per request: one generation at a time keeps a seed's text its own
        self.lock = threading.Lock()

    def chat_prompt(self, messages: list[dict[str, Any]]) -> str:
        if self.tokenizer.chat_template:
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "".join(f"{message['role']}: {message['content']}\n" for message in messages) + "assistant:"

    def generate(self, prompt: str, settings: SamplingSettings) -> tuple[str, str, int, int]:
        """``(text, finish_reason, prompt_tokens, completion_tokens)`` of one sample."""
        import torch

        inputs = self.tokenizer(prompt, return_tensors="pt")
        prompt_tokens = inputs["input_ids"].shape[1]
        if self.context_length and prompt_tokens + settings.max_tokens > self.context_length:
            raise BadRequest(
                f"This model's maximum context length is {self.context_length} tokens; the prompt has "
                f"{prompt_tokens} and max_tokens asks for {settings.max_tokens} more"
            )
        sampling = {"do_sample": False}
        if settings.temperature > 0:
            sampling = {"do_sample": True, "temperature": settings.temperature, "top_p": settings.top_p}
        pad_token_id = self.tokenizer.pad_token_id
        with self.lock, torch.no_grad():
            torch.manual_seed(settings.seed)
            output = self.model.generate(
                **inputs,
                **sampling,
                max_new_tokens=settings.max_tokens,
                pad_token_id=self.tokenizer.eos_token_id if pad_token_id is None else pad_token_id,
            )
        new_tokens = output[0] if self.is_encoder_decoder else output[0, prompt_tokens:]
        text = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        special = set(self.tokenizer.all_special_ids)
        completion_tokens = sum(1 for token in new_tokens.tolist() if token not in special)
        finish_reason = "length" if completion_tokens >= settings.max_tokens else "stop"
        cuts = [text.find(stop) for stop in settings.stop if stop and stop in text]
        if cuts:
            text, finish_reason = text[: min(cuts)], "stop"
        return text, finish_reason, prompt_tokens, completion_tokens


def sampling_settings(body: dict[str, Any]) -> SamplingSettings:
    """A request's sampling settings, with the OpenAI API's defaults; a bad one is a :class:`BadRequest`."""

    def number(name: str, default: float, low: float, high: float) -> float:
        value = body.get(name)
        value = default if value is None else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise BadRequest(f"{name} must be a number in [{low}, {high}], got {value!r}")
        return float(value)

    max_tokens = next(
        (body[name] for name in ("max_completion_tokens", "max_tokens") if body.get(name) is not None), 16
    )
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest(f"max_tokens must be a positive integer, got {max_tokens!r}")
    seed = body.get("seed")
    if seed is None:
        seed = uuid.uuid4().int % 2**32
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise BadRequest(f"seed must be an integer, got {seed!r}")
    stop = body.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else tuple(stop)
    if body.get("n", 1) != 1:
        raise BadRequest("n must be 1 on this test server (one sample a request)")
    top_p = number("top_p", 1.0, 0.0, 1.0)
    if top_p == 0:
        raise BadRequest("top_p must be in (0, 1], got 0")
    return SamplingSettings(number("temperature", 1.0, 0.0, 2.0), top_p, max_tokens, seed, stop)


@dataclass
class ServerStats:
    models_requests: int = 0
    completion_requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    faults_served: Counter = field(default_factory=Counter)


class DroppedConnection(Exception):
    """Raised inside a reply already started: uvicorn then closes the connection mid-reply."""


class QuietDrops(logging.Filter):
    """Leaves uvicorn's log without the traceback of each injected drop."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], DroppedConnection))


def error_body(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def build_app(
    model: LocalModel,
    served_model_name: str,
    faults: list[str],
    *,
    slow_s: float = 5.0,
    latency_s: float = 0.0,
    retry_after_s: float | None = None,
    api_key: str | None = None,
):
    """The FastAPI app serving ``model`` as ``served_model_name``; its ``state.stats`` is a :class:`ServerStats`."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse

    app = FastAPI(title="lm-gym's OpenAI-compatible test server")
    stats = app.state.stats = ServerStats()
    created = int(time.time())

    def unauthorized(request: Request) -> JSONResponse | None:
        if api_key is None or request.headers.get("authorization") == f"Bearer {api_key}":
            return None
        return JSONResponse(error_body("Incorrect API key provided", "AuthenticationError", 401), status_code=401)

    @app.get("/v1/models")
    async def models(request: Request):
        stats.models_requests += 1
        return unauthorized(request) or {
            "object": "list",
            "data": [{"id": served_model_name, "object": "model", "created": created, "owned_by": "lm-gym"}],
        }

    @app.get("/stats")
    async def server_stats():
        return {
            "models_requests": stats.models_requests,
            "completion_requests": stats.completion_requests,
            "max_in_flight": stats.max_in_flight,
            "faults_served": dict(stats.faults_served),
        }

    async def complete(request: Request, chat: bool):
        fault = faults[stats.completion_requests] if stats.completion_requests < len(faults) else "ok"
        stats.completion_requests += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            if refused := unauthorized(request):
                return refused
            stats.faults_served[fault] += 1
            await asyncio.sleep(latency_s + (slow_s if fault == "slow" else 0.0))
            if fault == "drop":

                async def broken_body():
                    raise DroppedConnection("injected fault: the connection drops")
                    yield b""  # an async generator that fails before its first chunk

                return StreamingResponse(broken_body(), media_type="application/json")
            if fault in ("429", "500"):
                status, kind = (429, "RateLimitError") if fault == "429" else (500, "InternalServerError")
                headers = {"Retry-After": str(retry_after_s)} if fault == "429" and retry_after_s is not None else {}
                return JSONResponse(error_body(f"injected fault: {fault}", kind, status), status, headers=headers)
            if fault == "malformed":
                return Response(b'{"id": "cmpl-broken", "choices": [{"text": ', media_type="application/json")
            return await reply(await request.json(), chat, empty=fault == "empty")
        except BadRequest as error:
            return JSONResponse(error_body(str(error), "BadRequestError", 400), status_code=400)
        finally:
            stats.in_flight -= 1

    async def reply(body: Any, chat: bool, empty: bool) -> JSONResponse:
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        if body.get("model") != served_model_name:
            message = f"The model `{body.get('model')}` does not exist."
            return JSONResponse(error_body(message, "NotFoundError", 404), status_code=404)
        settings = sampling_settings(body)
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not all(
                isinstance(message, dict) and "role" in message and isinstance(message.get("content"), str)
                for message in messages
            ):
                raise BadRequest("messages must be a list of {role, content} objects with text content")
            prompt = model.chat_prompt(messages)
        else:
            prompt = body.get("prompt")
            if not isinstance(prompt, str):
                raise BadRequest("prompt must be a string (one prompt a request on this test server)")
        text, finish_reason, prompt_tokens, completion_tokens = await asyncio.to_thread(
            model.generate, prompt, settings
        )
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        return JSONResponse(
            {
                "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}",
                "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()),
                "model": served_model_name,
                "choices": [] if empty else [choice],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await complete(request, chat=True)

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await complete(request, chat=False)

    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.evaluation.test_server",
        description="An OpenAI-compatible server of a local transformers model, with faults injected on demand.",
    )
    parser.add_argument("--model", type=Path, required=True, help="a transformers model directory (with its tokenizer)")
    parser.add_argument("--served-model-name", help="the model's name in the API (default: --model as given)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--faults", default="", help='the fault schedule, e.g. "drop,429*2,ok,500,slow,malformed"')
    parser.add_argument("--slow-s", type=float, default=5.0, help="how long a 'slow' fault delays its reply")
    parser.add_argument("--latency-s", type=float, default=0.0, help="a delay before every reply")
    parser.add_argument("--retry-after-s", type=float, help="the Retry-After a '429' fault sends (none by default)")
    parser.add_argument("--api-key", help="the key requests must bring as 'Authorization: Bearer KEY'")
    args = parser.parse_args(argv)
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model}: no transformers model there (no config.json)")
    try:
        faults = parse_faults(args.faults)
    except ValueError as error:
        parser.error(str(error))

    import uvicorn

    name = args.served_model_name or str(args.model)
    app = build_app(
        LocalModel(args.model),
        name,
        faults,
        slow_s=args.slow_s,
        latency_s=args.latency_s,
        retry_after_s=args.retry_after_s,
        api_key=args.api_key,
    )
    logging.getLogger("uvicorn.error").addFilter(QuietDrops())
    print(f"serving {args.model} as {name!r} at http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
