import type { Context as LambdaContext, StreamifyHandler } from "aws-lambda";
import { Hono } from "hono";
import { streamHandle } from "hono/aws-lambda";
import { cors } from "hono/cors";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import type { Config } from "../../shared/config.js";
import { ProblemError, toProblem } from "../../shared/errors.js";
import { HEALTH_PATH, healthResponse } from "../api/health.js";

/**
 * How the streaming entry verifies a bearer token: the issuer (`iss`), the accepted audiences (`aud`, or
 * a Cognito access token's `client_id`, as API Gateway's JWT authorizer accepts either) and where the
 * signing keys come from (jose's `createRemoteJWKSet` on AWS, `createLocalJWKSet` locally).
 */
export interface TokenVerification {
  issuer: string;
  audience: readonly string[];
  keys: JWTVerifyGetKey;
}

/**
 * The token verification of a deployed streaming function: JWT_ISSUER and JWT_AUDIENCE (the HTTP API's
 * authorizer settings), keys from JWT_JWKS (inline, as `npm run dev` sets) or JWT_JWKS_URL (default
 * `<issuer>/.well-known/jwks.json`, where Cognito publishes them), the same keys `/mcp` uses. jose caches
 * a remote key set and refetches it when a token names an unknown `kid`.
 * @throws Error when JWT_ISSUER or JWT_AUDIENCE is unset (a cold-start failure: no route may run unverified)
 */
export function tokenVerificationFromConfig(config: Config): TokenVerification {
  const { issuer, audience } = config.identity.jwt;
  if (!issuer || audience.length === 0) {
    throw new Error("The streaming function needs JWT_ISSUER and JWT_AUDIENCE to verify tokens.");
  }
  const { jwks, jwksUrl } = config.mcp;
  const keys = jwks
    ? createLocalJWKSet(jwks as unknown as JSONWebKeySet)
    : createRemoteJWKSet(new URL(jwksUrl ?? `${issuer.replace(/\/$/, "")}/.well-known/jwks.json`));
  return { issuer, audience, keys };
}

/**
 * The claims of a verified bearer token (signature, `iss`, `exp`/`nbf` with 0 s tolerance, then the
 * audience in `aud` or `client_id`).
 * @throws ProblemError UNAUTHENTICATED (401, `WWW-Authenticate: Bearer`) for a missing, malformed,
 *   expired or foreign token; the detail names the failed check, never the token
 */
export async function verifyBearer(
  authorization: string | undefined,
  verification: TokenVerification,
): Promise<JWTPayload> {
  const token = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization?.trim() ?? "")?.[1];
  if (!token) throw new ProblemError("UNAUTHENTICATED", "Send a bearer token: Authorization: Bearer <JWT>.");
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, verification.keys, { issuer: verification.issuer }));
  } catch (error) {
    const code = (error as { code?: string }).code ?? "ERR_JWT_INVALID";
    throw new ProblemError("UNAUTHENTICATED", `The bearer token was not accepted (${code}).`);
  }
  const audiences = [payload.aud, payload.client_id].flat().filter((v): v is string => typeof v === "string");
  if (!audiences.some((aud) => verification.audience.includes(aud))) {
    throw new ProblemError("UNAUTHENTICATED", "The bearer token is not for this API (audience).");
  }
  return payload;
}

/**
 * The event as the app reads it, with the verified claims where API Gateway's JWT authorizer puts them
 * (`requestContext.authorizer.jwt.claims`), so shared/identity.ts maps them to tenant, user and
 * permissions exactly as behind the HTTP API. Whatever authorizer field the event had is replaced.
 */
export function withVerifiedClaims(event: unknown, claims: JWTPayload): unknown {
  const raw = (typeof event === "object" && event !== null ? event : {}) as { requestContext?: object };
  return {
    ...raw,
    requestContext: { ...(raw.requestContext ?? {}), authorizer: { jwt: { claims, scopes: null } } },
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

/**
 * The streaming entry (a Lambda function URL with `RESPONSE_STREAM`, docs/run-events.md): every request
 * but `GET /healthz` must carry a bearer token {@link verifyBearer} accepts, then goes to the same app as
 * the HTTP API with the verified claims in the event ({@link withVerifiedClaims}). Responses stream
 * through hono/aws-lambda's `streamHandle` (which calls the runtime's `awslambda.streamifyResponse`).
 * Work a route hands to `executionCtx.waitUntil` (a streamed run whose reader left) is awaited before
 * the invocation ends: Node 24 on Lambda does not wait for promises after the handler returns.
 * `options.corsOrigins` (CONSOLE_ORIGINS) are the pages that may call it from a browser ({@link consoleCors}).
 */
export function createStreamHandler(
  app: FetchApp,
  verification: () => TokenVerification,
  options: { corsOrigins?: readonly string[] } = {},
) {
  const pending = new WeakMap<object, Promise<unknown>[]>();
  const entry = new Hono<{ Bindings: StreamBindings }>();
  if (options.corsOrigins?.length) entry.use(consoleCors(options.corsOrigins));
  entry.get(HEALTH_PATH, healthResponse);
  entry.all("*", async (c) => {
    const claims = await verifyBearer(c.req.header("authorization"), verification());
    const work = pending.get(c.env.event as object);
    return app(
      c.req.raw,
      { event: withVerifiedClaims(c.env.event, claims), lambdaContext: c.env.context },
      { waitUntil: (promise) => work?.push(promise), passThroughOnException: () => {}, props: {} },
    );
  });
  entry.onError((error) => toProblem(error).getResponse());
  // Typed as a plain Handler by hono; it is the runtime's streaming function (event, stream, context).
  const streaming = streamHandle(entry) as unknown as StreamifyHandler;
  return awslambda.streamifyResponse(async (event: unknown, responseStream, context) => {
    const work: Promise<unknown>[] = [];
    pending.set(event as object, work);
    try {
      await streaming(event, responseStream, context);
    } finally {
      await Promise.allSettled(work);
    }
  });
}

/**
 * CORS for the pages of `origins` (the console's, CONSOLE_ORIGINS) and no other, through hono's `cors`:
 * a preflight (`OPTIONS`, which carries no token) is answered before the token check, and every answer
 * to those origins, errors and 401 included, says so, so the page reads its status. The bearer token
 * travels in `Authorization` (no cookies: no credentials mode); the preflight is cached 2 hours
 * (Chromium's cap) so a stream resumed every few minutes does not pay for one each time.
 */
export function consoleCors(origins: readonly string[]) {
  return cors({
    origin: [...origins],
    allowMethods: ["GET", "POST"],
    allowHeaders: ["authorization", "content-type", "accept", "last-event-id", "idempotency-key", "prefer"],
    exposeHeaders: ["idempotent-replayed", "location", "retry-after"],
    maxAge: 7200,
  });
}
