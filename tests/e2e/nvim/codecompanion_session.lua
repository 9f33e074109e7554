-- CodeCompanion.nvim (an ACP client) in headless Neovim, talking to `plan-lsp acp`: a chat is
-- opened on the agent and asked to plan; when CodeCompanion asks the user to approve the plan,
-- what its chat buffer shows is written as JSON to $CC_OUT, then Neovim quits.
-- $CC_PLUGIN, $CC_PLENARY: the plugins' folders; $CC_AGENT: the agent's argv (JSON).
vim.opt.rtp:prepend(vim.env.CC_PLENARY)
vim.opt.rtp:prepend(vim.env.CC_PLUGIN)
local agent = vim.json.decode(vim.env.CC_AGENT)
local result = { asked = {} }

local function finish(why)
  result.why = why
  vim.fn.writefile({ vim.json.encode(result) }, vim.env.CC_OUT)
  vim.cmd("qa!")
end

require("codecompanion").setup({
  adapters = {
    acp = {
      opts = { show_presets = false },
      plan_lsp = function()
        return require("codecompanion.adapters.acp").extend("goose", {
          name = "plan_lsp",
          formatted_name = "plan-lsp",
          commands = { default = agent },
        })
      end,
    },
  },
  interactions = { chat = { adapter = "plan_lsp" } },
})

vim.api.nvim_create_autocmd("User", {
  pattern = "CodeCompanionToolApprovalRequested",
  callback = function(event)
    -- The question is rendered right after this event: read the buffer once it is there.
    vim.defer_fn(function()
      local chat = require("codecompanion").last_chat()
      local lines = vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
      table.insert(result.asked, { name = event.data.name, text = table.concat(lines, "\n") })
      finish("asked")
    end, 300)
  end,
})

local started, problem = pcall(require("codecompanion").chat, {
  params = { adapter = "plan_lsp" },
  user_prompt = "Make the greeting polite",
  auto_submit = true,
})
if not started then
  finish("chat failed: " .. tostring(problem))
end
vim.defer_fn(function()
  local chat = require("codecompanion").last_chat()
  result.text = chat and table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
  finish("never asked")
end, 120000)
