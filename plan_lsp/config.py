"""Configuration: one validated model, merged from four sources.

Precedence (highest first): CLI flags > `initializationOptions` > `<workspace>/.plan-lsp/
config.toml` > environment (`PLAN_LSP_*`). Each value is validated on its own, so one bad
value is reported (with its source) and replaced by the default without losing the rest.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from plan_lsp.session.model import PermissionMode, WorkMode

PlanShell = Literal["off", "classified", "sandboxed"]
ProviderName = Literal["scripted", "openai", "anthropic"]


class PermissionRules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class Config(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    provider: ProviderName = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    script: Path | None = None
    transcript: Path | None = None
    mode: WorkMode = WorkMode.PLAN
    permission_mode: PermissionMode = PermissionMode.ASK
    plans_dir: str = ".plan-lsp/plans"
    # None = "sandboxed" where a sandbox is available, else "classified".
    plan_shell: PlanShell | None = None
    max_steps: int = Field(default=50, gt=0, le=1000)
    # A run stops after this long, whatever the model does.
    run_timeout_s: float = Field(default=3600, gt=0)
    permissions: PermissionRules = Field(default_factory=PermissionRules)
    allow_enter_plan_in_yolo: bool = False
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    def plans_path(self, workspace: Path) -> Path:
        p = Path(self.plans_dir).expanduser()
        return p if p.is_absolute() else workspace / p


# camelCase names clients send in initializationOptions → field names.
_ALIASES = {
    "baseUrl": "base_url",
    "apiKey": "api_key",
    "maxTokens": "max_tokens",
    "permissionMode": "permission_mode",
    "plansDir": "plans_dir",
    "planShell": "plan_shell",
    "maxSteps": "max_steps",
    "runTimeoutS": "run_timeout_s",
    "logLevel": "log_level",
    "allowEnterPlanInYolo": "allow_enter_plan_in_yolo",
}


def _normalise_keys(values: Mapping[str, Any]) -> dict[str, Any]:
    return {_ALIASES.get(k, k.replace("-", "_")): v for k, v in values.items()}


def _validated_layer(values: Mapping[str, Any], source: str, warnings: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, raw in _normalise_keys(values).items():
        if key not in Config.model_fields:
            warnings.append(f"{source}: unknown setting '{key}' was ignored")
            continue
        try:
            # Every field has a default, so validating one key alone checks just that value.
            out[key] = getattr(Config.model_validate({key: raw}), key)
        except ValidationError as exc:
            first = exc.errors()[0]
            warnings.append(
                f"{source}: invalid value for '{key}' ({first['msg']}); the default is used"
            )
            out.pop(key, None)
    return out


def env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in Config.model_fields:
        raw = environ.get(f"PLAN_LSP_{name.upper()}")
        if raw is None:
            continue
        if name == "permissions":
            try:
                out[name] = json.loads(raw)
            except json.JSONDecodeError:
                out[name] = raw  # reported as invalid by validation
        else:
            out[name] = raw
    return out


def file_layer(workspace: Path, warnings: list[str]) -> dict[str, Any]:
    path = workspace / ".plan-lsp" / "config.toml"
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{path}: could not be read ({exc}); its settings were ignored")
        return {}


def load_config(
    workspace: Path | None,
    init_options: Mapping[str, Any] | None = None,
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Config, list[str]]:
    """Merge the four sources; returns the config and human-readable warnings."""
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    layers: list[tuple[str, Mapping[str, Any]]] = [
        ("environment", env_layer(os.environ if environ is None else environ)),
    ]
    if workspace is not None:
        layers.append((".plan-lsp/config.toml", file_layer(workspace, warnings)))
    if init_options:
        layers.append(("initializationOptions", init_options))
    if cli:
        layers.append(("command line", {k: v for k, v in cli.items() if v is not None}))
    for source, values in layers:
        merged.update(_validated_layer(values, source, warnings))
    return Config.model_validate(merged), warnings
