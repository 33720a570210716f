/**
 * Turns an HTTP request into the API Gateway HTTP API (payload format 2.0) event the JWT authorizer
 * would hand to the function, and a Lambda proxy result back into an HTTP response. Shapes follow
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html
 * and events/seed-scenario.json.
 */
import { isUtf8 } from "node:buffer";
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { APIGatewayProxyEventV2WithJWTAuthorizer } from "aws-lambda";
import type { JWTPayload } from "jose";
import { jwtAuthorizerOf } from "../shared/auth/gateway-claims.js";

/** Account and API ids in local events (the ones `sam local` uses). */
const LOCAL_ACCOUNT_ID = "123456789012";
const LOCAL_API_ID = "1234567890";

/** Whether API Gateway passes a body of this media type as text (else it is base64 encoded). */
export function isTextContentType(contentType: string | undefined): boolean {
  if (!contentType) return true;
  return /^(text\/|application\/([\w.+-]+\+)?(json|xml)\b|application\/(x-www-form-urlencoded|javascript|graphql)\b)/i.test(
    contentType.trim(),
  );
}

/** API Gateway's request time format, e.g. "30/Nov/2026:06:00:00 +0000". */
function requestTime(now: Date): string {
  const month = now.toLocaleString("en-US", { month: "short", timeZone: "UTC" });
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(now.getUTCDate())}/${month}/${now.getUTCFullYear()}:${pad(now.getUTCHours())}:${pad(now.getUTCMinutes())}:${pad(now.getUTCSeconds())} +0000`;
}

/** The parts of a request the event is built from. */
export interface RequestParts {
  method: string;
  /** Path and query as sent, e.g. "/v1/runs?x=1". */
  url: string;
  /** Header values by lower-case name, every occurrence kept (node's `req.headersDistinct`). */
  headers: Record<string, string[]>;
  body: Buffer;
  sourceIp: string;
  /** The port the client connected to (for `x-forwarded-port`). */
  localPort: number;
}

/**
 * Builds the HTTP API v2 event for a request:
 * - `headers` lower-case, repeated headers joined with ","; `cookie` moved to `cookies`; API Gateway's
 *   `x-forwarded-*` and `x-amzn-trace-id` added
 * - `queryStringParameters` with repeated names joined with ","; absent when there is no query
 * - `requestContext.authorizer.jwt` `{claims (all strings), scopes}` when `claims` is given (absent
 *   for routes without an authorizer)
 * - `body` as text for textual media types whose bytes are valid UTF-8, else base64 with
 *   `isBase64Encoded: true` (never decoded lossily); absent when empty
 * - `routeKey` "$default" where AWS puts the matched route's key: the function routes by method and
 *   path and reads no `routeKey`; the dev server forwards declared routes only (local/dev-server.ts)
 */
export function toHttpApiEvent(
  request: RequestParts,
  claims: JWTPayload | undefined,
  now: Date = new Date(),
): APIGatewayProxyEventV2WithJWTAuthorizer {
  const url = new URL(request.url, "http://localhost");
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(request.headers)) {
    if (name !== "cookie") headers[name.toLowerCase()] = values.join(",");
  }
  const cookies = (request.headers.cookie ?? [])
    .flatMap((value) => value.split(";"))
    .map((cookie) => cookie.trim())
    .filter((cookie) => cookie.length > 0);
  const requestId = randomBytes(10).toString("base64");
  headers["x-forwarded-for"] = headers["x-forwarded-for"]
    ? `${headers["x-forwarded-for"]}, ${request.sourceIp}`
    : request.sourceIp;
  headers["x-forwarded-port"] = String(request.localPort);
  headers["x-forwarded-proto"] = "http";
  headers["x-amzn-trace-id"] ??=
    `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomBytes(12).toString("hex")}`;
  const query: Record<string, string> = {};
  for (const name of new Set(url.searchParams.keys())) query[name] = url.searchParams.getAll(name).join(",");
  const host = headers.host ?? "127.0.0.1";
  // Text only when it decodes losslessly: bytes that are not UTF-8 go as base64, so the handler's edge
  // (functions/api/lambda-adapter.ts) sees exactly what was sent, as it does from `npm run invoke`.
  const text = isTextContentType(headers["content-type"]) && isUtf8(request.body);
  const event = {
    version: "2.0",
    routeKey: "$default",
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ""),
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(url.search ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: LOCAL_ACCOUNT_ID,
      apiId: LOCAL_API_ID,
      ...(claims ? { authorizer: jwtAuthorizerOf(claims) } : {}),
      domainName: host,
      domainPrefix: host.split(".")[0] ?? host,
      http: {
        method: request.method.toUpperCase(),
        path: url.pathname,
        protocol: "HTTP/1.1",
        sourceIp: request.sourceIp,
        userAgent: headers["user-agent"] ?? "",
      },
      requestId,
      routeKey: "$default",
      stage: "$default",
      time: requestTime(now),
      timeEpoch: now.getTime(),
    },
    ...(request.body.length > 0 ? { body: request.body.toString(text ? "utf8" : "base64") } : {}),
    isBase64Encoded: request.body.length > 0 && !text,
  };
  return event as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

/** A Lambda proxy result as the handler returns it (HTTP API v2, REST v1 or function URL). */
export interface ProxyResult {
  statusCode?: number;
  headers?: Record<string, string | number | boolean>;
  multiValueHeaders?: Record<string, Array<string | number | boolean>>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
}

/**
 * Writes a Lambda proxy result as the HTTP response: status, headers, `cookies` as set-cookie, body
 * decoded from base64 when `isBase64Encoded`. A bare string or object result is a 200 JSON answer,
 * as API Gateway treats it for payload format 2.0. `content-length` is the body's, except for a HEAD
 * whose result sets one: a HEAD has no body, and its content-length is the GET's (RFC 9110 §9.3.2),
 * which the app sets (functions/api/app.ts).
 */
export function writeProxyResult(res: ServerResponse, result: ProxyResult | string | undefined): void {
  const response: ProxyResult =
    typeof result === "object" && result !== null && result.statusCode !== undefined
      ? result
      : { statusCode: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(result) };
  const body = Buffer.from(response.body ?? "", response.isBase64Encoded ? "base64" : "utf8");
  for (const [name, value] of Object.entries(response.headers ?? {})) res.setHeader(name, String(value));
  for (const [name, values] of Object.entries(response.multiValueHeaders ?? {})) {
    res.setHeader(name, values.map(String));
  }
  if (response.cookies?.length) res.setHeader("set-cookie", response.cookies);
  if (res.req?.method !== "HEAD" || !res.hasHeader("content-length")) {
    res.setHeader("content-length", body.length);
  }
  res.writeHead(response.statusCode ?? 200);
  res.end(body);
}

/** Reads a request's headers with every occurrence kept, as {@link RequestParts} wants them. */
export function headersOf(req: IncomingMessage): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(req.headersDistinct).map(([name, values]) => [name, values ?? []]),
  );
}
