import type { Context as LambdaContext, StreamifyHandler } from "aws-lambda";
import { Hono } from "hono";
import { streamHandle } from "hono/aws-lambda";
import { cors } from "hono/cors";
import { TrieRouter } from "hono/router/trie-router";
import type { JWTPayload } from "jose";
import { bearerChallenge, refusalDetail } from "../../shared/auth/bearer.js";
import { jwtAuthorizerOf } from "../../shared/auth/gateway-claims.js";
import type { AuthSettings } from "../../shared/auth/settings.js";
import type { TokenVerifier } from "../../shared/auth/token-verifier.js";
import type { Config } from "../../shared/config.js";
import { withTracing } from "../../shared/telemetry/entry.js";
import { EXPOSED_RESPONSE_HEADERS } from "../api/exposed-headers.js";
import { HEALTH_PATH, healthResponse } from "../api/health.js";
import { readableEvent } from "../api/lambda-adapter.js";
import { ProblemError, toProblem } from "../api/problem-details.js";

/** The realm of the streaming function's 401 challenges (RFC 6750 section 3). */
const REALM = "boundloop";

/**
 * Checks at cold start that the streaming function can verify tokens at all: JWT_ISSUER and
 * JWT_AUDIENCE (the HTTP API authorizer's issuer and audiences, which the stack sets) must be set.
 * @throws Error naming both when either is unset (no route may run unverified)
 */
export function requireApiTokenSettings(settings: AuthSettings): void {
  if (!settings.issuer || settings.audiences.length === 0) {
    throw new Error("The streaming function needs JWT_ISSUER and JWT_AUDIENCE to verify tokens.");
  }
}

/**
 * The claims of the request's bearer token, as the one verifier checks the API's tokens
 * (shared/auth/token-verifier.ts `api`: signature, pinned algorithms, `iss`, `exp`, `sub`, then the
 * audience in `aud`, or in `client_id` only when there is no `aud`).
 * @throws ProblemError UNAUTHENTICATED (401) whose `WWW-Authenticate` names the failed check
 *   (`error="invalid_token"`, none when no token was sent); the detail never holds the token
 */
export async function verifiedClaims(
  authorization: string | undefined,
  verifier: TokenVerifier,
): Promise<JWTPayload> {
  const verdict = await verifier.api(authorization);
  if (verdict.ok) return verdict.claims;
  throw new ProblemError("UNAUTHENTICATED", refusalDetail(verdict), {
    headers: { "www-authenticate": bearerChallenge(verdict, { realm: REALM }) },
  });
}

/**
 * The event as the app reads it, with the verified claims where and as API Gateway's JWT authorizer
 * puts them (`requestContext.authorizer.jwt`, every claim rendered as a string:
 * shared/auth/gateway-claims.ts), so shared/identity.ts maps them to tenant, user and permissions exactly
 * as behind the HTTP API. Whatever authorizer field the event had is replaced.
 */
export function withVerifiedClaims(event: unknown, claims: JWTPayload): unknown {
  const raw = (typeof event === "object" && event !== null ? event : {}) as { requestContext?: object };
  return {
    ...raw,
    requestContext: { ...(raw.requestContext ?? {}), authorizer: jwtAuthorizerOf(claims) },
  };
}

/** What hono/aws-lambda's `streamHandle` puts in `c.env`. */
interface StreamBindings {
  event: unknown;
  context: LambdaContext;
}

/** The app the entry serves: functions/api/app.ts's `createApp(...)`, or its lazy loader. */
export type FetchApp = (
  request: Request,
  env: { event: unknown; lambdaContext: LambdaContext },
  executionCtx: {
    waitUntil(promise: Promise<unknown>): void;
    passThroughOnException(): void;
    props: unknown;
  },
) => Response | Promise<Response>;

/** What the entry knows of one invocation: the work it waits for, and a body the edge refused. */
interface Invocation {
  work: Promise<unknown>[];
  unreadable: ProblemError | undefined;
}

