// Stardust for VS Code. The DUST language itself (grammar, comments, brackets) is declared in
// package.json; this starts the Stardust language server, `stardust lsp`, for the DUST and JSON
// documents of the store open in the workspace (the server finds the store from the
// workspace folder and leaves other files alone).
const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function activate() {
  const command = vscode.workspace.getConfiguration('stardust').get('path') || 'stardust';
  client = new LanguageClient(
    'stardust',
    'Stardust',
    { command, args: ['lsp'], transport: TransportKind.stdio },
    {
      documentSelector: [
        { scheme: 'file', language: 'dust' },
        { scheme: 'file', language: 'json' },
      ],
    },
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
