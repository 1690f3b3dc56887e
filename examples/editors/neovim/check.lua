-- A headless check of stardust.lua against a real server:
--   STARDUST=/path/to/stardust STORE=/path/to/a/copy/of/examples/library \
--     nvim --headless -u NONE -c 'luafile examples/editors/neovim/check.lua'
-- Prints one line per step and exits 0 when every step passed.

vim.cmd('filetype on')
local here = debug.getinfo(1, 'S').source:sub(2):match('(.*/)')
package.path = here .. '?.lua;' .. package.path
local stardust = require('stardust')
stardust.setup({ cmd = os.getenv('STARDUST') })
local store = assert(os.getenv('STORE'), 'set STORE')

local function check(what, ok)
  print((ok and 'ok   ' or 'FAIL ') .. what)
  if not ok then
    vim.cmd('cquit 1')
  end
end

vim.cmd('edit ' .. store .. '/books/dune.dust')
local bufnr = vim.api.nvim_get_current_buf()
check("a .dust file has the dust filetype and '; ' comments",
  vim.bo[bufnr].filetype == 'dust' and vim.bo[bufnr].commentstring == '; %s')
check('the server starts and attaches', vim.wait(10000, function()
  local clients = vim.lsp.buf_get_clients(bufnr)
  return next(clients) ~= nil and clients[next(clients)].initialized
end, 50))

-- Break the reference as a user typing would; the diagnostic is pushed.
local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
for i, line in ipairs(lines) do
  if line:match('^author') then
    vim.api.nvim_buf_set_lines(bufnr, i - 1, i, false, { 'author     @person/frank-herbrt' })
  end
end
check('a dangling reference is diagnosed while typing', vim.wait(10000, function()
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == 'dangling-ref' then
      return true
    end
  end
  return false
end, 50))

-- Folding and links, asked for as Neovim's LSP client asks (Neovim folds by expression, so
-- the check speaks the requests itself).
local function ask(method, params)
  local answers = vim.lsp.buf_request_sync(bufnr, method, params, 10000) or {}
  for _, answer in pairs(answers) do
    if answer.result then
      return answer.result
    end
  end
  return {}
end
local doc = { textDocument = vim.lsp.util.make_text_document_params(bufnr) }
local folds = ask('textDocument/foldingRange', doc)
local comment, region = false, false
for _, fold in ipairs(folds) do
  comment = comment or (fold.kind == 'comment' and fold.startLine == 0 and fold.endLine == 1)
  region = region or (fold.kind == 'region' and fold.endLine > fold.startLine)
end
check('folding ranges', comment and region)

local author_line
for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
  if line:match('^author') then
    author_line = i - 1
  end
end
local to_publisher, on_dangling = false, false
for _, link in ipairs(ask('textDocument/documentLink', doc)) do
  to_publisher = to_publisher or (link.target:match('/publishers/') ~= nil and link.target:match('#L%d+,%d+$') ~= nil)
  on_dangling = on_dangling or link.range.start.line == author_line
end
check('document links', to_publisher and not on_dangling)

stardust.command('stardust.status', {}, function(err, result)
  stardust.last_result = { err = err, result = result }
end)
check('commands run', vim.wait(10000, function()
  return stardust.last_result ~= nil and stardust.last_result.result ~= nil
    and stardust.last_result.result.sessions[1].client == 'Neovim'
end, 50))

local preview
stardust.command('stardust.entity.create', { entities = { 'id person/nvim-test type person name Test roles [author]' } }, function(_, result)
  preview = result
end)
check('a mutation answers with a preview', vim.wait(10000, function() return preview ~= nil end, 50))
stardust.command('stardust.preview.confirm', { previewId = preview.previewId }, function() end)
check('the commit is notified', vim.wait(10000, function()
  for _, change in ipairs(stardust.changes) do
    if change.method == 'stardust/entitiesChanged' and change.params.entities[1].id == 'person/nvim-test' then
      return true
    end
  end
  return false
end, 50))

-- JSON with comments (a .jsonc file, filetype jsonc): served, and its comments and trailing
-- comma are no syntax error.
local notes = store .. '/notes.jsonc'
vim.fn.writefile({ '// a note', '{"id": "book/notes", "type": "book", "author": "@person/nobody", /* who */}' }, notes)
vim.cmd('edit ' .. notes)
local jsonc = vim.api.nvim_get_current_buf()
check('a .jsonc file is served', vim.bo[jsonc].filetype == 'jsonc' and vim.wait(10000, function()
  local codes = {}
  for _, d in ipairs(vim.diagnostic.get(jsonc)) do
    codes[d.code] = true
  end
  return codes['dangling-ref'] and not codes['syntax']
end, 50))

vim.cmd('qa!')
