// The anchor for benches/mcp.rs: the same `echo` call on server-everything
// through the TypeScript MCP SDK client (the one the reference's McpClient
// is built on), from a fresh node process: connect over stdio, call, exit.
// This is a lower bound for the reference, which also imports
// @google/gemini-cli-core (about 2 s) before it connects.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [server] = process.argv.slice(2);
const client = new Client({ name: 'reference-echo', version: '0.1.0' }, { capabilities: {} });
await client.connect(new StdioClientTransport({ command: server, args: [], stderr: 'ignore' }));
const result = await client.callTool({ name: 'echo', arguments: { message: 'bench' } });
if (!JSON.stringify(result).includes('Echo: bench')) {
  console.error('unexpected result', JSON.stringify(result));
  process.exit(1);
}
await client.close();
process.exit(0);
