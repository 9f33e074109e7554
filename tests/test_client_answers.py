"""Answers to the server's requests (`ClientChannel.request`): a typed answer comes back as
plain JSON, never by building a new lsprotocol converter per answer (that took
milliseconds of the event loop for every `applyEdit` answer while a plan streamed)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any
from unittest import mock

from lsprotocol import converters, types

from plan_lsp.server.client import ClientChannel, ClientSupport
from plan_lsp.server.plain import to_plain


def _channel(answer: Any) -> ClientChannel:
    to_plain(types.Position(line=0, character=0))  # the one converter this process builds

    def send_request_async(method: str, params: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(answer)
        return future

    protocol = SimpleNamespace(send_request_async=send_request_async)
    channel = ClientChannel(SimpleNamespace(protocol=protocol))  # type: ignore[arg-type]
    channel.support = ClientSupport(apply_edit=True)
    return channel


def _no_new_converter() -> Any:
    return mock.patch.object(
        converters, "get_converter", side_effect=AssertionError("a converter built per answer")
    )


def test_typed_answer_is_plain_json_without_a_new_converter() -> None:
    channel = _channel(types.ApplyWorkspaceEditResult(applied=False, failure_reason="stale"))

    async def go() -> tuple[bool, Any]:
        with _no_new_converter():
            return await channel.request(types.WORKSPACE_APPLY_EDIT, None)

    assert asyncio.run(go()) == (True, {"applied": False, "failureReason": "stale"})


def test_apply_edit_reads_the_typed_answer() -> None:
    edit = types.WorkspaceEdit(changes={})

    async def go(applied: bool) -> bool:
        channel = _channel(types.ApplyWorkspaceEditResult(applied=applied))
        with _no_new_converter():
            return await channel.apply_edit(edit, "label")

    assert asyncio.run(go(True)) is True
    assert asyncio.run(go(False)) is False


def test_untyped_answers_stay_plain() -> None:
    answer = SimpleNamespace()  # neither attrs nor namedtuple: handed back as it is
    for raw, plain in ((None, None), ([{"a": 1}], [{"a": 1}]), (answer, answer)):
        channel = _channel(raw)
        assert asyncio.run(channel.request("x/y", None)) == (True, plain)
