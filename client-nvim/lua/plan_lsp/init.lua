-- plan-lsp for Neovim: starts `plan-lsp serve` per workspace on Neovim's built-in LSP
-- client and adds commands, a statusline component, code lens refresh on plan documents
-- and a log of the agent's activity. Approving a plan needs nothing of this: the code
-- lenses and code actions are standard LSP (see README.md).
local compat = require("plan_lsp.compat")
local lens = require("plan_lsp.lens")
local log = require("plan_lsp.log")

local M = {}

local defaults = {
  -- The server command; provider options below are appended to it.
  cmd = { "plan-lsp", "serve" },
  provider = nil, -- "scripted" | "openai" | "anthropic"
  model = nil,
  base_url = nil,
  script = nil, -- scripted provider's script file
  transcript = nil,
  permission_mode = nil, -- "ask" | "auto_edit" | "yolo" | "strict"
  plan_shell = nil, -- "off" | "classified" | "sandboxed"
  args = {}, -- more arguments for `plan-lsp serve`
  -- A string, or function(bufnr) -> string|nil; nil: the nearest folder holding one of
  -- root_markers, else the current directory when the file lies below it.
  root_dir = nil,
  root_markers = { ".plan-lsp", ".git" },
  -- "workspace": every file buffer inside the workspace; "markdown": only *.md files.
  attach = "workspace",
  -- Where plan documents live, relative to the workspace (below .plan-lsp/); nil: the
  -- server's setting. Sent as the `plansDir` initialization option when set; the plugin
  -- itself follows the `planUri` the server pushes.
  plans_dir = nil,
  -- Neovim 0.7–0.9 cannot show documents for the server: open PLAN.md before prompting so
  -- the draft streams into a buffer.
  open_plan_on_prompt = true,
  init_options = nil,
  capabilities = nil, -- merged over Neovim's defaults
  on_attach = nil, -- function(client, bufnr)
  on_update = nil, -- function(update, ctx) for every planLsp/update
  log = true, -- render updates into the plan-lsp://log buffer
  name = "plan-lsp",
}

M.config = vim.deepcopy(defaults)
-- Per workspace root: the client id and the last known SessionState.
M.clients = {}
M.states = {}
M.augroup = nil

local function notify(msg, level)
  vim.notify("plan-lsp: " .. msg, level or vim.log.levels.INFO)
end

-- -- workspace roots ---------------------------------------------------------------------

local function buffer_path(bufnr)
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

