"""Credential variables name files the plan sandbox hides (`layout.CREDENTIAL_VARIABLES`):
bubblewrap binds /dev/null over each. Users point such variables at /dev/null to switch a
tool's configuration off (`KUBECONFIG=/dev/null`, `NPM_CONFIG_USERCONFIG=/dev/null`; the
project's own test harness starts every server with `PLAN_LSP_CONFIG=/dev/null`)."""

from __future__ import annotations

import pytest

from plan_lsp.policy.sandbox import BUBBLEWRAP, probe_sandbox
from plan_lsp.policy.sandbox.bwrap import bwrap_path
from tests.needs import need


@pytest.mark.parametrize("variable", ["KUBECONFIG", "NPM_CONFIG_USERCONFIG", "PLAN_LSP_CONFIG"])
def test_credential_variable_naming_dev_null_keeps_bubblewrap(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trigger: the server's environment has `<VAR>=/dev/null`.

    Should: the plan sandbox is still bubblewrap (hiding /dev/null behind /dev/null hides
    nothing). Today: the layout binds the host's /dev/null read-only over the sandbox's
    /dev/null (`--ro-bind /dev/null /dev/null`), every `>/dev/null` inside fails, the
    self-test's probe breaks ("the workspace is not readable inside the sandbox") and the
    server silently falls back to Landlock (weaker: no pid, mount or network namespace) or
    to `classified` where Landlock is missing."""
    need(bwrap_path() is not None, "bubblewrap is not installed")
    need(probe_sandbox([BUBBLEWRAP]).mechanism == BUBBLEWRAP, "bubblewrap does not work here")
    monkeypatch.setenv(variable, "/dev/null")
    status = probe_sandbox([BUBBLEWRAP])
    assert status.mechanism == BUBBLEWRAP, status.detail
