import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLazyHandler, type LambdaHandler } from "../functions/api/handler.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { apiEvent, type EventOptions, header } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

// Every operation of /openapi.json against what the deployed entry (functions/api/handler.ts) answers
// when the Lambda edge or the body limit refuses a request before any route runs: a GET or HEAD with a
// body, a JSON body that is not UTF-8, a body over MAX_BODY_BYTES. Whatever the answer, its status and
// content type must be the ones the document declares for that operation (docs/http-api.md: the tests
// check the running API against the document).

interface Operation {
  responses: Record<string, { $ref?: string; content?: Record<string, unknown> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, { content?: Record<string, unknown> }> };
}

let stack: TestStack;
let entry: LambdaHandler;
let document: Document;

type Result = { statusCode: number; body: string; headers?: Record<string, string> };
const send = async (options: EventOptions) =>
  (await entry(apiEvent("http-api-v2", options) as never, createLambdaContext(29_000))) as unknown as Result;

beforeAll(async () => {
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
  entry = createLazyHandler(stack.config);
  document = JSON.parse((await send({ method: "GET", path: "/openapi.json", body: null })).body) as Document;
});
afterAll(async () => {
  await stack?.stop();
});

/** Each documented operation: method, the path with its parameters filled in, and its responses. */
function operations(): Array<{ method: string; path: string; responses: Operation["responses"] }> {
  const ids: Record<string, string> = {
    runId: "run_edge0001",
    approvalId: "apr_edge0001",
    invoiceId: "inv_edge0001",
  };
  return Object.entries(document.paths).flatMap(([template, item]) =>
    Object.entries(item)
      .filter(([method]) => ["get", "head", "post", "put"].includes(method))
      .map(([method, operation]) => ({
        method: method.toUpperCase(),
        path: template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? "x"),
        responses: operation.responses,
      })),
  );
}

/** The media types the operation declares for `status` ([] when the status is not declared at all). */
function declaredTypes(responses: Operation["responses"], status: number): string[] | undefined {
  let response = responses[String(status)];
  if (response?.$ref) response = document.components.responses[response.$ref.split("/").pop() ?? ""];
  return response ? Object.keys(response.content ?? {}) : undefined;
}

/** `label: METHOD path -> status type` for each answer the document does not declare. */
async function undeclared(
  label: string,
  cases: Array<{ method: string; path: string; responses: Operation["responses"]; options: EventOptions }>,
): Promise<string[]> {
  const found: string[] = [];
  for (const { method, path, responses, options } of cases) {
    const result = await send({ method, path, ...options });
    const type = (header(result, "content-type") ?? "").split(";")[0] ?? "";
    const declared = declaredTypes(responses, result.statusCode);
    const typeDeclared =
      method === "HEAD" || declared?.includes(type) || (type === "" && declared?.length === 0);
    if (!declared || !typeDeclared) found.push(`${label}: ${method} ${path} -> ${result.statusCode} ${type}`);
  }
  return found;
}

describe("the document declares what the edge answers on every operation", () => {
  it("a GET or HEAD with a body: 400 INVALID_REQUEST problem+json", async () => {
    const cases = operations()
      .filter((op) => op.method === "GET" || op.method === "HEAD")
      .map((op) => ({ ...op, options: { body: { a: 1 } } }));
    expect(cases.length).toBeGreaterThan(15);
    expect(await undeclared("GET with a body", cases)).toEqual([]);
    const healthz = await send({ method: "GET", path: "/healthz", body: { a: 1 } });
    expect(healthz.statusCode).toBe(400);
    expect(JSON.parse(healthz.body)).toMatchObject({ code: "INVALID_REQUEST" });
  });

  it("a JSON body that is not UTF-8: 400 INVALID_REQUEST problem+json", async () => {
    const bytes = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]).toString("base64");
    const found: string[] = [];
    for (const op of operations().filter((one) => one.method === "POST" || one.method === "PUT")) {
      const event = {
        ...apiEvent("http-api-v2", { method: op.method, path: op.path }),
        body: bytes,
        isBase64Encoded: true,
      };
      const result = (await entry(event as never, createLambdaContext(29_000))) as unknown as Result;
      const type = (header(result, "content-type") ?? "").split(";")[0] ?? "";
      expect(result.statusCode, `${op.method} ${op.path}`).toBe(400);
      if (!declaredTypes(op.responses, 400)?.includes(type))
        found.push(`${op.method} ${op.path} -> 400 ${type}`);
    }
    expect(found).toEqual([]);
  });

  it("a body over MAX_BODY_BYTES: 413, as declared", async () => {
    const big = JSON.stringify({ prompt: "x".repeat(stack.config.http.maxBodyBytes) });
    const cases = operations()
      .filter((op) => op.method === "POST" || op.method === "PUT")
      .map((op) => ({ ...op, options: { body: big } }));
    expect(await undeclared("too large", cases)).toEqual([]);
    // Over API Gateway's 10 MB the gateway answers itself, on any /v1 route that takes a body.
    const gatewayless = cases
      .filter(
        (op) => op.path.startsWith("/v1/") && !declaredTypes(op.responses, 413)?.includes("application/json"),
      )
      .map((op) => `${op.method} ${op.path}`);
    expect(gatewayless).toEqual([]);
  });
});
