-- Differences between the Neovim versions the plugin supports (0.7 and later).
-- Everything version-specific lives here so the rest reads the same on every version.
local M = {}

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

-- vim.lsp.start (with client reuse per name + root) arrived in 0.8 and became the
-- documented way in 0.10; before that start_client + buf_attach_client.
M.has_lsp_start = has("0.10")
-- Client methods are called with a colon from 0.11 (the dot form is deprecated there).
M.method_calls = has("0.11")
-- Server-to-client request handlers run in a coroutine from 0.10, so they may wait for an
-- asynchronous vim.ui.select; before that the answer must be returned synchronously.
M.async_server_requests = has("0.10")

function M.request(client, method, params, handler, bufnr)
  if M.method_calls then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  if M.method_calls then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

function M.is_stopped(client)
  if M.method_calls then
    return client:is_stopped()
  end
  return client.is_stopped()
end

function M.realpath(path)
  if not path or path == "" then
    return nil
  end
  local uv = vim.uv or vim.loop
  return uv.fs_realpath(path) or vim.fn.fnamemodify(path, ":p"):gsub("/$", "")
end

function M.exists(path)
  local uv = vim.uv or vim.loop
  return uv.fs_stat(path) ~= nil
end

function M.json_encode(value)
  local ok, text = pcall(vim.json.encode, value)
  if ok then
    return text
  end
  return vim.inspect(value)
end

return M
