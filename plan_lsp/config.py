"""Configuration: one validated model, merged from trusted sources (flags,
`initializationOptions`, the user's config file, the environment) and the workspace's
untrusted `.plan-lsp/config.toml`, which may only tighten what lowers protection, runs
programs or sends code elsewhere (docs/configuration.md, docs/security.md).

Each value is validated on its own: a bad one is reported with its source and replaced by
the default. The environment is read here directly: pydantic-settings would cost +8.5 MB of
resident memory and ~40 ms of imports before the first answer (tests/bench/bench_startup.py).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic.alias_generators import to_snake

from plan_lsp.policy.safe_fs import read_bytes, read_file_bytes
from plan_lsp.protocol.state import DoMode, PermissionMode, WorkMode
from plan_lsp.tools.mcp.config import McpSettings

PlanShell = Literal["off", "classified", "sandboxed"]
ProviderName = Literal["scripted", "openai", "anthropic"]
LogLevel = Literal["debug", "info", "warning", "error"]
ChatRoles = Literal["auto", "native", "user_assistant"]

USER_CONFIG_ENV = "PLAN_LSP_CONFIG"
WORKSPACE_CONFIG = Path(".plan-lsp") / "config.toml"
SERVER_DIR = ".plan-lsp"
DEFAULT_PLANS_DIR = ".plan-lsp/plans"


class PermissionRules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class Price(BaseModel):
    """What the model costs, in US dollars per million tokens (for `usage.costUsd`)."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(default=0.0, ge=0)
    output_per_mtok: float = Field(default=0.0, ge=0)
    # Cached input, where the provider reports it; unset: the input price.
    cached_input_per_mtok: float | None = Field(default=None, ge=0)

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int) -> float:
        cached_price = (
            self.cached_input_per_mtok
            if self.cached_input_per_mtok is not None
            else self.input_per_mtok
        )
        fresh = max(0, input_tokens - cached_input_tokens)
        return (
            fresh * self.input_per_mtok
            + cached_input_tokens * cached_price
            + output_tokens * self.output_per_mtok
        ) / 1_000_000


class Limits(BaseModel):
    """Per-run limits: a run that passes one stops cleanly, saying which (unset: none)."""

    model_config = ConfigDict(extra="forbid")

    run_tokens: int | None = Field(default=None, gt=0)
    run_cost_usd: float | None = Field(default=None, gt=0)


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
    # Always inside the server's own directory: relative, below `.plan-lsp/`.
    plans_dir: str = DEFAULT_PLANS_DIR
    # None = "sandboxed" where a sandbox proves itself, else "classified".
    plan_shell: PlanShell | None = None
    # Plan-mode shell commands may use the network (off: no network in plan mode).
    plan_network: bool = False
    max_steps: int = Field(default=50, gt=0, le=1000)
    # The model's context window in tokens; None: the model table, then the server's answer.
    context_window: int | None = Field(default=None, ge=1024)
    # The roles sent to an OpenAI-compatible server: "native" (system, user, assistant, tool),
    # "user_assistant" (only those two, alternating: for chat templates that reject the others),
    # "auto" (native until the server's template refuses it; providers/shaping.py).
    chat_roles: ChatRoles = "auto"
    price: Price | None = None
    limits: Limits = Field(default_factory=Limits)
    # A run stops after this long, whatever the model does.
    run_timeout_s: float = Field(default=3600, gt=0)
    # "stepwise": the Do run stops after each step of the plan until the user runs the next.
    do_mode: DoMode = "continuous"
    # The work mode a request starts in after a Do run (plan-first by default).
    after_do: WorkMode = WorkMode.PLAN
    permissions: PermissionRules = Field(default_factory=PermissionRules)
    allow_enter_plan_in_yolo: bool = False
    # MCP tool sources: trusted sources only (NEVER_FROM_WORKSPACE), see tools/mcp/config.py.
    mcp: McpSettings = Field(default_factory=McpSettings)
    log_level: LogLevel = "info"
    # Plan review's second reader: its model (None: the session's), and whether it reads
    # every submitted plan before the approval lenses appear.
    review_model: str | None = None
    review_before_approval: bool = False

    @field_validator("plans_dir")
    @classmethod
    def _inside_server_dir(cls, value: str) -> str:
        return normalise_plans_dir(value)

    def plans_path(self, workspace: Path) -> Path:
        return workspace / self.plans_dir


