"""The LLM client of function-calling agents: one chat-completions call, retries, usage, cost.

Any OpenAI-compatible endpoint works (hosted APIs, vLLM, SGLang, Ollama) through the openai
SDK, imported only when a client is made. Transient API failures (connection errors, timeouts,
429, 5xx) are retried with exponential backoff, honouring `Retry-After`; other failures raise
`ModelAPIError` at once. Cost comes from a price table (dollars per million tokens) that a TOML
or JSON file can extend or override.
"""

from __future__ import annotations

import json
import logging
import os
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gauntlet.errors import ConfigError, GauntletError
from gauntlet.settings import API_KEY_ENV, BASE_URL_ENV

logger = logging.getLogger(__name__)

#: Key sent to endpoints given by `--base-url` when no key is set (local servers ignore it).
NO_KEY = "no-key"
#: Retries after the first try of one call, and the backoff of the first retry (doubling).
MAX_RETRIES = 5
BACKOFF_S = 2.0
MAX_BACKOFF_S = 60.0
#: Seconds the pre-flight check of an endpoint waits for an answer.
PREFLIGHT_TIMEOUT_S = 10.0
#: HTTP statuses worth retrying.
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: Phrases of a 400 answer that mean the prompt is longer than the model's context window.
CONTEXT_OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "too many tokens",
    "prompt is too long",
)

_warned: set[str] = set()


class ModelAPIError(GauntletError):
    """A chat-completions call that failed for good (after retries where they apply)."""

    def __init__(self, message: str, *, status: int | None = None, overflow: bool = False):
        super().__init__(message)
        self.status = status
        self.context_overflow = overflow


class Price(BaseModel):
    """The price of one model, in dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


#: Built-in prices (USD per million tokens, list prices); a price file extends or overrides them.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input_per_mtok=2.5, output_per_mtok=10.0),
    "gpt-4o-mini": Price(input_per_mtok=0.15, output_per_mtok=0.6),
    "gpt-4.1": Price(input_per_mtok=2.0, output_per_mtok=8.0),
    "gpt-4.1-mini": Price(input_per_mtok=0.4, output_per_mtok=1.6),
    "o3": Price(input_per_mtok=2.0, output_per_mtok=8.0),
    "o4-mini": Price(input_per_mtok=1.1, output_per_mtok=4.4),
    "gpt-5": Price(input_per_mtok=1.25, output_per_mtok=10.0),
    "gpt-5-mini": Price(input_per_mtok=0.25, output_per_mtok=2.0),
    "claude-sonnet-4": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-opus-4": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "deepseek-chat": Price(input_per_mtok=0.27, output_per_mtok=1.1),
}


@dataclass
class PriceTable:
    """Model name -> price.

    A name matches exactly, else the longest table entry it starts with (`gpt-4o-2024-08-06`
    -> `gpt-4o`), ignoring a provider prefix (`openai/gpt-4o`).
    """

    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    @classmethod
    def load(cls, path: Path | None) -> PriceTable:
        """The built-in table, extended by a TOML or JSON file.

        The file holds `model = {input_per_mtok = N, output_per_mtok = N}` entries.

        Raises:
            ConfigError: The file cannot be read or an entry is malformed.
        """
        table = cls()
        if path is None:
            return table
        try:
            text = Path(path).read_text(encoding="utf-8")
            raw = json.loads(text) if Path(path).suffix == ".json" else tomllib.loads(text)
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot read price table '{path}': {err}") from err
        for model, entry in raw.items():
            try:
                table.prices[model] = Price.model_validate(entry)
            except ValidationError as err:
                raise ConfigError(
                    f"{path}: price of '{model}' must be {{input_per_mtok = N, "
                    f"output_per_mtok = N}}: {err.errors()[0]['msg']}"
                ) from err
        return table

    def price(self, model: str) -> Price | None:
        """The price of `model`, if the table knows it."""
        name = model.rsplit("/", 1)[-1]
        if name in self.prices:
            return self.prices[name]
        matches = [key for key in self.prices if name.startswith(key)]
        return self.prices[max(matches, key=len)] if matches else None

    def cost_usd(self, model: str, tokens_in: int, tokens_out: int) -> float:
        """Dollars for this many tokens; 0 with a warning (once) for a model of unknown price."""
        price = self.price(model)
        if price is None:
            if model not in _warned:
                _warned.add(model)
                logger.warning(
                    "no price for model '%s': its cost is recorded as 0 and cost budgets do not "
                    "apply; add it to a price table file",
                    model,
                )
            return 0.0
        return (tokens_in * price.input_per_mtok + tokens_out * price.output_per_mtok) / 1e6


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for, arguments still as the raw text it sent."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """One answer of the model."""

    content: str | None
    tool_calls: list[ToolCall]
    tokens_in: int
    tokens_out: int
    finish_reason: str | None
    attempts: int
    """Tries it took (1 without retries)."""
    usage_reported: bool = True
    """Whether the endpoint reported token usage (else the counts are estimates)."""

    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


RetryObserver = Callable[[int, str, float], None]


class ChatClient:
    """Chat completions against one model on one endpoint."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_retries: int = MAX_RETRIES,
        backoff_s: float = BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """A client; the key defaults to `OPENAI_API_KEY`.

        Raises:
            ConfigError: No key is set for the default (OpenAI) endpoint.
        """
        import openai

        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            if base_url is None and not os.environ.get(BASE_URL_ENV):
                raise ConfigError(
                    f"the toolcall agent needs an API key: set {API_KEY_ENV}, or point "
                    "'--base-url' at an endpoint that needs none"
                )
            key = NO_KEY
        self.model = model
        self.temperature = temperature
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._sleep = sleep
        self._openai = openai
        self._client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0)

    def unreachable(self, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> str | None:
        """None when the endpoint answers (any HTTP answer but a refused key), else why not."""
        openai = self._openai
        try:
            self._client.with_options(timeout=timeout_s).models.list()
        except openai.AuthenticationError as err:
            return f"the endpoint {self._client.base_url} refuses the API key ({err.status_code})"
        except openai.APIStatusError:
            return None  # it answered; not every server lists its models
        except openai.APIConnectionError as err:  # timeouts included
            return f"the endpoint {self._client.base_url} does not answer ({err})"
        return None

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        timeout_s: float,
        on_retry: RetryObserver | None = None,
    ) -> Completion:
        """One completion, retrying transient failures.

        Args:
            messages: The conversation.
            tools: The function tools offered.
            timeout_s: Seconds one HTTP request may take.
            on_retry: Told (attempt, error, delay) before each retry.

        Returns:
            The model's answer with its token usage.

        Raises:
            ModelAPIError: The call failed for good.
        """
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            kwargs["tools"] = list(tools)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._client.chat.completions.create(**kwargs, timeout=timeout_s)
                return _completion(response, attempt, messages)
            except openai.APIStatusError as err:
                retryable = err.status_code in RETRYABLE_STATUS
                error = f"HTTP {err.status_code} from the model API: {_error_text(err)}"
                if not retryable or attempt > self.max_retries:
                    overflow = err.status_code == 400 and any(
                        p in error.lower() for p in CONTEXT_OVERFLOW_PHRASES
                    )
                    raise ModelAPIError(
                        _final(error, attempt), status=err.status_code, overflow=overflow
                    ) from err
                delay = self._delay(attempt, err.response.headers.get("retry-after"))
            except openai.APIConnectionError as err:  # includes timeouts
                error = f"cannot reach the model API: {err}"
                if attempt > self.max_retries:
                    raise ModelAPIError(_final(error, attempt)) from err
                delay = self._delay(attempt, None)
            except openai.APIResponseValidationError as err:
                raise ModelAPIError(f"malformed answer from the model API: {err}") from err
            logger.info("model API call failed (%s); retry %d in %.1f s", error, attempt, delay)
            if on_retry is not None:
                on_retry(attempt, error, delay)
            self._sleep(delay)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay: float = min(self.backoff_s * 2.0 ** (attempt - 1), MAX_BACKOFF_S)
        if retry_after:
            try:
                delay = min(max(delay, float(retry_after)), MAX_BACKOFF_S)
            except ValueError:
                pass
        return delay


