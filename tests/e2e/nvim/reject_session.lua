-- Headless session of the client-nvim plugin on rejecting a plan from its code lens, driven
-- by tests/e2e/test_neovim_reject.py. Reject… asks for the feedback with vim.ui.input:
-- Escape does nothing, an empty answer rejects without feedback; the rejected plan's lens
-- offers Approve and Revise…, and Revise… with feedback starts the revision. Parameters come
-- as JSON in the file named by $PLAN_LSP_E2E_PARAMS; the outcome goes to params.result_path.
local driver = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/driver.lua")
local params, result = driver.params, driver.result
local wait_for, check, step = driver.wait_for, driver.check, driver.step

local function run()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(params.plugin_dir)
  result.unexpected_prompts = {}
  result.inputs = {}

  -- vim.ui.select (codelens.run's choice among the lenses) picks `wanted`; vim.ui.input
  -- answers `answer` (nil: Escape) and records the prompt it was asked with.
  local function run_lens(wanted, answer, record)
    vim.ui.select = function(items, opts, on_choice)
      local titles, chosen = {}, nil
      for _, item in ipairs(items) do
        local title = opts.format_item and opts.format_item(item) or tostring(item)
        table.insert(titles, title)
        if title == wanted and chosen == nil then
          chosen = item
        end
      end
      result[record] = titles
      check(chosen ~= nil, "no lens " .. wanted .. " among " .. table.concat(titles, ", "))
      on_choice(chosen)
    end
    local asked = false
    vim.ui.input = function(opts, on_confirm)
      asked = true
      table.insert(result.inputs, opts.prompt)
      on_confirm(answer)
    end
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.lsp.codelens.run()
    check(asked, wanted .. " did not ask for feedback")
  end

  local plan, updates, state_sync = driver.start_plugin()
  local lens = require("plan_lsp.lens")
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
    end)
    local done = next_done()
    seen_runs[done.runId] = true
    return { runId = done.runId, stopReason = done.stopReason }
  end

  -- 1. a plan is submitted
  driver.open_hello(plan)
  vim.cmd("PlanPrompt " .. params.prompt)
  result.plan_run = finish_run("the planning run")
  vim.cmd("edit " .. vim.fn.fnameescape(params.plan_path))
  local plan_buf = vim.api.nvim_get_current_buf()
  wait_for("the Reject… lens", function()
    return vim.tbl_contains(lens.titles(plan_buf), "Reject…")
  end)
  step("submitted")

  -- 2. Reject…, then Escape: nothing is sent, the plan stays submitted
  run_lens("Reject…", nil, "titles_submitted")
  result.status_after_escape = state_sync().planStatus
  step("escape")

  -- 3. Reject…, then an empty answer: rejected without feedback, no run
  run_lens("Reject…", "", "titles_submitted_again")
  wait_for("the rejected status", function()
    return state_sync().planStatus == "rejected"
  end)
  result.running_after_reject = state_sync().running
  wait_for("the rejected plan's lenses", function()
    return vim.tbl_contains(lens.titles(plan_buf), "Revise…")
  end)
  result.titles_rejected = lens.titles(plan_buf)
  step("rejected")

  -- 4. Revise… with feedback: the revision run, then a submitted plan again
  run_lens("Revise…", params.feedback, "titles_rejected_run")
  result.revision_run = finish_run("the revision run")
  result.status_after_revision = state_sync().planStatus
  step("revised")

  driver.stop(plan)
end

driver.finish(run)
