-- Neovim 0.11+ with the README's native configuration (vim.lsp.config + vim.lsp.enable, no
-- plugin) as the user's init.lua, driven like a user would: open a file of the project (and
-- the empty PLAN.md, in one variant), :PlanPrompt, watch the plan stream into PLAN.md (opened
-- by the server in the other variant), write a review note
-- and reject with it (code action), watch the revision stream, type a line into the plan,
-- approve with the code lens. The driver never asks for code lenses itself: they appear
-- through the configuration alone. Every change of the PLAN.md buffer is recorded with its
-- wall-clock time. Driven by tests/e2e/test_neovim.py, which writes the parameters and reads
-- the result (JSON).
local params = vim.json.decode(table.concat(vim.fn.readfile(os.getenv("PLAN_LSP_E2E_PARAMS")), "\n"))
local version = vim.version()
local result = {
  ok = false,
  steps = {},
  nvim = string.format("%d.%d.%d", version.major, version.minor, version.patch),
  buffer_events = {},
  unexpected_prompts = {},
}
local uv = vim.uv or vim.loop
local WAIT_MS = params.wait_ms or 60000

-- Seconds since the epoch, as Python's time.time() (the model's timeline uses it).
local function now()
  local seconds, micros = uv.gettimeofday()
  return seconds + micros / 1e6
end

local function wait_for(what, cond, ms)
  if not vim.wait(ms or WAIT_MS, cond, 10) then
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

local function real(path)
  return uv.fs_realpath(path) or path
end

-- Every change of the PLAN.md buffer, from the moment it is loaded.
local plan_path = real(params.plan_path)
local plan_buf
local function record(bufnr)
  table.insert(result.buffer_events, { now(), buffer_text(bufnr) })
end
vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
  callback = function(args)
    if plan_buf == nil and real(vim.api.nvim_buf_get_name(args.buf)) == plan_path then
      plan_buf = args.buf
      record(args.buf)
      vim.api.nvim_buf_attach(args.buf, false, {
        on_lines = function(_, bufnr)
          record(bufnr)
        end,
        on_reload = function(_, bufnr)
          record(bufnr)
        end,
      })
    end
  end,
})

-- Outside the steps that expect a choice, any question is recorded and dismissed.
local function dismiss_and_record(items, opts, on_choice)
  local titles = {}
  for _, item in ipairs(items) do
    table.insert(titles, opts.format_item and opts.format_item(item) or tostring(item))
  end
  table.insert(result.unexpected_prompts, { prompt = opts.prompt or "", items = titles })
  on_choice(nil)
end
vim.ui.select = dismiss_and_record
vim.ui.input = function(opts, on_confirm)
  table.insert(result.unexpected_prompts, { prompt = (opts or {}).prompt or "", input = true })
  on_confirm(nil)
end

-- Answers the next vim.ui.select by item title, recording what was offered.
local function select_by_title(wanted, record_as)
  vim.ui.select = function(items, opts, on_choice)
    vim.ui.select = dismiss_and_record
    local titles, chosen = {}, nil
    for _, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      table.insert(titles, title)
      if title == wanted and chosen == nil then
        chosen = item
      end
    end
    result[record_as] = titles
    on_choice(chosen)
  end
end

local function lens_titles(bufnr)
  local titles = {}
  for _, lens in ipairs(vim.lsp.codelens.get(bufnr)) do
    if lens.command then
      table.insert(titles, lens.command.title)
    end
  end
  return titles
end

-- The lens titles Neovim shows as virtual text on a line (what the user sees).
local function shown_lens_text(bufnr, line)
  local shown = {}
  for _, ns in pairs(vim.api.nvim_get_namespaces()) do
    for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, { line, 0 }, { line, -1 }, { details = true })) do
      for _, chunk in ipairs(mark[4].virt_text or {}) do
        table.insert(shown, chunk[1])
      end
    end
  end
  return table.concat(shown)
end

local function has_title(titles, wanted)
  for _, title in ipairs(titles) do
    if title == wanted then
      return true
    end
  end
  return false
end

-- Neovim's own view of the files (what the next focus or :checktime would find): a file
-- changed behind its buffer means W11/W12, or "changed since reading it" at the next :w.
result.file_changed = {}
local checked_at = "start"
vim.api.nvim_create_autocmd("FileChangedShell", {
  callback = function(args)
    table.insert(result.file_changed, { at = checked_at, file = args.file, reason = vim.v.fcs_reason })
    vim.v.fcs_choice = ""
  end,
})
local function checktime(at)
  checked_at = at
  vim.cmd("checktime")
end

local function plan_window()
  return plan_buf and vim.fn.win_findbuf(plan_buf)[1] or nil
end

