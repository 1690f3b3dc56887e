// Tokenizes DUST files with the DUST grammar (../syntaxes/dust.tmLanguage.json) through VS
// Code's own TextMate engine (vscode-textmate on vscode-oniguruma, pinned in package-lock.json)
// and compares the scopes to snapshots. Run by tests/grammar.rs; by hand:
//
//   npm ci && node scopes.mjs          compare every fixtures/NAME.dust to fixtures/NAME.scopes
//   UPDATE=1 node scopes.mjs           rewrite the snapshots instead (review the diff)
//   node scopes.mjs --json FILE...     print every token of the files as JSON, with byte
//                                      offsets, for tests/grammar.rs to compare to the parser
//
// Exits 1 when a snapshot differs or is missing.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const textmate = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const grammarPath = join(here, '..', 'syntaxes', 'dust.tmLanguage.json');
const scopeName = 'source.dust';

async function loadGrammar() {
  const wasm = readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) =>
      scope === scopeName ? textmate.parseRawGrammar(readFileSync(grammarPath, 'utf8'), grammarPath) : null,
  });
  return registry.loadGrammar(scopeName);
}

// The lines of `text` as an editor splits them (at \r\n, \n or \r), each with the byte offset
// where it starts in the file.
function lines(text) {
  const out = [];
  let offset = 0;
  for (const match of text.matchAll(/([^\r\n]*)(\r\n|\r|\n|$)/g)) {
    if (match[0] === '' && match.index === text.length && out.length > 0) break;
    out.push({ text: match[1], offset });
    offset += Buffer.byteLength(match[0]);
  }
  return out;
}

// Every token of `text`: { line, text, start, end (byte offsets in the file), scopes }.
// The grammar's root scope is left out of `scopes`.
function tokenize(grammar, text) {
  const tokens = [];
  let state = textmate.INITIAL;
  lines(text).forEach((line, index) => {
    const result = grammar.tokenizeLine(line.text, state);
    for (const token of result.tokens) {
      const end = Math.min(token.endIndex, line.text.length);
      if (token.startIndex >= end) continue;
      const piece = line.text.slice(token.startIndex, end);
      const start = line.offset + Buffer.byteLength(line.text.slice(0, token.startIndex));
      tokens.push({
        line: index + 1,
        text: piece,
        start,
        end: start + Buffer.byteLength(piece),
        scopes: token.scopes.filter((s) => s !== scopeName),
      });
    }
    state = result.ruleStack;
  });
  return tokens;
}

// The snapshot of a file: each line as written, then one row per token, its text as a JSON
// string and its scopes. Whitespace outside strings and comments is left out.
function snapshot(grammar, text) {
  const tokens = tokenize(grammar, text);
  const out = [];
  for (const [index, line] of lines(text).entries()) {
    out.push(`${index + 1}| ${line.text}`);
    const rows = tokens
      .filter((t) => t.line === index + 1)
      .filter((t) => t.text.trim() !== '' || t.scopes.some((s) => /^(string|comment)\./.test(s)))
      .map((t) => [JSON.stringify(t.text), t.scopes.join(' ')]);
    const width = Math.max(0, ...rows.map(([piece]) => piece.length));
    for (const [piece, scopes] of rows) out.push(`    ${piece.padEnd(width)}  ${scopes}`.trimEnd());
  }
  return out.join('\n') + '\n';
}

const grammar = await loadGrammar();
const args = process.argv.slice(2);
if (args[0] === '--json') {
  const files = {};
  for (const file of args.slice(1)) {
    files[file] = tokenize(grammar, readFileSync(file, 'utf8')).map((t) => [t.start, t.end, t.scopes]);
  }
  process.stdout.write(JSON.stringify(files));
} else {
  const fixtures = join(here, 'fixtures');
  const update = !!process.env.UPDATE;
  let failed = 0;
  let count = 0;
  for (const name of readdirSync(fixtures).filter((f) => f.endsWith('.dust')).sort()) {
    count++;
    const actual = snapshot(grammar, readFileSync(join(fixtures, name), 'utf8'));
    const path = join(fixtures, name.replace(/\.dust$/, '.scopes'));
    let expected = null;
    try {
      expected = readFileSync(path, 'utf8');
    } catch {}
    if (update) {
      if (actual !== expected) {
        writeFileSync(path, actual);
        console.log(`updated ${path}`);
      }
    } else if (expected === null) {
      failed++;
      console.log(`FAIL ${name}: no snapshot ${path}; run with UPDATE=1 to write it`);
    } else if (actual !== expected) {
      failed++;
      const a = actual.split('\n');
      const e = expected.split('\n');
      const at = a.findIndex((l, i) => l !== e[i]);
      console.log(`FAIL ${name}: scopes differ from ${path} first at its line ${at + 1}:`);
      console.log(`  expected: ${e[at] ?? '(end of the snapshot)'}`);
      console.log(`  actual:   ${a[at] ?? '(end of the tokens)'}`);
    } else {
      console.log(`ok   ${name}`);
    }
  }
  if (count === 0) {
    console.log(`FAIL no fixtures in ${fixtures}`);
    failed++;
  }
  if (failed > 0) {
    console.log(`${failed} snapshot(s) differ; if the change is intended, run with UPDATE=1 and review the diff`);
    process.exit(1);
  }
}
