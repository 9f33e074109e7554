-- The approved plan's steps from Neovim: :PlanSteps lists them (done, or why each one is
-- open, and the files each changed: planLsp/steps), :PlanRevert [N] brings the workspace back
-- to before step N (without N: vim.ui.select among the steps that ran), :PlanRedo undoes the
-- last revert.
local M = {}

local function notify(msg, level)
  vim.notify("plan-lsp: " .. msg, level or vim.log.levels.INFO)
end

--- The lines :PlanSteps shows for a planLsp/steps answer.
function M.lines(result)
  local out = {}
  for _, step in ipairs(result.steps or {}) do
    local line = string.format("%d. [%s] %s", step.step, (step.state:gsub("_", " ")), step.text)
    if type(step.reason) == "string" and step.state ~= "not_reached" then
      line = line .. " (" .. step.reason .. ")"
    end
    local files = {}
    for _, f in ipairs(step.files or {}) do
      table.insert(files, string.format("%s +%d -%d", f.path, f.added, f.removed))
    end
    if #files > 0 then
      line = line .. " — " .. table.concat(files, ", ")
    end
    table.insert(out, line)
  end
  if #out == 0 then
    return { "no approved plan" }
  end
  local summary = type(result.stepping) == "table" and result.stepping.summary or ""
  if summary ~= "" then
    table.insert(out, summary)
  end
  return out
end

--- What a planLsp/revert or planLsp/redo answer did, in one message.
function M.said(what, result)
  local parts = { what }
  if #(result.stepsReverted or {}) > 0 then
    table.insert(parts, "steps " .. table.concat(result.stepsReverted, ", "))
  end
  if #(result.restored or {}) > 0 then
    table.insert(parts, "restored " .. table.concat(result.restored, ", "))
  end
  for _, kept in ipairs(result.kept or {}) do
    table.insert(parts, string.format("kept %s (%s)", kept.path, kept.why))
  end
  return table.concat(parts, "; ")
end

-- After a revert or redo: the server put the new text into the open buffers of the files it
-- wrote; each such buffer that now equals its file is not modified, and the others are
-- checked against the disk (reloaded when unmodified, 'autoread').
local function follow_disk()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified and vim.fn.filereadable(name) == 1 then
      if vim.deep_equal(vim.fn.readfile(name), vim.api.nvim_buf_get_lines(buf, 0, -1, false)) then
        vim.bo[buf].modified = false
      end
    end
  end
  vim.cmd("checktime")
end

local function done(what)
  return function(result)
    follow_disk()
    notify(M.said(what, result))
  end
end

function M.show(plan)
  plan.request("planLsp/steps", {}, function(result)
    notify(table.concat(M.lines(result), "\n"))
  end)
end

--- Revert to before step `n` (a number), or ask which among the steps that ran.
function M.revert(plan, n)
  plan.request("planLsp/steps", {}, function(result)
    local ran = {}
    for _, step in ipairs(result.steps or {}) do
      if type(step.checkpointId) == "string" and step.state ~= "not_reached" then
        table.insert(ran, step)
      end
    end
    local function revert(step)
      if step then
        plan.request("planLsp/revert", { checkpointId = step.checkpointId }, done("reverted"))
      end
    end
    if n then
      for _, step in ipairs(ran) do
        if step.step == n then
          return revert(step)
        end
      end
      return notify(string.format("step %d has not run: nothing to revert to", n), vim.log.levels.WARN)
    end
    if #ran == 0 then
      return notify("no step of the approved plan has run", vim.log.levels.WARN)
    end
    vim.ui.select(ran, {
      prompt = "plan-lsp: revert to before step",
      format_item = function(step)
        return string.format("%d. %s", step.step, step.text)
      end,
    }, revert)
  end)
end

--- The lens *Revert to before this step* (planLsp.revert with its checkpoint).
function M.from_lens(plan, command)
  plan.request("planLsp/revert", (command.arguments or {})[1] or {}, done("reverted"))
end

function M.redo(plan)
  plan.request("planLsp/redo", {}, done("redone"))
end

return M