local function is_under(path, root)
  return path == root or path:sub(1, #root + 1) == root .. "/"
end

-- The real path of `path`, or of its nearest existing parent plus the rest (new files).
local function real_path(path)
  local real = compat.realpath(path)
  if real then
    return real
  end
  local parent = vim.fn.fnamemodify(path, ":h")
  if parent == path then
    return path
  end
  return real_path(parent) .. "/" .. vim.fn.fnamemodify(path, ":t")
end

local function find_root(path)
  local dir = vim.fn.fnamemodify(path, ":h")
  while true do
    for _, marker in ipairs(M.config.root_markers) do
      if compat.exists(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
end

--- The workspace root for `bufnr`, or nil when the buffer is not one to attach.
function M.root_for(bufnr)
  local path = buffer_path(bufnr)
  if not path then
    return nil
  end
  path = real_path(path)
  local root = M.config.root_dir
  if type(root) == "function" then
    root = root(bufnr)
  end
  if root == nil then
    root = find_root(path)
  end
  if root == nil then
    local cwd = compat.realpath(vim.fn.getcwd())
    if cwd and is_under(path, cwd) then
      root = cwd
    end
  end
  if root == nil then
    return nil
  end
  root = compat.realpath(root) or root
  if not is_under(path, root) then
    return nil
  end
  return root
end

local DEFAULT_PLANS_DIR = ".plan-lsp/plans"

-- The plans folder of `root`: the folder of the pushed state's planUri, else the configured
-- or default folder (before the server's first state arrives).
local function plans_dir(root)
  local state = M.states[root]
  if state and type(state.planUri) == "string" and state.planUri ~= "" then
    return vim.fn.fnamemodify(vim.uri_to_fname(state.planUri), ":h")
  end
  return root .. "/" .. (M.config.plans_dir or DEFAULT_PLANS_DIR)
end

function M.is_plan_document(bufnr, root)
  local path = buffer_path(bufnr)
  root = root or M.root_for(bufnr)
  if not path or not root then
    return false
  end
  local plans = plans_dir(root)
  return is_under(real_path(path), compat.realpath(plans) or plans) and path:match("%.md$") ~= nil
end

-- -- clients -------------------------------------------------------------------------------

local function server_cmd()
  local cmd = vim.deepcopy(M.config.cmd)
  local options = {
    { "--provider", M.config.provider },
    { "--model", M.config.model },
    { "--base-url", M.config.base_url },
    { "--script", M.config.script },
    { "--transcript", M.config.transcript },
    { "--permission-mode", M.config.permission_mode },
    { "--plan-shell", M.config.plan_shell },
  }
  for _, option in ipairs(options) do
    if option[2] ~= nil then
      table.insert(cmd, option[1])
      table.insert(cmd, option[2])
    end
  end
  vim.list_extend(cmd, M.config.args or {})
  return cmd
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  if M.config.capabilities then
    caps = vim.tbl_deep_extend("force", caps, M.config.capabilities)
  end
  caps.experimental = caps.experimental or {}
  -- Permission prompts and questions come as standard showMessageRequest; the server asks
  -- the plugin to save a buffer it changed (so the disk agrees, with no "file changed" warning).
  caps.experimental.planLsp = { saveDocuments = true }
  return caps
end

function M.client_for_root(root)
  local id = root and M.clients[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if client and not compat.is_stopped(client) then
    return client
  end
  return nil
end

--- The client serving the current buffer's workspace, else the only/first running one.
function M.current(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = M.root_for(bufnr)
  local client = M.client_for_root(root)
  if client then
    return client, root
  end
  for r, _ in pairs(M.clients) do
    client = M.client_for_root(r)
    if client then
      return client, r
    end
  end
  return nil, nil
end

local function root_of_client(client_id)
  for root, id in pairs(M.clients) do
    if id == client_id then
      return root
    end
  end
  return nil
end

local function plan_buffers(root)
  local out = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and M.is_plan_document(bufnr, root) then
      table.insert(out, bufnr)
    end
  end
  return out
end

function M.refresh_lenses(root)
  local client = M.client_for_root(root)
  if not client then
    return
  end
  for _, bufnr in ipairs(plan_buffers(root)) do
    lens.refresh(bufnr, client)
  end
end

-- Lenses depend on these; a state that changes one of them refreshes them.
local LENS_FIELDS = { "mode", "planStatus", "running", "planUri" }

local function set_state(root, state)
  if type(state) ~= "table" or not state.mode then
    return
  end
  local old = M.states[root] or {}
  M.states[root] = vim.deepcopy(state)
  vim.cmd("redrawstatus")
  for _, key in ipairs(LENS_FIELDS) do
    if old[key] ~= state[key] then
      M.refresh_lenses(root)
      return
    end
  end
end

local function on_update(err, update, ctx)
  if err or type(update) ~= "table" then
    return
  end
  local root = root_of_client(ctx.client_id)
  -- The server pushes the whole SessionState on every change; nothing is derived here.
  if root and update.kind == "state" then
    set_state(root, update.state)
  end
  if update.kind == "error" and update.retry then
    -- The model server failed the run: one command starts it again (the prompt kept).
    vim.schedule(function()
      notify(tostring(update.message) .. " (:PlanRetry to try again)", vim.log.levels.WARN)
    end)
  end
  if M.config.log then
    local ok, e = pcall(log.render, update)
    if not ok then
      vim.schedule(function()
        notify("log: " .. tostring(e), vim.log.levels.DEBUG)
      end)
    end
  end
  if M.config.on_update then
    M.config.on_update(update, ctx)
  end
end

-- Neovim before 0.10 answers showMessageRequest with inputlist(); this asks through
-- vim.ui.select instead. Without coroutine support there the answer must come back
-- synchronously (the default vim.ui.select does); an asynchronous picker counts as
-- dismissed, which the server treats as "Deny".
local function show_message_request(_, params)
  local actions = params.actions or {}
  local choice = nil
  local answered = false
  vim.ui.select(actions, {
    prompt = params.message,
    kind = "plan_lsp_permission",
    format_item = function(action)
      return action.title
    end,
  }, function(item)
    choice = item
    answered = true
  end)
  if not answered then
    notify("the prompt was not answered synchronously; treated as dismissed", vim.log.levels.WARN)
  end
  return choice or vim.NIL
end

local function init_options()
  local options = vim.deepcopy(M.config.init_options or {})
  if M.config.plans_dir then
    options.plansDir = M.config.plans_dir
  end
  return next(options) and options or nil
end

--- `planLsp/saveDocument {uri}`: write that buffer (it held no unsaved change of the user's
--- before the server's edit; autocommands are skipped so a format-on-save does not change
--- the text the server put there; `write!` because a file whose time changed since Neovim
--- read it would make `:write` wait for an answer to "changed since reading it" — on 0.8+,
--- 0.7 asks even then).
local function save_document(_, params)
  local uri = type(params) == "table" and params.uri or nil
  if type(uri) ~= "string" then
    return { saved = false }
  end
  local bufnr = vim.uri_to_bufnr(uri)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return { saved = false }
  end
  -- No final newline the buffer lacks ('fixendofline'): Neovim's text for LSP has none.
  local fixeol = vim.bo[bufnr].fixeol
  vim.bo[bufnr].fixeol = false
  local ok = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent noautocmd write!")
  end)
  vim.bo[bufnr].fixeol = fixeol
  return { saved = ok and not vim.bo[bufnr].modified }
end

local function client_config(root)
  local handlers = { ["planLsp/update"] = on_update, ["planLsp/saveDocument"] = save_document }
  if not compat.async_server_requests then
    handlers["window/showMessageRequest"] = show_message_request
  end
  return {
    name = M.config.name,
    cmd = server_cmd(),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    capabilities = capabilities(),
    handlers = handlers,
    -- The lens's Reject… / Revise…: the feedback is asked for here (vim.ui.input).
    commands = {
      ["planLsp.rejectPlan"] = function(command, ctx)
        M.reject_from_lens(command, ctx)
      end,
      -- The step lens's revert: its answer is shown and the buffers follow the disk.
      ["planLsp.revert"] = function(command)
        require("plan_lsp.steps").from_lens(M, command)
      end,
      -- The code action's Comment on these lines…: the comment is asked for (vim.ui.input).
      ["planLsp.commentOnPlan"] = function(command)
        require("plan_lsp.review").from_action(M, command)
      end,
    },
    init_options = init_options(),
    on_init = function(client)
      M.clients[root] = client.id
    end,
    on_attach = function(client, bufnr)
      if M.is_plan_document(bufnr, root) then
        lens.refresh(bufnr, client)
      end
      if M.config.on_attach then
        M.config.on_attach(client, bufnr)
      end
    end,
    on_exit = function(_, _, client_id)
      vim.schedule(function()
        if M.clients[root] == client_id then
          M.clients[root] = nil
          M.states[root] = nil
        end
      end)
    end,
  }
end

--- Attaches `bufnr` to its workspace's server, starting the server when needed.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return nil
  end
  if M.config.attach == "markdown" and not (buffer_path(bufnr) or ""):match("%.md$") then
    return nil
  end
  local root = M.root_for(bufnr)
  if not root then
    return nil
  end
  local running = M.client_for_root(root)
  if running and vim.lsp.buf_is_attached(bufnr, running.id) then
    return running.id
  end
  local id
  if compat.has_lsp_start then
    id = vim.lsp.start(client_config(root), { bufnr = bufnr })
  else
    id = M.clients[root]
    if not M.client_for_root(root) then
      id = vim.lsp.start_client(client_config(root))
    end
    if id then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
  if id then
    M.clients[root] = id
  end
  return id
end

-- -- requests ------------------------------------------------------------------------------

local function with_workspace(params, root)
  params = params or {}
  if root then
    params.workspaceUri = vim.uri_from_fname(root)
  end
  return params
end

--- Sends a planLsp/* request for the current workspace; `on_result(result)` on success.
function M.request(method, params, on_result)
  local client, root = M.current()
  if not client then
    notify("no plan-lsp server for this buffer", vim.log.levels.WARN)
    return false
  end
  compat.request(client, method, with_workspace(params, root), function(err, result)
    if err then
      notify(method .. ": " .. (err.message or tostring(err)), vim.log.levels.WARN)
      return
    end
    if type(result) == "table" and result.mode then
      set_state(root, result)
    end
    if on_result then
      on_result(result)
    end
  end)
  return true
end

--- Synchronous variant (for scripts and tests): returns result, err.
function M.request_sync(method, params, timeout_ms)
  local client, root = M.current()
  if not client then
    return nil, "no plan-lsp server"
  end
  local response, err = compat.request_sync(client, method, with_workspace(params, root), timeout_ms or 5000)
  if not response then
    return nil, err
  end
  if response.err then
    return nil, response.err.message or response.err
  end
  if type(response.result) == "table" and response.result.mode then
    set_state(root, response.result)
  end
  return response.result, nil
end

--- The last known SessionState of the current workspace (nil before the server answered).
function M.state()
  local _, root = M.current()
  return root and M.states[root] or nil
end

--- The plan-mode shell protection: "shell sandboxed (bubblewrap)", "shell classified",
--- "no shell".
function M.shell_protection(state)
  if type(state) ~= "table" or not state.planShell then
    return ""
  end
  if state.planShell == "off" then
    return "no shell"
  end
  local text = "shell " .. state.planShell
  if type(state.sandbox) == "string" then
    text = text .. " (" .. state.sandbox .. ")"
  end
  return text
end

--- A token count in a few characters: 950, 7.4k, 41.2k, 128k, 1.2M.
function M.format_tokens(n)
  n = type(n) == "number" and n > 0 and math.floor(n + 0.5) or 0
  if n < 1000 then
    return tostring(n)
  end
  local size, suffix = 1000, "k"
  if n >= 999950 then
    size, suffix = 1000000, "M"
  end
  local scaled = n / size
  local text = scaled < 100 and string.format("%.1f", scaled) or string.format("%.0f", scaled)
  return (text:gsub("%.0$", "")) .. suffix
end

local function number(value)
  return type(value) == "number" and value or 0
end

--- The session's context fill from `state.usage`: "ctx 23%" ("ctx 7.4k" when the window is
--- unknown), or "" before the server reported any usage (no request sent yet, or a server
--- without usage).
function M.context_fill(state)
  local usage = type(state) == "table" and state.usage or nil
  if type(usage) ~= "table" then
    return ""
  end
  local tokens, window = number(usage.contextTokens), number(usage.contextWindow)
  if tokens <= 0 and number(usage.inputTokens) <= 0 then
    return ""
  end
  if window <= 0 then
    return "ctx " .. M.format_tokens(tokens)
  end
  return string.format("ctx %d%%", math.floor(100 * tokens / window + 0.5))
end

--- One line about the session's usage: "context 23% (7.4k / 32k) · 12.3k in / 1.1k out ·
--- $0.04 · 1 compaction" (the cost only when a price is configured).
function M.usage_text(state)
  local usage = type(state) == "table" and state.usage or nil
  if type(usage) ~= "table" then
    return "no usage reported"
  end
  local tokens, window = number(usage.contextTokens), number(usage.contextWindow)
  local context = window > 0
      and string.format(
        "context %d%% (%s / %s)",
        math.floor(100 * tokens / window + 0.5),
        M.format_tokens(tokens),
        M.format_tokens(window)
      )
    or ("context " .. M.format_tokens(tokens) .. " tokens")
  local parts = {
    context,
    M.format_tokens(usage.inputTokens) .. " in / " .. M.format_tokens(usage.outputTokens) .. " out",
  }
  if type(usage.costUsd) == "number" then
    table.insert(parts, string.format("$%.2f", usage.costUsd))
  end
  local compactions = number(usage.compactions)
  if compactions > 0 then
    table.insert(parts, string.format("%d compaction%s", compactions, compactions == 1 and "" or "s"))
  end
  return table.concat(parts, " · ")
end

--- Statusline component: "[Plan] ask · shell sandboxed (bubblewrap) · ctx 23%", "[Build]
--- auto_edit · … …" (running), "" without a server. The context fill shows once the server
--- reported usage.
function M.statusline()
  local state = M.state()
  if not state or not state.mode then
    return ""
  end
  local label = state.mode == "build" and "[Build]" or "[Plan]"
  local text = label .. " " .. tostring(state.permissionMode or "")
  local shell = M.shell_protection(state)
  if shell ~= "" then
    text = text .. " · " .. shell
  end
  local fill = M.context_fill(state)
  if fill ~= "" then
    text = text .. " · " .. fill
  end
  if state.running then
    text = text .. " …"
  end
  return text
end

local function plan_path(root)
  local state = M.states[root]
  if state and type(state.planUri) == "string" and state.planUri ~= "" then
    return vim.uri_to_fname(state.planUri)
  end
  return plans_dir(root) .. "/PLAN.md"
end

-- Loads PLAN.md into a (hidden) buffer so drafts stream into it; for clients that cannot
-- show documents for the server.
local function ensure_plan_buffer(root)
  local path = plan_path(root)
  local bufnr = vim.fn.bufadd(path)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    vim.fn.bufload(bufnr)
    vim.bo[bufnr].buflisted = true
  end
  M.attach(bufnr)
  return bufnr
end

function M.prompt(text)
  local client, root = M.current()
  if not client then
    notify("no plan-lsp server for this buffer", vim.log.levels.WARN)
    return
  end
  local show_document = client.config.capabilities
    and client.config.capabilities.window
    and client.config.capabilities.window.showDocument
    and client.config.capabilities.window.showDocument.support
  if M.config.open_plan_on_prompt and not show_document then
    ensure_plan_buffer(root)
  end
  M.request("planLsp/prompt", { text = text }, function(result)
    notify(string.format("run %s finished: %s", tostring(result.runId), tostring(result.stopReason)))
  end)
end

local function show_state(state)
  if type(state) ~= "table" then
    return
  end
  notify(string.format(
    "mode %s, permissions %s, plan %s%s%s",
    tostring(state.mode),
    tostring(state.permissionMode),
    tostring(state.planStatus),
    state.running and ", running" or "",
    type(state.usage) == "table" and (", " .. M.usage_text(state)) or ""
  ))
end

--- `planLsp/compact`: summarises the conversation so far and prunes old tool outputs. The
--- server refuses while a run is in progress; its message is shown with vim.notify. The
--- compaction itself is rendered in the log buffer (a `compaction` update). `on_done(state,
--- err)`, when given, is called with the answer.
--- The lens's or code action's Reject… / Revise… (planLsp.rejectPlan with `confirm` and no
--- feedback): asks for the feedback with vim.ui.input. Escape cancels; an empty answer
--- rejects without feedback — or with the "> feedback:" review notes written in PLAN.md, if
--- any (a rejected plan without either stays as it is; the server says how to revise it);
--- text is the feedback, and a planning run revises the plan. Other arguments go as they are.
function M.reject_from_lens(command, _ctx)
  local args = (command and command.arguments or {})[1]
  args = type(args) == "table" and vim.deepcopy(args) or {}
  local given = type(args.feedback) == "string" and args.feedback ~= ""
  if args.confirm ~= true or given then
    M.request("planLsp/rejectPlan", args, show_state)
    return
  end
  local state = M.state()
  local revising = state and state.planStatus == "rejected"
  local prompt = revising and "plan-lsp: revise the plan, feedback (empty: the review notes in PLAN.md): "
    or "plan-lsp: reject the plan, feedback (empty: without, or the review notes in PLAN.md): "
  vim.ui.input({ prompt = prompt }, function(text)
    if text == nil then
      return -- Escape: nothing happens
    end
    local params = {}
    if text ~= "" then
      params.feedback = text
    end
    M.request("planLsp/rejectPlan", params, show_state)
  end)
end

function M.compact(on_done)
  local client, root = M.current()
  if not client then
    notify("no plan-lsp server for this buffer", vim.log.levels.WARN)
    return false
  end
  local function compactions(state)
    return type(state) == "table" and type(state.usage) == "table" and number(state.usage.compactions) or 0
  end
  local before = compactions(M.states[root])
  compat.request(client, "planLsp/compact", with_workspace({}, root), function(err, result)
    if err then
      notify("could not compact the conversation: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
    elseif type(result) == "table" and result.mode then
      set_state(root, result)
      -- Nothing to compact (a short conversation): the server says so itself.
      if compactions(result) > before then
        notify("conversation compacted: " .. M.usage_text(result))
      end
    end
    if on_done then
      on_done(result, err)
    end
  end)
  return true
end

-- -- user commands -------------------------------------------------------------------------

local function create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd("PlanToggle", function()
    M.request("planLsp/toggleMode", {}, show_state)
  end, { desc = "plan-lsp: switch plan ⇄ build" })
  cmd("PlanMode", function(opts)
    M.request("planLsp/setMode", { mode = opts.args }, show_state)
  end, {
    nargs = 1,
    complete = function()
      return { "plan", "build" }
    end,
    desc = "plan-lsp: set the work mode",
  })
  cmd("PlanPermission", function(opts)
    M.request("planLsp/setPermissionMode", { permissionMode = opts.args }, show_state)
  end, {
    nargs = 1,
    complete = function()
      return { "ask", "auto_edit", "yolo", "strict" }
    end,
    desc = "plan-lsp: set the permission mode",
  })
  cmd("PlanPrompt", function(opts)
    if opts.args ~= "" then
      M.prompt(opts.args)
      return
    end
    vim.ui.input({ prompt = "plan-lsp prompt: " }, function(text)
      if text and text ~= "" then
        M.prompt(text)
      end
    end)
  end, { nargs = "?", desc = "plan-lsp: send a prompt to the agent" })
  cmd("PlanApprove", function(opts)
    local params = {}
    if opts.args ~= "" then
      params.permissionMode = opts.args
    end
    -- Name the submitted plan: the server approves that document and refuses another (the
    -- statusline and :PlanOpen show which one it is).
    local state = M.state()
    if state and type(state.planUri) == "string" then
      params.planUri = state.planUri
    end
    M.request("planLsp/approvePlan", params, show_state)
  end, {
    nargs = "?",
    complete = function()
      return { "auto_edit", "ask" }
    end,
    desc = "plan-lsp: approve the plan and run it",
  })
  cmd("PlanReject", function(opts)
    local function reject(feedback)
      local params = {}
      if feedback and feedback ~= "" then
        params.feedback = feedback
      end
      M.request("planLsp/rejectPlan", params, show_state)
    end
    if opts.args ~= "" then
      reject(opts.args)
      return
    end
    -- An empty answer rejects with the buffer's "> feedback:" review notes (if any).
    vim.ui.input({ prompt = "plan-lsp feedback (empty: review notes in PLAN.md): " }, function(text)
      if text ~= nil then
        reject(text)
      end
    end)
  end, { nargs = "?", desc = "plan-lsp: reject the plan (with feedback)" })
  cmd("PlanCancel", function()
    M.request("planLsp/cancel", {}, function()
      notify("cancelled")
    end)
  end, { desc = "plan-lsp: cancel the current run" })
  cmd("PlanRetry", function()
    M.request("planLsp/retry", {}, function(result)
      notify(string.format("run %s finished: %s", tostring(result.runId), tostring(result.stopReason)))
    end)
  end, { desc = "plan-lsp: start again the run the model server failed" })
  local steps = require("plan_lsp.steps")
  cmd("PlanSteps", function()
    steps.show(M)
  end, { desc = "plan-lsp: the approved plan's steps: done or why open, the files each changed" })
  cmd("PlanRevert", function(opts)
    steps.revert(M, tonumber(opts.args))
  end, { nargs = "?", desc = "plan-lsp: revert the workspace to before step N (asks without N)" })
  cmd("PlanRedo", function()
    steps.redo(M)
  end, { desc = "plan-lsp: undo the last revert" })
  require("plan_lsp.review").create_commands(M)
  cmd("PlanCompact", function()
    M.compact()
  end, { desc = "plan-lsp: compact the conversation (summary, old tool outputs pruned)" })
  cmd("PlanState", function()
    show_state(M.state())
  end, { desc = "plan-lsp: show the session state" })
  cmd("PlanLog", function()
    log.open()
  end, { desc = "plan-lsp: show the activity log" })
end

-- -- setup ---------------------------------------------------------------------------------

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if opts and opts.cmd then
    M.config.cmd = opts.cmd -- lists are replaced, not merged
  end
  create_commands()
  M.augroup = vim.api.nvim_create_augroup("PlanLsp", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufEnter" }, {
    group = M.augroup,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "TextChanged" }, {
    group = M.augroup,
    callback = function(args)
      local root = M.root_for(args.buf)
      if root and M.is_plan_document(args.buf, root) then
        lens.refresh(args.buf, M.client_for_root(root))
      end
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      M.attach(bufnr)
    end
  end
end

return M
