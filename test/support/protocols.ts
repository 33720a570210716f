import { createHandler } from "../../functions/api/app-handler.js";
import {
  createDevIssuer,
  type DevIssuerFile,
  devAuthSettings,
  devIssuerEnv,
  mintToken,
} from "../../local/dev-auth.js";
import { type DevServer, type Handler, startDevServer } from "../../local/dev-server.js";
import { createTokenVerifier } from "../../shared/auth/token-verifier.js";
import type { ApiDepsOptions } from "../../shared/deps.js";
import { startTestStack, type TestStack } from "./stack.js";

/**
 * The callers of the isolation tests: two users of one tenant (alice a billing writer, who may record
 * invoices; bob with no billing permission: each sees only their own runs), a user of another tenant with
 * every permission, and carol, a billing reader of the first tenant (who may see any of its runs, as GET
 * /v1/runs/{runId} lets her: shared/runs/access.ts).
 */
export const CALLERS = {
  alice: { sub: "usr_alice", tenant_id: "tenant_uk_01", scope: "billing:write" },
  bob: { sub: "usr_bob", tenant_id: "tenant_uk_01", scope: "openid" },
  mallory: { sub: "usr_mallory", tenant_id: "tenant_other_02", scope: "billing:read billing:write" },
  carol: { sub: "usr_carol", tenant_id: "tenant_uk_01", scope: "billing:read" },
} as const;

/** The real handler on the suite's DynamoDB Local behind the dev gateway (real JWT check, real events). */
export interface ProtocolStack {
  stack: TestStack;
  dev: DevServer;
  issuer: DevIssuerFile;
  tokens: Record<keyof typeof CALLERS, string>;
  /** A fetch that sends `token` as the bearer token (what a client's auth handler does). */
  fetchAs(token: string): typeof fetch;
  stop(): Promise<void>;
}

/**
 * Starts a {@link ProtocolStack}; `env` overrides configuration variables, `options` the dependencies'
 * (an injected clock).
 */
export async function startProtocolStack(
  env: Record<string, string> = {},
  options: ApiDepsOptions = {},
): Promise<ProtocolStack> {
  const issuer = await createDevIssuer();
  const stack = await startTestStack({ ...devIssuerEnv(issuer), ...env }, options);
  const dev = await startDevServer({
    serve: {
      handler: createHandler(stack.deps) as Handler,
      verifier: createTokenVerifier(devAuthSettings(issuer)),
      timeoutMs: 29_000,
    },
    host: "127.0.0.1",
    port: 0,
    log: () => undefined,
  });
  const tokens = {
    alice: await mintToken(issuer, { ...CALLERS.alice }),
    bob: await mintToken(issuer, { ...CALLERS.bob }),
    mallory: await mintToken(issuer, { ...CALLERS.mallory }),
    carol: await mintToken(issuer, { ...CALLERS.carol }),
  };
  return {
    stack,
    dev,
    issuer,
    tokens,
    fetchAs: (token) => (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    },
    async stop() {
      await dev.stop();
      await stack.stop();
    },
  };
}

/** The seed scenario's prompt (events/seed-scenario.json). */
export const SEED_PROMPT =
  "Calculate tax for two invoices: 1500 GBP for a client in the UK, and 500 EUR for a client in Germany (DE). If tax calculation succeeds, record the invoice for the UK client.";
