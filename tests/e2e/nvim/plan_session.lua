-- Headless end-to-end session on Neovim's built-in LSP client, driven by
-- tests/e2e/test_neovim.py. Parameters come as JSON in the file named by
-- $PLAN_LSP_E2E_PARAMS; the outcome goes as JSON to params.result_path.
-- Exits with `qa!` when every step passed, `cq!` otherwise.
local driver = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/driver.lua")
local params, result = driver.params, driver.result
local wait_for, check, step = driver.wait_for, driver.check, driver.step

-- What the server sees of a buffer (the LSP client sends lines + final newline if 'eol').
local function buffer_text(bufnr)
  local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  if vim.bo[bufnr].eol then
    text = text .. "\n"
  end
  return text
end

-- Outside the steps that expect a choice, any vim.ui.select (a permission prompt through
-- window/showMessageRequest) is recorded and dismissed, which the server takes as "Deny".
local function dismiss_and_record(items, opts, on_choice)
  local titles = {}
  for _, item in ipairs(items) do
    table.insert(titles, opts.format_item and opts.format_item(item) or tostring(item))
  end
  table.insert(result.unexpected_prompts, { prompt = opts.prompt or "", items = titles })
  on_choice(nil)
end

-- Answers the next vim.ui.select by item title, recording what was offered.
local function select_by_title(wanted, record)
  vim.ui.select = function(items, opts, on_choice)
    vim.ui.select = dismiss_and_record
    local titles = {}
    local chosen = nil
    for _, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      table.insert(titles, title)
      if title == wanted and chosen == nil then
        chosen = item
      end
    end
    result[record] = titles
    on_choice(chosen)
  end
end

