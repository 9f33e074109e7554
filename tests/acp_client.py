"""An ACP client for tests, as an editor is one: it records every `session/update` and every
permission request, and answers each permission request with the option of the kind the
test chose for that kind of tool call."""

from __future__ import annotations

from typing import Any

import acp
from acp import schema


class RecordingClient:
    def __init__(self, choose: dict[str, str] | None = None, default: str = "reject_once") -> None:
        self.updates: list[Any] = []
        self.permissions: list[schema.RequestPermissionRequest] = []
        # tool call kind → the option kind answered (`default` for the others)
        self.choose: dict[str, str] = dict(choose or {})
        self.default = default

    def on_connect(self, conn: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[Any], **kw: Any
    ) -> schema.RequestPermissionResponse:
        self.permissions.append(
            schema.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=options
            )
        )
        wanted = self.choose.get(tool_call.kind or "other", self.default)
        option = next(o for o in options if o.kind == wanted)
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def of(self, kind: str, since: int = 0) -> list[Any]:
        """The updates of one kind (`session_update`), from the `since`-th on."""
        return [u for u in self.updates[since:] if u.session_update == kind]