def normalise_plans_dir(value: str) -> str:
    """`value` as a relative POSIX path strictly below `.plan-lsp/`; ValueError otherwise."""
    if "\\" in value or "\x00" in value:
        raise ValueError("must be a relative path with '/' separators")
    path = PurePosixPath(value)
    if path.is_absolute() or value.startswith("~"):
        raise ValueError(f"must be a folder below {SERVER_DIR}/, not an absolute path")
    parts = [p for p in path.parts if p != "."]
    if ".." in parts:
        raise ValueError("must not contain '..'")
    if len(parts) < 2 or parts[0] != SERVER_DIR:
        raise ValueError(f"must be a folder below {SERVER_DIR}/ (e.g. {DEFAULT_PLANS_DIR})")
    if parts[1] in ("state.db", "config.toml", "revisions") or parts[1].startswith("state.db"):
        raise ValueError(f"{parts[1]!r} is the server's own file or folder")
    return "/".join(parts)


# -- trust rules -------------------------------------------------------------------------

# Keys a workspace may never set: they run programs, send code elsewhere or hold secrets.
# The price too: a repository must not make a run look free to the cost limit.
NEVER_FROM_WORKSPACE = frozenset(
    {"provider", "base_url", "api_key", "script", "transcript", "mcp", "price"}
)

_PERMISSION_STRICTNESS = {
    PermissionMode.YOLO: 0,
    PermissionMode.AUTO_EDIT: 1,
    PermissionMode.ASK: 2,
    PermissionMode.STRICT: 3,
}
# Tool output in a user turn speaks with the user's voice: a workspace may keep tool results
# in their own role, never move them into the user's.
_CHAT_ROLES_STRICTNESS = {"user_assistant": 0, "auto": 1, "native": 2}


def _limits_tighten(value: Limits, trusted: Any) -> bool:
    base = trusted if isinstance(trusted, Limits) else Limits()
    for name in ("run_tokens", "run_cost_usd"):
        mine, theirs = getattr(value, name), getattr(base, name)
        if theirs is not None and (mine is None or mine > theirs):
            return False
    return True


# Keys a workspace may set only to a value at least as strict as the trusted one:
# key → whether the workspace's value tightens (or keeps) the trusted value.
_TIGHTENS: dict[str, Callable[[Any, Any], bool]] = {
    "mode": lambda value, trusted: bool(value is WorkMode.PLAN or value == trusted),
    "after_do": lambda value, trusted: bool(value is WorkMode.PLAN or value == trusted),
    "permission_mode": lambda value, trusted: bool(
        _PERMISSION_STRICTNESS[value]
        >= _PERMISSION_STRICTNESS[trusted if trusted is not None else PermissionMode.ASK]
    ),
    # Only "no shell" is stricter: "classified" would switch a working sandbox off.
    "plan_shell": lambda value, trusted: bool(value == "off" or value == trusted),
    "plan_network": lambda value, trusted: value is False,
    "allow_enter_plan_in_yolo": lambda value, trusted: value is False,
    # A smaller window compacts sooner; a larger one would send (and cost) more.
    "context_window": lambda value, trusted: (
        trusted is not None and value is not None and value <= trusted
    ),
    "limits": _limits_tighten,
    "chat_roles": lambda value, trusted: (
        _CHAT_ROLES_STRICTNESS[value]
        >= _CHAT_ROLES_STRICTNESS[trusted if trusted is not None else "auto"]
    ),
}
TIGHTEN_ONLY = frozenset(_TIGHTENS)


# -- reading sources ---------------------------------------------------------------------


def _key(name: str) -> str:
    """The field name for a client-facing key (`baseUrl`, `base-url`, `base_url`)."""
    return to_snake(name.replace("-", "_"))


def _short(text: object, limit: int = 80) -> str:
    """`text` for a message: at most `limit` characters."""
    value = str(text)
    return value if len(value) <= limit else value[:limit] + "..."


