"""The wire contract as pydantic models (`state`, `params`, `errors`, `results`, `updates`,
`methods`): requests, results, `SessionState` and the `Update` union the session core emits
and each front-end maps to its wire. It imports nothing of plan_lsp; `docs/protocol.md` and
the VS Code client's `src/protocol.generated.ts` are generated from it
(`scripts/gen_protocol.py`); `tests/test_protocol_conformance.py` checks the real server."""
