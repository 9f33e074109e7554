"""The user's answers, told and kept: every permission prompt is announced before the
front-end asks (`permission`) and its answer after (`permission` with `decision`), so the
history shows what the user allowed and denied when a front-end renders it again."""

from __future__ import annotations

from plan_lsp.core.frontend import Notify
from plan_lsp.policy.ports import PermissionRequest
from plan_lsp.protocol.state import PermissionAnswer, Question
from plan_lsp.tools.base import UserPort


class HeardUser:
    """A front-end's `UserPort`, with every permission prompt and answer told."""

    def __init__(self, inner: UserPort, notify: Notify) -> None:
        self.inner = inner
        self.notify = notify

    def _tell(self, request: PermissionRequest, decision: PermissionAnswer | None) -> None:
        payload: dict[str, object] = {
            "runId": request.run_id,
            "kind": "permission",
            "tool": request.tool,
            "summary": request.summary,
        }
        if decision is not None:
            payload["decision"] = decision
        self.notify(payload)

    async def request_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self._tell(request, None)
        answer: PermissionAnswer = "reject_once"
        try:
            answer = await self.inner.request_permission(request)
        finally:
            self._tell(request, answer)
        return answer

    async def ask_questions(
        self, run_id: str, questions: list[Question]
    ) -> dict[str, list[str]] | None:
        return await self.inner.ask_questions(run_id, questions)
