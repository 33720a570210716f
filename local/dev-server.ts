/**
 * The dev server behind `npm run dev` (local/dev.ts): serves a Lambda handler over HTTP behind a check
 * that follows API Gateway's JWT authorizer (local/dev-auth.ts), turning each request into the HTTP API
 * v2 event the authorizer would produce (local/dev-event.ts).
 *
 * Gateway behaviour mirrored: the stack's public routes (infra/routes.ts: `GET /healthz`,
 * `GET /openapi.json`, the console's page and assets) have no authorizer, every other route does (401
 * `{"message":"Unauthorized"}` with a `www-authenticate` reason); bodies over 10 MB get 413; a handler
 * still running at the timeout gets 503 `{"message":"Service Unavailable"}`; a handler that throws gets
 * 500 `{"message":"Internal Server Error"}`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Context, StreamifyHandler } from "aws-lambda";
import type { ApiEvent } from "../functions/api/handler.js";
import { wantsEventStream } from "../functions/api/routes/events.js";
import type { TokenVerification } from "../functions/stream/entry.js";
import { isPublicRoute } from "../infra/routes.js";
import { createJwtAuthorizer } from "./dev-auth.js";
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
 * Serves `handler` over HTTP behind the local JWT check (see the module comment).
 * @param options.verification whose tokens the check accepts: the local issuer's
 *   (local/dev-auth.ts `devVerification`), or the issuer JWT_ISSUER names
 * @param options.timeoutMs the function timeout (ms): each request's context counts down from it
 * @throws the listen error (e.g. EADDRINUSE) when the port is taken
 */
export async function startDevServer(options: {
  handler: Handler;
  verification: TokenVerification;
  host: string;
  port: number;
  timeoutMs: number;
  /**
   * The streaming entry (functions/stream/entry.ts, run with local/lambda-streaming.ts's stand-in for
   * the runtime): requests {@link servedByStream} goes to it and its body is written as it comes, as the
   * stack's function URL serves them; without it they are buffered like every other route.
   */
  stream?: StreamifyHandler;
  log?: (line: string) => void;
}): Promise<DevServer> {
  const write = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const authorize = createJwtAuthorizer(options.verification);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<string> {
    const method = (req.method ?? "GET").toUpperCase();
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const body = await readBody(req);
    if (body === undefined) {
      gatewayError(res, 413, "Request Entity Too Large");
      return "";
    }
    let claims: Awaited<ReturnType<typeof authorize>> | undefined;
    if (!isPublicRoute(method, path)) {
      claims = await authorize(req.headers.authorization);
      if (!claims.ok) {
        gatewayError(res, 401, "Unauthorized", {
          "www-authenticate": `Bearer error="invalid_token", error_description="${claims.reason}"`,
        });
        return ` (${claims.reason})`;
      }
    }
    const event = toHttpApiEvent(
      {
        method,
        url: req.url ?? "/",
        headers: headersOf(req),
        body,
        sourceIp: (req.socket.remoteAddress ?? "127.0.0.1").replace(/^::ffff:/, ""),
        localPort: req.socket.localPort ?? options.port,
      },
      claims?.ok ? claims.claims : undefined,
    );
    if (options.stream && servedByStream(method, path, req.headers)) {
      await streamResponse(options.stream, event, res);
      return claims?.ok ? ` (tenant ${String(claims.claims.tenant_id ?? "?")}, streamed)` : " (streamed)";
    }
    const context = createLambdaContext(options.timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
      });
      const result = await Promise.race([options.handler(event as unknown as ApiEvent, context), timedOut]);
      if (result === "timeout") {
        gatewayError(res, 503, "Service Unavailable");
        return ` (the function timed out after ${options.timeoutMs} ms)`;
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
    return claims?.ok ? ` (tenant ${String(claims.claims.tenant_id ?? "?")})` : "";
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
  return listen(server, options.host, options.port);
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
async function streamResponse(handler: StreamifyHandler, event: unknown, res: ServerResponse): Promise<void> {
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
