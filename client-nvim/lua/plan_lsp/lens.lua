-- Code lens refresh for plan documents. The built-in vim.lsp.codelens.refresh() drops a
-- refresh while one is in flight for the buffer, so a state change arriving during a
-- request would leave stale lenses (e.g. "drafting…" after the plan was submitted). Here a
-- refresh asked for during a request is remembered and sent once that request answers;
-- display and the cache used by vim.lsp.codelens.run() stay the built-in ones.
local compat = require("plan_lsp.compat")

local M = {}

local in_flight = {} -- bufnr -> true
local pending = {} -- bufnr -> true (asked for while in flight)

local function request(bufnr, client)
  in_flight[bufnr] = true
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local ok = pcall(compat.request, client, "textDocument/codeLens", params, function(err, result, ctx)
    in_flight[bufnr] = nil
    if vim.api.nvim_buf_is_valid(bufnr) then
      ctx = ctx or {}
      ctx.bufnr = bufnr
      ctx.client_id = client.id
      ctx.method = ctx.method or "textDocument/codeLens"
      vim.lsp.codelens.on_codelens(err, result or {}, ctx)
    end
    if pending[bufnr] then
      pending[bufnr] = nil
      request(bufnr, client)
    end
  end, bufnr)
  if not ok then
    in_flight[bufnr] = nil
  end
end

--- Asks `client` for the lenses of `bufnr` now, or right after the request in flight.
function M.refresh(bufnr, client)
  if not client or compat.is_stopped(client) or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  if in_flight[bufnr] then
    pending[bufnr] = true
    return
  end
  request(bufnr, client)
end

--- The lenses the built-in cache holds for `bufnr` (what vim.lsp.codelens.run() offers).
function M.titles(bufnr)
  local titles = {}
  for _, lens in ipairs(vim.lsp.codelens.get(bufnr) or {}) do
    if lens.command and lens.command.title then
      table.insert(titles, lens.command.title)
    end
  end
  return titles
end

return M
