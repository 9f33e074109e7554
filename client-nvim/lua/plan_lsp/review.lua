-- Reviewing the plan like code from Neovim: :PlanComment (a range command) and the server's
-- code action "Comment on these lines…" ask for the comment with vim.ui.input and keep it on
-- those lines (planLsp.commentOnPlan with the text: it shows as an Information diagnostic
-- of source "plan review"); :PlanSendComments sends the open ones with their quoted lines
-- and the revision starts; :PlanComments lists them and what became of them.
local compat = require("plan_lsp.compat")

local M = {}

local COMMENT = "planLsp.commentOnPlan"
local SEND = "planLsp.sendComments"

local function notify(msg, level)
  vim.notify("plan-lsp: " .. msg, level or vim.log.levels.INFO)
end

-- workspace/executeCommand `name` with one argument table, for the current workspace.
local function execute(plan, name, args, on_result)
  local client, root = plan.current()
  if not client then
    notify("no plan-lsp server for this buffer", vim.log.levels.WARN)
    return false
  end
  args = vim.deepcopy(args or {})
  if root then
    args.workspaceUri = vim.uri_from_fname(root)
  end
  local params = { command = name, arguments = { args } }
  compat.request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      notify(name .. ": " .. (err.message or tostring(err)), vim.log.levels.WARN)
      return
    end
    if on_result then
      on_result(result)
    end
  end)
  return true
end

--- How the comments of a planLsp/comments (or command) answer stand, in one message.
function M.summary(result)
  local comments = type(result) == "table" and result.comments or {}
  local counts = { open = 0, addressed = 0 }
  for _, c in ipairs(comments) do
    counts[c.status] = (counts[c.status] or 0) + 1
  end
  return string.format("%d comment(s): %d open, %d addressed", #comments, counts.open, counts.addressed)
end

-- The plan document a comment is about: `bufnr` when it is one, else the session's plan.
local function plan_uri(plan, bufnr)
  if plan.is_plan_document(bufnr) then
    return vim.uri_from_bufnr(bufnr)
  end
  local state = plan.state()
  return state and type(state.planUri) == "string" and state.planUri or nil
end

--- Asks for the comment on `args.range` of `args.planUri` (vim.ui.input) and keeps it:
--- Escape or an empty answer keeps nothing. A `text` already given is kept as it is.
function M.comment(plan, args)
  args = vim.deepcopy(args or {})
  local given = type(args.text) == "string" and args.text ~= ""
  local function keep(text)
    args.text = text
    execute(plan, COMMENT, args, function(result)
      notify("comment kept; " .. M.summary(result))
    end)
  end
  if given then
    keep(args.text)
    return
  end
  local range = args.range or {}
  local first = (range.start or {}).line or 0
  local last = (range["end"] or {}).line or first
  if last > first and ((range["end"] or {}).character or 0) == 0 then
    last = last - 1 -- a selection of whole lines ends at the next line's start
  end
  local lines = first == last and ("line " .. (first + 1))
    or string.format("lines %d-%d", first + 1, last + 1)
  vim.ui.input({ prompt = "plan-lsp: comment on " .. lines .. ": " }, function(text)
    if text ~= nil and vim.trim(text) ~= "" then
      keep(text)
    end
  end)
end

--- The code action's command (no text: the server would put a `> comment: ` line in the
--- buffer): asked for here instead.
function M.from_action(plan, command)
  M.comment(plan, (command and command.arguments or {})[1])
end

--- :[range]PlanComment [text]: a comment on lines `line1`..`line2` (1-based) of the plan in
--- the current buffer.
function M.command(plan, opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local uri = plan_uri(plan, bufnr)
  if not uri then
    notify("no plan document to comment on", vim.log.levels.WARN)
    return
  end
  local range = {
    start = { line = opts.line1 - 1, character = 0 },
    ["end"] = { line = opts.line2, character = 0 },
  }
  M.comment(plan, { planUri = uri, range = range, text = opts.args ~= "" and opts.args or nil })
end

--- :PlanSendComments: the open comments go to the model with their lines; a revision starts.
function M.send(plan)
  local bufnr = vim.api.nvim_get_current_buf()
  local args = {}
  if plan.is_plan_document(bufnr) then
    args.planUri = vim.uri_from_bufnr(bufnr)
  end
  execute(plan, SEND, args, function(result)
    notify("comments sent, the plan is being revised; " .. M.summary(result))
  end)
end

--- :PlanComments: how the plan's comments stand (open or addressed), one per line.
function M.list(plan)
  plan.request("planLsp/comments", {}, function(result)
    local lines = { M.summary(result) }
    for _, c in ipairs(result.comments or {}) do
      table.insert(lines, string.format("line %d [%s] %s", c.range.start.line + 1, c.status, c.text))
    end
    notify(table.concat(lines, "\n"))
  end)
end

function M.create_commands(plan)
  local cmd = vim.api.nvim_create_user_command
  cmd("PlanComment", function(opts)
    M.command(plan, opts)
  end, { range = true, nargs = "?", desc = "plan-lsp: comment on the plan's lines (asks without text)" })
  cmd("PlanSendComments", function()
    M.send(plan)
  end, { desc = "plan-lsp: send the open comments; the plan is revised" })
  cmd("PlanComments", function()
    M.list(plan)
  end, { desc = "plan-lsp: the plan's comments, open or addressed" })
end

M.COMMENT = COMMENT

return M
