"""What the HTTP model back ends share: defaults, base-URL checks, and the mapping of HTTP
failures to `ProviderError` kinds with messages a user can act on."""

from __future__ import annotations

import html
import importlib
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from plan_lsp.providers.base import ModelRequest, ProviderError

# Local servers ignore the key, but the SDK (and some proxies) want a non-empty one.
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_TIMEOUT_S = 120.0


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def error_detail(body: object) -> str | None:
    """The human message inside an API error body (`{"error": {"message": ...}}` and kin)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(inner, str) and inner:
            return inner
    if isinstance(body, str) and body.strip():
        page = html_title(body)
        return page if page is not None else body.strip()[:500]
    return None


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML = re.compile(r"^\s*(<!doctype html|<html|<head|<body)", re.IGNORECASE)


def html_title(text: str) -> str | None:
    """An HTML error page (a reverse proxy's 502, a web server's 404) as its title; None
    when `text` is not HTML."""
    if not _HTML.match(text):
        return None
    found = _TITLE.search(text)
    title = " ".join(html.unescape(found.group(1)).split())[:200] if found else ""
    return f"an HTML page{f' titled {title!r}' if title else ''} (not an API's answer)"


# The server's words when a request does not fit the context it runs the model with
# (llama.cpp, vLLM, OpenAI, Ollama).
_CONTEXT = re.compile(
    r"exceeds the available context size|maximum context length|context_length_exceeded|"
    r"exceed_context_size|is longer than the model's context length|prompt is too long",
    re.IGNORECASE,
)


def _context_size(body: object) -> int | None:
    inner = body.get("error", body) if isinstance(body, dict) else None
    n_ctx = inner.get("n_ctx") if isinstance(inner, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


def status_error(
    server: str, status: int, body: object, headers: Mapping[str, str] | None
) -> ProviderError:
    """Map an HTTP error status from a model API to a ProviderError; `server` names it."""
    detail = error_detail(body) or "no details"
    if status in (401, 403):
        return ProviderError("auth", f"{server} rejected the credentials (HTTP {status}): {detail}")
    if status == 429:
        wait = retry_after_seconds(headers)
        hint = f"; retry after {wait:g}s" if wait is not None else ""
        return ProviderError(
            "rate_limit",
            f"{server} is rate limiting requests (HTTP 429): {detail}{hint}",
            retry_after=wait,
        )
    if status in (400, 413) and _CONTEXT.search(detail):
        n_ctx = _context_size(body)
        theirs = f" ({n_ctx:,} tokens)" if n_ctx else ""
        return ProviderError(
            "bad_request",
            f"{server} refused the request: it does not fit the context the server runs the "
            f"model with{theirs}: {detail}. Set context_window to at most the server's context"
            f"{f' ({n_ctx})' if n_ctx else ''} so plan-lsp compacts before that, or give the "
            "server a larger context (llama-server: -c / --ctx-size).",
        )
    if status >= 500:
        return ProviderError("server", f"{server} failed (HTTP {status}): {detail}")
    page = isinstance(body, str) and html_title(body) is not None
    if status in (400, 404) and "model" in detail.lower() and not page:
        # "The model `x` does not exist", "model: x" (OpenAI, Anthropic, vLLM, Ollama).
        return ProviderError("model", f"{server} refused the model (HTTP {status}): {detail}")
    if status == 404:
        return ProviderError("not_found", f"{server} has no such API (HTTP 404): {detail}")
    return ProviderError("bad_request", f"{server} refused the request (HTTP {status}): {detail}")


def connection_error(server: str, responding: bool, cause: object) -> ProviderError:
    """A transport failure, before the response (unreachable) or while it streamed."""
    if responding:
        return ProviderError(
            "connection", f"the connection to {server} broke mid-response: {cause}"
        )
    return ProviderError("connection", f"cannot reach {server}: {cause}")


def served_model_sentence(server: str, model: str, served: list[str]) -> str:
    """What a connection test says, given the models the server lists; raises when the
    configured model is not among them (an empty list says nothing either way)."""
    if served and model not in served:
        shown = ", ".join(sorted(served)[:20]) + ("…" if len(served) > 20 else "")
        raise ProviderError(
            "model", f"{server} does not serve the model {model!r}; it offers: {shown}"
        )
    if served:
        return f"{server} answered and serves the model {model!r}"
    return f"{server} answered (it lists no models; {model!r} will be asked for)"


async def served_models(sdk: Any, client: Any, server: str) -> list[str]:
    """The model ids a server lists (`client.models.list()` of the openai or anthropic SDK,
    `sdk` being that SDK's module), with failures mapped like a model call's."""
    try:
        page = await client.models.list()
        return [model.id async for model in page]
    except Exception as exc:
        raise sdk_failure(sdk, exc, server) from exc


def sdk_failure(
    sdk: Any, exc: Exception, server: str, *, streaming: bool = False, responding: bool = False
) -> Exception:
    """A failed SDK request (openai or anthropic: `sdk` is the module) as a ProviderError;
    anything that is not the SDK's own error (nor, for a model call's stream, an unparsable
    one) is returned unchanged, to be raised as it is. `responding`: the stream had begun."""
    base_error: type[Exception] = getattr(sdk, "OpenAIError", None) or sdk.AnthropicError
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError("connection", f"{server} timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return connection_error(server, responding, exc.__cause__ or exc)
    if isinstance(exc, sdk.APIStatusError):
        return status_error(server, exc.status_code, exc.body, exc.response.headers)
    if isinstance(exc, base_error):
        call = "model call to " if streaming else ""
        return ProviderError("server", f"{call}{server} failed: {exc}")
    if streaming and isinstance(exc, ValueError | TypeError | AttributeError | KeyError):
        # Undecodable SSE data or chunks without the API's shape.
        return ProviderError("malformed_stream", f"{server} sent an unparsable stream: {exc}")
    return exc


class SdkProvider:
    """What the `openai` and `anthropic` back ends share: their settings and SDK client."""

    name: str  # also the SDK's module
    sdk_client: str  # the SDK's async client class
    client: Any

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        *,
        max_retries: int = 2,
    ) -> None:
        # A base URL that can never work is refused at start-up, not on the first request.
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            message = f"base URL {base_url!r} must start with http:// or https://"
            raise ProviderError("config", message)
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        try:  # imported now (~1 s: when a provider is built)
            sdk = importlib.import_module(self.name)
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ProviderError("config", f"the `{self.name}` package is not installed") from exc
        # An explicit key also keeps the SDK from looking for credential profiles on disk.
        self.client = getattr(sdk, self.sdk_client)(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    @property
    def endpoint(self) -> str:
        return str(self.client.base_url)

    async def aclose(self) -> None:
        await self.client.close()

    def settings(self, request: ModelRequest) -> tuple[float | None, int | None]:
        """The request's temperature and max_tokens, else the provider's."""
        temperature = request.temperature if request.temperature is not None else self.temperature
        max_tokens = request.max_tokens if request.max_tokens is not None else self.max_tokens
        return temperature, max_tokens