def _validated_layer(values: Mapping[str, Any], source: str, warnings: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw_key, raw in values.items():
        key = _key(str(raw_key))
        if key not in Config.model_fields:
            warnings.append(f"{source}: unknown setting '{_short(raw_key)}' was ignored")
            continue
        try:
            if key == "permissions":
                rules = _permission_rules(raw, source, warnings)
                if rules is not None:
                    out[key] = rules
                continue
            # Every field has a default, so validating one key alone checks just that value.
            out[key] = getattr(Config.model_validate({key: raw}), key)
        except Exception as exc:  # invalid, or a value that breaks validation itself
            why = _why(exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else exc)
            warnings.append(f"{source}: invalid value for '{key}' ({why}); the default is used")
    return out


_VERDICTS = ("allow", "ask", "deny")
# Permission rules one source may hold (a real file has a few dozen): every rule's pattern
# is matched on each call, so their number bounds what a decision costs.
MAX_RULES_PER_SOURCE = 100


def _permission_rules(raw: Any, source: str, warnings: list[str]) -> PermissionRules | None:
    """The `permissions` table rule by rule: a rule that is not a string, does not parse or
    is over the pattern limits (`glob_match`: size, wildcards) is ignored with a warning
    naming it; the others are kept. None when the value is not a table at all."""
    if not isinstance(raw, Mapping):
        warnings.append(
            f"{source}: invalid value for 'permissions' (must be a table with allow, ask and "
            "deny lists); the default is used"
        )
        return None
    # policy.permissions (10-20 ms of imports) only when there are rules: the server answers
    # its first request without it otherwise.
    from plan_lsp.policy.permissions import Rule

    kept: dict[str, list[str]] = {}
    count = 0
    for verdict, texts in raw.items():
        if verdict not in _VERDICTS:
            warnings.append(
                f"{source}: unknown setting 'permissions.{_short(verdict)}' was ignored "
                "(allow, ask and deny are known)"
            )
            continue
        if not isinstance(texts, list):
            warnings.append(
                f"{source}: invalid value for 'permissions.{verdict}' (must be a list of "
                "rules); ignored"
            )
            continue
        kept[verdict] = []
        for text in texts:
            if not isinstance(text, str):
                warnings.append(
                    f"{source}: a permissions.{verdict} rule that is not a string "
                    f"({_short(text)}) was ignored"
                )
                continue
            try:
                Rule.parse(text)
            except ValueError as exc:
                warnings.append(
                    f"{source}: permissions.{verdict}: {_short(exc, 300)}; the rule was ignored"
                )
                continue
            count += 1
            if count > MAX_RULES_PER_SOURCE:
                continue
            kept[verdict].append(text)
    if count > MAX_RULES_PER_SOURCE:
        warnings.append(
            f"{source}: {count} permission rules, more than the limit of "
            f"{MAX_RULES_PER_SOURCE} (too_many_rules); the last {count - MAX_RULES_PER_SOURCE} "
            "were ignored"
        )
    return PermissionRules(**kept)


# Fields whose environment value is JSON (objects, lists).
_STRUCTURED = frozenset({"permissions", "mcp", "price", "limits"})


def env_layer(environ: Mapping[str, str], warnings: list[str]) -> dict[str, Any]:
    """`PLAN_LSP_<FIELD>` variables (any case); structured values as JSON."""
    by_name = {k.upper(): v for k, v in environ.items() if k.upper().startswith("PLAN_LSP_")}
    out: dict[str, Any] = {}
    for name in Config.model_fields:
        raw = by_name.get(f"PLAN_LSP_{name.upper()}")
        if raw is None:
            continue
        if name in _STRUCTURED:
            try:
                out[name] = json.loads(raw)
            except Exception as exc:  # bad JSON, or nested too deeply
                warnings.append(f"environment: invalid value for '{name}' ({_why(exc)}); ignored")
            continue
        out[name] = raw
    return out


def user_config_path(environ: Mapping[str, str]) -> Path:
    explicit = environ.get(USER_CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / "plan-lsp" / "config.toml"
    # platformdirs (~2 ms) only when neither $PLAN_LSP_CONFIG nor $XDG_CONFIG_HOME says where.
    from platformdirs import user_config_path as platform_config

    return platform_config("plan-lsp", appauthor=False) / "config.toml"


# A configuration file larger than this is not read (a real one is a few hundred bytes).
CONFIG_MAX_BYTES = 1024 * 1024


def _read_user_file(path: Path) -> bytes | None:
    """The user's own file: a link is followed (dotfile managers link them), but only a
    regular file is read, never blocked on; `/dev/null` (or `os.devnull`) means none."""
    if path == Path(os.devnull):
        return None
    return read_file_bytes(path, max_bytes=CONFIG_MAX_BYTES, follow_link=True)


def _read_workspace_file(workspace: Path) -> bytes | None:
    """The workspace's `.plan-lsp/config.toml`, walked from the workspace folder without
    following a link: a link (to `/dev/stdin`, to another file), a FIFO or a device there
    is refused, never read; so is a file over CONFIG_MAX_BYTES."""
    return read_bytes(workspace, workspace_config_path(workspace), max_bytes=CONFIG_MAX_BYTES)


def _toml_layer(
    path: Path, label: str, warnings: list[str], read: Callable[[], bytes | None] | None = None
) -> dict[str, Any]:
    """The TOML table in `path` (read by `read`, default: the user's own file), {} if there
    is none; a file that cannot be read or parsed is reported in `warnings` and ignored."""
    try:
        data = read() if read is not None else _read_user_file(path)
        return {} if data is None else tomllib.loads(data.decode("utf-8"))
    except Exception as exc:  # any failure: reported and ignored
        warnings.append(
            f"{label} ({path}) could not be read ({_why(exc)}); its settings were ignored"
        )
        return {}


def _why(exc: BaseException | str) -> str:
    """A short reason for a source or value that could not be read, parsed or validated."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, MemoryError):
        return "too large to parse"
    return _short(str(exc) or type(exc).__name__, 300)


def workspace_config_path(workspace: Path) -> Path:
    return workspace / WORKSPACE_CONFIG


def _folder_section(folders: Any, workspace: Path, warnings: list[str]) -> dict[str, Any]:
    """The user file's `[folders."<path>"]` table for this workspace folder: per-project
    settings (a provider, a base URL) that only the user, never the project, can set."""
    if not isinstance(folders, dict):
        warnings.append("user config: 'folders' must be a table of folder paths; ignored")
        return {}
    try:
        root = workspace.resolve()
    except OSError:
        return {}
    for raw_path, section in folders.items():
        try:
            matches = Path(str(raw_path)).expanduser().resolve() == root
        except (OSError, RuntimeError, ValueError):
            continue
        if matches and isinstance(section, dict):
            return dict(section)
    return {}


# -- merging -------------------------------------------------------------------------------


def _merge_rules(layers: list[dict[str, Any]]) -> PermissionRules | None:
    found = [layer["permissions"] for layer in layers if "permissions" in layer]
    if not found:
        return None
    merged = PermissionRules()
    for rules in found:
        for verdict in ("allow", "ask", "deny"):
            for rule in getattr(rules, verdict):
                if rule not in getattr(merged, verdict):
                    getattr(merged, verdict).append(rule)
    return merged


def _untrusted(
    workspace: dict[str, Any], trusted: dict[str, Any], label: str, warnings: list[str]
) -> dict[str, Any]:
    """What of the workspace's layer may apply: harmless keys, and tightening values."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in workspace.items():
        if key in NEVER_FROM_WORKSPACE:
            ignored.append(key)
        elif key in TIGHTEN_ONLY:
            base = trusted.get(key, Config.model_fields[key].default)
            if _TIGHTENS[key](value, base):
                out[key] = value
            else:
                ignored.append(key)
        elif key == "permissions":
            rules: PermissionRules = value
            if rules.allow:
                ignored.append("permissions.allow")
            out[key] = PermissionRules(ask=rules.ask, deny=rules.deny)
        else:
            out[key] = value
    if ignored:
        warnings.append(
            f"{label}: ignored {', '.join(ignored)} — a repository's configuration may only "
            "tighten protection; set these in your user config, the editor's user settings "
            "or on the command line"
        )
    return out


# Warnings kept from one load (each is shown to the user): a file of a thousand unknown keys
# is one problem, not a thousand messages.
MAX_WARNINGS = 20


def load_config(
    workspace: Path | None,
    init_options: Mapping[str, Any] | None = None,
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Config, list[str]]:
    """Merge every source; returns the config and human-readable warnings. Never raises for
    what a source holds: a source that cannot be read, parsed or validated is reported in
    the warnings and ignored (a value at a time where possible, else the whole file)."""
    try:
        config, warnings = _load_config(workspace, init_options, cli, environ)
    except Exception as exc:  # a source broke the loader itself
        warnings = [
            f"the configuration could not be loaded ({_why(exc)}); the workspace's "
            f"{WORKSPACE_CONFIG} was ignored"
        ]
        try:
            config, more = _load_config(None, init_options, cli, environ)
            warnings += more
        except Exception as again:
            warnings.append(
                f"the trusted configuration could not be loaded either ({_why(again)}); "
                "the defaults are used"
            )
            config = Config()
    if len(warnings) > MAX_WARNINGS:
        left = len(warnings) - MAX_WARNINGS + 1
        warnings = [*warnings[: MAX_WARNINGS - 1], f"... and {left} more configuration problems"]
    return config, warnings


def _load_config(
    workspace: Path | None,
    init_options: Mapping[str, Any] | None,
    cli: Mapping[str, Any] | None,
    environ: Mapping[str, str] | None,
) -> tuple[Config, list[str]]:
    env = os.environ if environ is None else environ
    warnings: list[str] = []
    env_values = _validated_layer(env_layer(env, warnings), "environment", warnings)
    user_path = user_config_path(env)
    user_raw = _toml_layer(user_path, "user config", warnings)
    folders = user_raw.pop("folders", {})
    user_values = _validated_layer(user_raw, f"user config {user_path}", warnings)
    if workspace is not None:
        folder = _folder_section(folders, workspace, warnings)
        if folder:
            user_values.update(
                _validated_layer(folder, f"user config {user_path} [folders]", warnings)
            )
    init_values = _validated_layer(init_options or {}, "initializationOptions", warnings)
    cli_values = _validated_layer(
        {k: v for k, v in (cli or {}).items() if v is not None}, "command line", warnings
    )
    trusted_order = [env_values, user_values, init_values, cli_values]
    trusted: dict[str, Any] = {}
    for layer in trusted_order:
        trusted.update(layer)

    workspace_values: dict[str, Any] = {}
    if workspace is not None:
        label = str(WORKSPACE_CONFIG)
        raw = _toml_layer(
            workspace_config_path(workspace),
            label,
            warnings,
            lambda: _read_workspace_file(workspace),
        )
        workspace_values = _untrusted(
            _validated_layer(raw, label, warnings), trusted, label, warnings
        )

    merged: dict[str, Any] = {}
    # Precedence: environment < workspace < user file < initializationOptions < command line;
    # a tightening workspace value wins over every trusted one.
    for layer in [env_values, workspace_values, user_values, init_values, cli_values]:
        merged.update(layer)
    for key in TIGHTEN_ONLY & workspace_values.keys():
        merged[key] = workspace_values[key]
    rules = _merge_rules([*trusted_order, workspace_values])
    if rules is not None:
        merged["permissions"] = rules
    return Config.model_validate(merged), warnings


def trusted_log_level(environ: Mapping[str, str] | None = None) -> LogLevel | None:
    """The log level from the trusted sources readable before `initialize` (env, user file)."""
    env = os.environ if environ is None else environ
    ignored: list[str] = []
    level: LogLevel | None = None
    for layer in (
        env_layer(env, ignored),
        _toml_layer(user_config_path(env), "user config", ignored),
    ):
        values = _validated_layer({k: v for k, v in layer.items() if k == "log_level"}, "", [])
        level = values.get("log_level", level)
    return level