local function run()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(params.plugin_dir)

  -- Count applyEdit requests per document; the built-in handler still applies them.
  result.apply_edits = {}
  local builtin_apply_edit = vim.lsp.handlers["workspace/applyEdit"]
  vim.lsp.handlers["workspace/applyEdit"] = function(err, edit_params, ctx, config)
    local edit = (edit_params and edit_params.edit) or {}
    local uris = {}
    for _, change in ipairs(edit.documentChanges or {}) do
      table.insert(uris, change.textDocument and change.textDocument.uri)
    end
    -- Neovim does not declare documentChanges, so a server sends plain `changes`.
    for uri, _ in pairs(edit.changes or {}) do
      table.insert(uris, uri)
    end
    for _, uri in ipairs(uris) do
      local name = vim.fn.fnamemodify(vim.uri_to_fname(uri), ":t")
      result.apply_edits[name] = (result.apply_edits[name] or 0) + 1
    end
    return builtin_apply_edit(err, edit_params, ctx, config)
  end
  -- No prompt is expected: the plan is approved with auto-accepted edits.
  result.unexpected_prompts = {}
  vim.ui.select = dismiss_and_record

  local updates = {}
  local plan = require("plan_lsp")
  plan.setup({
    cmd = params.server_cmd,
    root_dir = params.workspace,
    plans_dir = params.plans_dir ~= vim.NIL and params.plans_dir or nil,
    on_update = function(update)
      table.insert(updates, update)
    end,
  })

  local function find_update(pred)
    for _, u in ipairs(updates) do
      if pred(u) then
        return u
      end
    end
    return nil
  end

  local function done_of_new_run(seen)
    return find_update(function(u)
      return u.kind == "done" and not seen[u.runId]
    end)
  end

  local function state_sync()
    local state, err = plan.request_sync("planLsp/state", {}, 5000)
    check(state, "planLsp/state failed: " .. tostring(err))
    return state
  end

  -- 1. the plugin attaches the workspace's buffers and learns the state
  vim.cmd("edit " .. vim.fn.fnameescape(params.workspace .. "/hello.py"))
  local hello = vim.api.nvim_get_current_buf()
  wait_for("the server's first state", function()
    return plan.state() ~= nil
  end)
  local client = plan.current(hello)
  check(client, "no client for hello.py")
  check(vim.lsp.buf_is_attached(hello, client.id), "hello.py is not attached")
  result.initial_mode = plan.state().mode
  result.statusline = { plan.statusline() }
  step("attached")

  -- 2. toggle plan -> build -> plan through the user command
  result.toggled_modes = {}
  for _, expected in ipairs({ "build", "plan" }) do
    vim.cmd("PlanToggle")
    wait_for("mode " .. expected .. " after :PlanToggle", function()
      return plan.state().mode == expected
    end)
    table.insert(result.toggled_modes, state_sync().mode)
    table.insert(result.statusline, plan.statusline())
  end
  result.set_modes = {}
  for _, mode in ipairs({ "build", "plan" }) do
    vim.cmd("PlanMode " .. mode)
    wait_for("mode " .. mode .. " after :PlanMode", function()
      return plan.state().mode == mode
    end)
    table.insert(result.set_modes, state_sync().mode)
  end
  step("toggled")

  -- 3. prompt; the plan draft streams into the open PLAN.md buffer, every change of which
  -- is recorded with its wall-clock time (as Python's time.time())
  vim.cmd("edit " .. vim.fn.fnameescape(params.plan_path))
  local plan_buf = vim.api.nvim_get_current_buf()
  result.buffer_events = {}
  local function record_plan_buffer()
    local seconds, micros = vim.loop.gettimeofday()
    table.insert(result.buffer_events, { seconds + micros / 1e6, buffer_text(plan_buf) })
  end
  record_plan_buffer()
  vim.api.nvim_buf_attach(plan_buf, false, { on_lines = record_plan_buffer, on_reload = record_plan_buffer })
  check(vim.lsp.buf_is_attached(plan_buf, client.id), "PLAN.md is not attached")
  local seen_runs = {}
  vim.cmd("PlanPrompt " .. params.prompt)
  wait_for("the planning run to finish", function()
    return done_of_new_run(seen_runs) ~= nil
  end)
  local first_done = done_of_new_run(seen_runs)
  seen_runs[first_done.runId] = true
  result.prompt_run = { runId = first_done.runId, stopReason = first_done.stopReason }
  -- Not an error when it differs: the test compares what the buffer ended up holding.
  vim.wait(5000, function()
    return buffer_text(plan_buf) == params.plan_v1
  end, 20)
  result.plan_buffer_v1 = buffer_text(plan_buf)
  result.plan_modified_v1 = vim.bo[plan_buf].modified
  result.state_after_prompt = state_sync()
  local log_lines = vim.api.nvim_buf_get_lines(require("plan_lsp.log").buffer(), 0, -1, false)
  result.log_blocked = vim.tbl_filter(function(line)
    return line:find("BLOCKED", 1, true) ~= nil
  end, log_lines)
  result.log_line_count = #log_lines
  step("planned")

  -- 4. review note in the buffer + code action "Reject with feedback from review notes"
  vim.api.nvim_buf_set_lines(plan_buf, -1, -1, false, { "> feedback: " .. params.feedback })
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  select_by_title(params.reject_action, "code_action_titles")
  vim.lsp.buf.code_action()
  wait_for("the feedback run to finish", function()
    return done_of_new_run(seen_runs) ~= nil
  end)
  local feedback_done = done_of_new_run(seen_runs)
  seen_runs[feedback_done.runId] = true
  result.feedback_run = { runId = feedback_done.runId, stopReason = feedback_done.stopReason }
  result.feedback_run_drafted = find_update(function(u)
    return u.kind == "planDraft" and u.runId == feedback_done.runId
  end) ~= nil
  vim.wait(5000, function()
    return buffer_text(plan_buf) == params.plan_v2
  end, 20)
  result.plan_buffer_v2 = buffer_text(plan_buf)
  result.state_after_reject = state_sync()
  step("rejected")

  -- 5. on 0.8+ a tool touches hello.py (same text, a newer time: a checkout, a build), so
  -- the plugin's save of the Do edit must not stop to ask "changed since reading it" (0.7's
  -- :write! still asks); then approve through the code lens on line 1
  if vim.fn.has("nvim-0.8") == 1 then
    local later = os.time() + 2
    check(vim.loop.fs_utime(params.workspace .. "/hello.py", later, later), "cannot touch hello.py")
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local lens = require("plan_lsp.lens")
  wait_for("the approve code lens", function()
    return vim.tbl_contains(lens.titles(plan_buf), params.approve_lens)
  end)
  result.lens_titles_before = lens.titles(plan_buf)
  select_by_title(params.approve_lens, "code_lens_titles")
  vim.lsp.codelens.run()
  wait_for("build mode after the approval", function()
    return plan.state().mode == "build"
  end)
  table.insert(result.statusline, plan.statusline())
  wait_for("the Do run to finish", function()
    return done_of_new_run(seen_runs) ~= nil
  end)
  local do_done = done_of_new_run(seen_runs)
  seen_runs[do_done.runId] = true
  result.do_run = { runId = do_done.runId, stopReason = do_done.stopReason }
  wait_for("the Do edit in the hello.py buffer", function()
    return buffer_text(hello) == params.hello_after
  end, 5000)
  result.hello_buffer = buffer_text(hello)
  wait_for("hello.py saved by the plugin", function()
    return not vim.bo[hello].modified
  end, 5000)
  result.hello_modified = vim.bo[hello].modified
  local file = assert(io.open(params.workspace .. "/hello.py", "rb"))
  result.hello_disk = file:read("*a")
  file:close()
  wait_for("the Do run's end", function()
    result.state_after_do = state_sync()
    return not result.state_after_do.running
  end)
  result.plan_buffer_after_do = buffer_text(plan_buf)
  wait_for("the approved lens", function()
    for _, title in ipairs(lens.titles(plan_buf)) do
      if title:find("approved", 1, true) then
        return true
      end
    end
    return false
  end)
  result.lens_titles_after = lens.titles(plan_buf)
  table.insert(result.statusline, plan.statusline())
  step("approved")

  -- 6. a shell command in build mode asks through window/showMessageRequest + vim.ui.select
  -- (after the Do run the session is back in plan mode: the user switches)
  vim.cmd("PlanMode build")
  wait_for("mode build after :PlanMode", function()
    return plan.state().mode == "build"
  end)
  select_by_title("Allow once", "permission_titles")
  vim.cmd("PlanPrompt " .. params.shell_prompt)
  wait_for("the shell run to finish", function()
    return done_of_new_run(seen_runs) ~= nil
  end)
  local shell_done = done_of_new_run(seen_runs)
  seen_runs[shell_done.runId] = true
  result.shell_run = { runId = shell_done.runId, stopReason = shell_done.stopReason }
  result.permission_updates = vim.tbl_filter(function(u)
    return u.kind == "permission"
  end, updates)
  step("permission")

  -- 7. the server shuts down cleanly when asked
  local client_id = client.id
  vim.lsp.stop_client(client_id)
  wait_for("the server to exit", function()
    return vim.lsp.get_client_by_id(client_id) == nil
  end, 10000)
  step("stopped")

  result.plan_writes = {}
  for _, u in ipairs(updates) do
    if u.kind == "toolResult" and u.tool == "plan_write" then
      table.insert(result.plan_writes, { runId = u.runId, isError = u.isError, content = u.content })
    end
  end
  vim.cmd("PlanLog")
  result.log_window_shows = vim.api.nvim_buf_get_name(0)
  result.log_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  result.update_kinds = {}
  for _, u in ipairs(updates) do
    result.update_kinds[u.kind] = (result.update_kinds[u.kind] or 0) + 1
  end
  result.ok = true
end

driver.finish(run)
