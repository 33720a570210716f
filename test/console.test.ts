// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (rendered text, as a person reads it), not the DOM property
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { screenshot } from "./support/browser.js";
import {
  consoleStack,
  expectAccessible,
  go,
  startRun,
  timeline,
  timelineHas,
  tokenFor,
  unpromptedShifts,
  ZOOMED,
} from "./support/console.js";
import { governanceChecks } from "./support/console-govern.js";

// The operator console in headless Chromium (Debian's chromium through playwright-core), against an
// `npm run dev` process with DynamoDB Local and the local model server: runs started from the page and
// followed live, the runs list and its filters, the ledger, at 1280 × 800 and at 200 % zoom, light and
// dark. Approvals and cancel: test/console-approvals.test.ts; live without gaps: test/console-live.test.ts.

/** A price for the local model, so every run has a cost (docs/quotas.md). */
const PRICES = JSON.stringify({
  "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
});

const stack = consoleStack({ MODEL_PRICES: PRICES });

const BDT_PROMPT = "Calculate tax on 200 BDT for a client in Bangladesh and record the invoice";

/** The tool call cards of a run view, as (tool, arguments text, result text). */
async function toolCalls(page: Page) {
  const cards = page.locator("article.call");
  const out: Array<{ tool: string; args: string; result: string }> = [];
  for (const card of await cards.all()) {
    out.push({
      tool: String(await card.getAttribute("data-tool")),
      args: await card.getByRole("region", { name: "Arguments" }).innerText(),
      result: await card.getByRole("region", { name: "The backend's result" }).innerText(),
    });
  }
  return out;
}

