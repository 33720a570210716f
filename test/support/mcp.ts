import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JWTPayload } from "jose";
import { createHandler } from "../../functions/api/app-handler.js";
import {
  createDevIssuer,
  type DevIssuerFile,
  devIssuerEnv,
  type MintOptions,
  mintToken,
} from "../../local/dev-auth.js";
import { type DevServer, type Handler, startDevServer } from "../../local/dev-server.js";
import type { ToolRegistry } from "../../shared/agent/dispatcher.js";
import { createTokenVerifier } from "../../shared/auth/token-verifier.js";
import type { ApiDeps, ApiDepsOptions } from "../../shared/deps.js";
import { startTestStack, type TestStack } from "./stack.js";

/** The real handler behind the dev server (its JWT check for /v1, none for /mcp), over a test stack. */
export interface McpStack {
  stack: TestStack;
  server: DevServer;
  issuer: DevIssuerFile;
  /** The endpoint's URL, the audience MCP tokens carry. */
  mcpUrl: URL;
  /** A token for /mcp (audience = mcpUrl unless overridden). */
  token(claims: JWTPayload, options?: MintOptions): Promise<string>;
  /** An SDK client connected (initialized) to /mcp with `token`. */
  connect(token: string): Promise<Client>;
  /** A request to the REST API with a token of the API's audience. */
  api(path: string, claims: JWTPayload, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/** The seed scenario's caller (billing:read and billing:write of tenant_demo_01). */
export const WRITER = { sub: "usr_mcp", tenant_id: "tenant_mcp_01", scope: "billing:read billing:write" };

/**
 * Starts an {@link McpStack}; `env` overrides configuration variables, `tools` the registry the handler
 * serves (default: the accounting tools), `options` are createApiDeps' (e.g. the quotas' clock).
 */
export async function startMcpStack(
  env: Record<string, string> = {},
  tools?: (deps: ApiDeps) => ToolRegistry,
  options: ApiDepsOptions = {},
): Promise<McpStack> {
  const issuer = await createDevIssuer();
  const stack = await startTestStack({ ...devIssuerEnv(issuer), ...env }, options);
  // MCP_RESOURCE_URL is the server's own URL + /mcp, known once it listens (as `npm run dev` sets it).
  const server = await startDevServer({
    serve: (url) => {
      const { config } = stack.deps;
      const auth = { ...config.auth, mcpResourceUrl: config.auth.mcpResourceUrl ?? `${url}/mcp` };
      const deps = { ...stack.deps, config: { ...config, auth } };
      return {
        handler: createHandler(tools ? { ...deps, tools: tools(deps) } : deps) as Handler,
        verifier: createTokenVerifier(auth),
        timeoutMs: 29_000,
      };
    },
    host: "127.0.0.1",
    port: 0,
    log: () => {},
  });
  const mcpUrl = new URL(`${server.url}/mcp`);
  const clients: Client[] = [];
  return {
    stack,
    server,
    issuer,
    mcpUrl,
    token: (claims, options = {}) => mintToken(issuer, claims, { audience: mcpUrl.href, ...options }),
    async connect(token) {
      const client = new Client({ name: "boundloop-test", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(mcpUrl, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async api(path, claims, init = {}) {
      const token = await mintToken(issuer, claims);
      return fetch(`${server.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers },
      });
    },
    async stop() {
      await Promise.all(clients.map((client) => client.close()));
      await server.stop();
      await stack.stop();
    },
  };
}