def _completion(response: Any, attempt: int, messages: Sequence[Mapping[str, Any]]) -> Completion:
    if not response.choices:
        raise ModelAPIError("the model API answered with no choices")
    choice = response.choices[0]
    message = choice.message
    calls = [
        ToolCall(
            call_id=call.id or f"call_{index}",
            name=call.function.name or "",
            arguments=call.function.arguments or "",
        )
        for index, call in enumerate(message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    usage = response.usage
    if usage is not None and usage.prompt_tokens is not None:
        tokens_in, tokens_out, reported = usage.prompt_tokens, usage.completion_tokens or 0, True
    else:
        # Estimated at 4 characters a token; the transcript marks the count as an estimate.
        tokens_in = sum(len(json.dumps(m)) for m in messages) // 4
        tokens_out = (len(message.content or "") + sum(len(c.arguments) for c in calls)) // 4
        reported = False
    return Completion(
        content=message.content,
        tool_calls=calls,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        finish_reason=choice.finish_reason,
        attempts=attempt,
        usage_reported=reported,
    )


def _error_text(err: Any) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
    return str(getattr(err, "message", err))


def _final(error: str, attempts: int) -> str:
    return error if attempts == 1 else f"{error} (gave up after {attempts} tries)"


def agent_client(
    agent: str,
    model: str | None,
    *,
    base_url: str | None = None,
    temperature: float | None = None,
    max_retries: int = MAX_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
) -> ChatClient:
    """The client of an agent that works through a model (`--model`, `--base-url`).

    Raises:
        ConfigError: No model is named, or no API key is set for the default endpoint.
    """
    if not model:
        raise ConfigError(f"the {agent} agent needs a model: pass '--model NAME'")
    return ChatClient(
        model=model,
        base_url=base_url,
        temperature=temperature,
        max_retries=max_retries,
        sleep=sleep,
    )


def check_reachable(agent: str, client: ChatClient) -> None:
    """A run's pre-flight of an agent's model.

    Raises:
        ConfigError: The endpoint does not answer, or it refuses the key.
    """
    problem = client.unreachable()
    if problem is not None:
        raise ConfigError(f"agent '{agent}' cannot reach its model: {problem}")
