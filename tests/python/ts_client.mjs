// The official TypeScript SDK client (@modelcontextprotocol/client, installed by the
// conformance stage) for tests/python/test_ts_sdk.py: connects to URL in MODE (`legacy`,
// `auto`), declaring the capabilities of OPTIONS (JSON: {capabilities, token}), and prints the
// negotiated version, the server's capabilities and its tools as one JSON line.
// Usage: node ts_client.mjs URL MODE [OPTIONS]; TS_CLIENT_MODULE names the SDK's ESM entry.
import { pathToFileURL } from 'node:url';

const sdk = await import(pathToFileURL(process.env.TS_CLIENT_MODULE).href);
const [url, mode, options = '{}'] = process.argv.slice(2);
const { capabilities = {}, token } = JSON.parse(options);
const client = new sdk.Client(
  { name: 'kube-mcp-ts-test', version: '0' },
  { capabilities, versionNegotiation: { mode } },
);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
await client.connect(transport);
const tools = await client.listTools();
console.log(
  JSON.stringify({
    version: client.getNegotiatedProtocolVersion?.() ?? null,
    capabilities: client.getServerCapabilities() ?? null,
    tools: tools.tools,
  }),
);
await client.close();
