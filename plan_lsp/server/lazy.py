"""The feature implementations, loaded on first use (after the initialize answer).

Each implementation module registers its handlers here with the same decorators it would
use on the server; `server/features.py` registers light stubs on the server that dispatch
to them, so the capabilities are known at start-up without importing the implementations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from plan_lsp.server.app import PlanLanguageServer

F = TypeVar("F", bound=Callable[..., Any])


class Implementations:
    def __init__(self) -> None:
        self.features: dict[str, Callable[..., Any]] = {}
        self.commands: dict[str, Callable[..., Any]] = {}

    def feature(self, name: str, options: Any = None) -> Callable[[F], F]:
        def decorator(fn: F) -> F:
            self.features[name] = fn
            return fn

        return decorator

    def command(self, name: str) -> Callable[[F], F]:
        def decorator(fn: F) -> F:
            self.commands[name] = fn
            return fn

        return decorator

    @classmethod
    def load(cls, ls: PlanLanguageServer) -> Implementations:
        from plan_lsp.server import plan_document, run_methods, state_methods

        impl = cls()
        state_methods.register(ls, impl)
        run_methods.register(ls, impl)
        plan_document.register(ls, impl)
        return impl
