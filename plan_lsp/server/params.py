"""Turning untrusted JSON-RPC params into validated models, with errors naming the field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from plan_lsp.server.plain import to_plain

M = TypeVar("M", bound=BaseModel)


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: the request was valid but the server refused it (with a reason)."""

    CODE = -32803
    MESSAGE = "Request failed"


def parse_params(model: type[M], raw: Any) -> M:
    data = to_plain(raw) if raw is not None else {}
    if isinstance(data, list) and len(data) == 1:  # executeCommand-style [args]
        data = data[0]
    if data is None or data == []:
        data = {}
    if not isinstance(data, dict):
        raise JsonRpcInvalidParams(f"params must be an object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "params"
            problems.append(f"'{field}': {err['msg']}")
        raise JsonRpcInvalidParams("invalid params: " + "; ".join(problems)) from exc
