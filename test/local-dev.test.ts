import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, statSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayErrorSchema, ProblemSchema } from "../functions/api/contract.js";
import { DEMO_CLAIMS, mintToken, readIssuerFile } from "../local/dev-auth.js";
import { MCP_INSPECTOR_COMMAND } from "../local/mcp-inspector.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import type { ToolResult } from "../shared/agent/result.js";
import { killLeftovers, type RunningScript, runScript, startScript } from "./support/scripts.js";

// `npm run dev` as a process (node --import tsx local/dev.ts), against the suite's DynamoDB and a model
// server this file starts; requests go over real HTTP.

let model: LocalModelServer;
let dev: RunningScript;
let url: string;
let issuerFile: string;
let demoToken: string;
let env: Record<string, string>;
const SEED_PROMPT =
  "Calculate tax for two invoices: 1500 GBP for a client in the UK, and 500 EUR for a client in Germany (DE). If tax calculation succeeds, record the invoice for the UK client.";

beforeAll(async () => {
  model = await startModelServer();
  issuerFile = join(mkdtempSync(join(tmpdir(), "boundloop-dev-")), "issuer.json");
  env = {
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-dev-${randomUUID()}`,
  };
  dev = startScript("tsx", ["local/dev.ts", "--port", "0", "--issuer-file", issuerFile], env);
  url = (await dev.waitFor(/dev: local API on port \d+ at (http:\/\/127\.0\.0\.1:\d+)/, 80_000))[1] as string;
  await dev.waitFor(/Ctrl-C stops the server/);
  demoToken = (await dev.waitFor(/authorization: Bearer ([\w-]+\.[\w-]+\.[\w-]+)'/))[1] as string;
}, 90_000);

afterAll(async () => {
  killLeftovers();
  await model?.stop();
});

interface RunBody {
  status: string;
  toolResults: ToolResult[];
}

function postRun(token: string | undefined, prompt = SEED_PROMPT): Promise<Response> {
  return fetch(`${url}/v1/runs`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ prompt }),
  });
}

/** Asserts an API Gateway style 401 and that the function (so the model) was never reached. */
async function expectUnauthorized(token: string | undefined, reason: RegExp): Promise<void> {
  const before = model.requests.length;
  const response = await postRun(token);
  expect(response.status).toBe(401);
  expect(await response.json()).toEqual({ message: "Unauthorized" });
  expect(response.headers.get("www-authenticate")).toMatch(reason);
  expect(model.requests.length).toBe(before);
}

describe("npm run dev", { timeout: 60_000 }, () => {
  it("prints a ready-to-paste curl whose demo token gets 200 and runs the seed for the demo tenant", async () => {
    expect(dev.stdout()).toContain(`curl -sS ${url}/v1/runs \\`);
    // The Inspector command it prints runs the pinned Inspector (local/mcp-inspector.ts).
    expect(dev.stdout()).toContain(
      `  ${MCP_INSPECTOR_COMMAND} ${url}/mcp --transport http --method tools/list \\`,
    );
    expect(dev.stdout()).toMatch(/npm run -s token -- --issuer-file '[^']+' --tenant tenant_ro_01/);
    const response = await postRun(demoToken);
    expect(response.status).toBe(200);
    const body = (await response.json()) as RunBody;
    expect(body.status).toBe("completed");
    const record = body.toolResults.find((r) => r.metadata.toolName === "recordInvoice");
    expect(record?.status).toBe("success");
    // Identity came from the verified token's claims, as the authorizer passes them on.
    expect(record?.data).toMatchObject({
      invoice: {
        tenantId: DEMO_CLAIMS.tenant_id,
        createdBy: DEMO_CLAIMS.sub,
        grossTotal: { amount: "1800.00" },
      },
    });
    await dev.waitFor(/dev: POST \/v1\/runs → 200 in \d+ ms \(tenant tenant_demo_01\)/, 5_000);
  });

  it("accepts Prefer: respond-async: 202, the Location polls to the outcome, cancelling it then is 409", async () => {
    const auth = { authorization: `Bearer ${demoToken}` };
    const started = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", prefer: "respond-async" },
      body: JSON.stringify({ prompt: SEED_PROMPT }),
    });
    expect(started.status).toBe(202);
    const location = started.headers.get("location") as string;
    expect(location).toMatch(/^\/v1\/runs\/run_[0-9a-f-]{36}$/);
    expect(started.headers.get("retry-after")).toBe("1");
    expect(((await started.json()) as { status: string }).status).toBe("running");
    let run: { status: string; cycles: number | null } = { status: "running", cycles: null };
    for (let polls = 0; run.status === "running" && polls < 100; polls++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      run = (await (await fetch(`${url}${location}`, { headers: auth })).json()) as typeof run;
    }
    expect(run).toMatchObject({ status: "completed", cycles: 3 });
    const cancel = await fetch(`${url}${location}/cancel`, { method: "POST", headers: auth });
    expect(cancel.status).toBe(409);
    expect(await cancel.json()).toMatchObject({ code: "RUN_NOT_RUNNING", runStatus: "completed" });
  });

  it("streams a run live over HTTP (Accept: text/event-stream, as curl -N), then replays its events on GET", async () => {
    const auth = { authorization: `Bearer ${demoToken}` };
    const before = model.requests.length;
    const response = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ prompt: SEED_PROMPT }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const messages: EventSourceMessage[] = [];
    // Model calls the server had answered when each event reached this client.
    const modelCallsAt: number[] = [];
    const parser = createParser({
      onEvent: (message) => {
        messages.push(message);
        modelCallsAt.push(model.requests.length - before);
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
    expect(messages.at(0)?.event).toBe("run.started");
    expect(messages.at(-2)?.event).toBe("run.finished");
    expect(messages.at(-1)?.event).toBe("run.outcome");
    // Live, not buffered: the first events arrived before the run's last model call was made.
    expect(modelCallsAt[0]).toBeLessThan(3);
    expect(modelCallsAt.at(-1)).toBe(3);
    const { runId } = JSON.parse(messages[0]?.data ?? "{}") as { runId: string };
    const replay = await fetch(`${url}/v1/runs/${runId}/events`, {
      headers: { ...auth, "last-event-id": "2" },
    });
    expect(replay.status).toBe(200);
    const replayed: string[] = [];
    const replayParser = createParser({ onEvent: (message) => replayed.push(message.id ?? "") });
    replayParser.feed(await replay.text());
    const ids = messages.filter((m) => m.event !== "run.outcome").map((m) => m.id);
    expect(replayed).toEqual(ids.slice(2));
    await dev.waitFor(
      /dev: GET \/v1\/runs\/run_[0-9a-f-]+\/events → 200 in \d+ ms \(tenant tenant_demo_01, streamed\)/,
      5_000,
    );
  });

  it("writes the issuer file readable only by its owner, naming its URL and table (for npm run tenant)", async () => {
    expect(statSync(issuerFile).mode & 0o777).toBe(0o600);
    const { url: named, table } = await readIssuerFile(issuerFile);
    expect(named).toBe(url);
    expect(table).toEqual({ endpoint: env.DYNAMODB_ENDPOINT, name: env.TABLE_NAME });
  });

  it("a token from `npm run token` with other claims reaches the app: billing:read only is denied recordInvoice", async () => {
    const minted = await runScript(
      "tsx",
      [
        "local/mint-token.ts",
        "--issuer-file",
        issuerFile,
        "--tenant",
        "tenant_ro_01",
        "--scope",
        "billing:read",
      ],
      env,
    );
    expect(minted.code).toBe(0);
    const response = await postRun(minted.stdout.trim());
    expect(response.status).toBe(200);
    const body = (await response.json()) as RunBody;
    expect(body.status).toBe("permission_denied");
    expect(body.toolResults.find((r) => r.metadata.toolName === "recordInvoice")?.error?.details).toEqual({
      requiredPermission: "billing:write",
    });
  });

  it("GET /healthz and GET /openapi.json need no token, as deployed", async () => {
    const response = await fetch(`${url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
    const document = await fetch(`${url}/openapi.json`);
    expect(document.status).toBe(200);
    expect(((await document.json()) as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("a body over the gateway's 10 MB: its 413 JSON, which the OpenAPI document declares next to the function's problem+json", async () => {
    const response = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${demoToken}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x".repeat(10 * 1024 * 1024 + 1) }),
    });
    expect(response.status).toBe(413);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(GatewayErrorSchema.parse(await response.json())).toEqual({ message: "Request Entity Too Large" });
    const document = (await (await fetch(`${url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content: Record<string, unknown> }> }>
      >;
    };
    for (const [path, method] of [
      ["/v1/runs", "post"],
      ["/v1/runs/{runId}/approvals/{approvalId}", "post"],
    ] as const) {
      expect(document.paths[path]?.[method]?.responses["413"]?.content, `${method} ${path}`).toEqual({
        "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
        "application/json": { schema: { $ref: "#/components/schemas/GatewayError" } },
      });
    }
  });

  it("401 without a token", async () => {
    await expectUnauthorized(undefined, /missing/);
  });

  it("401 for a bad signature: same kid, issuer and audience, another key", async () => {
    const issuer = await readIssuerFile(issuerFile);
    const { privateKey } = await generateKeyPair("RS256");
    const forged = await new SignJWT({ ...DEMO_CLAIMS })
      .setProtectedHeader({ alg: "RS256", kid: issuer.privateJwk.kid })
      .setIssuer(issuer.issuer)
      .setAudience(issuer.audience)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    await expectUnauthorized(forged, /signature/);
    // A tampered payload under the real signature fails the same way.
    const [header, , signature] = demoToken.split(".");
    const payload = Buffer.from(JSON.stringify({ ...DEMO_CLAIMS, tenant_id: "tenant_other" })).toString(
      "base64url",
    );
    await expectUnauthorized(`${header}.${payload}.${signature}`, /signature/);
  });

  it("401 for a key the issuer does not publish (unknown kid)", async () => {
    const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
    const issuer = await readIssuerFile(issuerFile);
    const token = await mintToken(
      {
        ...issuer,
        privateJwk: { ...(await exportJWK(privateKey)), kid: "other-key" },
        publicJwk: await exportJWK(publicKey),
      },
      { ...DEMO_CLAIMS },
    );
    await expectUnauthorized(token, /kid/);
  });

  it("401 for an expired token", async () => {
    const issuer = await readIssuerFile(issuerFile);
    await expectUnauthorized(await mintToken(issuer, { ...DEMO_CLAIMS }, { expiresIn: "-1m" }), /expired/);
  });

  it("401 for a wrong audience", async () => {
    const issuer = await readIssuerFile(issuerFile);
    await expectUnauthorized(
      await mintToken(issuer, { ...DEMO_CLAIMS }, { audience: "another-api" }),
      /audience/,
    );
  });

  it("401 for a wrong issuer", async () => {
    const issuer = await readIssuerFile(issuerFile);
    await expectUnauthorized(
      await mintToken(issuer, { ...DEMO_CLAIMS }, { issuer: "https://evil.example" }),
      /iss/,
    );
  });

  it("a streamed request (as the function URL serves it) gets the streaming function's own 401 problem+json", async () => {
    const issuer = await readIssuerFile(issuerFile);
    const expired = await mintToken(issuer, { ...DEMO_CLAIMS }, { expiresIn: "-1m" });
    const before = model.requests.length;
    for (const [token, challenge] of [
      [undefined, 'Bearer realm="boundloop"'],
      [expired, 'Bearer realm="boundloop", error="invalid_token", error_description="the token has expired"'],
    ] as const) {
      const response = await fetch(`${url}/v1/runs`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ prompt: SEED_PROMPT }),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(response.headers.get("www-authenticate")).toBe(challenge);
      expect(ProblemSchema.parse(await response.json()).code).toBe("UNAUTHENTICATED");
    }
    expect(model.requests.length).toBe(before);
  });

  it("a JSON body that is not valid UTF-8 is 400 INVALID_REQUEST, as npm run invoke and AWS answer it; nothing runs", async () => {
    const before = model.requests.length;
    // "prompt": "Tax on 200 BDT" with a lone continuation byte (0x80) and an overlong "/" (0xC0 0xAF).
    const body = Buffer.concat([
      Buffer.from('{"prompt": "Tax on 200 BDT '),
      Buffer.from([0x80, 0xc0, 0xaf]),
      Buffer.from('"}'),
    ]);
    for (const accept of ["application/json", "text/event-stream"]) {
      const response = await fetch(`${url}/v1/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${demoToken}`, "content-type": "application/json", accept },
        body,
      });
      expect(response.status, accept).toBe(400);
      const problem = ProblemSchema.parse(await response.json());
      expect(problem.code).toBe("INVALID_REQUEST");
      expect(problem.detail).toContain("UTF-8");
    }
    expect(model.requests.length).toBe(before);
  });

  it("a console asset named like a plain object's members is 404, not 500", async () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const response = await fetch(`${url}/console/assets/${name}`);
      expect(response.status, name).toBe(404);
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    }
  });

  it("serves /mcp for its own URL only: MCP_RESOURCE_URL is the printed endpoint, whatever Host a request names", async () => {
    const issuer = await readIssuerFile(issuerFile);
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const call = (token: string, host?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(
          `${url}/mcp`,
          {
            method: "POST",
            headers: {
              authorization: `Bearer ${token}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              ...(host ? { host } : {}),
            },
          },
          (response) => {
            let text = "";
            response.on("data", (chunk: Buffer) => {
              text += chunk.toString("utf8");
            });
            response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
          },
        );
        request.on("error", reject);
        request.end(list);
      });
    expect(dev.stdout()).toContain(`MCP (docs/mcp.md): ${url}/mcp`);
    const own = await call(await mintToken(issuer, { ...DEMO_CLAIMS }, { audience: `${url}/mcp` }));
    expect(own.status).toBe(200);
    const evil = await mintToken(issuer, { ...DEMO_CLAIMS }, { audience: "http://evil.example/mcp" });
    const refused = await call(evil, "evil.example");
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ code: "UNAUTHENTICATED" });
  });

  it("SIGTERM stops it: exit 0, port closed, issuer file removed", async () => {
    dev.child.kill("SIGTERM");
    const { code } = await dev.exited;
    expect(code).toBe(0);
    expect(dev.stderr()).toContain("dev: stopped");
    expect(existsSync(issuerFile)).toBe(false);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
