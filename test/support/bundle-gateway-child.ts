/**
 * Serves the built API bundle over HTTP behind the dev gateway (local/dev-server.ts: the JWT check that
 * follows API Gateway's authorizer, each request turned into the HTTP API v2 event it would produce), in
 * a process of its own, as Lambda runs the code: the bundle's `handler` (Hono's Lambda adapter as
 * bundled) is imported from BOUNDLOOP_BUNDLE (the built index.mjs) and reads its configuration from this
 * process's environment at cold start. The gateway trusts the issuer whose public half is in JWT_ISSUER,
 * JWT_AUDIENCE and JWT_JWKS (the variables the function reads too). Prints `{"url": …}` as one line on
 * stdout once listening; stops on SIGTERM, or when the parent process goes away.
 */
import { pathToFileURL } from "node:url";
import type { JWK } from "jose";
import { devAuthSettings } from "../../local/dev-auth.js";
import { type Handler, startDevServer } from "../../local/dev-server.js";
import { onShutdownSignal } from "../../local/shutdown.js";
import { createTokenVerifier } from "../../shared/auth/token-verifier.js";

const bundle = process.env.BOUNDLOOP_BUNDLE;
const { JWT_ISSUER, JWT_AUDIENCE, JWT_JWKS } = process.env;
if (!bundle || !JWT_ISSUER || !JWT_AUDIENCE || !JWT_JWKS) {
  throw new Error("BOUNDLOOP_BUNDLE, JWT_ISSUER, JWT_AUDIENCE and JWT_JWKS are required");
}
const { handler } = (await import(pathToFileURL(bundle).href)) as { handler: Handler };
const [publicJwk] = (JSON.parse(JWT_JWKS) as { keys: JWK[] }).keys;
const server = await startDevServer({
  serve: {
    handler,
    verifier: createTokenVerifier(
      devAuthSettings({ issuer: JWT_ISSUER, audience: JWT_AUDIENCE, publicJwk: publicJwk as JWK }),
    ),
    timeoutMs: 29_000,
  },
  host: "127.0.0.1",
  port: 0,
  log: () => undefined,
});
onShutdownSignal(() => server.stop(), { exitCode: () => 0, watchParent: true, log: () => undefined });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
