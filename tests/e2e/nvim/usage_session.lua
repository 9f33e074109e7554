-- Headless session of the client-nvim plugin on token usage and compaction, driven by
-- tests/e2e/test_neovim.py (test_usage_and_compaction_with_the_plugin). Parameters come as
-- JSON in the file named by $PLAN_LSP_E2E_PARAMS; the outcome goes as JSON to
-- params.result_path. Exits with `qa!` when every step passed, `cq!` otherwise.
local driver = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/driver.lua")
local params, result = driver.params, driver.result
local wait_for, check, step = driver.wait_for, driver.check, driver.step

local function run()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(params.plugin_dir)

  -- Every notification, as the user would have seen it.
  result.notifications = {}
  vim.notify = function(msg, level)
    table.insert(result.notifications, { message = tostring(msg), level = level })
  end
  -- A permission prompt (window/showMessageRequest through vim.ui.select) is held until the
  -- test answers it: the run waits for the user meanwhile.
  local held = nil
  result.unexpected_prompts = {}
  vim.ui.select = function(items, opts, on_choice)
    local titles = {}
    for _, item in ipairs(items) do
      table.insert(titles, opts.format_item and opts.format_item(item) or tostring(item))
    end
    if held ~= nil then
      table.insert(result.unexpected_prompts, titles)
      on_choice(nil)
      return
    end
    held = { items = items, titles = titles, on_choice = on_choice }
  end

  local plan, updates, state_sync = driver.start_plugin()

  local seen_runs = {}
  local function next_done()
    for _, u in ipairs(updates) do
      if u.kind == "done" and not seen_runs[u.runId] then
        return u
      end
    end
    return nil
  end
  local function finish_run(what)
    wait_for(what, function()
      return next_done() ~= nil
    end)
    local done = next_done()
    seen_runs[done.runId] = true
    return { runId = done.runId, stopReason = done.stopReason }
  end

  -- 1. attached; before any request the statusline says nothing about the context
  driver.open_hello(plan)
  result.usage_before = state_sync().usage
  result.statusline_before = plan.statusline()
  step("attached")

  -- 2. nothing to compact yet: the server says so, the plugin claims nothing
  local answered = nil
  local before = #result.notifications
  plan.compact(function(state, err)
    answered = { compactions = state and state.usage.compactions, err = err }
  end)
  wait_for("the answer to an early compaction", function()
    return answered ~= nil
  end)
  -- Neovim echoes the server's window/showMessage into :messages.
  wait_for("the server's message", function()
    return vim.fn.execute("messages"):find("Nothing to compact", 1, true) ~= nil
  end)
  result.early_compact = answered
  result.early_messages = vim.fn.execute("messages")
  result.early_notifications = vim.list_slice(result.notifications, before + 1)
  step("nothing to compact")

  -- 3. a run waits on a permission prompt; :PlanCompact meanwhile is refused by the server,
  -- and the refusal reaches the user as a notification
  vim.cmd("PlanMode build")
  wait_for("build mode", function()
    return plan.state().mode == "build"
  end)
  vim.cmd("PlanPrompt " .. params.shell_prompt)
  wait_for("the permission prompt", function()
    return held ~= nil
  end)
  result.permission_titles = held.titles
  result.running_during_prompt = state_sync().running
  before = #result.notifications
  vim.cmd("PlanCompact")
  wait_for("the refusal's notification", function()
    for i = before + 1, #result.notifications do
      if result.notifications[i].message:find("compact", 1, true) then
        return true
      end
    end
    return false
  end)
  result.refusal = result.notifications[#result.notifications]
  result.compactions_after_refusal = state_sync().usage.compactions
  -- the user denies the command; the run goes on to its end
  local deny = nil
  for i, title in ipairs(held.titles) do
    if title == "Deny" then
      deny = held.items[i]
    end
  end
  check(deny ~= nil, "no Deny among " .. table.concat(held.titles, ", "))
  held.on_choice(deny)
  result.refused_run = finish_run("the run that was asked for permission")
  step("refused while running")

  -- 4. a planning run; afterwards the statusline shows how full the context is
  vim.cmd("PlanMode plan")
  wait_for("plan mode", function()
    return plan.state().mode == "plan"
  end)
  vim.cmd("PlanPrompt " .. params.prompt)
  result.plan_run = finish_run("the planning run")
  wait_for("the state after the run", function()
    local state = plan.state()
    return state and not state.running
  end)
  result.statusline_after_run = plan.statusline()
  result.usage_after_run = state_sync().usage
  step("planned")

  -- 5. :PlanCompact compacts: the server counts it, the log shows it
  before = #result.notifications
  vim.cmd("PlanCompact")
  wait_for("the compaction update", function()
    for _, u in ipairs(updates) do
      if u.kind == "compaction" then
        return true
      end
    end
    return false
  end)
  wait_for("the plugin's notification that the conversation was compacted", function()
    return #result.notifications > before
  end)
  for _, u in ipairs(updates) do
    if u.kind == "compaction" then
      result.compaction = u
    end
  end
  result.notification_after_compact = result.notifications[#result.notifications]
  result.usage_after_compact = state_sync().usage
  result.statusline_after_compact = plan.statusline()
  vim.cmd("PlanLog")
  result.log_window_shows = vim.api.nvim_buf_get_name(0)
  result.log_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  step("compacted")

  driver.stop(plan)
end

driver.finish(run)
