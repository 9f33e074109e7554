"""Refusals met below the LSP handlers are answered as RequestFailed (-32803) with a message
a person reads — what was refused and why — never as an internal error naming a Python
exception: a table over every registered request and command and every refusal type, and a
property over the messages."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_lsp.core import HeldByEditor, Refused
from plan_lsp.policy.safe_fs import FileTooLarge, WriteRefused
from plan_lsp.server import handlers, methods
from plan_lsp.server.params import RequestFailed
from plan_lsp.session import TransitionRefused
from plan_lsp.session.state_home import StateDirUnavailable
from plan_lsp.tools.paths import PathRefused

REFUSALS: dict[str, tuple[BaseException, str]] = {
    "core": (Refused("a run is in progress"), "a run is in progress"),
    "link": (
        WriteRefused(".plan-lsp/revisions is a symbolic link; the server never follows links"),
        ".plan-lsp/revisions is a symbolic link; the server never follows links",
    ),
    "too large": (FileTooLarge("PLAN.md is over 1 MiB"), "PLAN.md is over 1 MiB"),
    "transition": (TransitionRefused("the plan is empty"), "the plan is empty"),
    "path": (PathRefused("Access denied: ../x is outside"), "Access denied: ../x is outside"),
    "held": (HeldByEditor("PLAN.md has unsaved changes"), "PLAN.md has unsaved changes"),
    "system": (
        PermissionError(13, "Permission denied", "/w/.plan-lsp/revisions"),
        "Permission denied: /w/.plan-lsp/revisions",
    ),
    "state folder": (StateDirUnavailable("/s is not a folder"), "/s is not a folder"),
}
PYTHON = re.compile(r"\b\w*(Error|Refused|Exception|Large|Editor|Unavailable)\b|Errno|Traceback")


class Registry:
    """Stands for the server: keeps what `handlers.register` registers."""

    def __init__(self) -> None:
        self.handlers: dict[str, Callable[..., Any]] = {}

    def feature(self, name: str, *_options: Any) -> Callable[[Any], Any]:
        return lambda handler: self.handlers.setdefault(name, handler)

    command = feature


def _registered() -> dict[str, Callable[..., Any]]:
    registry = Registry()
    handlers.register(registry)  # type: ignore[arg-type]
    names = [*handlers.REQUESTS, *handlers.COMMANDS]
    return {name: registry.handlers[name] for name in names}


def _answer(handler: Callable[..., Any], refusal: BaseException, mp: pytest.MonkeyPatch) -> str:
    """The message `handler` answers when finding the workspace meets `refusal`."""

    def refuse(*_args: Any) -> Any:
        raise refusal

    mp.setattr(methods, "context_for", refuse)
    mp.setattr(methods, "parse_params", lambda _model, _raw: object())
    with pytest.raises(RequestFailed) as info:
        result = handler(object(), {})
        if inspect.isawaitable(result):
            asyncio.run(_wait(result))
    assert info.value.code == -32803 and info.value.data is None
    return info.value.message


async def _wait(result: Any) -> Any:
    return await result


@pytest.mark.parametrize("method", sorted(_registered()))
@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_every_handler_answers_a_refusal_readably(
    method: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal, expected = REFUSALS[kind]
    message = _answer(_registered()[method], refusal, monkeypatch)
    assert message == expected
    assert not PYTHON.search(message), message


_WORDS = st.text(st.characters(codec="utf-8"), min_size=1)


@given(
    st.sampled_from([Refused, WriteRefused, FileTooLarge, TransitionRefused, PathRefused]),
    _WORDS.filter(lambda t: not PYTHON.search(t) and t.strip() == t),
)
def test_the_answer_is_the_refusals_own_words(kind: type[Exception], text: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        message = _answer(_registered()["planLsp/planRevisions"], kind(text), mp)
    assert message == text and kind.__name__ not in message
