// Checks the VS Code extension in the folder above without VS Code: that its manifest
// (package.json) declares the DUST language with files that exist and agree with each other,
// that the language configuration has DUST's comment and pairs, that activating extension.js
// starts `stardust lsp` for DUST and JSON documents, and that a reference lens's arguments are
// converted for VS Code's showReferences. `vscode` and `vscode-languageclient` are replaced by
// recorders, since neither loads outside VS Code.
// Run by tests/grammar.rs; by hand: node extension.mjs. Exits 1 on the first failure.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const json = (path) => JSON.parse(readFileSync(join(root, path), 'utf8'));
const check = (what, f) => {
  try {
    f();
    console.log(`ok   ${what}`);
  } catch (e) {
    console.log(`FAIL ${what}: ${e.message}`);
    process.exit(1);
  }
};

const manifest = json('package.json');

check('the manifest declares the dust language for .dust files', () => {
  const [language, ...others] = manifest.contributes.languages;
  assert.equal(others.length, 0);
  assert.equal(language.id, 'dust');
  assert.deepEqual(language.extensions, ['.dust']);
  assert.ok(existsSync(join(root, language.configuration)), `${language.configuration} exists`);
});

check('the manifest names the grammar by its own scope name', () => {
  const [grammar] = manifest.contributes.grammars;
  assert.equal(grammar.language, 'dust');
  assert.equal(grammar.scopeName, 'source.dust');
  assert.equal(json(grammar.path).scopeName, grammar.scopeName);
});

check('the manifest starts the extension in a store and depends on the language client', () => {
  assert.ok(existsSync(join(root, manifest.main)), `${manifest.main} exists`);
  assert.ok(manifest.activationEvents.includes('workspaceContains:stardust.toml'));
  assert.ok(manifest.dependencies['vscode-languageclient']);
  assert.ok(manifest.engines.vscode);
});

check("the language configuration has ';' comments, brackets and auto-closed quotes", () => {
  const config = json(manifest.contributes.languages[0].configuration);
  assert.equal(config.comments.lineComment, ';');
  assert.deepEqual(config.brackets, [['{', '}'], ['[', ']']]);
  const opens = config.autoClosingPairs.map((p) => p.open);
  for (const open of ['{', '[', "'", '"']) assert.ok(opens.includes(open), `auto-closes ${open}`);
  // Double-clicking selects a whole bareword (a reference, a path), as DUST reads it.
  const word = new RegExp(config.wordPattern);
  assert.equal('author @person/frank-herbert;'.match(new RegExp(word, 'g'))[1], '@person/frank-herbert');
});

let resolveCodeLens;
check('activating the extension starts `stardust lsp` for dust, json and jsonc documents', () => {
  const calls = [];
  class LanguageClient {
    constructor(id, name, server, client) {
      calls.push({ id, name, server, client });
      this.protocol2CodeConverter = {
        asUri: (uri) => ({ uri }),
        asPosition: (position) => ({ position }),
        asLocation: (location) => ({ location }),
      };
    }
    start() {
      calls.push('start');
      return Promise.resolve();
    }
    stop() {
      calls.push('stop');
      return Promise.resolve();
    }
  }
  const settings = {};
  const fakes = {
    vscode: { workspace: { getConfiguration: (section) => ({ get: (key) => settings[`${section}.${key}`] }) } },
    'vscode-languageclient/node': { LanguageClient, TransportKind: { stdio: 0 } },
  };
  const load = Module._load;
  Module._load = function (request, ...rest) {
    return request in fakes ? fakes[request] : load.call(this, request, ...rest);
  };
  try {
    const extension = createRequire(import.meta.url)(join(root, manifest.main));
    extension.activate();
    const [made, started] = calls;
    assert.equal(started, 'start');
    assert.deepEqual(made.server, { command: 'stardust', args: ['lsp'], transport: 0 });
    assert.deepEqual(
      made.client.documentSelector.map((s) => s.language),
      ['dust', 'json', 'jsonc'],
    );
    resolveCodeLens = made.client.middleware.resolveCodeLens;
    extension.deactivate();
    assert.equal(calls.at(-1), 'stop');
    // The stardust.path setting names another executable.
    settings['stardust.path'] = '/opt/stardust/bin/stardust';
    extension.activate();
    assert.equal(calls.at(-2).server.command, '/opt/stardust/bin/stardust');
  } finally {
    Module._load = load;
  }
});

// The server's reference lens names VS Code's showReferences with protocol JSON; the
// middleware hands the command VS Code's objects instead (other lenses pass unchanged).
const location = { uri: 'file:///s/b.dust', range: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } } };
const shown = await resolveCodeLens(
  { command: { title: '1 reference', command: 'editor.action.showReferences', arguments: ['file:///s/a.dust', { line: 1, character: 5 }, [location]] } },
  undefined,
  async (lens) => lens,
);
const run = { command: { title: 'run', command: 'stardust.query.execute', arguments: [{ document: 'find [?b]' }] } };
const ran = await resolveCodeLens(structuredClone(run), undefined, async (lens) => lens);
check('a reference lens reaches showReferences with VS Code objects', () => {
  assert.deepEqual(shown.command.arguments, [
    { uri: 'file:///s/a.dust' },
    { position: { line: 1, character: 5 } },
    [{ location }],
  ]);
  assert.deepEqual(ran, run);
});