describe("the operator console in a real browser", { timeout: 120_000 }, () => {
  let seedRunId: string;
  let seedInvoiceId: string;
  /** The layout shifts no input caused on the seed run's view while its events arrived. */
  let seedRunShifts: Array<{ value: number; moved: string[] }>;

  it("is served under /console with a strict CSP that names the streaming URL, hashed immutable assets, lazy views", async () => {
    const page = await fetch(`${stack.dev.url}/console`);
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain(`connect-src 'self' ${stack.dev.streamUrl};`);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).toContain(`<meta name="boundloop-stream-url" content="${stack.dev.streamUrl}">`);
    const assets = [...html.matchAll(/\/console\/assets\/([\w-]+\.(?:js|css))/g)].map((m) => m[1]);
    expect(assets).toHaveLength(2);
    for (const asset of assets) {
      expect(asset).toMatch(/^(app|console)-[A-Z0-9]{8}\.(js|css)$/);
      const response = await fetch(`${stack.dev.url}/console/assets/${asset}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    }
    expect((await fetch(`${stack.dev.url}/console/assets/nope-12345678.js`)).status).toBe(404);
    const out = stack.dev.script.stdout();
    expect(out).toMatch(/as usr_demo: http:\/\/127\.0\.0\.1:\d+\/console#token=[\w-]+\.[\w-]+\.[\w-]+/);
    expect(out).toMatch(/as usr_approver_01: http:\/\/127\.0\.0\.1:\d+\/console#token=/);
  });

  it("runs the seed run from the page, live to the end: each call's arguments beside the backend's result, its invoice linked", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    expect(new URL(page.url()).hash).toBe("#/runs");
    const token = await page.evaluate('sessionStorage.getItem("boundloop.console.token")');
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    // The page was served, and no log line holds the token (it travelled in the fragment only).
    expect(stack.dev.script.stderr()).toMatch(/dev: GET \/console → 200/);
    expect(stack.dev.script.stderr()).not.toContain(String(token).split(".")[2]);
    const streams: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/events") && request.method() === "GET") streams.push(request.url());
    });
    await expectAccessible(page, "runs-empty");

    seedRunId = await startRun(page);
    // From the run view on: the runs list before it is not what the layout-shift check is about.
    await page.evaluate("window.layoutShifts.length = 0");
    await timelineHas(page, "run.finished");
    const rows = await timeline(page);
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, index) => index + 1));
    expect(rows[0]?.type).toBe("run.started");
    // Followed on the streaming function URL (another origin, CORS), not the page's own.
    expect(streams.length).toBeGreaterThan(0);
    expect(streams.every((url) => url.startsWith(`${stack.dev.streamUrl}/v1/runs/${seedRunId}/events`))).toBe(
      true,
    );
    await expect.poll(() => page.locator(".title-row .badge").getAttribute("data-status")).toBe("completed");
    expect(await page.locator(".title-row .badge").innerText()).toContain("Completed");
    await expect.poll(() => page.locator("article.call").count()).toBe(3);
    seedRunShifts = await unpromptedShifts(page);

    const calls = await toolCalls(page);
    expect(calls.map((call) => call.tool)).toEqual(["calculateTax", "calculateTax", "recordInvoice"]);
    const [gb, de, invoice] = calls;
    expect(gb?.args).toMatch(/Amount\s+1500\s+Currency\s+GBP/);
    expect(gb?.result).toMatch(/Jurisdiction\s+GB/);
    expect(gb?.result).toMatch(/Tax amount\s+300\.00 GBP/);
    expect(gb?.result).toMatch(/Gross total\s+1800\.00 GBP/);
    expect(de?.args).toMatch(/Jurisdiction\s+DE/);
    expect(de?.result).toContain("UNSUPPORTED_JURISDICTION");
    expect(de?.result).toContain('Jurisdiction "DE" is not supported.');
    expect(invoice?.result).toMatch(/Gross total\s+1800\.00 GBP/);
    // No raw JSON anywhere in the calls.
    for (const call of calls) expect(`${call.args}${call.result}`).not.toMatch(/[{}"]\w+":/);
    // The prompt beside the answer, and the invoice the run recorded as a link.
    expect(await page.locator(".texts").innerText()).toContain("1500 GBP for a client in the UK");
    const invoiceLink = page.locator("article.call[data-tool=recordInvoice] a.id").first();
    const invoiceId = String(await invoiceLink.getAttribute("data-id"));
    expect(invoiceId).toMatch(/^inv_/);
    seedInvoiceId = invoiceId;
    await expect.poll(() => page.locator(".facts").innerText()).toMatch(/Invoices recorded\s+inv_/);
    await expectAccessible(page, "run-finished");

    await invoiceLink.click();
    await page.getByRole("heading", { name: `Invoice ${invoiceId}` }).waitFor();
    const shown = await page.locator("main dl.kv").first().innerText();
    expect(shown).toMatch(/Client\s+UK client/);
    expect(shown).toMatch(/Gross total\s+1800\.00 GBP/);
    await expectAccessible(page, "invoice");
    await page.locator(`main a.id[data-id="${seedRunId}"]`).click();
    await page.getByRole("heading", { name: `Run ${seedRunId}` }).waitFor();
  });

  it("lists the ledger newest first with totals per currency, each invoice linked to its run", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    const bdtRun = await startRun(page, BDT_PROMPT);
    await timelineHas(page, "run.finished");
    await page.getByRole("link", { name: "Ledger" }).click();
    const invoices = page.locator("tbody tr");
    await expect.poll(() => invoices.count()).toBe(2);
    // Newest first: the BDT invoice, then the seed run's.
    expect(await invoices.nth(0).innerText()).toMatch(/BD[\s\S]*200\.00\s+30\.00\s+230\.00\s+BDT/);
    expect(await invoices.nth(1).innerText()).toMatch(/GB[\s\S]*1500\.00\s+300\.00\s+1800\.00\s+GBP/);
    expect(await invoices.nth(0).locator("a.id").last().getAttribute("href")).toBe(`#/runs/${bdtRun}`);
    expect(await invoices.nth(1).locator("a.id").last().getAttribute("href")).toBe(`#/runs/${seedRunId}`);
    const totals = page.locator("tfoot tr");
    expect(await totals.allInnerTexts()).toEqual([
      expect.stringMatching(/^Total BDT, 1 invoice\(s\)\s+200\.00\s+30\.00\s+230\.00\s+BDT/),
      expect.stringMatching(/^Total GBP, 1 invoice\(s\)\s+1500\.00\s+300\.00\s+1800\.00\s+GBP/),
    ]);
    // Every column in view at 1280 px: the table fits its box.
    const overflow = await page
      .locator(".scroll")
      .first()
      .evaluate((box) => box.scrollWidth - box.clientWidth);
    expect(overflow).toBe(0);
    await expectAccessible(page, "ledger");
  });

  it("tells runs apart in the list (badge, prompt, answer, who, when) and finds them by status, user and run id", async () => {
    // Another user's run: a billing reader sees the tenant's runs, and who started each.
    const writerToken = await tokenFor(stack.dev, "writer");
    await fetch(`${stack.dev.url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${writerToken}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "Calculate tax on 999 EUR for a client in Germany (DE)" }),
    });
    const page = await stack.pages.signedIn(stack.dev, "owner");
    const rows = page.locator("tbody tr");
    await expect.poll(() => rows.count()).toBe(3);
    const texts = await rows.allInnerTexts();
    expect(texts[0]).toMatch(/Completed[\s\S]*999 EUR for a client in Germany[\s\S]*usr_writer_01/);
    expect(texts[1]).toMatch(/Completed[\s\S]*200 BDT for a client in Bangladesh[\s\S]*usr_demo/);
    expect(texts[2]).toMatch(/Completed[\s\S]*1500 GBP for a client in the UK[\s\S]*usr_demo/);
    expect(await rows.nth(2).getAttribute("data-run-id")).toBe(seedRunId);
    await expectAccessible(page, "runs");
    // Every column in view at 1280 px; the cost column shows each run's cost from the price table.
    const headers = await page.locator("thead th").allInnerTexts();
    expect(headers).toEqual([
      "Status",
      "Run",
      "Prompt and answer",
      "Started by",
      "Started",
      "Duration",
      "Tokens",
      "Cost",
    ]);
    const listed = (
      (await await fetch(`${stack.dev.url}/v1/runs?scope=tenant`, {
        headers: { authorization: `Bearer ${await tokenFor(stack.dev, "owner")}` },
      }).then((r) => r.json())) as { items: Array<{ cost: { amount: string; currency: string } }> }
    ).items;
    expect(listed[0]?.cost.amount).toMatch(/^0\.\d{6}$/);
    expect(await rows.first().locator("td").last().innerText()).toBe(`${listed[0]?.cost.amount} USD`);
    const overflow = await page
      .locator(".scroll")
      .first()
      .evaluate((box) => box.scrollWidth - box.clientWidth);
    expect(overflow).toBe(0);

    await page.getByLabel("Started by (user id)").fill("usr_writer_01");
    await page.getByRole("button", { name: "Find runs" }).click();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().innerText()).toContain("usr_writer_01");
    expect(new URL(page.url()).hash).toContain("userId=usr_writer_01");
    await page.getByRole("link", { name: "Clear filters" }).click();
    await expect.poll(() => rows.count()).toBe(3);

    await page.getByLabel("Whose runs").selectOption("own");
    await page.getByLabel("Status").selectOption("completed");
    await page.getByRole("button", { name: "Find runs" }).click();
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByLabel("Status").selectOption("failed");
    await page.getByRole("button", { name: "Find runs" }).click();
    await page.getByText("No runs match.").waitFor();
    expect(await rows.count()).toBe(0);

    // A run id's start filters; a whole one opens the run.
    await page.getByRole("link", { name: "Clear filters" }).click();
    await page.getByLabel("Run id (or its start)").fill(seedRunId.slice(0, 12));
    await page.getByRole("button", { name: "Find runs" }).click();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().getAttribute("data-run-id")).toBe(seedRunId);
    await page.getByLabel("Run id (or its start)").fill(seedRunId);
    await page.getByRole("button", { name: "Find runs" }).click();
    await page.getByRole("heading", { name: `Run ${seedRunId}` }).waitFor();
  });

  it("another tenant's user sees none of it", async () => {
    const stranger = await stack.pages.signedIn(stack.dev, "stranger");
    await stranger.getByText("No runs match.").waitFor();
    expect(await stranger.locator("tbody tr").count()).toBe(0);
    await go(stranger, `#/runs/${seedRunId}`);
    await expect.poll(() => stranger.getByRole("alert").first().innerText()).toMatch(/^NOT_FOUND: /);
    expect(await stranger.locator("ol.timeline > li").count()).toBe(0);
    await stranger.getByRole("link", { name: "Approvals" }).click();
    await stranger.getByText("Nothing waits for a decision.").waitFor();
    await stranger.getByText("No decisions yet.").waitFor();
    await stranger.getByRole("link", { name: "Ledger" }).click();
    await stranger.getByText("No invoices yet.").waitFor();
    expect(await stranger.locator("tbody tr").count()).toBe(0);
  });

  it("holds still while a run's events arrive: no layout shift from the first event to the last", () => {
    // Recorded on the seed run's view above, from the run view's first event to its three calls shown.
    expect(seedRunShifts).toEqual([]);
  });

  it("reads at 200 % zoom (a 1280 × 800 window): no view scrolls sideways, every control stays in reach", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner", "#/runs", ZOOMED);
    const views: Array<[string, string]> = [
      ["#/runs", "runs"],
      [`#/runs/${seedRunId}`, "run"],
      ["#/approvals", "approvals"],
      ["#/ledger", "ledger"],
      [`#/invoices/${seedInvoiceId}`, "invoice"],
    ];
    for (const [hash, name] of views) {
      await go(page, hash);
      await page.waitForLoadState("networkidle");
      const overflow = (await page.evaluate(`({
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        controls: [...document.querySelectorAll("a, button, input, textarea, select")]
          .filter((el) => el.getClientRects().length > 0 && !el.closest(".scroll"))
          .map((el) => ({ name: el.textContent.trim() || el.getAttribute("aria-label") || el.id, right: el.getBoundingClientRect().right }))
          .filter((el) => el.right > document.documentElement.clientWidth + 0.5),
      })`)) as { page: number; controls: unknown[] };
      expect(overflow, hash).toEqual({ page: 0, controls: [] });
      await screenshot(page, `zoom-200-${name}`);
    }
  });

  it("is accessible in the dark colour scheme too", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner", "#/runs", {
      viewport: { width: 1280, height: 800 },
      colorScheme: "dark",
    });
    await page.locator("tbody tr").first().waitFor();
    await expectAccessible(page, "dark-runs");
    await go(page, `#/runs/${seedRunId}`);
    await page.locator("article.call").first().waitFor();
    await timelineHas(page, "run.finished");
    await expectAccessible(page, "dark-run");
    await go(page, "#/ledger");
    await page.locator("tfoot tr").first().waitFor();
    await expectAccessible(page, "dark-ledger");
  });

  it("is keyboard reachable: skip link, navigation, the prompt, then the filters in tab order", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    const reached: string[] = [];
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press("Tab");
      reached.push(
        await page.evaluate<string>(
          `(() => { const el = document.activeElement; return el.tagName.toLowerCase() + ":" + (el.getAttribute("aria-label") || el.id || el.textContent || "").trim().slice(0, 20); })()`,
        ),
      );
    }
    expect(reached).toEqual([
      "a:Skip to content",
      "a:Runs",
      "a:Approvals",
      "a:Ledger",
      "a:Usage",
      "button:Sign out",
      "textarea:prompt",
      "button:Start run",
      "select:scope",
      "input:userId",
    ]);
    // Enter on a focused link navigates.
    await page.getByRole("link", { name: "Ledger" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Ledger", level: 1 }).waitFor();
  });
});

describe("the governance views in a real browser: policies, usage and cost", { timeout: 180_000 }, () => {
  governanceChecks(() => stack);
});
