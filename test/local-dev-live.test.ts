import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DEMO_CLAIMS, mintToken, readIssuerFile } from "../local/dev-auth.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { GBP_RULES, SEED_PROMPT } from "./support/approvals.js";
import { killLeftovers, type RunningScript, startScript } from "./support/scripts.js";

// `npm run dev` follows runs live for as long as they go, on its own origin (as `curl -N`) and on its
// stand-in of the streaming function URL, which the console's page names and whose CORS answers the
// console's origin only; a resume after the final event is 204 on both.

let model: LocalModelServer;
let dev: RunningScript;
let url: string;
let streamUrl: string;
let issuerFile: string;

const OWNER = { ...DEMO_CLAIMS, scope: "billing:read billing:write billing:approve" };
const APPROVER = { ...OWNER, sub: "usr_approver_01" };

beforeAll(async () => {
  model = await startModelServer();
  issuerFile = join(mkdtempSync(join(tmpdir(), "boundloop-dev-live-")), "issuer.json");
  dev = startScript("tsx", ["local/dev.ts", "--port", "0", "--issuer-file", issuerFile], {
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-dev-live-${randomUUID()}`,
    APPROVAL_RULES: GBP_RULES,
  });
  url = (await dev.waitFor(/dev: local API on port \d+ at (http:\/\/127\.0\.0\.1:\d+)/, 80_000))[1] as string;
  streamUrl = (
    await dev.waitFor(/streaming function URL's stand-in at (http:\/\/127\.0\.0\.1:\d+)/)
  )[1] as string;
  await dev.waitFor(/Ctrl-C stops the server/);
}, 90_000);

afterAll(async () => {
  killLeftovers();
  await model?.stop();
});

const token = async (claims: Record<string, string>) => mintToken(await readIssuerFile(issuerFile), claims);

/** Starts the seed run (it pauses for approval: 1800.00 GBP over the rule's 1000.00); returns its id. */
async function startPausedRun(): Promise<string> {
  const response = await fetch(`${url}/v1/runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${await token(OWNER)}`, "content-type": "application/json" },
    body: JSON.stringify({ prompt: SEED_PROMPT }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { runId: string }).runId;
}

/** One GET of a run's events at `base`, read as it comes; `events` fills live, `ended` when it closes. */
function follow(base: string, runId: string, auth: string, headers: Record<string, string> = {}) {
  const events: EventSourceMessage[] = [];
  const retries: number[] = [];
  const parser = createParser({ onEvent: (m) => events.push(m), onRetry: (ms) => retries.push(ms) });
  const ended = (async () => {
    const response = await fetch(`${base}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${auth}`, ...headers },
    });
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
    return response;
  })();
  return { events, retries, ended };
}

async function approve(runId: string): Promise<void> {
  const auth = { authorization: `Bearer ${await token(APPROVER)}` };
  const run = (await (await fetch(`${url}/v1/runs/${runId}`, { headers: auth })).json()) as {
    pendingApprovals: Array<{ approvalId: string }>;
  };
  const approvalId = run.pendingApprovals[0]?.approvalId;
  const decided = await fetch(`${url}/v1/runs/${runId}/approvals/${approvalId}`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ decision: "approve" }),
  });
  expect(decided.status).toBe(200);
}

const until = async (check: () => boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe("npm run dev follows a run live for as long as it goes", { timeout: 60_000 }, () => {
  it("one GET of its events on the dev origin (curl -N) sees every event to run.finished, across a pause longer than 2 s", async () => {
    const runId = await startPausedRun();
    const stream = follow(url, runId, await token(OWNER));
    await until(() => stream.events.some((m) => m.event === "approval.requested"));
    // Longer than the 2 s the dev server used to cut every stream at.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(stream.retries).toEqual([]);
    await approve(runId);
    const response = await stream.ended;
    expect(response.status).toBe(200);
    expect(stream.events.at(-1)?.event).toBe("run.finished");
    expect(stream.events.map((m) => Number(m.id))).toEqual(stream.events.map((_, i) => i + 1));
    expect(stream.events.map((m) => m.event)).toContain("approval.decided");
    expect(stream.retries).toEqual([]);
    // The final event's id again (EventSource's last resume): 204, on the dev origin and the stream URL.
    const last = String(stream.events.length);
    const auth = { authorization: `Bearer ${await token(OWNER)}`, "last-event-id": last };
    for (const base of [url, streamUrl]) {
      const resumed = await fetch(`${base}/v1/runs/${runId}/events`, { headers: auth });
      expect(resumed.status, base).toBe(204);
      expect(await resumed.text()).toBe("");
    }
  });

  it("the console's page names the stand-in of the streaming function URL, and its CSP lets the page connect there", async () => {
    const page = await fetch(`${url}/console`);
    const html = await page.text();
    expect(html).toContain(`<meta name="boundloop-stream-url" content="${streamUrl}">`);
    expect(page.headers.get("content-security-policy")).toContain(`connect-src 'self' ${streamUrl}`);
  });

  it("the stream URL answers the console's origin with CORS, preflight included, and no other origin", async () => {
    const preflight = (origin: string) =>
      fetch(`${streamUrl}/v1/runs/run_x/events`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization,last-event-id",
        },
      });
    const allowed = await preflight(url);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(url);
    expect(allowed.headers.get("access-control-allow-headers")).toMatch(/authorization/);
    expect(allowed.headers.get("access-control-allow-headers")).toMatch(/last-event-id/);
    const foreign = await preflight("http://evil.example");
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();

    const runId = await startPausedRun();
    const stream = follow(streamUrl, runId, await token(OWNER), { origin: url });
    await until(() => stream.events.some((m) => m.event === "approval.requested"));
    await approve(runId);
    const response = await stream.ended;
    expect(response.headers.get("access-control-allow-origin")).toBe(url);
    expect(stream.events.at(-1)?.event).toBe("run.finished");
    // A refusal reaches the page too (it can read the 401 and sign in again).
    const refused = await fetch(`${streamUrl}/v1/runs/${runId}/events`, { headers: { origin: url } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe(url);
    const other = await fetch(`${streamUrl}/v1/runs/${runId}/events`, {
      headers: { origin: "http://evil.example", authorization: `Bearer ${await token(OWNER)}` },
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    await other.body?.cancel();
  });
});
