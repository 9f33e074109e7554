"""How many tokens a model's context window holds: a table of well-known models, and what an
OpenAI-compatible server reports about the model it serves (llama.cpp, vLLM, Ollama).

The agent takes the first of: the user's `context_window`, this table, the server's answer, a
conservative default.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

log = logging.getLogger(__name__)

# When nothing else is known. Small enough that an unknown local server is not overrun,
# large enough that a hosted model is not compacted all the time.
DEFAULT_CONTEXT_WINDOW = 32_768

# Ollama runs a model with this context unless `num_ctx` says otherwise (its own default,
# whatever the model was trained for).
OLLAMA_DEFAULT_NUM_CTX = 4_096

# Model-name prefixes (lower case, longest match wins) and their windows in tokens.
KNOWN_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,  # every Claude model
    "gemini-1.5": 1_048_576,
    "gemini-2": 1_048_576,
    "deepseek-chat": 65_536,
    "deepseek-coder": 128_000,
}


def known_window(model: str | None) -> int | None:
    """The window of a well-known model, by the longest matching name prefix; None if unknown.
    A provider prefix (`openai/gpt-4o`) and a tag (`qwen:7b`) do not hide the name."""
    if not model:
        return None
    name = model.strip().lower().rsplit("/", 1)[-1]
    best: tuple[int, int] | None = None
    for prefix, window in KNOWN_WINDOWS.items():
        if name.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), window)
    return best[1] if best else None


def _root(base_url: str) -> str:
    """The server's root: `http://host:8080/v1` → `http://host:8080`."""
    parts = urlsplit(base_url)
    path = re.sub(r"/v1/?$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def window_from_llama_props(props: Any) -> int | None:
    """llama.cpp's `GET /props`: the context each slot really has (`n_ctx`)."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(props.get("n_ctx"))


def window_from_models(listing: Any, model: str | None) -> int | None:
    """`GET /v1/models`: vLLM's `max_model_len` of the served model (the first, if unnamed);
    else llama.cpp's `meta.n_ctx_train` (the longest context the model knows)."""
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return None
    entries = [e for e in listing["data"] if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model] or entries[:1]
    for entry in named:
        meta = entry.get("meta")
        window = _positive(entry.get("max_model_len")) or (
            _positive(meta.get("n_ctx_train")) if isinstance(meta, dict) else None
        )
        if window:
            return window
    return None


def window_from_ollama_show(show: Any) -> int | None:
    """Ollama's `POST /api/show`: the model's `num_ctx` parameter, else Ollama's default (the
    trained length in `model_info` is not what Ollama runs with)."""
    if not isinstance(show, dict) or not ("model_info" in show or "parameters" in show):
        return None
    parameters = show.get("parameters")
    if isinstance(parameters, str):
        match = re.search(r"^\s*num_ctx\s+(\d+)\s*$", parameters, re.MULTILINE)
        if match:
            return int(match.group(1))
    return OLLAMA_DEFAULT_NUM_CTX


async def reported_window(
    base_url: str | None, model: str | None, api_key: str | None, timeout: float = 3.0
) -> int | None:
    """Ask an OpenAI-compatible server how large the model's window is. Never raises."""
    if not base_url:
        return None  # OpenAI itself reports no window
    try:  # loaded with the openai SDK; at module level it would come with this module
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - a dependency of the openai SDK
        return None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = _root(base_url)
    models = f"{base_url.rstrip('/')}/models"
    probes: list[tuple[str, str, dict[str, Any] | None, Any]] = [
        ("GET", f"{root}/props", None, window_from_llama_props),
        ("GET", models, None, lambda data: window_from_models(data, model)),
        ("POST", f"{root}/api/show", {"model": model or ""}, window_from_ollama_show),
    ]
    try:
        async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
            for method, url, body, read in probes:
                try:
                    answer = await client.request(method, url, json=body)
                    if answer.status_code != 200:
                        continue
                    window = read(answer.json())
                except (httpx.HTTPError, json.JSONDecodeError, ValueError):
                    continue
                if window:
                    log.info("the model server at %s reports a context window of %d", url, window)
                    return int(window)
    except Exception:  # never a reason to fail a run
        log.debug("asking %s for its context window failed", base_url, exc_info=True)
    return None


async def server_props(
    base_url: str | None, api_key: str | None, timeout: float = 3.0
) -> dict[str, Any] | None:
    """llama.cpp's `GET /props` (context, chat template capabilities), None from any other
    server or on any failure. Never raises."""
    if not base_url:
        return None
    try:  # loaded with the openai SDK; at module level it would come with this module
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - a dependency of the openai SDK
        return None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
            answer = await client.get(f"{_root(base_url)}/props")
            props = answer.json() if answer.status_code == 200 else None
    except Exception:  # never a reason to fail a connection test
        log.debug("asking %s for its properties failed", base_url, exc_info=True)
        return None
    return props if isinstance(props, dict) and "default_generation_settings" in props else None
