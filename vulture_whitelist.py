"""Names vulture cannot see used: read by a framework, by name, or outside the package.

`tests/test_dead_code.py` runs vulture over plan_lsp/ with this file, at 60 % confidence,
and fails on any finding. Each entry says why the name is used.

    .venv/bin/vulture plan_lsp vulture_whitelist.py --min-confidence 60 \
        --exclude plan_lsp/demo/sample
"""

# ruff: noqa: B018  (each line is a bare use of a name, which is the point)

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# -- pydantic: configuration and validators, read by pydantic itself -------------------------

_.model_config  # every model's pydantic configuration (ConfigDict)
_._inside_server_dir  # config.py: @field_validator("plans_dir")
_._valid  # policy/shell/database.py: @model_validator of Effect and of the database
_._data_only  # policy/shell/database.py: @model_validator(mode="before")
_.optional  # policy/shell/database.py: an OptionSet list, read by name (`_LISTS`)
_._schema_from_model  # policy/safety.py: @model_validator(mode="before")
_._relative  # policy/autorun.py: @field_validator("path")
_._absolute  # policy/sandbox/layout.py: @field_validator of the absolute paths' lists
_.whitespace_split  # policy/autorun.py: a shlex setting, read by shlex
_.commenters  # policy/autorun.py: a shlex setting, read by shlex
_.case_sensitive  # tools/grep_engine.py: an RE2 option, read by RE2
_.log_errors  # tools/grep_engine.py: an RE2 option, read by RE2
_._name  # tools/mcp/config.py: @field_validator("name")
_._command  # tools/mcp/config.py: @field_validator("command")
_._env  # tools/mcp/config.py: @field_validator("env")
_._split_valid_entries  # tools/mcp/config.py: @model_validator(mode="before")
_._given_fields  # protocol/params.py: @model_serializer(mode="wrap") of every WireModel

# -- fields that go out as JSON (protocol messages, tool schemas), never read in Python ------

_.baseUrl  # protocol/state.py: ProviderInfo, sent in planLsp/state
_.shellProtection  # protocol/state.py: state's sandbox report
_.planNetwork  # protocol/state.py: state
_.mcpServers  # protocol/state.py: state
_.configWarnings  # protocol/state.py: state
_.sessionId  # protocol/state.py: SessionState
_.planStatus  # protocol/: state and updates
_.approvedPlan  # protocol/state.py: SessionState
_.previousRevision  # protocol/: plan revision update
_.currentRevision  # protocol/: plan revision update
_.previousUri  # protocol/: plan revision update
_.optionId  # protocol/: permission answer
_.prunedOutputs  # protocol/: compaction update
_.stepText  # protocol/results.py: CheckpointInfo
_.canRedo  # protocol/results.py: CheckpointsResult
_.notRestorable  # protocol/results.py: RevertResult
_.pausedAfterStep  # protocol/state.py: StepProgress, in state
_.carriedOut  # protocol/results.py: PlanInfo
_.approvedAt  # protocol/: plans list
_.updatedAt  # protocol/: plans list
_.start_line  # tools/fs.py ReadFileArguments: the model's JSON schema (read as a dict key)
_.probe_ms  # policy/sandbox/status.py SandboxStatus: probe_main's JSON line (dataclasses.asdict)

# -- enum members reached by value -----------------------------------------------------------

_.NEVER_PLANNED  # protocol/state.py Outcome: a StrEnum field's values, made from their strings
_.PLANNING_WITH_PLAN  # Outcome
_.PLANNING_WITHOUT_PLAN  # Outcome
_.COMPLETED  # Outcome

# -- pygls: handlers registered by decorator, attributes and hooks pygls reads ---------------

_.on_initialize  # server/handlers.py: @ls.feature(INITIALIZE)
_.on_initialized  # server/handlers.py: @ls.feature(INITIALIZED)
_.on_shutdown  # server/handlers.py: @ls.feature(SHUTDOWN)
_.code_action  # server/handlers.py: @ls.feature(TEXT_DOCUMENT_CODE_ACTION)
_.message_request  # demo/client.py: @client.feature(WINDOW_SHOW_MESSAGE_REQUEST)
_.show_message  # demo/client.py: @client.feature(WINDOW_SHOW_MESSAGE)
_.log_message  # demo/client.py: @client.feature(WINDOW_LOG_MESSAGE)
_.lens_refresh  # demo/client.py: @client.feature(WORKSPACE_CODE_LENS_REFRESH)
_.report_server_error  # server/app.py: LanguageServer's error hook, overridden
_.CODE  # server/params.py RequestFailed: the JSON-RPC error code pygls sends
_.MESSAGE  # server/params.py RequestFailed: the JSON-RPC error message pygls sends

# -- Agent Client Protocol: methods the acp SDK calls by name, and their parameters ----------

_.on_connect  # acp/agent.py
_.authenticate  # acp/agent.py
_.load_session  # acp/agent.py
_.set_session_mode  # acp/agent.py
_.set_config_option  # acp/agent.py
_.close_session  # acp/agent.py
_.list_sessions  # acp/agent.py
_.fork_session  # acp/agent.py
_.resume_session  # acp/agent.py
_.ext_method  # acp/agent.py
_.ext_notification  # acp/agent.py
_.protocol_version  # acp/agent.py: a parameter of the protocol's signature
_.additional_directories  # acp/agent.py: a parameter of the protocol's signature
_.kwargs  # acp/agent.py: the protocol's signatures take extra keyword arguments

# -- Python and import machinery ---------------------------------------------------------------

_.__getattr__  # policy/sandbox/__init__.py: module __getattr__ (PEP 562), loads a mechanism on use

# -- used outside the package: scripts/, tests/, benchmarks ------------------------------------

_.result_nullable  # protocol/methods.py: read by scripts/gen_protocol.py
_.METHODS  # protocol/methods.py: the method tables, read by scripts/gen_protocol.py and the
_.CLIENT_REQUESTS  # protocol conformance test (as are the initialize options and FIELD_NOTES)
_.EXPERIMENTAL_SERVER_FIELDS
_.EXPERIMENTAL_CLIENT_OPTIONS
_.FIELD_NOTES
_.UPDATE_MODELS  # protocol/updates.py: the protocol conformance and generation tests
_.parse_only  # policy/shell/parser.py: tests/bench/bench_classify.py's reference
# session/checkpoints/: the store's results, read by its tests and benchmark
_.recovered
_.freed_bytes
_.kept_bytes
