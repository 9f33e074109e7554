-- What the headless Neovim drivers of tests/e2e share: their parameters (JSON in the file
-- named by $PLAN_LSP_E2E_PARAMS), the result record, waiting and checking, stopping the
-- plugin's client, and writing the outcome to params.result_path (exit with `qa!` when every
-- step passed, `cq!` otherwise). A driver loads it with dofile from its own folder.
local M = {}

M.params = vim.json.decode(table.concat(vim.fn.readfile(os.getenv("PLAN_LSP_E2E_PARAMS")), "\n"))
local version = vim.version()
M.result = {
  ok = false,
  steps = {},
  nvim = string.format("%d.%d.%d", version.major, version.minor, version.patch),
}
M.WAIT_MS = M.params.wait_ms or 20000

function M.wait_for(what, cond, ms)
  if not vim.wait(ms or M.WAIT_MS, cond, 20) then
    error("timed out waiting for " .. what, 2)
  end
end

function M.check(cond, message)
  if not cond then
    error(message, 2)
  end
end

function M.step(name)
  table.insert(M.result.steps, name)
end

-- Set the plugin up on the test's server and workspace: the plugin, the planLsp/update
-- notifications as they arrive, and a synchronous planLsp/state.
function M.start_plugin()
  local updates = {}
  local plan = require("plan_lsp")
  plan.setup({
    cmd = M.params.server_cmd,
    root_dir = M.params.workspace,
    on_update = function(update)
      table.insert(updates, update)
    end,
  })
  local function state_sync()
    local state, err = plan.request_sync("planLsp/state", {}, 5000)
    M.check(state, "planLsp/state failed: " .. tostring(err))
    return state
  end
  return plan, updates, state_sync
end

-- Open the workspace's hello.py and wait until the plugin's server has sent its first state.
function M.open_hello(plan)
  vim.cmd("edit " .. vim.fn.fnameescape(M.params.workspace .. "/hello.py"))
  M.wait_for("the server's first state", function()
    return plan.state() ~= nil
  end)
end

-- The stop reason of the `n`-th run that ended (nil while fewer have).
function M.stop_reason(updates, n)
  local seen = 0
  for _, u in ipairs(updates) do
    if u.kind == "done" then
      seen = seen + 1
      if seen == n then
        return u.stopReason
      end
    end
  end
  return nil
end

-- Stop the plugin's client and wait until its server has exited.
function M.stop(plan)
  local client = plan.current()
  if client then
    local client_id = client.id
    vim.lsp.stop_client(client_id)
    M.wait_for("the server to exit", function()
      return vim.lsp.get_client_by_id(client_id) == nil
    end, 10000)
  end
  M.step("stopped")
  M.result.ok = true
end

-- Run the driver's steps, record the outcome, and leave Neovim with its exit status.
function M.finish(run)
  local result = M.result
  local ok, err = xpcall(run, debug.traceback)
  if not ok then
    result.error = tostring(err)
  end
  local written, write_err = pcall(function()
    vim.fn.writefile({ vim.json.encode(result) }, M.params.result_path)
  end)
  if ok and written then
    vim.cmd("qa!")
  else
    if not written then
      io.stderr:write("could not write the result: " .. tostring(write_err) .. "\n")
    end
    io.stderr:write(tostring(result.error) .. "\n")
    vim.cmd("cq!")
  end
end

return M
