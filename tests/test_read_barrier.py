"""The read barrier for Emacs clients (`plan_lsp.server.client.ReadBarrier`): whatever the
server sends, and whichever probes the client loses, messages leave in the order they were
sent; nothing leaves after an answer until the client has answered a probe written after
that answer; and once the client answers again, nothing stays held."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.server import client as client_module
from plan_lsp.server.client import ReadBarrier

# What happens next: the server sends an answer or another message, the client answers
# the oldest probe it has, or it loses that probe (it arrived in the same read as an answer).
STEPS = st.lists(
    st.sampled_from(["answer", "message", "probe answered", "probe lost", "time passes"]),
    max_size=60,
)


class Wire:
    """The client's side: what was written, in order, and the probes not yet answered."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []  # ("write", message) | ("proven", probe id)
        self.probes: list[tuple[str, Future[Any]]] = []
        self.forgotten: set[str] = set()

    def write(self, message: Any) -> None:
        self.log.append(("write", message))

    def probe(self, msg_id: str) -> Future[Any]:
        future: Future[Any] = Future()
        self.log.append(("write", {"id": msg_id, "method": "workspace/workspaceFolders"}))
        self.probes.append((msg_id, future))
        return future

    def answer_oldest(self) -> None:
        if self.probes:
            msg_id, future = self.probes.pop(0)
            self.log.append(("proven", msg_id))
            future.set_result([])

    def lose_oldest(self) -> None:
        if self.probes:
            self.probes.pop(0)

    def sent(self) -> list[Any]:
        return [m for kind, m in self.log if kind == "write" and not _is_probe(m)]


def _is_probe(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "workspace/workspaceFolders"


def _violations(log: list[tuple[str, Any]]) -> list[str]:
    """Every message written after an answer before a probe written after that answer
    was answered."""
    out: list[str] = []
    unproven = False  # an answer was written and not yet read past
    covering: set[str] = set()  # probes written after the last answer
    for index, (kind, item) in enumerate(log):
        if kind == "proven":
            if item in covering:
                unproven = False
            continue
        if _is_probe(item):
            if unproven:
                covering.add(item["id"])
            continue
        if unproven:
            out.append(f"#{index} {item} went out before the client read past an answer")
        if "method" not in item:
            unproven, covering = True, set()
    return out


async def _play(steps: list[str]) -> None:
    wire = Wire()
    barrier = ReadBarrier(wire.probe, wire.forgotten.add)
    barrier.enabled = True
    sent: list[Any] = []
    for number, step in enumerate(steps):
        if step == "answer":
            message: dict[str, Any] = {"id": number, "result": None}
        elif step == "message":
            message = {"method": "window/logMessage", "params": {"n": number}}
        else:
            if step == "probe answered":
                wire.answer_oldest()
            elif step == "probe lost":
                wire.lose_oldest()
            else:
                await asyncio.sleep(0)  # a retry is due (PROBE_RETRY_S is 0 here)
                await asyncio.sleep(0)
            continue
        sent.append(message)
        barrier.send(message, wire.write)
    # The client reads again: every probe it gets now, it answers.
    for _ in range(len(steps) + 2):
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        while wire.probes:
            wire.answer_oldest()
    assert _violations(wire.log) == []
    assert wire.sent() == sent, "messages left out of order, or some stayed held"
    assert barrier.enabled, "the barrier gave up on a client that answers"


def _answer_then_message() -> tuple[Wire, ReadBarrier]:
    """An answer, then a message that must wait behind it."""
    wire = Wire()
    barrier = ReadBarrier(wire.probe, wire.forgotten.add)
    barrier.enabled = True
    barrier.send({"id": 1, "result": None}, wire.write)
    barrier.send({"method": "window/logMessage"}, wire.write)
    return wire, barrier


@given(STEPS)
def test_order_kept_and_nothing_passes_an_unread_answer(steps: list[str]) -> None:
    with mock.patch.object(client_module, "PROBE_RETRY_S", 0):
        asyncio.run(_play(steps))


def test_a_client_that_answers_no_probe_gets_everything_after_the_bound() -> None:
    async def play() -> None:
        wire, barrier = _answer_then_message()
        assert wire.sent() == [{"id": 1, "result": None}]
        for _ in range(50):
            if not barrier.enabled:
                break
            await asyncio.sleep(0.01)
        assert not barrier.enabled
        assert wire.sent() == [{"id": 1, "result": None}, {"method": "window/logMessage"}]

    with (
        mock.patch.object(client_module, "PROBE_RETRY_S", 0.01),
        mock.patch.object(client_module, "PROBE_GIVE_UP_S", 0.05),
    ):
        asyncio.run(play())


def test_lost_probes_are_forgotten_once_a_later_one_is_answered() -> None:
    async def play() -> None:
        wire, _barrier = _answer_then_message()
        first = wire.probes[0][0]
        wire.lose_oldest()
        for _ in range(5):
            await asyncio.sleep(0)
        assert wire.probes, "no probe sent again"
        wire.answer_oldest()
        assert wire.forgotten == {first}
        assert wire.sent()[-1] == {"method": "window/logMessage"}

    with mock.patch.object(client_module, "PROBE_RETRY_S", 0):
        asyncio.run(play())
