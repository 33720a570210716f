/**
 * Bench-only HTTP server for the load test (not `npm run dev`): serves the Lambda handler exported by
 * the module at BENCH_HANDLER_FILE (the deployed bundle) on 127.0.0.1, turning each request into an API
 * Gateway HTTP API v2 event with fixed JWT authorizer claims (tenant `tenant_load`, scopes billing:write
 * and billing:read) and a Lambda context of 29 s. Config comes from the environment like in Lambda.
 * Prints `{"url": "http://127.0.0.1:<port>"}` on stdout when listening; SIGTERM stops it.
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { createLambdaContext } from "../local/lambda-context.js";

/** The fixed verified identity every request carries (API Gateway would take it from the JWT). */
const CLAIMS = { sub: "usr_load", tenant_id: "tenant_load", scope: "billing:write billing:read" };

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** The v2 event API Gateway would send for this request (headers lower-cased, repeated ones joined). */
export function toV2Event(request: IncomingMessage, body: string): APIGatewayProxyEventV2 {
  const url = new URL(request.url ?? "/", "http://127.0.0.1");
  const method = request.method ?? "GET";
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(",") : value;
  }
  const now = new Date();
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    requestContext: {
      accountId: "123456789012",
      apiId: "bench",
      authorizer: { jwt: { claims: CLAIMS, scopes: CLAIMS.scope.split(" ") } },
      domainName: "127.0.0.1",
      domainPrefix: "bench",
      http: {
        method,
        path: url.pathname,
        protocol: "HTTP/1.1",
        sourceIp: "127.0.0.1",
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body,
    isBase64Encoded: false,
  } as APIGatewayProxyEventV2;
}

async function main(): Promise<void> {
  const file = process.env.BENCH_HANDLER_FILE;
  if (!file) throw new Error("Set BENCH_HANDLER_FILE to the handler bundle.");
  const { handler } = (await import(pathToFileURL(file).href)) as { handler: Handler };
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const result = await handler(
      toV2Event(request, Buffer.concat(chunks).toString("utf8")),
      createLambdaContext(29_000),
    );
    const headers = Object.fromEntries(Object.entries(result.headers ?? {}).map(([k, v]) => [k, String(v)]));
    response.writeHead(result.statusCode ?? 200, headers);
    response.end(result.isBase64Encoded ? Buffer.from(result.body ?? "", "base64") : (result.body ?? ""));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` }));
  process.once("SIGTERM", () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
