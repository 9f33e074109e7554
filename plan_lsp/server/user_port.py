"""Asking the user: permission prompts and questionnaires, over the client's own
`planLsp/*` requests when it declared them, else standard `window/showMessageRequest`
so every LSP client can answer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.protocol.state import PermissionAnswer, Question
from plan_lsp.server.client import PERSON_TIMEOUT_S, ClientChannel

log = logging.getLogger(__name__)

PERMISSION_OPTIONS: list[PermissionAnswer] = [
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
]
# Standard-LSP fallback: the action titles every client can show.
MESSAGE_ACTIONS: dict[str, PermissionAnswer] = {
    "Allow once": "allow_once",
    "Allow always": "allow_always",
    "Deny": "reject_once",
}


class LspUserPort:
    def __init__(self, client: ClientChannel, notify: Callable[[dict[str, Any]], None]) -> None:
        self.client = client
        self.notify = notify

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        # The prompt and its answer are told by the session core (`core/asking.py`).
        if self.client.support.permission_requests:
            params: dict[str, Any] = {
                "runId": request.run_id,
                "tool": request.tool,
                "summary": request.summary,
                "arguments": request.arguments,
                "options": PERMISSION_OPTIONS,
            }
            if request.change is not None:
                params["change"] = request.change.wire()
            answered, answer = await self.client.request(
                "planLsp/requestPermission", params, timeout=PERSON_TIMEOUT_S
            )
            option = answer.get("optionId") if answered and isinstance(answer, dict) else None
            return option if option in PERMISSION_OPTIONS else "reject_once"
        title = await self.client.ask(
            f"plan-lsp wants to run {request.tool}: {request.summary}",
            list(MESSAGE_ACTIONS),
            types.MessageType.Warning,
        )
        return MESSAGE_ACTIONS.get(title or "", "reject_once")

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        self.notify(
            {
                "runId": run_id,
                "kind": "question",
                "questions": [q.model_dump() for q in questions],
            }
        )
        if self.client.support.questions:
            answered, plain = await self.client.request(
                "planLsp/askUser",
                {"runId": run_id, "questions": [q.model_dump() for q in questions]},
                timeout=PERSON_TIMEOUT_S,
            )
            if not answered or not isinstance(plain, dict):
                return None
            answers = plain.get("answers")
            if not isinstance(answers, dict):
                return None
            return {
                str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)]
                for k, v in answers.items()
            }
        collected: dict[str, list[str]] = {}
        for q in questions:
            title = await self.client.ask(q.text, list(q.options), types.MessageType.Info)
            if title is not None:
                collected[q.id] = [title]
        return collected or None
