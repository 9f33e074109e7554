"""Plain JSON from what pygls hands over (kept free of heavy imports: used at start-up)."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _converter() -> Any:
    """lsprotocol's converter, built once: building one registers every hook (~4 ms of the
    event loop, and garbage), which every `applyEdit` answer used to pay while a plan
    streamed (tests/bench/bench_responsiveness.py)."""
    from lsprotocol import converters

    return converters.get_converter()


def to_plain(obj: Any) -> Any:
    """pygls hands custom-method params over as nested namedtuples and answers to the
    server's requests as lsprotocol (attrs) objects; get plain JSON back."""
    if hasattr(obj, "_asdict"):
        return {k: to_plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    if hasattr(obj, "__attrs_attrs__"):
        return _converter().unstructure(obj)
    return obj
