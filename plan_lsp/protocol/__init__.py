"""The wire contract as pydantic models: every request's params and result, every request
the server sends the client, `SessionState` and every `planLsp/update` kind (the `Update`
union the session core emits and each front-end maps to its wire).

It imports nothing of plan_lsp (only pydantic and the standard library): the core, both
front-ends and the layers below speak its types. `docs/protocol.md` and the VS Code
client's `src/protocol.generated.ts` are generated from it (`scripts/gen_protocol.py`), and
`tests/test_protocol_conformance.py` validates everything the real server sends against it.
The models forbid fields they do not declare.

Modules: `state` (the session's value types and `SessionState`), `params` (request params),
`errors` (stop reasons, error codes, stopped calls), `results` (request results and the
server's requests to the client), `updates` (the `Update` union), `methods` (the method
table the docs are generated from). Every model is built when first used (`defer_build`).
"""
