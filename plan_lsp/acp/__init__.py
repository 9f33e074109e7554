"""The Agent Client Protocol front-end (`plan-lsp acp`): ACP v1 over stdio, on the session
core, inside the same walls as the LSP server."""

from __future__ import annotations

import asyncio
from typing import Any


def serve(cli_overrides: dict[str, Any]) -> None:
    """Answer ACP on stdin/stdout until the client goes."""
    import acp

    from plan_lsp.acp.agent import PlanLspAgent

    async def main() -> None:
        agent = PlanLspAgent(cli_overrides)
        try:
            await acp.run_agent(agent, use_unstable_protocol=True)
        finally:
            await agent.close()

    asyncio.run(main())
