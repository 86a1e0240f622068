// The official Tasks client (@modelcontextprotocol/ext-tasks/client) over the official
// TypeScript SDK client (@modelcontextprotocol/client), both installed by the conformance stage,
// for tests/python/test_ts_tasks.py: connects to URL in MODE (`legacy`: 2025-11-25 task-augmented
// calls; `auto`: the 2026-07-28 Tasks extension), calls TOOL with ARGS (JSON) preferring a task,
// cancels it first when ACTION is `cancel`, and prints the negotiated version, whether a task was
// made and the outcome as one JSON line.
// For 2026-07-28 the package needs the host's raw request path (the SDK's codecs reject task
// results): `post` below frames each request as that era's HTTP transport says.
// Usage: node ts_tasks.mjs URL MODE TOOL ARGS [ACTION]; NODE_MODULES names the packages' root.
import { pathToFileURL } from 'node:url';

const root = process.env.NODE_MODULES;
const load = (path) => import(pathToFileURL(`${root}/@modelcontextprotocol/${path}`).href);
const sdk = await load('client/dist/index.mjs');
const tasks = await load('ext-tasks/dist/client/index.js');
const [url, mode, tool, args, action = 'settle'] = process.argv.slice(2);
const TASKS = 'io.modelcontextprotocol/tasks';
const clientInfo = { name: 'kube-mcp-ts-tasks-test', version: '0' };
const capabilities = { extensions: { [TASKS]: {} } };

const client = new sdk.Client(clientInfo, { capabilities, versionNegotiation: { mode } });
await client.connect(new sdk.StreamableHTTPClientTransport(new URL(url)));
const version = client.getNegotiatedProtocolVersion();

let ids = 1;
async function post(request) {
  const body = { jsonrpc: '2.0', ...request, id: request.id ?? ids++ };
  const name = body.params?.taskId ?? body.params?.name;
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': version,
    'Mcp-Method': body.method,
    ...(name === undefined ? {} : { 'Mcp-Name': name }),
  };
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    return JSON.parse(text);
  }
  const messages = text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)));
  return messages.find((message) => message.id === body.id);
}

const modern = version === '2026-07-28';
const session = tasks.createTaskSessionFromClient(client, {
  endpointId: 'kube-mcp-test',
  ...(modern
    ? { rawDispatch: post, v2RequestFraming: { protocolVersion: version, clientInfo, clientCapabilities: capabilities } }
    : {}),
});
// A 2025-11-25 client asks for a task only where tools/list says the tool supports one.
const listed = (await client.listTools()).tools.find((t) => t.name === tool);
const execution = await session.callTool(tool, JSON.parse(args), {
  declaration: tasks.toolDeclarationFromMcpTool(listed),
  task: { preference: 'prefer' },
});
if (action === 'cancel') {
  await execution.cancel();
}
const { outcome } = await execution.settle();
console.log(
  JSON.stringify({
    version,
    kind: execution.kind,
    status: outcome.status,
    result: outcome.result ?? null,
    error: outcome.error?.message ?? null,
  }),
);
await session.close();
await client.close();
