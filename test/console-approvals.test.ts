// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (rendered text, as a person reads it), not the DOM property
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { ProblemError } from "../functions/api/problem-details.js";
import { mintToken, readIssuerFile } from "../local/dev-auth.js";
import { screenshot } from "./support/browser.js";
import {
  consoleStack,
  DESKTOP,
  expectAccessible,
  go,
  ledgerOf,
  startRun,
  timeline,
  timelineHas,
  tokenFor,
} from "./support/console.js";

// The approvals inbox and Cancel in headless Chromium against `npm run dev` with approval rules (the
// seed run's 1800.00 GBP invoice waits for a person): the run's own user sees the buttons disabled with
// the four-eyes reason, a second user approves or rejects after a confirmation step, and a run's user
// cancels it from its view. Each is checked against the API's own answers (the ledger, the lists).

const stack = consoleStack({ APPROVAL_RULES: JSON.stringify({ recordInvoice: { GBP: "1000.00" } }) });

/** The owner starts the seed run; resolves with its id and page once it waits for approval. */
async function pausedRun(): Promise<{ owner: Page; runId: string }> {
  const owner = await stack.pages.signedIn(stack.dev, "owner");
  const runId = await startRun(owner);
  await timelineHas(owner, "approval.requested");
  return { owner, runId };
}

/** The approvals view's table of decided approvals. */
const decidedTable = (page: Page) =>
  page.getByRole("table", { name: "The tenant's decided approvals, newest first" });

/** The pending card of a run. */
const cardOf = (page: Page, runId: string) =>
  page.locator("article.approval").filter({ has: page.locator(`a.id[data-id="${runId}"]`) });

