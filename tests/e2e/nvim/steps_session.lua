-- Headless session of the client-nvim plugin on the approved plan's steps, driven by
-- tests/e2e/test_neovim_steps.py: a 3-step Do run, :PlanSteps lists the steps and their
-- files, :PlanRevert 3 brings notes.txt back to before step 3 (its open buffer follows),
-- :PlanRedo brings step 3 back, and the lens on step 3 reverts it again. Parameters come as JSON in the file named by
-- $PLAN_LSP_E2E_PARAMS; the outcome goes to params.result_path.
local driver = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/driver.lua")
local params, result = driver.params, driver.result
local wait_for, step = driver.wait_for, driver.step

local function run()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(params.plugin_dir)
  result.notifications = {}
  vim.notify = function(msg)
    table.insert(result.notifications, tostring(msg))
  end
  local function notified(text)
    for _, message in ipairs(result.notifications) do
      if message:find(text, 1, true) then
        return message
      end
    end
  end
  local function lines_of(path)
    local buf = vim.fn.bufnr(path)
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  end

  local plan, updates = driver.start_plugin()
  local function done(n)
    return driver.stop_reason(updates, n)
  end

  driver.open_hello(plan)
  vim.cmd("PlanPrompt " .. params.prompt)
  wait_for("the plan", function()
    return done(1) ~= nil
  end)
  vim.cmd("PlanApprove auto_edit")
  wait_for("the Do run", function()
    return done(2) ~= nil
  end)
  result.do_run = done(2)
  step("carried out")

  local notes = params.workspace .. "/notes.txt"
  vim.cmd("edit " .. vim.fn.fnameescape(notes))
  result.notes_buffer_before = lines_of(notes)
  vim.cmd("PlanSteps")
  wait_for("the steps", function()
    return notified("1. [done]") ~= nil
  end)
  result.listed = notified("1. [done]")
  step("listed")

  vim.cmd("PlanRevert 3")
  wait_for("the revert", function()
    return notified("reverted") ~= nil
  end)
  result.reverted = notified("reverted")
  result.notes_buffer_reverted = lines_of(notes)
  result.notes_disk_reverted = table.concat(vim.fn.readfile(notes), "\n")
  result.notes_modified_reverted = vim.bo[vim.fn.bufnr(notes)].modified
  vim.cmd("PlanSteps")
  wait_for("the steps after the revert", function()
    return notified("3. [reverted]") ~= nil
  end)
  result.steps_reverted = notified("3. [reverted]")
  step("reverted")

  vim.cmd("PlanRedo")
  wait_for("the redo", function()
    return notified("redone") ~= nil
  end)
  result.redone = notified("redone")
  result.notes_buffer_redone = lines_of(notes)
  step("redone")

  -- The lens on step 3 of the plan: Revert to before this step.
  vim.cmd("edit " .. vim.fn.fnameescape(params.plan_path))
  local lens = require("plan_lsp.lens")
  local plan_buf = vim.api.nvim_get_current_buf()
  local line = vim.fn.search("^3\\. ", "nw")
  wait_for("the step lenses", function()
    return vim.tbl_contains(lens.titles(plan_buf), "Revert to before this step")
  end)
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      if title == "Revert to before this step" then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  local before = #result.notifications
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  vim.lsp.codelens.run()
  wait_for("the lens's revert", function()
    return #result.notifications > before and result.notifications[#result.notifications]:find("reverted", 1, true)
  end)
  result.lens_reverted = result.notifications[#result.notifications]
  result.notes_disk_lens = table.concat(vim.fn.readfile(notes), "\n")
  result.notes_buffer_lens = lines_of(notes)
  result.notes_modified_lens = vim.bo[vim.fn.bufnr(notes)].modified
  step("lens")

  driver.stop(plan)
end

driver.finish(run)
