/**
 * The dev server behind `npm run dev` (local/dev.ts): serves a Lambda handler over HTTP behind a check
 * that follows API Gateway's JWT authorizer (the one token verifier's `gateway` rules,
 * shared/auth/token-verifier.ts), turning each request into the HTTP API v2 event the authorizer would
 * produce (local/dev-event.ts).
 *
 * Gateway behaviour mirrored: the stack's public routes (infra/routes.ts: `GET /healthz`,
 * `GET /openapi.json`, the console's page and assets) and `/mcp` (which verifies its own token) have no
 * authorizer, every other route does: 401 `{"message":"Unauthorized"}` (application/json) with
 * `www-authenticate: Bearer scope="" error="invalid_token" error_description="…"`, as API Gateway writes
 * it; a request the stack declares no route for (infra/routes.ts ROUTES, methods matched exactly: a GET
 * route takes no HEAD, and only `HEAD /v1/policies` is declared) gets the API's own 404
 * `{"message":"Not Found"}` before any token check and never reaches the handler, an unknown path and a
 * known path with another method alike; bodies over 10 MB get 413; a handler still running at the timeout gets 503
 * `{"message":"Service Unavailable"}`; a handler that throws gets 500 `{"message":"Internal Server Error"}`.
 * What the stack serves on its streaming function URL ({@link servedByStream}) goes to the streaming
 * entry with no gateway in front, as there: the entry verifies the token and answers its own 401.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Context, StreamifyHandler } from "aws-lambda";
import { decodeJwt } from "jose";
import type { ApiEvent } from "../functions/api/handler.js";
import { wantsEventStream } from "../functions/api/routes/events.js";
import { isDeclaredRoute, isPublicRoute } from "../infra/routes.js";
import { quotedString, type TokenVerdict } from "../shared/auth/bearer.js";
import type { TokenVerifier } from "../shared/auth/token-verifier.js";
import { headersOf, type ProxyResult, toHttpApiEvent, writeProxyResult } from "./dev-event.js";
import { createLambdaContext } from "./lambda-context.js";
import { invokeStreaming } from "./lambda-streaming.js";

/** API Gateway's payload limit (bytes). */
const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** A Lambda handler as hono/aws-lambda's `handle(app)` builds it. */
export type Handler = (event: ApiEvent, context: Context) => Promise<unknown>;

