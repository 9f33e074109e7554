-- The `plan-lsp://log` scratch buffer: one readable line per planLsp/update, with the
-- model's streaming text appended as it arrives.
local compat = require("plan_lsp.compat")

local M = {}

M.name = "plan-lsp://log"
-- Streaming text continues the last line while it is a text line of the same run.
local text_run = nil
local max_field = 160

local function buffer()
  local bufnr = vim.fn.bufnr(M.name)
  if bufnr ~= -1 and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, M.name)
  vim.bo[bufnr].buftype = "nofile"
  vim.bo[bufnr].bufhidden = "hide"
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].filetype = "planlsplog"
  vim.bo[bufnr].modifiable = false
  return bufnr
end

M.buffer = buffer

local function short(text)
  text = tostring(text or ""):gsub("\n", " ⏎ ")
  if #text > max_field then
    text = text:sub(1, max_field) .. "…"
  end
  return text
end

local function with_modifiable(bufnr, fn)
  vim.bo[bufnr].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[bufnr].modifiable = false
  if not ok then
    error(err)
  end
end

local function follow(bufnr)
  -- Windows showing the log scroll with it.
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(bufnr), 0 })
    end
  end
end

local function is_empty(bufnr)
  return vim.api.nvim_buf_line_count(bufnr) == 1
    and vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] == ""
end

--- Appends whole lines.
function M.append(lines)
  local bufnr = buffer()
  text_run = nil
  with_modifiable(bufnr, function()
    if is_empty(bufnr) then
      vim.api.nvim_buf_set_lines(bufnr, 0, 1, false, lines)
    else
      vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, lines)
    end
  end)
  follow(bufnr)
end

--- Appends streaming text of one run, continuing the previous delta's line.
function M.stream(run_id, delta, prefix)
  local bufnr = buffer()
  prefix = prefix or ""
  local pieces = vim.split(delta, "\n", { plain = true })
  with_modifiable(bufnr, function()
    if text_run ~= run_id then
      local first = { prefix }
      if is_empty(bufnr) then
        vim.api.nvim_buf_set_lines(bufnr, 0, 1, false, first)
      else
        vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, first)
      end
    end
    local last = vim.api.nvim_buf_line_count(bufnr)
    local current = vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or ""
    pieces[1] = current .. pieces[1]
    vim.api.nvim_buf_set_lines(bufnr, last - 1, last, false, pieces)
  end)
  text_run = run_id
  follow(bufnr)
end

local function arguments_text(arguments)
  -- Tool arguments arrive as the model's JSON string, or already decoded.
  if type(arguments) == "string" then
    return arguments
  end
  return compat.json_encode(arguments or {})
end

local function run_tag(update)
  local run = update.runId
  if run == nil or run == vim.NIL then
    return "[-]"
  end
  return "[" .. tostring(run):sub(1, 6) .. "]"
end

local function tokens(n)
  return require("plan_lsp").format_tokens(n)
end

-- A long summary is cut here in the log.
local max_summary_lines = 200

--- The lines of a `compaction` update: trigger, pruned tool outputs, tokens before → after,
--- then the summary, indented.
function M.compaction_lines(update, tag)
  local trigger = (update.trigger == "auto" or update.trigger == "manual") and update.trigger or "manual"
  local pruned = type(update.prunedOutputs) == "number" and update.prunedOutputs or 0
  local lines = {
    string.format(
      "%s COMPACTED (%s): %d tool output%s pruned, %s → %s tokens",
      tag,
      trigger,
      pruned,
      pruned == 1 and "" or "s",
      tokens(update.tokensBefore),
      tokens(update.tokensAfter)
    ),
  }
  local summary = type(update.summary) == "string" and update.summary or ""
  if summary ~= "" then
    table.insert(lines, "    summary:")
    local summary_lines = vim.split(summary, "\n", { plain = true })
    for i, line in ipairs(summary_lines) do
      if i > max_summary_lines then
        table.insert(lines, string.format("      … (%d more lines)", #summary_lines - max_summary_lines))
        break
      end
      table.insert(lines, "      " .. line)
    end
  end
  return lines
end

--- Renders one planLsp/update notification.
function M.render(update)
  local kind = update.kind
  local tag = run_tag(update)
  if kind == "text" then
    M.stream(update.runId, update.delta or "", tag .. " ")
  elseif kind == "toolCall" then
    M.append({ string.format("%s call %s %s", tag, update.tool, short(arguments_text(update.arguments))) })
  elseif kind == "toolResult" then
    local status = update.isError and "error" or "ok"
    M.append({ string.format("%s   %s %s: %s", tag, status, update.tool, short(update.content)) })
  elseif kind == "blocked" then
    M.append({ string.format("%s BLOCKED %s: %s", tag, update.tool, short(update.reason)) })
  elseif kind == "planDraft" then
    -- Draft progress arrives several times a second; only the transitions are worth a line.
    if update.status == "submitted" then
      M.append({ string.format("%s plan submitted (revision %s): %s", tag, tostring(update.revision or "?"), update.uri or "") })
    elseif update.done then
      M.append({ string.format("%s plan written (%d chars)", tag, update.chars or 0) })
    elseif (update.chars or 0) == 0 then
      M.append({ string.format("%s plan drafting: %s", tag, update.uri or "") })
    end
  elseif kind == "modeChanged" then
    M.append({
      string.format("%s mode %s, permissions %s, plan %s", tag, update.mode, update.permissionMode, update.planStatus),
    })
  elseif kind == "todos" then
    local lines = { tag .. " todos:" }
    for _, todo in ipairs(update.todos or {}) do
      table.insert(lines, string.format("    [%s] %s", todo.status or "?", short(todo.content)))
    end
    M.append(lines)
  elseif kind == "question" then
    local lines = { tag .. " question:" }
    for _, q in ipairs(update.questions or {}) do
      table.insert(lines, "    " .. short(q.text))
    end
    M.append(lines)
  elseif kind == "permission" then
    M.append({ string.format("%s permission asked for %s: %s", tag, update.tool, short(update.summary)) })
  elseif kind == "deviation" then
    M.append({ string.format("%s DEVIATION %s", tag, short(update.message or update.path)) })
  elseif kind == "done" then
    M.append({ string.format("%s done: %s", tag, tostring(update.stopReason)) })
  elseif kind == "compaction" then
    M.append(M.compaction_lines(update, tag))
  elseif kind == "error" then
    M.append({ string.format("%s ERROR %s", tag, short(update.message)) })
  else
    M.append({ string.format("%s %s %s", tag, tostring(kind), short(compat.json_encode(update))) })
  end
end

--- Shows the log in a split (or focuses the window already showing it).
function M.open()
  local bufnr = buffer()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_set_current_win(win)
      return bufnr
    end
  end
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, bufnr)
  follow(bufnr)
  return bufnr
end

return M
