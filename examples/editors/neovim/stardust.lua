-- Stardust for Neovim 0.7+ with the built-in LSP client; no plugin needed.
--
-- Install: copy this file to ~/.config/nvim/lua/stardust.lua and add
--   require('stardust').setup()
-- to init.lua (or `:luafile stardust.lua` once). The server starts for `.dust`, `.json` and
-- `.jsonc` files (filetypes dust, json and jsonc) inside a store (a folder with stardust.toml
-- or .stardust/), one per store; the server decides which are JSON with comments.
--
-- Commands:
--   :Stardust NAME [JSON]   run a command of the registry, e.g.
--                           :Stardust stardust.query.execute {"document": "find [?b] where [[?b type book]]"}
--   :StardustChanges        show the change notifications received so far
-- Everything else is Neovim's own LSP: vim.lsp.buf.hover(), definition(), references(),
-- rename(), code_action(), formatting() (formatting_sync() on 0.7), vim.diagnostic.*.

local M = {}

-- Every stardust/documentsChanged and stardust/entitiesChanged notification, newest last.
M.changes = {}
-- The answer to the last :Stardust command (for scripts).
M.last_result = nil

local clients = {} -- store root -> client id

local function find_root(file)
  local dir = vim.fn.fnamemodify(file, ':p:h')
  while true do
    if vim.fn.filereadable(dir .. '/stardust.toml') == 1 or vim.fn.isdirectory(dir .. '/.stardust') == 1 then
      return dir
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      return nil
    end
    dir = parent
  end
end

local function on_change(_, params, ctx)
  table.insert(M.changes, { method = ctx.method, params = params })
  local names = {}
  for _, item in ipairs(params.documents or params.entities or {}) do
    table.insert(names, (item.path or item.id) .. ' ' .. item.change)
  end
  if params.overflow then
    table.insert(names, 'too many changes; re-read')
  end
  vim.notify(string.format('stardust seq %d: %s', params.seq, table.concat(names, ', ')), vim.log.levels.INFO)
end

local function start(bufnr, opts)
  local file = vim.api.nvim_buf_get_name(bufnr)
  if file == '' then
    return
  end
  local root = find_root(file)
  if not root then
    return
  end
  local id = clients[root]
  if not id or not vim.lsp.get_client_by_id(id) then
    local capabilities = vim.lsp.protocol.make_client_capabilities()
    capabilities.experimental = { stardust = { notifications = { 'documentsChanged', 'entitiesChanged' } } }
    capabilities.workspace = capabilities.workspace or {}
    capabilities.workspace.workspaceEdit = capabilities.workspace.workspaceEdit or {}
    capabilities.workspace.workspaceEdit.documentChanges = true
    capabilities.workspace.workspaceEdit.resourceOperations = { 'create', 'rename', 'delete' }
    id = vim.lsp.start_client({
      name = 'stardust',
      cmd = { opts.cmd or 'stardust', 'lsp', '--store', root },
      root_dir = root,
      capabilities = capabilities,
      handlers = {
        ['stardust/documentsChanged'] = on_change,
        ['stardust/entitiesChanged'] = on_change,
      },
    })
    clients[root] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
end

-- Run command NAME of the registry with one argument object (a Lua table) on the client of
-- the current buffer; calls on_result(err, result).
function M.command(name, args, on_result)
  local bufnr = vim.api.nvim_get_current_buf()
  -- An empty Lua table would be sent as `[]`; the argument is an object.
  if args == nil or (type(args) == 'table' and next(args) == nil) then
    args = vim.empty_dict()
  end
  local params = { command = name, arguments = { args } }
  vim.lsp.buf_request(bufnr, 'workspace/executeCommand', params, function(err, result)
    M.last_result = { err = err, result = result }
    if on_result then
      on_result(err, result)
    elseif err then
      local code = err.data and err.data.code or '?'
      vim.notify(string.format('error[%s]: %s', code, err.message), vim.log.levels.ERROR)
    else
      vim.notify(vim.json.encode(result), vim.log.levels.INFO)
    end
  end)
end

function M.setup(opts)
  opts = opts or {}
  local group = vim.api.nvim_create_augroup('stardust', { clear = true })
  -- Neovim 0.7's filetype.lua is opt-in, so detect .dust the classic way too.
  vim.api.nvim_create_autocmd({ 'BufRead', 'BufNewFile' }, {
    group = group,
    pattern = '*.dust',
    command = 'setfiletype dust',
  })
  -- DUST's comments run from ';' to the end of the line (gc in Neovim 0.10+, and plugins).
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'dust',
    callback = function(args)
      vim.bo[args.buf].commentstring = '; %s'
      vim.bo[args.buf].comments = ':;'
    end,
  })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = { 'dust', 'json', 'jsonc' },
    callback = function(args)
      start(args.buf, opts)
    end,
  })
  vim.api.nvim_create_user_command('Stardust', function(cmd)
    local name, json = cmd.args:match('^(%S+)%s*(.*)$')
    local args = (json and json ~= '') and vim.json.decode(json) or vim.empty_dict()
    M.command(name, args)
  end, { nargs = '+' })
  vim.api.nvim_create_user_command('StardustChanges', function()
    for _, change in ipairs(M.changes) do
      print(change.method, vim.json.encode(change.params))
    end
  end, {})
end

return M
