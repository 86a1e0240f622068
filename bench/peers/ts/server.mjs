// The benchmark's peer on the official TypeScript SDK (@modelcontextprotocol/sdk): one text tool
// `echo` that returns its `message` argument and one static resource, served on node:http with
//   POST /mcp without a session  -> the SDK's stateless mode (a fresh server and transport per
//                                   request, as the SDK requires), JSON responses;
//   POST /mcp initialize / with Mcp-Session-Id, GET, DELETE -> stateful Streamable HTTP sessions;
//   GET /sse + POST /messages    -> the deprecated HTTP+SSE transport.
// Usage: node server.mjs PORT
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';

const RESOURCE_URI = 'bench://static/readme';
const RESOURCE_TEXT = 'kube-mcp benchmark static resource.';

function newServer() {
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes the message.', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }),
  );
  server.registerResource(
    'readme',
    RESOURCE_URI,
    { mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: RESOURCE_TEXT }] }),
  );
  return server;
}

const sessions = new Map(); // Mcp-Session-Id -> StreamableHTTPServerTransport
const sseSessions = new Map(); // sessionId -> SSEServerTransport

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handleMcp(req, res) {
  const sessionId = req.headers['mcp-session-id'];
  if (req.method === 'POST') {
    const body = JSON.parse(await readBody(req));
    if (sessionId) {
      const transport = sessions.get(sessionId);
      if (!transport) return notFound(res);
      return transport.handleRequest(req, res, body);
    }
    if (body.method === 'initialize') {
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
      await newServer().connect(transport);
      return transport.handleRequest(req, res, body);
    }
    // Stateless mode.
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    return transport.handleRequest(req, res, body);
  }
  if (req.method === 'GET' || req.method === 'DELETE') {
    const transport = sessionId && sessions.get(sessionId);
    if (!transport) return notFound(res);
    return transport.handleRequest(req, res);
  }
  res.writeHead(405).end();
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  try {
    if (url.pathname === '/mcp') return await handleMcp(req, res);
    if (url.pathname === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sseSessions.set(transport.sessionId, transport);
      res.on('close', () => sseSessions.delete(transport.sessionId));
      await newServer().connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const transport = sseSessions.get(url.searchParams.get('sessionId'));
      if (!transport) return notFound(res);
      return await transport.handlePostMessage(req, res);
    }
    notFound(res);
  } catch (err) {
    if (!res.headersSent) res.writeHead(500).end(String(err));
  }
}

function notFound(res) {
  res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
}

const port = Number(process.argv[2] ?? 3000);
const http = createServer(handle);
http.keepAliveTimeout = 120_000;
http.headersTimeout = 130_000;
http.requestTimeout = 0;
http.maxConnections = 100_000;
http.listen(port, '127.0.0.1', () => console.error(`ts peer listening on 127.0.0.1:${port}`));
process.on('SIGTERM', () => process.exit(0));
