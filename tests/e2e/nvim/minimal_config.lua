-- The README's no-plugin configuration: plain vim.lsp.start (0.10+) or start_client +
-- buf_attach_client (0.7–0.9), a prompt as one plain request, and the approval through the
-- built-in code lens, nothing else. Driven by tests/e2e/test_neovim.py like plan_session.lua.
local params = vim.json.decode(table.concat(vim.fn.readfile(os.getenv("PLAN_LSP_E2E_PARAMS")), "\n"))
local result = { ok = false, steps = {}, nvim = tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. "." .. tostring(vim.version().patch) }
local WAIT_MS = params.wait_ms or 20000
local modern = vim.fn.has("nvim-0.10") == 1

local function wait_for(what, cond, ms)
  if not vim.wait(ms or WAIT_MS, cond, 20) then
    error("timed out waiting for " .. what, 2)
  end
end

local function check(cond, message)
  if not cond then
    error(message, 2)
  end
end

local function buffer_text(bufnr)
  local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  if vim.bo[bufnr].eol then
    text = text .. "\n"
  end
  return text
end

local function run()
  vim.o.hidden = true
  check(not pcall(require, "plan_lsp"), "the plugin must not be on the runtimepath here")

  -- the configuration from client-nvim/README.md ("No plugin at all")
  local client_id
  if modern then
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      callback = function(args)
        local root = vim.fs.root(args.buf, { ".plan-lsp", ".git" })
        if root then
          vim.lsp.start({
            name = "plan-lsp",
            cmd = params.server_cmd,
            root_dir = root,
          }, { bufnr = args.buf })
        end
      end,
    })
  else
    client_id = vim.lsp.start_client({
      name = "plan-lsp",
      cmd = params.server_cmd,
      root_dir = vim.fn.getcwd(),
    })
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      callback = function(args)
        vim.lsp.buf_attach_client(args.buf, client_id)
      end,
    })
  end

  vim.cmd("edit " .. vim.fn.fnameescape(params.workspace .. "/hello.py"))
  local hello = vim.api.nvim_get_current_buf()
  vim.cmd("edit " .. vim.fn.fnameescape(params.plan_path))
  local plan_buf = vim.api.nvim_get_current_buf()
  local client
  wait_for("the client to initialize", function()
    if modern then
      client = vim.lsp.get_clients({ name = "plan-lsp" })[1]
    else
      client = vim.lsp.get_client_by_id(client_id)
    end
    return client ~= nil and client.initialized == true
  end)
  local function request(method, req_params, handler)
    if vim.fn.has("nvim-0.11") == 1 then
      return client:request(method, req_params, handler)
    end
    return client.request(method, req_params, handler)
  end
  check(vim.lsp.buf_is_attached(hello, client.id), "hello.py is not attached")
  check(vim.lsp.buf_is_attached(plan_buf, client.id), "PLAN.md is not attached")
  table.insert(result.steps, "attached")

  -- the one non-standard call: ask for a plan
  local prompt_result
  request("planLsp/prompt", { text = params.prompt }, function(err, res)
    prompt_result = err and { error = err.message } or res
  end)
  wait_for("the planning run", function()
    return prompt_result ~= nil
  end)
  result.prompt_result = prompt_result
  -- Not an error when it differs: the test compares what the buffer ended up holding.
  vim.wait(5000, function()
    return buffer_text(plan_buf) == params.plan_v1
  end, 20)
  result.plan_buffer = buffer_text(plan_buf)
  result.plan_modified = vim.bo[plan_buf].modified
  table.insert(result.steps, "planned")

  -- approve with the built-in code lens
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local function has_approve_lens()
    for _, lens in ipairs(vim.lsp.codelens.get(plan_buf)) do
      if lens.command and lens.command.title == params.approve_lens then
        return true
      end
    end
    return false
  end
  wait_for("the approve code lens", function()
    if not has_approve_lens() then
      vim.lsp.codelens.refresh() -- a no-op while a refresh is in flight
      return false
    end
    return true
  end)
  vim.ui.select = function(items, opts, on_choice)
    result.code_lens_titles = {}
    local chosen
    for _, item in ipairs(items) do
      local title = opts.format_item(item)
      table.insert(result.code_lens_titles, title)
      if title == params.approve_lens then
        chosen = item
      end
    end
    on_choice(chosen)
  end
  vim.lsp.codelens.run()
  wait_for("the Do edit in the hello.py buffer", function()
    return buffer_text(hello) == params.hello_after
  end)
  result.hello_buffer = buffer_text(hello)
  local function state_now()
    local res
    request("planLsp/state", {}, function(_, r)
      res = r or vim.NIL
    end)
    wait_for("planLsp/state", function()
      return res ~= nil
    end, 5000)
    return res
  end
  -- The Do run ends after its edit; poll the state until it says so.
  local state = state_now()
  local deadline = (vim.uv or vim.loop).now() + WAIT_MS
  while type(state) == "table" and state.running and (vim.uv or vim.loop).now() < deadline do
    vim.wait(50)
    state = state_now()
  end
  result.state = state
  result.plan_buffer_after_do = buffer_text(plan_buf)
  result.hello_modified = vim.bo[hello].modified
  table.insert(result.steps, "approved")

  local id = client.id
  vim.lsp.stop_client(id)
  wait_for("the server to exit", function()
    return vim.lsp.get_client_by_id(id) == nil
  end, 10000)
  table.insert(result.steps, "stopped")
  result.ok = true
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  result.error = tostring(err)
end
local written = pcall(vim.fn.writefile, { vim.json.encode(result) }, params.result_path)
if ok and written then
  vim.cmd("qa!")
else
  io.stderr:write(tostring(result.error) .. "\n")
  vim.cmd("cq!")
end
