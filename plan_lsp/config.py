"""Configuration: one validated model, merged from five sources.

Precedence (highest first): CLI flags > `initializationOptions` > user config
(`$PLAN_LSP_CONFIG`, else `$XDG_CONFIG_HOME/plan-lsp/config.toml`) > `<workspace>/.plan-lsp/
config.toml` (never `mcp`) > environment (`PLAN_LSP_*`). Each value is validated on its own,
so one bad value is reported (with its source) and replaced by the default without losing
the rest.
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
from plan_lsp.tools.mcp.config import McpSettings

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
    # MCP tool sources (issue 17): user config or initializationOptions only, never the
    # workspace file (starting a server runs a program).
    mcp: McpSettings = Field(default_factory=McpSettings)
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
        if name in ("permissions", "mcp"):
            try:
                out[name] = json.loads(raw)
            except json.JSONDecodeError:
                out[name] = raw  # reported as invalid by validation
        else:
            out[name] = raw
    return out


def read_toml(path: Path, warnings: list[str]) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{path}: could not be read ({exc}); its settings were ignored")
        return {}


def file_layer(workspace: Path, warnings: list[str]) -> dict[str, Any]:
    return read_toml(workspace / ".plan-lsp" / "config.toml", warnings)


# -- MCP (issue 17): the minimal trusted-source reading MCP needs; the complete
# configuration-trust rules (issue 12) replace this block.
USER_ONLY_KEYS = ("mcp",)


def user_config_path(environ: Mapping[str, str]) -> Path:
    """`$PLAN_LSP_CONFIG`, else `$XDG_CONFIG_HOME/plan-lsp/config.toml`."""
    explicit = environ.get("PLAN_LSP_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "plan-lsp" / "config.toml"


def _workspace_may_not_set(values: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    for key in USER_ONLY_KEYS:
        if key in values:
            warnings.append(
                f".plan-lsp/config.toml: '{key}' was ignored: a repository cannot add MCP "
                "servers (starting one runs a program); set it in your user config "
                "($PLAN_LSP_CONFIG or ~/.config/plan-lsp/config.toml)"
            )
    return {k: v for k, v in values.items() if k not in USER_ONLY_KEYS}


# -- end MCP (issue 17)


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
        workspace_values = _workspace_may_not_set(file_layer(workspace, warnings), warnings)
        layers.append((".plan-lsp/config.toml", workspace_values))
    user_file = user_config_path(os.environ if environ is None else environ)  # MCP (issue 17)
    layers.append((str(user_file), read_toml(user_file, warnings)))
    if init_options:
        layers.append(("initializationOptions", init_options))
    if cli:
        layers.append(("command line", {k: v for k, v in cli.items() if v is not None}))
    for source, values in layers:
        merged.update(_validated_layer(values, source, warnings))
    return Config.model_validate(merged), warnings
