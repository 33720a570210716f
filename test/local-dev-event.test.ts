import { readFileSync } from "node:fs";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isTextContentType, type RequestParts, toHttpApiEvent } from "../local/dev-event.js";
import { claimAsString } from "../shared/auth/gateway-claims.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const seed = JSON.parse(
  readFileSync(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
) as APIGatewayProxyEventV2 & { requestContext: Record<string, unknown> };

function request(overrides: Partial<RequestParts> = {}): RequestParts {
  return {
    method: "POST",
    url: "/v1/runs",
    headers: {
      host: ["127.0.0.1:3000"],
      "content-type": ["application/json"],
      "user-agent": ["curl/8.5.0"],
    },
    body: Buffer.from(
      JSON.stringify({ prompt: "Calculate tax on 200 BDT for a client in Bangladesh and record it" }),
    ),
    sourceIp: "127.0.0.1",
    localPort: 3000,
    ...overrides,
  };
}

const claims = {
  sub: "usr_demo",
  tenant_id: "tenant_demo_01",
  scope: "billing:read billing:write",
  iss: "urn:boundloop:local-dev-issuer",
  aud: "boundloop-api",
  exp: 1796064022,
  iat: 1796020822,
};

describe("the dev server's HTTP API v2 event", () => {
  it("has the seed event's shape: the same keys at every level the handler reads", () => {
    const event = toHttpApiEvent(request(), claims) as unknown as typeof seed;
    expect(Object.keys(event).sort()).toEqual(Object.keys(seed).sort());
    expect(Object.keys(event.requestContext).sort()).toEqual(Object.keys(seed.requestContext).sort());
    expect(Object.keys(event.requestContext.http).sort()).toEqual(
      Object.keys(seed.requestContext.http).sort(),
    );
    expect(event.requestContext.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
  });

  it("passes claims as strings and scopes as a list, as the JWT authorizer does", () => {
    const event = toHttpApiEvent(request(), {
      ...claims,
      groups: ["a", "b"],
      verified: true,
      addr: { c: "GB" },
    });
    expect(event.requestContext.authorizer.jwt).toEqual({
      claims: {
        sub: "usr_demo",
        tenant_id: "tenant_demo_01",
        scope: "billing:read billing:write",
        iss: "urn:boundloop:local-dev-issuer",
        aud: "boundloop-api",
        exp: "1796064022",
        iat: "1796020822",
        groups: "[a b]",
        verified: "true",
        addr: "map[c:GB]",
      },
      scopes: ["billing:read", "billing:write"],
    });
    const noScope = toHttpApiEvent(request(), { sub: "u", tenant_id: "t" });
    expect(noScope.requestContext.authorizer.jwt.scopes).toBeNull();
    expect(claimAsString(["billing:write"])).toBe("[billing:write]");
  });

  it("has no authorizer on routes without one", () => {
    const event = toHttpApiEvent(
      request({ method: "GET", url: "/healthz", body: Buffer.alloc(0) }),
      undefined,
    );
    expect("authorizer" in event.requestContext).toBe(false);
    expect("body" in event).toBe(false);
    expect(event.isBase64Encoded).toBe(false);
  });

  it("joins repeated headers and query values with commas, and moves cookies to `cookies`", () => {
    const event = toHttpApiEvent(
      request({
        url: "/v1/runs?tag=a&tag=b&q=1",
        headers: { ...request().headers, "x-tag": ["a", "b"], cookie: ["s=1; t=2"] },
      }),
      claims,
    );
    expect(event.rawQueryString).toBe("tag=a&tag=b&q=1");
    expect(event.queryStringParameters).toEqual({ tag: "a,b", q: "1" });
    expect(event.headers["x-tag"]).toBe("a,b");
    expect(event.headers.cookie).toBeUndefined();
    expect(event.cookies).toEqual(["s=1", "t=2"]);
    expect(event.headers["x-forwarded-for"]).toBe("127.0.0.1");
    expect(event.headers["x-forwarded-proto"]).toBe("http");
  });

  it("base64-encodes binary bodies and leaves text bodies as text", () => {
    const bytes = Buffer.from([0, 255, 1, 254]);
    const binary = toHttpApiEvent(
      request({ headers: { "content-type": ["application/octet-stream"] }, body: bytes }),
      claims,
    );
    expect(binary.isBase64Encoded).toBe(true);
    expect(Buffer.from(binary.body ?? "", "base64")).toEqual(bytes);
    expect(isTextContentType("application/problem+json")).toBe(true);
    expect(isTextContentType("text/plain; charset=utf-8")).toBe(true);
    expect(isTextContentType("image/png")).toBe(false);
  });

  it("passes a textual body that is not valid UTF-8 as base64, byte for byte, never decoded lossily", () => {
    const bytes = Buffer.concat([Buffer.from('{"prompt": "x'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const event = toHttpApiEvent(request({ body: bytes }), claims);
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body ?? "", "base64")).toEqual(bytes);
    const valid = toHttpApiEvent(request({ body: Buffer.from('{"prompt": "£ 200"}') }), claims);
    expect([valid.isBase64Encoded, valid.body]).toEqual([false, '{"prompt": "£ 200"}']);
  });
});

describe("the dev server's event through the real handler", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("runs for the token's tenant and user", async () => {
    const event = toHttpApiEvent(request(), claims);
    const response = await stack.invoke(event as unknown as APIGatewayProxyEventV2);
    expect(response.statusCode).toBe(200);
    const body = JSON.parse(response.body ?? "") as { status: string; toolResults: Array<{ data: unknown }> };
    expect(body.status).toBe("completed");
    expect(body.toolResults[0]?.data).toMatchObject({ jurisdiction: "BD", taxAmount: { amount: "30.00" } });
    expect(body.toolResults[1]?.data).toMatchObject({
      invoice: { tenantId: "tenant_demo_01", createdBy: "usr_demo" },
    });
    expect(await stack.deps.ledger.list("tenant_demo_01")).toHaveLength(1);
  });

  it("a binary body is decoded by the handler and refused as 415", async () => {
    const event = toHttpApiEvent(
      request({ headers: { "content-type": ["application/octet-stream"] }, body: Buffer.from("x") }),
      claims,
    );
    const response = await stack.invoke(event as unknown as APIGatewayProxyEventV2);
    expect(response.statusCode).toBe(415);
  });

  it("a JSON body that is not valid UTF-8 is refused 400 INVALID_REQUEST, and nothing runs", async () => {
    const modelCalls = stack.model.requests.length;
    const body = Buffer.concat([
      Buffer.from('{"prompt": "Tax on 200 BDT '),
      Buffer.from([0x80]),
      Buffer.from('"}'),
    ]);
    const response = await stack.invoke(
      toHttpApiEvent(request({ body }), claims) as unknown as APIGatewayProxyEventV2,
    );
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body ?? "")).toMatchObject({ code: "INVALID_REQUEST" });
    expect(stack.model.requests.length).toBe(modelCalls);
  });
});