describe("approvals in the console", { timeout: 120_000 }, () => {
  it("a paused run: its user sees the buttons disabled with the four-eyes reason; a second user approves after confirming", async () => {
    const { owner, runId } = await pausedRun();
    // A reload mid-run resumes the timeline: the same rows, none twice.
    const before = await timeline(owner);
    await owner.reload();
    await timelineHas(owner, "approval.requested");
    expect(await timeline(owner)).toEqual(before);
    await expect.poll(() => owner.locator(".title-row .badge").innerText()).toContain("Awaiting approval");
    await expect
      .poll(() => owner.locator(".facts").innerText())
      .toMatch(/Waiting for\s+approval of recordInvoice, 1800\.00 GBP/);
    await expectAccessible(owner, "run-awaiting-approval");

    // The run's own user: both buttons disabled, described by the four-eyes rule.
    const ownInbox = await stack.pages.signedIn(stack.dev, "owner", "#/approvals");
    const ownCard = cardOf(ownInbox, runId);
    await expect.poll(() => ownCard.count()).toBe(1);
    for (const name of ["Approve…", "Reject…"]) {
      const button = ownCard.getByRole("button", { name });
      expect(await button.isDisabled(), name).toBe(true);
      const described = await button.getAttribute("aria-describedby");
      expect(await ownInbox.locator(`[id="${described}"]`).innerText()).toBe(
        "You started this run: under the four-eyes rule another person of your tenant decides.",
      );
    }
    expect(await ownCard.getByLabel(/^Reason/).isDisabled()).toBe(true);
    await expectAccessible(ownInbox, "approvals-four-eyes");

    const approver = await stack.pages.signedIn(stack.dev, "approver", "#/approvals");
    const card = cardOf(approver, runId);
    await expect.poll(() => card.count()).toBe(1);
    const numbers = await card.getByRole("region", { name: "The backend's numbers" }).innerText();
    expect(numbers).toMatch(/Subtotal\s+1500\.00/);
    expect(numbers).toMatch(/Tax\s+300\.00/);
    expect(numbers).toMatch(/Gross total\s+1800\.00/);
    expect(numbers).toMatch(/Currency\s+GBP/);
    expect(numbers).toMatch(/Threshold\s+1000\.00/);
    expect(numbers).toMatch(/Jurisdiction\s+GB/);
    expect(numbers).toMatch(/Rate version\s+\S+/);
    // The policy that asked: the APPROVAL_RULES shorthand's, as its Cedar id.
    expect(numbers).toMatch(/Asked for by\s+approval-rules\.recordInvoice\.GBP/);
    expect(numbers).not.toContain("—");
    const asked = await card.getByRole("region", { name: "What the model asked for" }).innerText();
    expect(asked).toMatch(/Client\s+UK client/);
    expect(asked).not.toContain("{");
    expect(await card.innerText()).toMatch(/Requested by usr_demo at .+ UTC; \d+ h \d+ min left\./);
    // Approve and Reject look and read differently; neither acts before its confirmation.
    const approve = card.getByRole("button", { name: "Approve…" });
    const reject = card.getByRole("button", { name: "Reject…" });
    expect(await approve.getAttribute("class")).toBe("approve");
    expect(await reject.getAttribute("class")).toBe("danger");
    await expectAccessible(approver, "approvals-inbox");
    await approve.click();
    await expect
      .poll(() => card.locator(".confirm").innerText())
      .toBe(
        "Approve recordInvoice for 1800.00 GBP? The run goes on and the call runs with the backend's numbers above.",
      );
    await card.getByRole("button", { name: "Back" }).click();
    await reject.click();
    await card.getByRole("button", { name: "Back" }).click();
    await screenshot(approver, "approvals-confirm-step");
    await card
      .getByLabel("Reason (optional; a rejection's reason is given to the model)")
      .fill("Checked against the contract");
    await approve.click();
    await card.getByRole("button", { name: "Confirm approval" }).click();
    await expect
      .poll(() => card.innerText())
      .toMatch(/Decided: approved by usr_approver_01 at .+ UTC: Checked against the contract/);
    // The time left is gone once decided; the card says what happened.
    expect(await card.innerText()).not.toMatch(/min left/);
    expect(await card.locator(".state .badge").innerText()).toContain("Approved");
    await screenshot(approver, "approvals-decided");

    // The decision is the API's, not the page's memory: after a reload it is listed under "Decided".
    await approver.reload();
    await approver.getByText("Nothing waits for a decision.").waitFor();
    const decidedRows = decidedTable(approver).locator("tbody tr");
    await expect.poll(() => decidedRows.count()).toBe(1);
    expect(await decidedRows.first().innerText()).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\s+\S*\s*Approved\s+usr_approver_01\s+Checked against the contract\s+1800\.00 GBP\s+1500\.00 \+ 300\.00 tax\s+recordInvoice\s+\S+\s+usr_demo\s+run_/,
    );
    expect(await decidedRows.first().locator("a.id").getAttribute("href")).toBe(`#/runs/${runId}`);
    // Every column in view at 1280 px.
    const overflow = await approver
      .locator(".scroll")
      .first()
      .evaluate((box) => box.scrollWidth - box.clientWidth);
    expect(overflow).toBe(0);
    await expectAccessible(approver, "approvals-decided-reloaded");

    // The owner's run view, open all along, follows to the end: one invoice.
    await timelineHas(owner, "run.finished");
    const final = await timeline(owner);
    expect(final.map((row) => row.seq)).toEqual(final.map((_, index) => index + 1));
    expect(await owner.locator('li[data-type="approval.decided"]').innerText()).toContain(
      "Approval approved by usr_approver_01: Checked against the contract",
    );
    await expect.poll(() => owner.locator(".title-row .badge").innerText()).toContain("Completed");
    const ledger = (await ledgerOf(stack.dev, "owner")).filter((invoice) => invoice.runId === runId);
    expect(ledger.map((invoice) => invoice.grossTotal.amount)).toEqual(["1800.00"]);
  });

  it("a rejection needs no reason (the API's is optional); with one, the reason reaches the run's timeline", async () => {
    const { owner, runId } = await pausedRun();
    const approver = await stack.pages.signedIn(stack.dev, "approver", "#/approvals");
    const card = cardOf(approver, runId);
    await expect.poll(() => card.count()).toBe(1);
    await card.getByRole("button", { name: "Reject…" }).click();
    expect(await card.locator(".confirm").innerText()).toMatch(
      /^Reject recordInvoice for 1800\.00 GBP\? The call does not run/,
    );
    await card.getByRole("button", { name: "Confirm rejection" }).click();
    await expect.poll(() => card.innerText()).toMatch(/Decided: rejected by usr_approver_01 at .+ UTC$/m);
    await timelineHas(owner, "run.finished");
    expect(await owner.locator('li[data-type="approval.decided"]').innerText()).toMatch(
      /Approval rejected by usr_approver_01$/,
    );
    expect((await ledgerOf(stack.dev, "owner")).filter((invoice) => invoice.runId === runId)).toEqual([]);

    const second = await pausedRun();
    await go(approver, "#/runs");
    await go(approver, "#/approvals");
    const next = cardOf(approver, second.runId);
    await expect.poll(() => next.count()).toBe(1);
    await next.getByLabel(/^Reason/).fill("Over the client's budget");
    await next.getByRole("button", { name: "Reject…" }).click();
    await next.getByRole("button", { name: "Confirm rejection" }).click();
    await expect
      .poll(() => next.innerText())
      .toMatch(/Decided: rejected by usr_approver_01 .+: Over the client's budget/);
    await timelineHas(second.owner, "run.finished");
    expect(await second.owner.locator('li[data-type="approval.decided"]').innerText()).toContain(
      "Approval rejected by usr_approver_01: Over the client's budget",
    );
    // Reloaded, the inbox lists the newest decision first.
    await approver.reload();
    const first = decidedTable(approver).locator("tbody tr").first();
    await expect
      .poll(() => first.innerText())
      .toMatch(/Rejected\s+usr_approver_01\s+Over the client's budget\s+1800\.00 GBP/);
    expect(await first.locator("a.id").getAttribute("href")).toBe(`#/runs/${second.runId}`);
  });

  it("cancel from the run view: its user confirms, the run ends cancelled live, its approval is withdrawn", async () => {
    const { owner, runId } = await pausedRun();
    // A billing reader follows it while its event stream fails: the streaming function answers what the
    // API answers when DynamoDB cannot be reached (503 STORE_UNAVAILABLE, Retry-After, CORS), which the
    // local stack cannot be made to do on cue. The page says the stream is down and that it reconnects,
    // then that it is live again; the timeline catches up and follows on to the run's end.
    const reader = await stack.pages.signedIn(stack.dev, "approver");
    const unavailable = new ProblemError(
      "STORE_UNAVAILABLE",
      "The data store is not reachable right now; retry shortly.",
    );
    let failing = true;
    let refused = 0;
    await reader.route("**/v1/runs/*/events", (route) => {
      if (!failing) return route.continue();
      refused += 1;
      return route.fulfill({
        status: unavailable.status,
        headers: { ...unavailable.responseHeaders, "access-control-allow-origin": stack.dev.url },
        body: JSON.stringify(unavailable.body),
      });
    });
    await go(reader, `#/runs/${runId}`);
    const liveLine = reader.locator("p.live");
    await expect
      .poll(() => liveLine.innerText(), { timeout: 20_000 })
      .toMatch(
        /^The live stream is down since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(the server answered STORE_UNAVAILABLE: The data store is not reachable right now; retry shortly\.\): reconnecting, attempt [3-9] in \d+ s\. The timeline may be behind\.$/,
      );
    expect(await reader.locator("ol.timeline > li").count()).toBe(0);
    failing = false;
    await expect
      .poll(() => liveLine.innerText(), { timeout: 20_000 })
      .toMatch(
        /^Live again since .+ UTC: the stream was down from .+ UTC, and the events of that time are in the timeline\.$/,
      );
    await timelineHas(reader, "approval.requested");
    expect(refused).toBeGreaterThanOrEqual(2);
    await expectAccessible(reader, "run-stream-recovered");
    // A billing reader who did not start it may not cancel it: the view says so instead of a button.
    await expect
      .poll(() => reader.locator(".run-actions").innerText())
      .toBe("Only its user or a billing writer may cancel this run.");

    await owner.getByRole("button", { name: "Cancel run…" }).click();
    await owner.getByRole("button", { name: "Keep it running" }).click();
    await owner.getByRole("button", { name: "Cancel run…" }).click();
    expect(await owner.locator(".run-actions").innerText()).toContain(
      "Cancel this run? Its work stops and the approvals it waits for are withdrawn.",
    );
    await screenshot(owner, "run-cancel-confirm");
    await owner.getByRole("button", { name: "Yes, cancel the run" }).click();
    await timelineHas(owner, "run.finished");
    await timelineHas(reader, "run.finished");
    expect(await owner.locator('li[data-type="run.finished"]').innerText()).toContain("Run ended: cancelled");
    await expect.poll(() => owner.locator(".title-row .badge").innerText()).toContain("Cancelled");
    await expect.poll(() => owner.locator(".run-actions").innerText()).toBe("Cancelled by usr_demo.");
    await expectAccessible(owner, "run-cancelled");
    // The API agrees: the record is cancelled and its approval is no longer pending.
    const approver = await stack.pages.signedIn(stack.dev, "approver", "#/approvals");
    await expect
      .poll(() => decidedTable(approver).locator(`tr:has(a.id[data-id="${runId}"])`).innerText())
      .toMatch(/Cancelled/);
    expect(await cardOf(approver, runId).count()).toBe(0);
    expect((await ledgerOf(stack.dev, "owner")).filter((invoice) => invoice.runId === runId)).toEqual([]);
  });

  it("a user without billing:approve sees the API's refusal naming it, and no lists to read as empty", async () => {
    // The navigation offers only the views the API lets the caller read (GET /v1/me's permissions): a
    // writer has no approvals, ledger or policies link; an approver has the approvals and the ledger.
    const navigation = (page: Page) => page.getByRole("navigation", { name: "Console" }).getByRole("link");
    const links = async (page: Page) => navigation(page).allInnerTexts();
    const writer = await stack.pages.signedIn(stack.dev, "writer");
    expect(await links(writer)).toEqual(["Runs", "Usage"]);
    const approver = await stack.pages.signedIn(stack.dev, "approver");
    expect(await links(approver)).toEqual(["Runs", "Approvals", "Ledger", "Usage"]);
    await approver.close();
    // Followed anyway (a bookmark), the view is the API's refusal.
    await go(writer, "#/approvals");
    await expect
      .poll(() => writer.locator("main").innerText())
      .toContain('FORBIDDEN: This needs the "billing:approve" permission, which the caller lacks.');
    expect(await writer.getByRole("heading", { name: "Decided" }).count()).toBe(0);
    expect(await decidedTable(writer).count()).toBe(0);
    expect(await writer.locator("article.approval").count()).toBe(0);
    await expectAccessible(writer, "approvals-refused");
    // The ledger too: the refusal alone, no empty table of invoices under it.
    await go(writer, "#/ledger");
    await expect
      .poll(() => writer.locator("main").innerText())
      .toContain('FORBIDDEN: This needs the "billing:read" permission, which the caller lacks.');
    expect(await writer.locator("main table").count()).toBe(0);
  });

  it("a run waiting for budget (awaiting_quota) says so under Waiting for, as the API's status does", async () => {
    // A tenant of its own, whose user's daily tokens cannot cover the run's second model call.
    const issuer = await readIssuerFile(stack.dev.issuerFile);
    const tenant = { tenant_id: "tenant_quota_wait_01" };
    const admin = await mintToken(issuer, { ...tenant, sub: "usr_quota_admin", scope: "limits:admin" });
    const user = await mintToken(issuer, { ...tenant, sub: "usr_quota_01", scope: "billing:write" });
    const send = (path: string, token: string, init: RequestInit) =>
      fetch(`${stack.dev.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers },
      });
    const limits = await send("/v1/limits", admin, {
      method: "PUT",
      body: JSON.stringify({ user: { tokensPerDay: 2000 } }),
    });
    expect(limits.status).toBe(200);
    const started = await send("/v1/runs", user, {
      method: "POST",
      headers: { prefer: "respond-async" },
      body: JSON.stringify({
        prompt: "Calculate tax on 1500 GBP for a client in the UK and record the invoice",
      }),
    });
    const { runId } = (await started.json()) as { runId: string };
    // The first durable run of the dev process loads the runner: give it time.
    await expect
      .poll(
        async () => ((await (await send(`/v1/runs/${runId}`, user, {})).json()) as { status: string }).status,
        {
          timeout: 60_000,
        },
      )
      .toBe("awaiting_quota");
    const page = await stack.pages.blank();
    await page.goto(`${stack.dev.url}/console#token=${user}`);
    await go(page, `#/runs/${runId}`);
    await expect.poll(() => page.locator(".title-row .badge").innerText()).toContain("Waiting for budget");
    await expect
      .poll(() => page.locator(".facts").innerText())
      .toMatch(/Waiting for\s+budget: a quota cannot cover its next model call yet/);
    await send(`/v1/runs/${runId}/cancel`, user, { method: "POST" });
  });

  it("the time left ticks with the page's clock: less than a minute in its last one (not 0 min), then expired, without a reload", async () => {
    const { runId } = await pausedRun();
    const listed = await fetch(`${stack.dev.url}/v1/approvals?status=pending&limit=100`, {
      headers: { authorization: `Bearer ${await tokenFor(stack.dev, "approver")}` },
    });
    const { items } = (await listed.json()) as { items: Array<{ runId: string; expiresAt: string }> };
    const expiresAt = Date.parse(items.find((approval) => approval.runId === runId)?.expiresAt ?? "");
    // A context of its own (its options differ), whose page clock is Playwright's: it runs from 200 s
    // before the expiry while the page loads, then stands still at 90 s before it and moves only when
    // the test moves it.
    const options = { ...DESKTOP, locale: "en-GB" };
    const { clock } = (await stack.pages.blank(options)).context();
    await clock.install({ time: expiresAt - 200_000 });
    const approver = await stack.pages.signedIn(stack.dev, "approver", "#/approvals", options);
    const card = cardOf(approver, runId);
    await expect.poll(() => card.count()).toBe(1);
    await clock.pauseAt(expiresAt - 90_000);
    await expect.poll(() => card.innerText()).toMatch(/Requested by usr_demo at .+ UTC; 1 min left\./);
    await clock.runFor(60_000);
    await expect
      .poll(() => card.innerText())
      .toMatch(/Requested by usr_demo at .+ UTC; less than a minute left\./);
    expect(await card.getByRole("button", { name: "Approve…" }).isEnabled()).toBe(true);
    // At the expiry the card says so, and offers no decision the API would refuse (APPROVAL_EXPIRED).
    await clock.runFor(30_001);
    await expect.poll(() => card.locator(".state .badge").innerText()).toContain("Expired");
    expect(await card.innerText()).toMatch(/UTC; its time to decide has passed\./);
    expect(await card.getByRole("button").count()).toBe(0);
    // axe-core schedules its work with timers: the clock flows again for it.
    await clock.resume();
    await expectAccessible(approver, "approvals-expired");
  });
});
