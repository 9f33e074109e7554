"""The `bash` tool: run one command line, in the sandbox profile its mode calls for.

Whether a command may run is decided before (the execution gate); this runs it well: the
profile its mode calls for (plan sandbox, else the allow-list environment and git shim;
build profile with bubblewrap, else unsandboxed), own process group, timeout, output caps,
cancellation. Nothing it starts outlives it: bubblewrap's pid namespace, else the subreaper.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from plan_lsp.policy.arguments import ArgumentModel
from plan_lsp.policy.safety import PrimaryArgument, Safety, ToolDefinition
from plan_lsp.policy.sandbox import (
    LANDLOCK,
    SandboxUnavailable,
    host_limited,
    plan_environment,
    reaped_argv,
    sandbox_argv,
    sandbox_status,
    unsandboxed_plan_env,
)
from plan_lsp.protocol.state import WorkMode
from plan_lsp.tools.base import Tool, ToolContext, ToolResult
from plan_lsp.tools.bash_process import Capture, run_process
from plan_lsp.tools.edit import current_mode

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
# Characters of each stream kept for the model: the start and the end, the middle cut.
OUTPUT_CAP_CHARS = 30_000
# `ctx.extra[PLAN_NETWORK_KEY]`: the user's `planNetwork` setting (plan-mode shell may use
# the network). Absent means no network.
PLAN_NETWORK_KEY = "plan_network"
# `ctx.extra[READ_ONLY_UNASKED_KEY]`: a build-mode command the gate let run without asking
# because the classifier proved it read-only: it runs as a plan-mode command would (the plan
# environment with the git shim, in the read-only sandbox where one works), so a repository's
# configured programs do not run behind an unasked read.
READ_ONLY_UNASKED_KEY = "read_only_unasked"

_DROPPED_ENV = ("BASH_ENV", "ENV", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_PARAMETERS", "GIT_PAGER_IN_USE")
# The server's own settings and model credentials are not the commands' business: a model
# must not be able to print the key it runs on.
_SERVER_SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
_SERVER_PREFIX = "PLAN_LSP_"
_NON_INTERACTIVE = {
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "SSH_ASKPASS": "true",
    "TERM": "dumb",
}

Profile = Literal["plan", "build"]


def shell_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of build-mode commands: the server's, without its secrets and
    shell start-up files, non-interactive (no pagers, editors or password prompts)."""
    env = dict(os.environ if base is None else base)
    for name in (*_DROPPED_ENV, *_SERVER_SECRETS):
        env.pop(name, None)
    for key in [k for k in env if k.startswith(_SERVER_PREFIX)]:
        del env[key]
    for key in [k for k in env if k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        del env[key]
    env.pop("GIT_CONFIG_COUNT", None)
    env.update(_NON_INTERACTIVE)
    return env


@dataclass
class _Launch:
    """How one command starts: argv, environment, a scratch directory to remove after, and
    what confined it (for the result)."""

    argv: list[str]
    env: dict[str, str]
    scratch: Path | None = None
    note: str = ""

    def cleanup(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _launch(
    command: str,
    cwd: Path,
    *,
    sandboxed: bool,
    profile: Profile,
    roots: Sequence[Path],
    network: bool,
) -> _Launch:
    """Raises SandboxUnavailable when `sandboxed` cannot be honoured."""
    argv = ["bash", "-c", command]
    status = sandbox_status() if sandboxed or profile == "build" else None
    if sandboxed:
        assert status is not None
        if status.mechanism is None:
            raise SandboxUnavailable(status.detail)
        scratch = None
        if status.mechanism == LANDLOCK:
            scratch = Path(tempfile.mkdtemp(prefix="plan-lsp-scratch-"))
        wrapped = sandbox_argv(
            cwd, argv, roots=roots, network=network, mechanism=status.mechanism, scratch=scratch
        )
        return _Launch(
            # Landlock has no pid namespace: the subreaper takes what the command leaves.
            reaped_argv(wrapped) if status.mechanism == LANDLOCK else wrapped,
            plan_environment(),  # the argv starts with `env -i` anyway
            scratch,
            "(ran in the read-only sandbox: no writes" + (")" if network else ", no network)"),
        )
    if profile == "plan":
        # No sandbox: the classifier was the wall. The sandbox's limits hold all the same,
        # and the command gets a private, empty home (no user configuration is read).
        home = Path(tempfile.mkdtemp(prefix="plan-lsp-home-"))
        return _Launch(reaped_argv(host_limited(argv)), unsandboxed_plan_env(home), home)
    if status is not None and status.build_profile:
        # The namespace dies with bwrap, but the kernel ends its processes only once its
        # init runs again: the subreaper kills them itself before the call returns.
        return _Launch(
            reaped_argv(
                sandbox_argv(cwd, argv, roots=roots, profile="build", mechanism=status.mechanism)
            ),
            shell_env(),
            note="(.plan-lsp was read-only for this command)",  # in data only
        )
    return _Launch(reaped_argv(argv), shell_env())


async def run_shell(
    command: str,
    cwd: Path,
    timeout_s: float,
    sandboxed: bool,
    cancel: asyncio.Event | None,
    *,
    profile: Profile = "plan",
    roots: Sequence[Path] = (),
    network: bool = False,
) -> ToolResult:
    """Run `bash -c command` in `cwd`; never runs unsandboxed when `sandboxed` is asked for.

    `profile` is the work mode's: `plan` without `sandboxed` runs unconfined with the
    plan-mode environment (the classifier was the wall); `build` uses the build sandbox
    when one works. `roots` are the workspace roots (default `cwd`)."""
    roots = list(roots) or [cwd]
    try:
        launch = _launch(
            command, cwd, sandboxed=sandboxed, profile=profile, roots=roots, network=network
        )
    except SandboxUnavailable as exc:
        return ToolResult.error(
            "sandbox_unavailable",
            "This command must run inside the read-only sandbox, but no working sandbox "
            f"is available here ({exc}), so it was not run.",
        )
    limit = min(max(timeout_s, 0.1), MAX_TIMEOUT_S)
    try:
        ended = await run_process(launch.argv, cwd, launch.env, limit, cancel, cap=OUTPUT_CAP_CHARS)
        return _result(command, *ended, limit, sandboxed, launch.note)
    except OSError as exc:
        return ToolResult.error("spawn_failed", f"could not start bash: {exc}")
    finally:
        launch.cleanup()


def _result(
    command: str,
    code: int | None,
    stop: str,
    out: Capture,
    err: Capture,
    timeout_s: float,
    sandboxed: bool,
    note: str = "",
) -> ToolResult:
    stdout, out_cut = out.text()
    stderr, err_cut = err.text()
    data: dict[str, Any] = {
        "exit_code": code,
        "stdout": stdout,
        "stderr": stderr,
        "truncated": out_cut or err_cut,
        "sandboxed": sandboxed,
        # What confined the command: "plan sandbox", "build sandbox" or "none".
        "confinement": "plan sandbox" if sandboxed else "build sandbox" if note else "none",
    }
    if stop == "timeout":
        return ToolResult.error(
            "timeout",
            f"the command did not finish within {timeout_s:g} s and was killed",
            **data,
        )
    if stop == "cancelled":
        return ToolResult.error("cancelled", "the command was cancelled and killed", **data)
    parts = [f"exit code: {code}"]
    if sandboxed and note:
        parts.append(note)
    parts.append(f"stdout:\n{stdout}" if stdout else "stdout: (empty)")
    if stderr:
        parts.append(f"stderr:\n{stderr}")
    return ToolResult(content="\n".join(parts), data=data)


class BashArguments(ArgumentModel):
    command: str = Field(description="The bash command line to run.")
    timeout_s: float | None = Field(
        default=None, description="Seconds before the command is killed (default 120, max 600)."
    )


async def _run_bash(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
    args = BashArguments.model_validate(arguments)  # as the runner checked them
    timeout_s = DEFAULT_TIMEOUT_S if args.timeout_s is None else args.timeout_s
    if not args.command.strip():
        return ToolResult.error("invalid_arguments", "`command` must be a non-empty string")
    if timeout_s <= 0:
        return ToolResult.error("invalid_arguments", "`timeout_s` must be positive")
    plan = current_mode(ctx) is WorkMode.PLAN or ctx.extra.get(READ_ONLY_UNASKED_KEY) is True
    # In plan mode a working sandbox is always used, even when the gate did not ask for it
    # (`classified` chosen by the user, or a switch to plan mode after the gate's check).
    sandboxed = ctx.sandbox_shell or (plan and sandbox_status().mechanism is not None)
    return await run_shell(
        args.command,
        ctx.workspace,
        min(timeout_s, MAX_TIMEOUT_S),
        sandboxed,
        ctx.cancel,
        profile="plan" if plan else "build",
        roots=ctx.workspace_roots,
        network=plan and ctx.extra.get(PLAN_NETWORK_KEY) is True,
    )


BASH_TOOL = Tool(
    definition=ToolDefinition(
        name="bash",
        description=(
            "Run a bash command line in the workspace folder and return its exit code, "
            "stdout and stderr (long output keeps its start and end). In plan mode only "
            "read-only commands are accepted, and they run in a sandbox without writes or "
            "network. Default timeout 120 s, at most 600 s."
        ),
        arguments=BashArguments,
        safety=Safety.SIDE_EFFECT,
        classified_per_call=True,
        primary_argument=PrimaryArgument(name="command", kind="command"),
        # Longer than the command's own limit, so the command's timeout reports first.
        timeout_s=MAX_TIMEOUT_S + 30.0,
    ),
    run=_run_bash,
)
