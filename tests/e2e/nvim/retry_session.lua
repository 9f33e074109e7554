-- Headless session of the client-nvim plugin on :PlanRetry, driven by
-- tests/e2e/test_model_server_retry.py (test_plan_retry_in_neovim): the model server fails
-- the prompt's run, the plugin's notification says :PlanRetry tries again, :PlanRetry finishes
-- the run without the prompt being typed again, and a second :PlanRetry is refused with the
-- server's reason. Parameters come as JSON in the file named by $PLAN_LSP_E2E_PARAMS; the
-- outcome goes to params.result_path.
local driver = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/driver.lua")
local params, result = driver.params, driver.result
local wait_for, step = driver.wait_for, driver.step

local function run()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(params.plugin_dir)
  result.notifications = {}
  vim.notify = function(msg, level)
    table.insert(result.notifications, { message = tostring(msg), level = level })
  end
  local function notified(text)
    for _, n in ipairs(result.notifications) do
      if n.message:find(text, 1, true) then
        return n
      end
    end
  end

  local plan, updates = driver.start_plugin()
  local function done(n)
    return driver.stop_reason(updates, n)
  end

  driver.open_hello(plan)
  step("attached")

  vim.cmd("PlanPrompt " .. params.prompt)
  wait_for("the failed run", function()
    return done(1) ~= nil and notified(":PlanRetry") ~= nil
  end)
  result.failed = { stopReason = done(1), notification = notified(":PlanRetry") }
  step("failed")

  vim.cmd("PlanRetry")
  wait_for("the retried run's answer", function()
    return notified("finished: end_turn") ~= nil
  end)
  result.retried = done(2)
  step("retried")

  vim.cmd("PlanRetry")
  wait_for("the refusal", function()
    return notified("nothing to retry") ~= nil
  end)
  result.refusal = notified("nothing to retry")
  step("refused")

  driver.stop(plan)
end

driver.finish(run)
