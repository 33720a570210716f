import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DEMO_CLAIMS, mintToken, readIssuerFile } from "../local/dev-auth.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { killLeftovers, type RunningScript, runScript, startScript } from "./support/scripts.js";

// `npm run smoke` as a process against `npm run dev` processes (one plain, one with APPROVAL_RULES, one
// with an approval policy), and against a proxy in front of the plain one that changes its answers.

/** A default policy set whose approval policy the seed's 1,800.00 GBP invoice matches. */
const APPROVAL_POLICIES = `@id("base") permit (principal, action, resource);
@id("gb-approval") @approval("required")
permit (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor >= 100000 };`;

let model: LocalModelServer;
const devs: Array<{ script: RunningScript; url: string; issuerFile: string }> = [];

async function startDev(extra: Record<string, string>) {
  const issuerFile = join(mkdtempSync(join(tmpdir(), "boundloop-smoke-")), "issuer.json");
  const script = startScript("tsx", ["local/dev.ts", "--port", "0", "--issuer-file", issuerFile], {
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-smoke-${randomUUID()}`,
    ...extra,
  });
  const url = (
    await script.waitFor(/dev: local API on port \d+ at (http:\/\/127\.0\.0\.1:\d+)/, 80_000)
  )[1] as string;
  await script.waitFor(/Ctrl-C stops the server/);
  return { script, url, issuerFile };
}

/** A token of the dev server's issuer (what `npm run token` prints). */
async function token(dev: { issuerFile: string }, claims: Record<string, string> = {}) {
  return mintToken(await readIssuerFile(dev.issuerFile), { ...DEMO_CLAIMS, ...claims });
}

const smoke = (args: string[], env: Record<string, string>) =>
  runScript("tsx", ["local/smoke.ts", ...args], env);

/** `npm run smoke -- --approval` against `dev`, with a writer's token and a second user's (the approver's). */
async function smokeApproval(dev: { url: string; issuerFile: string }) {
  return smoke(["--url", dev.url, "--approval"], {
    BOUNDLOOP_TOKEN: await token(dev),
    BOUNDLOOP_APPROVER_TOKEN: await token(dev, {
      sub: "usr_approver_01",
      scope: "billing:approve billing:read",
    }),
  });
}

/**
 * A proxy to `target` that hands each response body (as text) to `rewrite` for the paths it names.
 */
async function startRewritingProxy(
  target: string,
  rewrite: (method: string, path: string, body: string) => string,
): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(
        ([name]) => !["host", "content-length", "connection"].includes(name),
      ),
    ) as Record<string, string>;
    const upstream = await fetch(new URL(req.url ?? "/", target), {
      method: req.method,
      headers,
      body: req.method === "GET" ? undefined : body,
    });
    const text = rewrite(req.method ?? "GET", (req.url ?? "/").split("?")[0] ?? "/", await upstream.text());
    res.writeHead(upstream.status, {
      "content-type": upstream.headers.get("content-type") ?? "application/json",
    });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

let plain: Awaited<ReturnType<typeof startDev>>;
let approvals: Awaited<ReturnType<typeof startDev>>;
let policies: Awaited<ReturnType<typeof startDev>>;
const proxies: Server[] = [];

beforeAll(async () => {
  model = await startModelServer();
  [plain, approvals, policies] = await Promise.all([
    startDev({}),
    startDev({ APPROVAL_RULES: JSON.stringify({ recordInvoice: { GBP: "1000.00" } }) }),
    startDev({ POLICIES: APPROVAL_POLICIES }),
  ]);
  devs.push(plain, approvals, policies);
}, 120_000);

afterAll(async () => {
  for (const proxy of proxies) proxy.close();
  killLeftovers();
  await model?.stop();
});

describe("npm run smoke", { timeout: 90_000 }, () => {
  it("passes against npm run dev and prints the run and the ledger as npm start does", async () => {
    const result = await smoke(["--url", plain.url], { BOUNDLOOP_TOKEN: await token(plain) });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^GET \/healthz: HTTP 200$/m);
    expect(out).toMatch(/^Run run_[\w-]+: completed after 3 cycle\(s\) in \d+ ms$/m);
    expect(out).toMatch(
      /^ {2}calculateTax +success +\d+ ms +jurisdiction GB, rate 0\.20, subtotal 1500\.00, tax amount 300\.00, gross total 1800\.00, currency GBP$/m,
    );
    expect(out).toMatch(/^ {2}calculateTax +business_error +UNSUPPORTED_JURISDICTION /m);
    expect(out).toMatch(/^ {2}recordInvoice +success +\d+ ms +invoice inv_\w+ for /m);
    expect(out).toContain("Ledger for tenant_demo_01 (1 invoice):");
    expect(out).toMatch(/^ {2}inv_\w+ +.+ +GB +1500\.00 +300\.00 +1800\.00 +GBP +usr_demo$/m);
    expect(out).toContain(`Smoke run passed against ${plain.url}/`);
  });

  it("fails, naming the difference, when the API answers a wrong tax amount", async () => {
    const proxy = await startRewritingProxy(plain.url, (method, path, body) =>
      method === "POST" && path === "/v1/runs" ? body.replaceAll('"300.00"', '"310.00"') : body,
    );
    proxies.push(proxy.server);
    const result = await smoke(["--url", proxy.url], { BOUNDLOOP_TOKEN: await token(plain) });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`Smoke run FAILED against ${proxy.url}/:`);
    expect(result.stdout).toMatch(
      /- calculateTax for GB: expected .*"taxAmount":"300\.00".* got .*"taxAmount":"310\.00"/,
    );
  });

  it("fails when the recorded invoice is missing from the ledger", async () => {
    const proxy = await startRewritingProxy(plain.url, (method, path, body) =>
      method === "GET" && path === "/v1/invoices" ? JSON.stringify({ items: [], nextCursor: null }) : body,
    );
    proxies.push(proxy.server);
    const result = await smoke(["--url", proxy.url], { BOUNDLOOP_TOKEN: await token(plain) });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/- the recorded invoice inv_\w+ is not in the ledger/);
  });

  it("fails without a usable token (the API's 401), and without a token at all", async () => {
    const rejected = await smoke(["--url", plain.url], {
      BOUNDLOOP_TOKEN: await mintToken(await readIssuerFile(plain.issuerFile), DEMO_CLAIMS, {
        audience: "other",
      }),
    });
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toContain("smoke: POST /v1/runs: HTTP 401");
    const none = await smoke(["--url", plain.url], { BOUNDLOOP_TOKEN: "" });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("--url and a token (BOUNDLOOP_TOKEN) are required");
  });

  it("--approval: the run pauses, a second user of the tenant approves, the run completes with one invoice", async () => {
    const result = await smokeApproval(approvals);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^Run run_[\w-]+ awaits approval apr_[0-9a-f]{32}: gross 1800\.00 GBP is over its threshold 1000\.00 GBP$/m,
    );
    expect(result.stdout).toMatch(/^Approval: HTTP 200, status approved$/m);
    expect(result.stdout).toMatch(/^Run run_[\w-]+: completed after /m);
    expect(result.stdout).toMatch(/^ {2}inv_\w+ +.+ +GB +1500\.00 +300\.00 +1800\.00 +GBP +usr_demo$/m);
    expect(result.stdout).toContain("Smoke run passed");
  });

  it("--approval against an API whose policy asks for approval: the same pause, named by the policy", async () => {
    const result = await smokeApproval(policies);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^Run run_[\w-]+ awaits approval apr_[0-9a-f]{32}: the policies gb-approval ask for it \(gross 1800\.00 GBP\)$/m,
    );
    expect(result.stdout).toMatch(/^Approval: HTTP 200, status approved$/m);
    expect(result.stdout).toContain("Smoke run passed");
  });

  it("without --approval against an API with approval rules: a hint in a few lines, not the paused run's JSON", async () => {
    const result = await smoke(["--url", approvals.url], { BOUNDLOOP_TOKEN: await token(approvals) });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^smoke: POST \/v1\/runs: HTTP 202, run run_[\w-]+ is awaiting_approval\. The API asks for approval \(APPROVAL_RULES or a policy\): gross 1800\.00 GBP is over its threshold 1000\.00 GBP\.$/m,
    );
    expect(result.stderr).toContain("Smoke the pause with --approval and a second user's token");
    expect(result.stderr).toContain(`npm run smoke -- --url ${approvals.url}/ --approval`);
    expect(result.stderr.trim().split("\n").length).toBeLessThanOrEqual(5);
    expect(result.stderr).not.toContain('"pendingApprovals"');
  });

  it("--approval fails when the API does not pause (no approval rules)", async () => {
    const result = await smoke(["--url", plain.url, "--approval"], {
      BOUNDLOOP_TOKEN: await token(plain),
      BOUNDLOOP_APPROVER_TOKEN: await token(plain, { sub: "usr_approver_01", scope: "billing:approve" }),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "expected 202 awaiting_approval (does APPROVAL_RULES or a policy ask for approval on the API?), got HTTP 200",
    );
  });
});
