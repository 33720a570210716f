import { createTokenVerifier } from "../../shared/auth/token-verifier.js";
import { loadConfig } from "../../shared/config.js";
import { createApiDeps } from "../../shared/deps.js";
import { createApp } from "../api/app.js";
import { createStreamHandler, requireApiTokenSettings } from "./entry.js";

/**
 * The streaming function's configuration, parsed at cold start (an invalid environment fails the init).
 * Its 15-minute timeout lifts the HTTP API's 29 s, so a synchronous run here is bounded by
 * STREAM_RUN_TIMEOUT_MS instead of RUN_TIMEOUT_MS.
 */
const loaded = loadConfig(process.env);
const config = { ...loaded, limits: { ...loaded.limits, runTimeoutMs: loaded.stream.runTimeoutMs } };

// Checked at cold start: without an issuer and audience no request could be verified.
requireApiTokenSettings(config.auth);
/** The one token verifier, built once: its key set is fetched once and cached for the instance's life. */
const verifier = createTokenVerifier(config.auth);

// createApp calls `load` once, on the first request that needs the dependencies, and keeps them.
const app = createApp({ config, load: () => createApiDeps(config) });

/**
 * The Lambda entry of the streaming function URL (infra/stack.ts, docs/run-events.md): the same app as
 * the HTTP API, its bearer token verified here (shared/auth/token-verifier.ts), its responses streamed (RESPONSE_STREAM), so
 * `GET /v1/runs/{runId}/events` stays open and a streamed `POST /v1/runs` may run past the HTTP API's 29 s.
 * The console's pages (CONSOLE_ORIGINS) may call it from the browser (CORS): they follow runs here.
 */
export const handler = createStreamHandler(
  (request, env, executionCtx) => app.fetch(request, env, executionCtx),
  () => verifier,
  { corsOrigins: config.console.origins, tracing: config },
);
