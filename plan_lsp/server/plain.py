"""Plain JSON from what pygls hands over (kept free of heavy imports: used at start-up)."""

from __future__ import annotations

from typing import Any


def to_plain(obj: Any) -> Any:
    """pygls hands custom-method params over as nested namedtuples; get plain JSON back."""
    if hasattr(obj, "_asdict"):
        return {k: to_plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    if hasattr(obj, "__attrs_attrs__"):
        from lsprotocol import converters

        return converters.get_converter().unstructure(obj)
    return obj
