// An MCP host built on the TypeScript SDK's own client, as the MCP Inspector, Claude Code and
// editor agents are: it lists the tools at once (so the client checks every later answer
// against its tool's outputSchema, as those hosts do), then runs the requests it reads, one
// JSON line each, and writes one JSON line per answer. Driven by tests/mcp_hosts.rs.
//
//   node host.mjs CLIENT-NAME -- COMMAND ARGS...
//
// Requests: {"op": "list"} -> {"ok": true, "tools": [...]};
// {"op": "call", "tool": NAME, "arguments": {...}} -> {"ok": true, "result": CallToolResult}
// or, when the SDK threw instead of answering, {"ok": false, "thrown": MESSAGE, "code": N}.
// The first line written is {"ready": true, "server": serverInfo, "tools": [...]}.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const argv = process.argv.slice(2);
const name = argv[0];
const [command, ...args] = argv.slice(argv.indexOf('--') + 1);
const write = (value) => process.stdout.write(JSON.stringify(value) + '\n');

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const client = new Client({ name, version: '1.0.0' });
await client.connect(transport);
const listed = await client.listTools();
write({ ready: true, server: client.getServerVersion(), tools: listed.tools });

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  try {
    if (request.op === 'list') {
      write({ ok: true, tools: (await client.listTools()).tools });
    } else if (request.op === 'call') {
      const result = await client.callTool({ name: request.tool, arguments: request.arguments ?? {} });
      write({ ok: true, result });
    } else {
      write({ ok: false, thrown: `unknown op ${request.op}` });
    }
  } catch (error) {
    write({ ok: false, thrown: String(error?.message ?? error), code: error?.code ?? null });
  }
}
await client.close();
