// Stardust for VS Code. The DUST language itself (grammar, comments, brackets) is declared in
// package.json; this starts the Stardust language server, `stardust lsp`, for the DUST, JSON
// and JSON-with-comments (VS Code's `jsonc`: tsconfig.json, .vscode/*.json, .jsonc files)
// documents of the store open in the workspace (the server finds the store from the
// workspace folder, decides which documents are JSONC, and leaves other files alone).
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
        { scheme: 'file', language: 'jsonc' },
      ],
      middleware: { resolveCodeLens },
    },
  );
  return client.start();
}

// The server's reference lenses run VS Code's own `editor.action.showReferences` with the
// protocol's JSON (a URI string, a position, locations); that command takes VS Code's objects,
// so they are converted here, as the language client converts everything else it receives.
async function resolveCodeLens(lens, token, next) {
  const resolved = await next(lens, token);
  const command = resolved && resolved.command;
  if (command && command.command === 'editor.action.showReferences' && command.arguments) {
    const convert = client.protocol2CodeConverter;
    const [uri, position, locations] = command.arguments;
    command.arguments = [
      convert.asUri(uri),
      convert.asPosition(position),
      locations.map((location) => convert.asLocation(location)),
    ];
  }
  return resolved;
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
