// Drives Sonde's MCP server with the official TypeScript SDK client and
// prints what it saw as one JSON object on stdout. Run by
// services/sonde/internal/cli/mcp_ts_test.go:
//
//   node client.mjs stdio '<command JSON: {"command","args","env"}>' <statements.json>
//   node client.mjs http <url> <token> <statements.json>
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport, statementsFile;
if (mode === "stdio") {
  const spec = JSON.parse(target);
  transport = new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, stderr: "inherit" });
  statementsFile = rest[0];
} else {
  const [token, file] = rest;
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  statementsFile = file;
}
const statements = JSON.parse(readFileSync(statementsFile, "utf8"));

const client = new Client({ name: "sonde-ts-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: [], calls: {}, hostile: [] };

const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name).sort();

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  return { isError: r.isError === true, structured: r.structuredContent ?? null, text: r.content?.[0]?.text ?? "" };
}

out.calls.list_connections = await call("list_connections", {});
out.calls.run_query = await call("run_query", { connection_id: "demo", sql: "SELECT id FROM orders ORDER BY id", limit: 2 });
out.calls.refused = await call("run_query", { connection_id: "demo", sql: "DELETE FROM orders" });
out.calls.bad_args = await call("run_query", { connection_id: "demo", sql: "SELECT 1", limit: 100000 });
const started = await call("start_investigation", { connection_id: "demo", objective: "Why did orders fall in March 2025?" });
out.calls.start_investigation = started;
if (!started.isError) {
  out.calls.get_run = await call("get_run", { run_id: started.structured.run_id, wait_seconds: 60 });
}
for (const sql of statements) {
  const r = await call("run_query", { connection_id: "demo", sql });
  out.hostile.push({ sql: sql.slice(0, 80), isError: r.isError, code: r.structured?.error?.code ?? "" });
}
await client.close();
process.stdout.write(JSON.stringify(out));
