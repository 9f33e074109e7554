"""Asking the user: permission prompts and questionnaires, over the client's own
`planLsp/*` requests when it declared them, else standard `window/showMessageRequest`
so every LSP client can answer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from plan_lsp.policy.ports import PermissionAnswer, PermissionRequest
from plan_lsp.server.app import PlanLanguageServer
from plan_lsp.server.plain import to_plain
from plan_lsp.tools.base import Question

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
    def __init__(self, ls: PlanLanguageServer, notify: Callable[[dict[str, Any]], None]) -> None:
        self.ls = ls
        self.notify = notify

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self.notify(
            {
                "runId": request.run_id,
                "kind": "permission",
                "tool": request.tool,
                "summary": request.summary,
            }
        )
        try:
            if self.ls.client_experimental().get("permissionRequests"):
                raw = await self.ls.protocol.send_request_async(
                    "planLsp/requestPermission",
                    {
                        "runId": request.run_id,
                        "tool": request.tool,
                        "summary": request.summary,
                        "arguments": request.arguments,
                        "options": PERMISSION_OPTIONS,
                    },
                )
                answer = to_plain(raw) or {}
                option = answer.get("optionId") if isinstance(answer, dict) else None
                return option if option in PERMISSION_OPTIONS else "reject_once"
            item = await self.ls.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=f"plan-lsp wants to run {request.tool}: {request.summary}",
                    actions=[types.MessageActionItem(title=t) for t in MESSAGE_ACTIONS],
                )
            )
        except Exception as exc:  # a client that cannot answer denies
            log.warning("permission request failed: %s", exc)
            return "reject_once"
        title = getattr(item, "title", None)
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
        try:
            if self.ls.client_experimental().get("questions"):
                raw = await self.ls.protocol.send_request_async(
                    "planLsp/askUser",
                    {"runId": run_id, "questions": [q.model_dump() for q in questions]},
                )
                plain = to_plain(raw)
                if not isinstance(plain, dict) or not isinstance(plain.get("answers"), dict):
                    return None
                return {
                    str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)]
                    for k, v in plain["answers"].items()
                }
            answers: dict[str, list[str]] = {}
            for q in questions:
                item = await self.ls.window_show_message_request_async(
                    types.ShowMessageRequestParams(
                        type=types.MessageType.Info,
                        message=q.text,
                        actions=[types.MessageActionItem(title=o) for o in q.options],
                    )
                )
                title = getattr(item, "title", None)
                if title is not None:
                    answers[q.id] = [title]
        except Exception as exc:
            log.warning("question request failed: %s", exc)
            return None
        return answers or None
