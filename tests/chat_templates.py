"""Real chat templates, rendered by a real Jinja engine, in front of the loopback model server.

The templates in tests/data/chat_templates/ are the `chat_template` strings of the models'
`tokenizer_config.json` as published (Gemma 3, Mistral 7B Instruct v0.1, Llama 2 chat). They
are rendered the way Hugging Face transformers and vLLM do (an immutable sandbox with
`trim_blocks`/`lstrip_blocks`, `raise_exception` raising), and a model call whose messages a
template refuses is answered HTTP 400 with the template's own message, as llama.cpp and vLLM
answer it:

    with FakeModelServer() as server:
        template = ChatTemplate.load("gemma-3")
        server.gate = template.gate
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.fake_model_servers import ErrorReply, RecordedRequest

TEMPLATES = Path(__file__).parent / "data" / "chat_templates"
NAMES = ("gemma-3", "mistral-instruct", "llama-2-chat")


def _raise(message: str) -> NoReturn:
    raise TemplateError(message)


@dataclass
class ChatTemplate:
    name: str
    source: str
    bos_token: str
    eos_token: str
    # Every prompt rendered, in order; and every refusal's message.
    rendered: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, name: str) -> ChatTemplate:
        config = json.loads((TEMPLATES / f"{name}.json").read_text())
        return cls(name, config["chat_template"], config["bos_token"], config["eos_token"])

    def render(self, messages: list[dict[str, Any]], tools: Any = None) -> str:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise
        return env.from_string(self.source).render(
            messages=messages,
            tools=tools,
            add_generation_prompt=True,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
        )

    def gate(self, request: RecordedRequest) -> ErrorReply | None:
        """`FakeModelServer.gate`: None (answer as queued) when the template renders the
        request's messages, else HTTP 400 with the template's message."""
        body = request.body if isinstance(request.body, dict) else {}
        try:
            prompt = self.render(body.get("messages") or [], body.get("tools"))
        except Exception as exc:  # a template's raise_exception, or a type error inside it
            message = f"chat template error: {exc}"
            self.refused.append(message)
            return ErrorReply(400, message)
        self.rendered.append(prompt)
        return None
