// tests/auth/server.mjs: a real OAuth 2.1 / OpenID authorization server (oidc-provider, a
// certified OpenID provider) for the runtime's auth tests. Listens on 127.0.0.1 (port 0 unless
// PORT is set) and prints `issuer <URL>` once it serves. Issues RS256 JWT access tokens whose
// `aud` is the RFC 8707 resource indicator the client asked for (loopback resources only), by
// client credentials (test clients below) or by authorization code with PKCE for clients that
// register dynamically (the MCP SDK's OAuth client; the login and consent are oidc-provider's
// development forms, which any user name passes). Introspection is on. For tests only: in-memory storage and
// keys generated at start.
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';
import { exportJWK, generateKeyPair } from 'jose';

const server = http.createServer();
await new Promise((resolve) => server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signing = { ...(await exportJWK(privateKey)), kid: 'test-rs256', alg: 'RS256', use: 'sig' };

// Test clients for the client-credentials grant: `reader` may only use the server, `writer` also
// holds `issues:write` and a `repos` claim that `allow` conditions read.
const clients = [
  { client_id: 'reader', client_secret: 'reader-secret', scope: 'mcp' },
  { client_id: 'writer', client_secret: 'writer-secret', scope: 'mcp issues:write' },
  { client_id: 'outsider', client_secret: 'outsider-secret', scope: 'issues:write' },
  // The resource server's own client, for introspection.
  { client_id: 'mcp-runtime', client_secret: 'runtime-secret', scope: '' },
].map((c) => ({
  ...c,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
}));

const loopback = (resource) => {
  try {
    const url = new URL(resource);
    return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) && url.protocol === 'http:';
  } catch {
    return false;
  }
};

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [signing] },
  scopes: ['openid', 'offline_access', 'mcp', 'issues:write'],
  // The SDK client registers without naming scopes; let it ask for the ones resources need.
  clientDefaults: { scope: 'openid offline_access mcp issues:write', token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!loopback(resource)) throw new errors.InvalidTarget();
        return {
          scope: 'mcp issues:write',
          audience: resource,
          accessTokenTTL: Number(process.env.ACCESS_TOKEN_TTL ?? 300),
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: (_ctx, token) => (token.clientId === 'writer' ? { repos: ['kube-mcp/kube-mcp'] } : undefined),
  // Accept any account id at the development login form.
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  pkce: { required: () => true },
});
provider.proxy = false;
server.on('request', provider.callback());
console.log(`issuer ${issuer}`);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