local function run()
  check(vim.fn.has("nvim-0.11") == 1, "the native configuration needs Neovim 0.11+")
  check(not pcall(require, "plan_lsp"), "the plugin must not be on the runtimepath here")
  check(vim.fn.exists(":PlanPrompt") == 2, "the README configuration defines :PlanPrompt")

  -- 1. open a file of the project: vim.lsp.enable starts the server for it
  vim.cmd("edit " .. vim.fn.fnameescape(params.workspace .. "/hello.py"))
  local hello = vim.api.nvim_get_current_buf()
  local client
  wait_for("the client to initialize", function()
    client = vim.lsp.get_clients({ name = "plan_lsp", bufnr = hello })[1]
    return client ~= nil and client.initialized == true
  end, 20000)
  result.root_dir = client.root_dir
  if params.plan_open_before then
    -- the user opened the (empty) plan file beside hello.py before asking
    vim.cmd("split " .. vim.fn.fnameescape(params.plan_path))
    check(plan_buf == vim.api.nvim_get_current_buf(), "PLAN.md was not recorded")
    wait_for("PLAN.md attached", function()
      return vim.lsp.buf_is_attached(plan_buf, client.id)
    end, 20000)
    vim.cmd("wincmd p")
  end
  table.insert(result.steps, "attached")

  -- 2. ask for a plan; the server opens PLAN.md and streams the plan into it, and its
  -- lenses appear when it is submitted (nothing here asks for them)
  vim.cmd("PlanPrompt " .. params.prompt)
  wait_for("the plan's Approve lens", function()
    return plan_buf ~= nil and has_title(lens_titles(plan_buf), params.approve_lens)
  end)
  check(vim.lsp.buf_is_attached(plan_buf, client.id), "PLAN.md is not attached")
  result.plan_shown_in_window = plan_window() ~= nil
  result.plan_buffer_v1 = buffer_text(plan_buf)
  result.plan_modified_v1 = vim.bo[plan_buf].modified
  result.lens_titles_v1 = lens_titles(plan_buf)
  vim.wait(200, function()
    return shown_lens_text(plan_buf, 0):find(params.approve_lens, 1, true) ~= nil
  end, 10)
  result.lens_text_v1 = shown_lens_text(plan_buf, 0)
  checktime("plan")
  table.insert(result.steps, "planned")

  -- 3. a review note typed into the plan, then the code action that rejects with it
  local win = plan_window()
  check(win ~= nil, "PLAN.md is in no window")
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_buf_set_lines(plan_buf, -1, -1, false, { "> feedback: " .. params.feedback })
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  select_by_title(params.reject_action, "code_action_titles")
  vim.lsp.buf.code_action()
  wait_for("the revision's lenses", function()
    local titles = lens_titles(plan_buf)
    return has_title(titles, params.approve_lens) and has_title(titles, params.compare_lens)
  end)
  result.plan_buffer_v2 = buffer_text(plan_buf)
  result.plan_modified_v2 = vim.bo[plan_buf].modified
  result.lens_titles_v2 = lens_titles(plan_buf)
  checktime("revision")
  table.insert(result.steps, "revised")

  -- 4. a tool touches hello.py (same text, a newer time: a checkout, a build): Neovim's
  -- buffer is unmodified and stale only by its time. Then the user adds a line to the plan
  -- and approves it with the code lens.
  local later = os.time() + 2
  check(uv.fs_utime(params.workspace .. "/hello.py", later, later), "cannot touch hello.py")
  vim.api.nvim_buf_set_lines(plan_buf, -1, -1, false, { params.user_line })
  result.plan_buffer_approved = buffer_text(plan_buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  select_by_title(params.approve_lens, "code_lens_titles")
  vim.lsp.codelens.run()
  wait_for("the Do edit in the hello.py buffer", function()
    return buffer_text(hello) == params.hello_after
  end)
  local function state_now()
    local answer
    client:request("planLsp/state", {}, function(_, r)
      answer = r or vim.NIL
    end)
    wait_for("planLsp/state", function()
      return answer ~= nil
    end, 5000)
    return answer
  end
  local state = state_now()
  local deadline = uv.now() + WAIT_MS
  while type(state) == "table" and state.running and uv.now() < deadline do
    vim.wait(50)
    state = state_now()
  end
  result.state = state
  result.hello_buffer = buffer_text(hello)
  result.plan_buffer_after_do = buffer_text(plan_buf)
  result.hello_modified = vim.bo[hello].modified
  result.plan_modified = vim.bo[plan_buf].modified
  -- the lens follows the run's end by itself (the server's refresh after its last state)
  vim.wait(WAIT_MS, function()
    return has_title(lens_titles(plan_buf), params.approved_lens)
  end, 10)
  result.lens_titles_after = lens_titles(plan_buf)
  table.insert(result.steps, "approved")

  -- 5. Neovim's own view of the files at the end: nothing changed behind a buffer
  checktime("end")
  result.messages = vim.api.nvim_exec2("messages", { output = true }).output

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