/** A running dev server. */
export interface DevServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * What the dev server serves: the handler, the token verifier its gateway checks with (its `gateway`
 * rules), the function timeout (ms; each request's context counts down from it), and the streaming entry
 * (functions/stream/entry.ts, run with local/lambda-streaming.ts's stand-in for the runtime): requests
 * {@link servedByStream} go to it and its body is written as it comes, as the stack's function URL serves
 * them; without it they are buffered like every other route.
 */
export interface DevTarget {
  handler: Handler;
  verifier: TokenVerifier;
  timeoutMs: number;
  stream?: StreamifyHandler;
}

/**
 * Serves a {@link DevTarget} over HTTP behind the local JWT check (see the module comment).
 * @param options.serve the target, or a function that builds it from the server's URL once it listens
 *   (so the configuration can name it: MCP_RESOURCE_URL); requests wait for it
 * @throws the listen error (e.g. EADDRINUSE) when the port is taken, or the error `serve` threw (the
 *   server is closed then)
 */
export async function startDevServer(options: {
  serve: DevTarget | ((url: string) => DevTarget | Promise<DevTarget>);
  host: string;
  port: number;
  log?: (line: string) => void;
}): Promise<DevServer> {
  const write = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // Requests that arrive before the target is built wait for it.
  let resolveTarget: (target: DevTarget) => void = () => {};
  const ready = new Promise<DevTarget>((resolve) => {
    resolveTarget = resolve;
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<string> {
    const target = await ready;
    const method = (req.method ?? "GET").toUpperCase();
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const body = await readBody(req);
    if (body === undefined) {
      gatewayError(res, 413, "Request Entity Too Large");
      return "";
    }
    // The HTTP API has no catch-all route (infra/stack.ts adds exactly ROUTES): any other request is
    // answered by the API itself, before the authorizer, and never reaches the function.
    if (!isDeclaredRoute(method, path)) {
      gatewayError(res, 404, "Not Found");
      return " (no such route: the HTTP API answers 404)";
    }
    const streamed = target.stream !== undefined && servedByStream(method, path, req.headers);
    let verdict: TokenVerdict | undefined;
    if (!streamed && !isPublicRoute(method, path)) {
      verdict = await target.verifier.gateway(req.headers.authorization);
      if (!verdict.ok) {
        const reason = verdict.error ? verdict.description : "the Authorization header is missing";
        gatewayError(res, 401, "Unauthorized", {
          "www-authenticate": `Bearer scope="" error="invalid_token" error_description=${quotedString(reason)}`,
        });
        return ` (${reason})`;
      }
    }
    const claims = verdict?.ok ? verdict.claims : undefined;
    const event = toHttpApiEvent(
      {
        method,
        url: req.url ?? "/",
        headers: headersOf(req),
        body,
        sourceIp: (req.socket.remoteAddress ?? "127.0.0.1").replace(/^::ffff:/, ""),
        localPort: req.socket.localPort ?? 0,
      },
      claims,
    );
    const tenant = claims ? ` (tenant ${String(claims.tenant_id ?? "?")})` : "";
    if (target.stream && streamed) {
      const status = await streamResponse(target.stream, event, res);
      return status === 401 ? "" : ` (${tenantNote(req.headers.authorization)}streamed)`;
    }
    return (await invoke(target, event, res)) + tenant;
  }

  /** Invokes the handler with `event` against the function timeout; writes its result or the gateway's. */
  async function invoke(target: DevTarget, event: unknown, res: ServerResponse): Promise<string> {
    const context = createLambdaContext(target.timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), target.timeoutMs);
      });
      const result = await Promise.race([target.handler(event as ApiEvent, context), timedOut]);
      if (result === "timeout") {
        gatewayError(res, 503, "Service Unavailable");
        return ` (the function timed out after ${target.timeoutMs} ms)`;
      }
      writeProxyResult(res, result as ProxyResult | string);
    } catch (error) {
      write(
        `dev: the handler threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      gatewayError(res, 500, "Internal Server Error");
    } finally {
      clearTimeout(timer);
    }
    return "";
  }

  const server = createServer((req, res) => {
    const started = Date.now();
    serve(req, res).then(
      (note) =>
        write(`dev: ${req.method} ${req.url} → ${res.statusCode} in ${Date.now() - started} ms${note}`),
      (error: unknown) => {
        write(`dev: ${req.method} ${req.url} failed: ${String(error)}`);
        if (!res.headersSent) gatewayError(res, 500, "Internal Server Error");
        else res.destroy();
      },
    );
  });
  const listening = await listen(server, options.host, options.port);
  try {
    const target = await (typeof options.serve === "function" ? options.serve(listening.url) : options.serve);
    resolveTarget(target);
  } catch (error) {
    await listening.stop();
    throw error;
  }
  return listening;
}

/**
 * Whether a request is one the stack serves on its streaming function URL (docs/run-events.md): an
 * event stream (`GET /v1/runs/{runId}/events`), or a run asked for as one (`POST /v1/runs` with
 * `Accept: text/event-stream`; `Prefer: respond-async` wins, as on AWS, and is answered 202 JSON).
 */
export function servedByStream(
  method: string,
  path: string,
  headers: Record<string, string | string[] | undefined>,
): boolean {
  if (method === "GET" && /^\/v1\/runs\/[^/]+\/events$/.test(path)) return true;
  const header = (name: string) => [headers[name] ?? []].flat().join(",");
  return (
    method === "POST" &&
    path === "/v1/runs" &&
    wantsEventStream(header("accept")) &&
    !/respond-async/i.test(header("prefer"))
  );
}

/**
 * Invokes the streaming handler with `event` and writes its metadata, then each chunk as it comes, to
 * `res`; a client that hangs up destroys the handler's stream (the run goes on, as on AWS).
 */
async function streamResponse(
  handler: StreamifyHandler,
  event: unknown,
  res: ServerResponse,
): Promise<number> {
  // The streaming function's 15-minute timeout (infra/stack.ts STREAM_FUNCTION_TIMEOUT_SECONDS).
  const { stream, done } = invokeStreaming(handler, event, createLambdaContext(900_000, "boundloop-stream"));
  const metadata = await Promise.race([stream.metadata, done.then(() => stream.metadata)]);
  res.writeHead(metadata.statusCode ?? 200, metadata.headers ?? {});
  res.flushHeaders();
  res.on("close", () => {
    if (!stream.readableEnded) stream.destroy();
  });
  stream.pipe(res);
  await done;
  return metadata.statusCode ?? 200;
}

/**
 * "tenant X, " for the log line of a streamed request the streaming entry served: the tenant claim of its
 * bearer token (which the entry has verified; decoded here for the log only), or "" when unreadable.
 */
function tenantNote(authorization: string | undefined): string {
  try {
    const tenant = decodeJwt(authorization?.replace(/^Bearer\s+/i, "") ?? "").tenant_id;
    return tenant === undefined ? "" : `tenant ${String(tenant)}, `;
  } catch {
    return "";
  }
}

/**
 * Serves a streaming handler as a Lambda function URL with `RESPONSE_STREAM` and auth type NONE does
 * (the stack's `StreamUrl`): every request, `OPTIONS` preflights included, goes to the function as a
 * payload 2.0 event without an authorizer (the function verifies the token itself), and its body is
 * written as it comes. `npm run dev` points its console here, across origins, as deployed.
 * @throws the listen error when the port is taken
 */
export async function startFunctionUrlServer(options: {
  stream: StreamifyHandler;
  host: string;
  port: number;
  log?: (line: string) => void;
}): Promise<DevServer> {
  const write = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const server = createServer((req, res) => {
    const started = Date.now();
    const serve = async () => {
      const body = await readBody(req);
      if (body === undefined) return gatewayError(res, 413, "Request Entity Too Large");
      const event = toHttpApiEvent(
        {
          method: (req.method ?? "GET").toUpperCase(),
          url: req.url ?? "/",
          headers: headersOf(req),
          body,
          sourceIp: (req.socket.remoteAddress ?? "127.0.0.1").replace(/^::ffff:/, ""),
          localPort: req.socket.localPort ?? options.port,
        },
        undefined,
      );
      await streamResponse(options.stream, event, res);
    };
    serve().then(
      () =>
        write(`dev: stream URL ${req.method} ${req.url} → ${res.statusCode} in ${Date.now() - started} ms`),
      (error: unknown) => {
        write(`dev: stream URL ${req.method} ${req.url} failed: ${String(error)}`);
        if (!res.headersSent) gatewayError(res, 502, "Internal Server Error");
        else res.destroy();
      },
    );
  });
  return listen(server, options.host, options.port);
}

/** Starts `server` on `host:port` (0: a free port). */
async function listen(server: Server, host: string, port: number): Promise<DevServer> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${address}`,
    port: address,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Reads the request body; undefined when it is over API Gateway's 10 MB limit. */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** An answer from the gateway itself (not the function), in API Gateway's `{"message": ...}` shape. */
function gatewayError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}
