// A minimal MCP Apps host for tests/e2e/apps.sh, bundled for the browser by esbuild: the
// official TypeScript SDK client talks to mcp-runtime (through servers.py's /mcp proxy, so
// the page needs no CORS), and ext-apps' AppBridge renders the tool's view in a sandboxed
// iframe. ext-apps leaves the CSP to the host (its reference host builds it in a sandbox
// proxy page), so this page builds it from the view's `_meta.ui.csp` and puts it first in the
// view's <head>, before any of the view's own markup can run.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
} from '@modelcontextprotocol/ext-apps/app-bridge';

const UI = 'io.modelcontextprotocol/ui';
const params = new URLSearchParams(location.search);
const info = { name: 'kube-mcp-apps-e2e', version: '0' };

// The CSP of a view: nothing but inline code, and the network only where `csp` allows it.
function policy(csp = {}) {
  const list = (origins, none) => (origins?.length ? origins.join(' ') : none);
  const resources = list(csp.resourceDomains, '');
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${resources}`,
    `style-src 'unsafe-inline' ${resources}`,
    `img-src data: ${resources}`,
    `font-src ${list(csp.resourceDomains, "'none'")}`,
    `connect-src ${list(csp.connectDomains, "'none'")}`,
    `frame-src ${list(csp.frameDomains, "'none'")}`,
    `base-uri ${list(csp.baseUriDomains, "'none'")}`,
  ].join('; ');
}

function withPolicy(html, csp) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy(csp)}">`;
  const head = html.match(/<head[^>]*>/i);
  if (!head) throw new Error('the view has no <head>');
  return html.replace(head[0], head[0] + meta);
}

async function main() {
  const client = new Client(info, {
    capabilities: { extensions: { [UI]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', location.href)));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === 'get_pod');
  const uri = getToolUiResourceUri(tool);
  const [view] = (await client.readResource({ uri })).contents;
  if (view.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`not a view: ${view.mimeType}`);
  const args = { name: 'web-1' };
  const result = await client.callTool({ name: tool.name, arguments: args });
  document.getElementById('text').textContent = result.content[0].text;

  // The undeclared origin is reachable from this page (which has no CSP): if the view cannot
  // reach it, its CSP is what stopped it.
  const control = await fetch(`${params.get('denied')}/control`).catch((e) => e);
  document.getElementById('control').textContent = control.ok ? 'reachable' : `${control}`;

  const iframe = document.createElement('iframe');
  iframe.sandbox = 'allow-scripts';
  iframe.allow = buildAllowAttribute(view._meta?.ui?.permissions);
  iframe.style = 'width: 100%; height: 300px; border: 1px solid #888';
  document.body.append(iframe);
  const bridge = new AppBridge(client, info, { serverTools: {}, logging: {} });
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    document.body.dataset.status = 'sent';
  };
  // Connected before the view loads: the view sends ui/initialize as soon as it runs.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withPolicy(view.text, view._meta?.ui?.csp);
}

main().catch((error) => {
  document.body.dataset.status = 'failed';
  document.body.dataset.error = String(error?.stack ?? error);
});