/**
 * The streaming entry (a Lambda function URL with `RESPONSE_STREAM`, docs/run-events.md): every request
 * but `GET /healthz` must carry a bearer token {@link verifiedClaims} accepts, then goes to the same app
 * as the HTTP API with the verified claims in the event ({@link withVerifiedClaims}). An event the Lambda
 * edge refuses (functions/api/lambda-adapter.ts `readableEvent`: malformed base64, JSON that is not
 * UTF-8, a body on GET or HEAD, a header the Fetch API cannot hold) is then answered 400 as the API
 * function answers it; the adapter never sees what it could not read. Responses
 * stream through hono/aws-lambda's `streamHandle` (which calls the runtime's `awslambda.streamifyResponse`).
 * Work a route hands to `executionCtx.waitUntil` (a streamed run whose reader left) is awaited before
 * the invocation ends: Node 24 on Lambda does not wait for promises after the handler returns.
 * `options.corsOrigins` (CONSOLE_ORIGINS) are the pages that may call it from a browser ({@link consoleCors});
 * `options.tracing` (TRACING) traces every invocation as the API function's entry does
 * (shared/telemetry/entry.ts `withTracing`: its spans are flushed before the invocation ends).
 * @param verifier the one token verifier (shared/auth/token-verifier.ts), built once per process
 */
export function createStreamHandler(
  app: FetchApp,
  verifier: () => TokenVerifier,
  options: { corsOrigins?: readonly string[]; tracing?: Pick<Config, "tracing" | "observability"> } = {},
) {
  const invocations = new WeakMap<object, Invocation>();
  // hono's TrieRouter, as every route group's (functions/api/routes/deps.ts routeGroup).
  const entry = new Hono<{ Bindings: StreamBindings }>({ router: new TrieRouter() });
  if (options.corsOrigins?.length) entry.use(consoleCors(options.corsOrigins));
  entry.get(HEALTH_PATH, healthResponse);
  entry.all("*", async (c) => {
    const claims = await verifiedClaims(c.req.header("authorization"), verifier());
    const invocation = invocations.get(c.env.event as object);
    if (invocation?.unreadable) throw invocation.unreadable;
    return app(
      c.req.raw,
      { event: withVerifiedClaims(c.env.event, claims), lambdaContext: c.env.context },
      { waitUntil: (promise) => invocation?.work.push(promise), passThroughOnException: () => {}, props: {} },
    );
  });
  entry.onError((error) => toProblem(error).getResponse());
  // Typed as a plain Handler by hono; it is the runtime's streaming function (event, stream, context).
  const streaming = streamHandle(entry) as unknown as StreamifyHandler;
  const invoke = async (
    event: unknown,
    responseStream: awslambda.HttpResponseStream,
    context: LambdaContext,
  ) => {
    // The adapter would fail building the Request (and answer text): it gets an event it can read,
    // and the route the 400 once the token is checked.
    const { event: readable, problem } = readableEvent(event);
    const served = readable as object;
    const invocation: Invocation = { work: [], unreadable: problem };
    invocations.set(served, invocation);
    try {
      await streaming(served, responseStream, context);
    } finally {
      await Promise.allSettled(invocation.work);
    }
  };
  // A streamed run is a run like the API function's: traced the same way when TRACING is on.
  return awslambda.streamifyResponse(options.tracing ? withTracing(invoke, options.tracing) : invoke);
}

/**
 * CORS for the pages of `origins` (the console's, CONSOLE_ORIGINS) and no other, through hono's `cors`:
 * a preflight (`OPTIONS`, which carries no token) is answered before the token check, and every answer
 * to those origins, errors and 401 included, says so, so the page reads its status and every header the
 * API documents (functions/api/exposed-headers.ts: ETag, Location, Retry-After, RateLimit, …). The bearer token
 * travels in `Authorization` (no cookies: no credentials mode); the preflight is cached 2 hours
 * (Chromium's cap) so a stream resumed every few minutes does not pay for one each time.
 */
export function consoleCors(origins: readonly string[]) {
  return cors({
    origin: [...origins],
    allowMethods: ["GET", "POST"],
    allowHeaders: ["authorization", "content-type", "accept", "last-event-id", "idempotency-key", "prefer"],
    exposeHeaders: [...EXPOSED_RESPONSE_HEADERS],
    maxAge: 7200,
  });
}
