// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (rendered text, as a person reads it), not the DOM property
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DEMO_CLAIMS, mintToken, readIssuerFile } from "../local/dev-auth.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { launchChromium, screenshot, seriousViolations } from "./support/browser.js";
import { type RunningScript, startScript } from "./support/scripts.js";

// The operator console in headless Chromium (Debian's chromium through playwright-core), against
// `npm run dev` processes with DynamoDB Local and the local model server: one plain, one with approval
// rules (1800.00 GBP waits for a person).

const SEED_PROMPT = (
  JSON.parse(
    JSON.parse(readFileSync(new URL("../events/seed-scenario.json", import.meta.url), "utf8")).body,
  ) as {
    prompt: string;
  }
).prompt;

interface Dev {
  script: RunningScript;
  url: string;
  issuerFile: string;
}

let model: LocalModelServer;
let browser: Browser;
let plain: Dev;
let approvals: Dev;
const contexts: BrowserContext[] = [];

async function startDev(extra: Record<string, string>): Promise<Dev> {
  const issuerFile = join(mkdtempSync(join(tmpdir(), "boundloop-console-")), "issuer.json");
  const script = startScript(
    "tsx",
    ["local/dev.ts", "--port", "0", "--issuer-file", issuerFile, "--as", "usr_approver_01"],
    {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      OPENAI_BASE_URL: model.baseURL,
      TABLE_NAME: `test-console-${randomUUID()}`,
      ...extra,
    },
  );
  const url = (
    await script.waitFor(/dev: local API on port \d+ at (http:\/\/127\.0\.0\.1:\d+)/, 80_000)
  )[1] as string;
  await script.waitFor(/Ctrl-C stops the server/);
  return { script, url, issuerFile };
}

const USERS = {
  owner: { ...DEMO_CLAIMS, scope: "billing:read billing:write billing:approve" },
  approver: { ...DEMO_CLAIMS, sub: "usr_approver_01", scope: "billing:read billing:approve" },
  stranger: {
    sub: "usr_other_01",
    tenant_id: "tenant_other_01",
    scope: "billing:read billing:write billing:approve",
  },
};

async function tokenFor(dev: Dev, user: keyof typeof USERS): Promise<string> {
  return mintToken(await readIssuerFile(dev.issuerFile), { ...USERS[user] });
}

/**
 * A new browser context (own session storage) signed in as `user` through the `#token=` link;
 * `options` are the context's (a viewport, a zoom as its device scale factor).
 */
async function signedIn(
  dev: Dev,
  user: keyof typeof USERS,
  hash = "#/runs",
  options: BrowserContextOptions = {},
): Promise<Page> {
  const context = await browser.newContext(options);
  contexts.push(context);
  const page = await context.newPage();
  await page.addInitScript(RECORD_LAYOUT_SHIFTS);
  page.on("pageerror", (error) => {
    throw error;
  });
  await page.goto(`${dev.url}/console#token=${await tokenFor(dev, user)}`);
  await page.getByRole("heading", { name: "Runs", level: 1 }).waitFor();
  if (hash !== "#/runs") await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  return page;
}

/**
 * Collects the page's layout shifts (the Layout Instability API, as Chromium reports them for CLS) in
 * `window.layoutShifts`: each shift's score, whether it followed input within 500 ms, and what moved.
 */
const RECORD_LAYOUT_SHIFTS = `
  window.layoutShifts = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      window.layoutShifts.push({
        value: entry.value,
        hadRecentInput: entry.hadRecentInput,
        moved: entry.sources.map((source) => {
          const node = source.node;
          const where = node ? (node.parentElement ? node.parentElement.nodeName + "." + node.parentElement.className + " > " : "") + node.nodeName + "." + node.className : "?";
          const [a, b] = [source.previousRect, source.currentRect];
          return where + " " + [a.x, a.y, a.width, a.height].join(",") + " -> " + [b.x, b.y, b.width, b.height].join(",");
        }),
      });
    }
  }).observe({ type: "layout-shift", buffered: true });
`;

