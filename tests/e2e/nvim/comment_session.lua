-- Headless session of the client-nvim plugin on commenting on a plan's lines, driven by
-- tests/e2e/test_neovim_comments.py. A plan is drafted into PLAN.md; on the line named in
-- $PLAN_LSP_E2E_COMMENT the user picks the code action "Comment on these lines…", which
-- asks for the comment with vim.ui.input (nothing is inserted into the buffer); the comment shows
-- as a "plan review" diagnostic on that line; :PlanSendComments sends it, the revision
-- streams into the buffer, and planLsp/comments then says the comment was addressed.
-- Parameters come as JSON in the file named by $PLAN_LSP_E2E_PARAMS; the outcome goes to
-- params.result_path.
local driver = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/driver.lua")
local params, result = driver.params, driver.result
-- The comment, its line and the action's title: JSON in $PLAN_LSP_E2E_COMMENT.
local wanted = vim.json.decode(os.getenv("PLAN_LSP_E2E_COMMENT"))
local wait_for, check, step = driver.wait_for, driver.check, driver.step

local function buffer_text(bufnr)
  local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  if vim.bo[bufnr].eol then
    text = text .. "\n"
  end
  return text
end

local function review_diagnostics(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == "plan review" then
      table.insert(out, { lnum = d.lnum, message = d.message, severity = d.severity })
    end
  end
  return out
end

local function run()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(params.plugin_dir)
  result.unexpected_prompts = {}
  result.inputs = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(result.unexpected_prompts, opts.prompt or "")
    on_choice(nil)
  end

  local plan, updates, state_sync = driver.start_plugin()
  local seen_runs = {}
  local function finish_run(what)
    local function next_done()
      for _, u in ipairs(updates) do
        if u.kind == "done" and not seen_runs[u.runId] then
          return u
        end
      end
    end
    wait_for(what, function()
      return next_done() ~= nil
    end, 60000)
    local done = next_done()
    seen_runs[done.runId] = true
    return { runId = done.runId, stopReason = done.stopReason }
  end

  -- 1. a plan is drafted into the open PLAN.md, every change of the buffer recorded
  driver.open_hello(plan)
  vim.cmd("edit " .. vim.fn.fnameescape(params.plan_path))
  local plan_buf = vim.api.nvim_get_current_buf()
  result.buffer_events = {}
  local function record_plan_buffer()
    local seconds, micros = vim.loop.gettimeofday()
    table.insert(result.buffer_events, { seconds + micros / 1e6, buffer_text(plan_buf) })
  end
  record_plan_buffer()
  vim.api.nvim_buf_attach(plan_buf, false, { on_lines = record_plan_buffer, on_reload = record_plan_buffer })
  vim.cmd("PlanPrompt " .. params.prompt)
  result.plan_run = finish_run("the planning run")
  wait_for("the plan in the buffer", function()
    return buffer_text(plan_buf) == params.plan_v1
  end, 5000)
  step("planned")

  -- 2. the code action "Comment on these lines…" on the line; the comment is typed into
  -- vim.ui.input
  local target = nil
  for n, line in ipairs(vim.api.nvim_buf_get_lines(plan_buf, 0, -1, false)) do
    if line == wanted.comment_line then
      target = n
    end
  end
  check(target ~= nil, "no line " .. wanted.comment_line .. " in the plan")
  result.comment_lnum = target - 1
  vim.api.nvim_win_set_cursor(0, { target, 0 })
  vim.ui.select = function(items, opts, on_choice)
    local titles, chosen = {}, nil
    for _, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      table.insert(titles, title)
      if title == wanted.comment_action and chosen == nil then
        chosen = item
      end
    end
    result.action_titles = titles
    check(chosen ~= nil, "no code action " .. wanted.comment_action .. " among " .. table.concat(titles, ", "))
    on_choice(chosen)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(result.inputs, opts.prompt)
    on_confirm(wanted.comment)
  end
  vim.lsp.buf.code_action()
  wait_for("the comment's diagnostic", function()
    for _, d in ipairs(review_diagnostics(plan_buf)) do
      if d.message:find(wanted.comment, 1, true) then
        return true
      end
    end
    return false
  end)
  result.diagnostics_open = review_diagnostics(plan_buf)
  result.plan_after_comment = buffer_text(plan_buf)
  result.comments_open = plan.request_sync("planLsp/comments", {}, 5000)
  step("commented")

  -- 3. :PlanSendComments: the revision streams into the buffer
  vim.cmd("PlanSendComments")
  result.revision_run = finish_run("the revision run")
  wait_for("the revised plan in the buffer", function()
    return buffer_text(plan_buf) == params.plan_v2
  end, 5000)
  result.plan_buffer_v2 = buffer_text(plan_buf)
  step("revised")

  -- 4. the comment was addressed: planLsp/comments and its diagnostic say so
  wait_for("the comment addressed", function()
    local listed = plan.request_sync("planLsp/comments", {}, 5000)
    result.comments_after = listed
    return listed and listed.comments[1] and listed.comments[1].status == "addressed"
  end)
  wait_for("the addressed comment's diagnostic", function()
    for _, d in ipairs(review_diagnostics(plan_buf)) do
      if d.message:find("Comment (addressed)", 1, true) then
        return true
      end
    end
    return false
  end)
  result.diagnostics_after = review_diagnostics(plan_buf)
  result.state_after = state_sync()
  step("addressed")

  -- 5. :[range]PlanComment on two lines of the revised plan asks too, and keeps it there
  local first = nil
  for n, line in ipairs(vim.api.nvim_buf_get_lines(plan_buf, 0, -1, false)) do
    if first == nil and line:match("^1%. ") then
      first = n
    end
  end
  check(first ~= nil, "no step 1 in the revised plan")
  result.range_first = first - 1
  vim.ui.input = function(opts, on_confirm)
    table.insert(result.inputs, opts.prompt)
    on_confirm(wanted.range_comment)
  end
  vim.cmd(string.format("%d,%dPlanComment", first, first + 1))
  wait_for("the range comment", function()
    local listed = plan.request_sync("planLsp/comments", {}, 5000)
    result.comments_range = listed
    return listed and #listed.comments == 2
  end)
  step("range commented")

  driver.stop(plan)
end

driver.finish(run)