/** The layout shifts since the page loaded that no input caused (what CLS counts). */
async function unpromptedShifts(page: Page): Promise<Array<{ value: number; moved: string[] }>> {
  const all = (await page.evaluate("window.layoutShifts")) as Array<{
    value: number;
    hadRecentInput: boolean;
    moved: string[];
  }>;
  return all.filter((shift) => !shift.hadRecentInput).map(({ value, moved }) => ({ value, moved }));
}

/** Starts the seed run from the runs view; resolves with its run id once the run view is shown. */
async function startSeedRun(page: Page): Promise<string> {
  await page.getByLabel("Prompt").fill(SEED_PROMPT);
  await page.getByRole("button", { name: "Start run" }).click();
  await page.waitForURL(/#\/runs\/run_[\w-]+$/);
  return new URL(page.url()).hash.slice("#/runs/".length);
}

/** The timeline's rows as (seq, type). */
async function timeline(page: Page): Promise<Array<{ seq: number; type: string }>> {
  return page.locator("ol.timeline > li").evaluateAll((rows) =>
    rows.map((row) => ({
      seq: Number(row.getAttribute("data-seq")),
      type: String(row.getAttribute("data-type")),
    })),
  );
}

/** The approvals view's table of decided approvals. */
const decidedTable = (page: Page) =>
  page.getByRole("table", { name: "The tenant's decided approvals, newest first" });

async function expectAccessible(page: Page, name: string): Promise<void> {
  expect(await seriousViolations(page), name).toEqual([]);
  await screenshot(page, name);
}

async function ledgerOf(dev: Dev, user: keyof typeof USERS) {
  const response = await fetch(`${dev.url}/v1/invoices`, {
    headers: { authorization: `Bearer ${await tokenFor(dev, user)}` },
  });
  return ((await response.json()) as { items: Array<{ runId: string; grossTotal: { amount: string } }> })
    .items;
}

beforeAll(async () => {
  model = await startModelServer();
  [browser, plain, approvals] = await Promise.all([
    launchChromium(),
    startDev({}),
    startDev({ APPROVAL_RULES: JSON.stringify({ recordInvoice: { GBP: "1000.00" } }) }),
  ]);
}, 120_000);

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  for (const dev of [plain, approvals]) {
    if (!dev) continue;
    dev.script.child.kill("SIGTERM");
    await dev.script.exited;
  }
  await model?.stop();
});

describe("the operator console in a real browser", () => {
  it("is served under /console with a strict CSP and hashed, immutable assets; npm run dev prints its links", async () => {
    const page = await fetch(`${plain.url}/console`);
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>/);
    const assets = [...html.matchAll(/\/console\/assets\/([\w-]+\.(?:js|css))/g)].map((m) => m[1]);
    expect(assets).toHaveLength(2);
    for (const asset of assets) {
      expect(asset).toMatch(/^(app|console)-[A-Z0-9]{8}\.(js|css)$/);
      const response = await fetch(`${plain.url}/console/assets/${asset}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    }
    expect((await fetch(`${plain.url}/console/assets/nope-12345678.js`)).status).toBe(404);
    const out = plain.script.stdout();
    expect(out).toMatch(/as usr_demo: http:\/\/127\.0\.0\.1:\d+\/console#token=[\w-]+\.[\w-]+\.[\w-]+/);
    expect(out).toMatch(/as usr_approver_01: http:\/\/127\.0\.0\.1:\d+\/console#token=/);
  });

  it("runs the seed run from the page, live to GB 300.00 / 1800.00 and DE UNSUPPORTED_JURISDICTION, and shows its invoice in the ledger", async () => {
    const page = await signedIn(plain, "owner");
    // The token left the address bar for session storage, and never reached the server's log.
    expect(new URL(page.url()).hash).toBe("#/runs");
    const token = await page.evaluate('sessionStorage.getItem("boundloop.console.token")');
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    await expectAccessible(page, "runs-empty");

    const runId = await startSeedRun(page);
    await page.locator('ol.timeline > li[data-type="run.finished"]').waitFor();
    const rows = await timeline(page);
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, index) => index + 1));
    expect(rows[0]?.type).toBe("run.started");
    expect(rows.filter((row) => row.type === "tool.call.finished").length).toBeGreaterThanOrEqual(3);
    await expect.poll(() => page.locator("dl.facts").innerText()).toMatch(/Status\s+completed/);
    const results = page.locator("table tbody tr");
    await expect.poll(() => results.count()).toBeGreaterThanOrEqual(3);
    const text = await results.allInnerTexts();
    expect(
      text.some(
        (row) =>
          /calculateTax/.test(row) &&
          /jurisdiction GB/.test(row) &&
          /taxAmount 300\.00/.test(row) &&
          /grossTotal 1800\.00/.test(row),
      ),
    ).toBe(true);
    expect(text.some((row) => /"DE"/.test(row) && /UNSUPPORTED_JURISDICTION/.test(row))).toBe(true);
    expect(text.some((row) => /recordInvoice/.test(row) && /grossTotal 1800\.00/.test(row))).toBe(true);
    await expectAccessible(page, "run-finished");

    await page.getByRole("link", { name: "Ledger" }).click();
    const invoices = page.locator("table tbody tr");
    await expect.poll(() => invoices.count()).toBe(1);
    const invoice = await invoices.first().innerText();
    expect(invoice).toMatch(/GB\s+1500\.00\s+300\.00\s+1800\.00\s+GBP/);
    expect(await invoices.first().getByRole("link").getAttribute("href")).toBe(`#/runs/${runId}`);
    await expectAccessible(page, "ledger");

    await page.getByRole("link", { name: "Runs" }).click();
    await expect.poll(() => page.locator("table tbody tr").count()).toBe(1);
    expect(await page.locator("table tbody tr").first().innerText()).toMatch(
      new RegExp(`${runId}\\s+completed`),
    );
    await expectAccessible(page, "runs");
    // The dev server logged each request (stderr): the page's token is in none of them.
    expect(plain.script.stderr()).toMatch(/dev: GET \/console → 200/);
    expect(plain.script.stderr()).not.toContain(String(token).split(".")[2]);
  });

  it("a paused run: the owner sees four eyes, a second user approves with the backend's numbers, the owner's view completes live with one invoice", async () => {
    const owner = await signedIn(approvals, "owner");
    const runId = await startSeedRun(owner);
    await owner.locator('ol.timeline > li[data-type="approval.requested"]').waitFor({ timeout: 20_000 });
    const before = await timeline(owner);
    // A reload mid-run resumes the timeline: the same rows, none twice.
    await owner.reload();
    await owner.locator('ol.timeline > li[data-type="approval.requested"]').waitFor();
    const after = await timeline(owner);
    expect(after).toEqual(before);
    expect(new Set(after.map((row) => row.seq)).size).toBe(after.length);
    await expect.poll(() => owner.locator("dl.facts").innerText()).toMatch(/Status\s+awaiting_approval/);
    await expectAccessible(owner, "run-awaiting-approval");

    // The owner's own inbox: the item, the rule explained, and the API's refusal when trying.
    const ownInbox = await signedIn(approvals, "owner", "#/approvals");
    const ownCard = ownInbox.getByRole("article");
    await expect.poll(() => ownCard.count()).toBe(1);
    await expect.poll(() => ownCard.innerText()).toContain("under the four-eyes rule another person decides");
    await ownCard.getByRole("button", { name: "Approve" }).click();
    await expect
      .poll(() => ownCard.getByRole("alert").innerText())
      .toMatch(/^Four eyes: you started this run/);
    await expectAccessible(ownInbox, "approvals-four-eyes");

    const approver = await signedIn(approvals, "approver", "#/approvals");
    const card = approver.getByRole("article");
    await expect.poll(() => card.count()).toBe(1);
    const numbers = await card.getByRole("region", { name: "The backend's numbers" }).innerText();
    expect(numbers).toMatch(/Subtotal\s+1500\.00/);
    expect(numbers).toMatch(/Tax\s+300\.00/);
    expect(numbers).toMatch(/Gross total\s+1800\.00/);
    expect(numbers).toMatch(/Currency\s+GBP/);
    expect(numbers).toMatch(/Threshold\s+1000\.00/);
    expect(numbers).toMatch(/Jurisdiction\s+GB/);
    expect(numbers).toMatch(/Rate version\s+\S+/);
    expect(numbers).not.toContain("—");
    expect(await card.innerText()).toMatch(/Requested by usr_demo at .+ UTC; \d+ h \d+ min left\./);
    await expectAccessible(approver, "approvals-inbox");
    await card.getByLabel("Reason (required to reject)").fill("Checked against the contract");
    await card.getByRole("button", { name: "Approve" }).click();
    await expect
      .poll(() => card.innerText())
      .toMatch(/Decided: approved by usr_approver_01 at .+ UTC: Checked against the contract/);
    await screenshot(approver, "approvals-decided");
    // The decision is the API's, not the page's memory: after a reload it is listed under "Decided".
    await approver.reload();
    await approver.getByText("Nothing waits for a decision.").waitFor();
    expect(await approver.getByRole("article").count()).toBe(0);
    const decidedRows = decidedTable(approver).locator("tbody tr");
    await expect.poll(() => decidedRows.count()).toBe(1);
    expect(await decidedRows.first().innerText()).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\s+approved\\s+usr_approver_01\\s+Checked against the contract\\s+1500\\.00\\s+300\\.00\\s+1800\\.00\\s+GBP\\s+\\S+\\s+recordInvoice\\s+usr_demo\\s+${runId}$`,
      ),
    );
    await expectAccessible(approver, "approvals-decided-reloaded");

    // The owner's run view, open all along, follows to the end.
    await owner.locator('ol.timeline > li[data-type="run.finished"]').waitFor({ timeout: 20_000 });
    const final = await timeline(owner);
    expect(final.map((row) => row.seq)).toEqual(final.map((_, index) => index + 1));
    expect(await owner.locator('li[data-type="approval.decided"]').innerText()).toContain(
      "Approval approved by usr_approver_01: Checked against the contract",
    );
    await expect.poll(() => owner.locator("dl.facts").innerText()).toMatch(/Status\s+completed/);
    const ledger = (await ledgerOf(approvals, "owner")).filter((invoice) => invoice.runId === runId);
    expect(ledger.map((invoice) => invoice.grossTotal.amount)).toEqual(["1800.00"]);
  });

  it("rejecting needs a reason, and the reason reaches the run's timeline", async () => {
    const owner = await signedIn(approvals, "owner");
    const runId = await startSeedRun(owner);
    await owner.locator('ol.timeline > li[data-type="approval.requested"]').waitFor({ timeout: 20_000 });
    const approver = await signedIn(approvals, "approver", "#/approvals");
    const card = approver.getByRole("article").filter({ hasText: runId });
    await expect.poll(() => card.count()).toBe(1);
    await card.getByRole("button", { name: "Reject" }).click();
    await expect.poll(() => card.getByRole("alert").innerText()).toBe("Give a reason to reject.");
    await card.getByLabel("Reason (required to reject)").fill("Over the client's budget");
    await card.getByRole("button", { name: "Reject" }).click();
    await expect
      .poll(() => card.innerText())
      .toMatch(/Decided: rejected by usr_approver_01 .+: Over the client's budget/);
    await owner.locator('ol.timeline > li[data-type="run.finished"]').waitFor({ timeout: 20_000 });
    expect(await owner.locator('li[data-type="approval.decided"]').innerText()).toContain(
      "Approval rejected by usr_approver_01: Over the client's budget",
    );
    expect((await ledgerOf(approvals, "owner")).filter((invoice) => invoice.runId === runId)).toEqual([]);
    // Reloaded, the inbox lists the rejection first (newest decision first), with who and why.
    await approver.reload();
    const first = decidedTable(approver).locator("tbody tr").first();
    await expect
      .poll(() => first.innerText())
      .toMatch(
        new RegExp(
          `rejected\\s+usr_approver_01\\s+Over the client's budget\\s+1500\\.00\\s+300\\.00\\s+1800\\.00\\s+GBP\\s.*${runId}$`,
        ),
      );
  });

  it("another tenant's user sees none of it", async () => {
    const [runId] = (await ledgerOf(plain, "owner")).map((invoice) => invoice.runId);
    expect(runId).toMatch(/^run_/);
    const stranger = await signedIn(plain, "stranger");
    await expect.poll(() => stranger.locator("table tbody tr").count()).toBe(0);
    await stranger.evaluate(`location.hash = "#/runs/${runId}"`);
    await expect.poll(() => stranger.getByRole("alert").first().innerText()).toMatch(/^NOT_FOUND: /);
    expect(await stranger.locator("ol.timeline > li").count()).toBe(0);
    await stranger.getByRole("link", { name: "Approvals" }).click();
    await stranger.getByText("Nothing waits for a decision.").waitFor();
    await stranger.getByText("No decisions yet.").waitFor();
    expect(await decidedTable(stranger).locator("tbody tr").count()).toBe(0);
    await stranger.getByRole("link", { name: "Ledger" }).click();
    await stranger.getByText("No invoices yet.").waitFor();
    expect(await stranger.locator("table tbody tr").count()).toBe(0);
  });

  it("holds still while a run's events arrive: no layout shift from the first event to the last", async () => {
    const page = await signedIn(plain, "owner");
    await startSeedRun(page);
    // From the run view on: the runs list before it is not what this is about.
    await page.evaluate("window.layoutShifts.length = 0");
    await page.locator('ol.timeline > li[data-type="run.finished"]').waitFor();
    await expect.poll(() => page.locator("dl.facts").innerText()).toMatch(/Status\s+completed/);
    expect(await unpromptedShifts(page)).toEqual([]);
  });

  it("reads at 200 % zoom (a 1280 × 800 window): no view scrolls sideways, every control stays in reach", async () => {
    // 200 % zoom of a 1280 × 800 window: 640 × 400 CSS pixels, each two device pixels.
    const zoomed = { viewport: { width: 640, height: 400 }, deviceScaleFactor: 2 };
    const page = await signedIn(plain, "owner", "#/runs", zoomed);
    const runId = await startSeedRun(page);
    await page.locator('ol.timeline > li[data-type="run.finished"]').waitFor();
    for (const hash of ["#/runs", `#/runs/${runId}`, "#/approvals", "#/ledger"]) {
      await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
      await page.locator("main h1").waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = (await page.evaluate(`({
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        controls: [...document.querySelectorAll("a, button, input, textarea, select")]
          .filter((el) => el.getClientRects().length > 0 && !el.closest(".scroll"))
          .map((el) => ({ name: el.textContent.trim() || el.getAttribute("aria-label") || el.id, right: el.getBoundingClientRect().right }))
          .filter((el) => el.right > document.documentElement.clientWidth + 0.5),
      })`)) as { page: number; controls: unknown[] };
      expect(overflow, hash).toEqual({ page: 0, controls: [] });
      await screenshot(page, `zoom-200-${hash.split("/")[1]}${hash.includes("run_") ? "-run" : ""}`);
    }
  });

  it("is keyboard reachable: skip link, navigation, form controls and buttons in tab order", async () => {
    const page = await signedIn(plain, "owner");
    const reached: string[] = [];
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press("Tab");
      reached.push(
        await page.evaluate<string>(
          `(() => { const el = document.activeElement; return el.tagName.toLowerCase() + ":" + (el.getAttribute("aria-label") ?? el.textContent ?? "").trim().slice(0, 20); })()`,
        ),
      );
    }
    expect(reached.slice(0, 7)).toEqual([
      "a:Skip to content",
      "a:Runs",
      "a:Approvals",
      "a:Ledger",
      "button:Sign out",
      "textarea:",
      "button:Start run",
    ]);
    // Enter on a focused link navigates.
    await page.getByRole("link", { name: "Ledger" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Ledger", level: 1 }).waitFor();
  });
});
