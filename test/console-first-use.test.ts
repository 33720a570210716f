// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (rendered text, as a person reads it), not the DOM property
import { describe, expect, it } from "vitest";
import { mintToken, readIssuerFile } from "../local/dev-auth.js";
import { RUN_STATUSES } from "../shared/agent/run-status.js";
import { RECORD_STATUSES } from "../shared/store/run-record-schema.js";
import {
  consoleStack,
  DESKTOP,
  expectAccessible,
  go,
  SEED_PROMPT,
  startRun,
  timelineHas,
  tokenFor,
  USERS,
} from "./support/console.js";

// What a person meets on a first visit to the console who follows docs/console.md and then tries what the
// page invites: a pasted token that is no token, the skip link, a double click on Start run, a prompt
// the API refuses, a run that only reads an invoice, an approval card left open while its run is
// cancelled, and the browser's own requests (its icon). Then what a walkthrough of every view met: the
// policies of someone without policy:admin, usage without MODEL_PRICES (this file sets none), the
// regions of several tool call cards, a run id searched in capitals.

const stack = consoleStack({ APPROVAL_RULES: JSON.stringify({ recordInvoice: { GBP: "1000.00" } }) });

const RECORD_PROMPT = "Calculate tax on 200 BDT for a client in Bangladesh and record the invoice";

/** A synchronous run as the owner through the API: its record (no prices here: its cost is null). */
async function ownerRun(prompt: string): Promise<{ runId: string; cost: unknown; status: string }> {
  const response = await fetch(`${stack.dev.url}/v1/runs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await tokenFor(stack.dev, "owner")}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ prompt }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { runId: string; cost: unknown; status: string };
}

describe("the console on a first visit", { timeout: 120_000 }, () => {
  /** The run of RECORD_PROMPT started from the page below: a calculation and the invoice it recorded. */
  let recordRunId: string;

  it("explains a pasted token it cannot read instead of showing the sign-in form again in silence", async () => {
    const page = await stack.pages.blank(DESKTOP);
    await page.goto(`${stack.dev.url}/console`);
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    await page.getByLabel("Access token").fill("not-a-token");
    await page.getByRole("button", { name: "Sign in with the token" }).click();
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toMatch(/^That is not an access token/);
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    expect(await page.evaluate("sessionStorage.length")).toBe(0);
    // A good token still signs in from the same form.
    await page.getByLabel("Access token").fill(await tokenFor(stack.dev, "owner"));
    await page.getByRole("button", { name: "Sign in with the token" }).click();
    await page.getByRole("heading", { name: "Runs", level: 1 }).waitFor();
    await page.close();
  });

  it("signs in with a token pasted as the curl lines npm run dev prints show it ('authorization: Bearer …')", async () => {
    const token = await tokenFor(stack.dev, "owner");
    for (const pasted of [`Bearer ${token}`, `-H 'authorization: Bearer ${token}'`, `  bearer ${token}\n`]) {
      const page = await stack.pages.blank(DESKTOP);
      await page.goto(`${stack.dev.url}/console`);
      await page.getByLabel("Access token").fill(pasted);
      await page.getByRole("button", { name: "Sign in with the token" }).click();
      await page.getByRole("heading", { name: "Runs", level: 1 }).waitFor();
      await expect.poll(() => page.locator("#view").innerText()).toContain("The tenant's runs, newest first");
      expect(await page.getByRole("alert").count()).toBe(0);
      expect(await page.evaluate("Object.values(sessionStorage)")).toEqual([token]);
      await page.close();
    }
  });

  it("says why the API refused a token (the authorizer's error_description), not only 'expired?'", async () => {
    const issuer = await readIssuerFile(stack.dev.issuerFile);
    const mcpToken = await mintToken(issuer, { ...USERS.owner }, { audience: `${stack.dev.url}/mcp` });
    const page = await stack.pages.blank(DESKTOP);
    await page.goto(`${stack.dev.url}/console#token=${mcpToken}`);
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toBe("The API did not accept the token: the token does not have a valid audience. Sign in again.");
    expect(await page.evaluate("sessionStorage.length")).toBe(0);
    await page.close();
  });

  it("says why the event stream refused the token (one that expired while a run was followed), in the authorizer's words", async () => {
    const { runId } = await ownerRun("Calculate tax on 200 BDT for a client in Bangladesh");
    const issuer = await readIssuerFile(stack.dev.issuerFile);
    const expired = await mintToken(issuer, { ...USERS.owner }, { expiresIn: "-5m" });
    const page = await stack.pages.signedIn(stack.dev, "owner");
    // The stream is sent the token as it is by then (expired); the record's read keeps the good one.
    await page.route("**/v1/runs/*/events", (route) =>
      route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${expired}` } }),
    );
    await go(page, `#/runs/${runId}`);
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toBe("The API did not accept the token: the token has expired. Sign in again.");
    expect(await page.evaluate("sessionStorage.length")).toBe(0);
    await page.close();
  });

  it("asks the server for nothing it refuses: no favicon request answered 401 on load or between views", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    const refused: string[] = [];
    cdp.on("Network.responseReceived", (event) => {
      if (event.response.status >= 400) refused.push(`${event.response.status} ${event.response.url}`);
    });
    await page.reload();
    await page.getByRole("heading", { name: "Runs", level: 1 }).waitFor();
    for (const hash of ["#/ledger", "#/approvals", "#/runs"]) await go(page, hash);
    await page.waitForTimeout(500);
    expect(refused).toEqual([]);
  });

  it("the skip link moves to the view's content and keeps the view (it is not a route)", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner", "#/ledger");
    await page.getByRole("heading", { name: "Ledger", level: 1 }).waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.evaluate("document.activeElement.id")).toBe("view");
    expect(new URL(page.url()).hash).toBe("#/ledger");
    expect(await page.locator("main h1").innerText()).toBe("Ledger");
  });

  it("starts one run for a double click on Start run", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    const posts: string[] = [];
    page.on("request", (request) => {
      if (request.method() === "POST" && new URL(request.url()).pathname === "/v1/runs")
        posts.push(request.url());
    });
    await page.getByLabel("Prompt").fill("Calculate tax on 300 BDT for a client in Bangladesh");
    await page.getByRole("button", { name: "Start run" }).dblclick();
    await page.getByRole("heading", { name: /^Run run_/, level: 1 }).waitFor({ timeout: 90_000 });
    await timelineHas(page, "run.finished");
    expect(posts).toHaveLength(1);
    const runs = (await (
      await fetch(`${stack.dev.url}/v1/runs?scope=own`, {
        headers: { authorization: `Bearer ${await tokenFor(stack.dev, "owner")}` },
      })
    ).json()) as { items: Array<{ prompt: { excerpt?: string } }> };
    expect(runs.items.filter((run) => run.prompt.excerpt?.includes("300 BDT"))).toHaveLength(1);
  });

  it("says which field the API refused and why: a prompt over the limit, an end day before the start", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    await page.getByLabel("Prompt").fill(`Calculate tax on 200 BDT. ${"x".repeat(8_000)}`);
    await page.getByRole("button", { name: "Start run" }).click();
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toBe(
        "INVALID_REQUEST: The request is invalid. prompt: Too big: expected string to have <=8000 characters",
      );
    expect(new URL(page.url()).hash).toBe("#/runs");
    await go(page, "#/runs?from=2026-12-06&to=2026-12-04");
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toMatch(/^INVALID_REQUEST: .*\. to: /);
    await expectAccessible(page, "first-use-refused");
  });

  it("explains a run id it cannot show in an accessible view (the refusal is not put inside the facts list)", async () => {
    const page = await stack.pages.signedIn(
      stack.dev,
      "owner",
      "#/runs/run_0000000000000000000000000000dead",
    );
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toBe("NOT_FOUND: There is no run run_0000000000000000000000000000dead.");
    // Said once, as the API says it: no second alert from the events stream with a bare HTTP status.
    await page.waitForTimeout(1_000);
    expect(await page.getByRole("alert").allInnerTexts()).toEqual([
      "NOT_FOUND: There is no run run_0000000000000000000000000000dead.",
    ]);
    expect(await page.locator("#view").innerText()).not.toContain("HTTP 404");
    await expectAccessible(page, "first-use-no-run");
  });

  it("lists as recorded only the invoices a run recorded, not one it read", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner");
    recordRunId = await startRun(page, RECORD_PROMPT);
    await timelineHas(page, "run.finished");
    const recorded = page.locator(".fact", { hasText: "Invoices recorded" }).locator("dd");
    await expect.poll(() => recorded.innerText()).toMatch(/^inv_/);
    const invoiceId = String(await recorded.locator("a").first().getAttribute("href")).replace(
      "#/invoices/",
      "",
    );
    await go(page, "#/runs");
    await startRun(page, `Show invoice ${invoiceId}`);
    await timelineHas(page, "run.finished");
    await page.locator('article.call[data-tool="getInvoice"]').waitFor();
    expect(await recorded.innerText()).toBe("none");
    // A writer (no billing:read) sees the invoice its own run recorded by id, with no link to an invoice
    // view the API would refuse it.
    const writer = await stack.pages.signedIn(stack.dev, "writer");
    await startRun(writer, RECORD_PROMPT);
    await timelineHas(writer, "run.finished");
    const writers = writer.locator(".fact", { hasText: "Invoices recorded" }).locator("dd");
    await expect.poll(() => writers.innerText()).toMatch(/^inv_/);
    expect(await writers.locator("a").count()).toBe(0);
    // The whole id (nothing to open for the rest of it), to quote to someone who may read the ledger.
    expect(await writers.innerText()).toMatch(/^inv_[0-9a-f]{24}$/);
    await writer.close();
  });

  /** A new run of the owner's waiting for approval, and its card on the approver's Approvals view. */
  const pendingApprovalCard = async () => {
    const owner = await stack.pages.signedIn(stack.dev, "owner");
    const runId = await startRun(owner);
    await timelineHas(owner, "approval.requested");
    const approver = await stack.pages.signedIn(stack.dev, "approver", "#/approvals");
    const card = approver
      .locator("article.approval")
      .filter({ has: approver.locator(`a.id[data-id="${runId}"]`) });
    return { owner, runId, approver, card };
  };

  it("an approval cancelled with its run while its card is open: the refusal shows, the card says Cancelled, no buttons", async () => {
    const { runId, approver, card } = await pendingApprovalCard();
    await card.getByRole("button", { name: "Approve…" }).waitFor();
    const cancelled = await fetch(`${stack.dev.url}/v1/runs/${runId}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${await tokenFor(stack.dev, "owner")}` },
    });
    expect(cancelled.status).toBe(200);
    await card.getByRole("button", { name: "Approve…" }).click();
    await card.getByRole("button", { name: "Confirm approval" }).click();
    await expect.poll(() => card.getByRole("alert").innerText()).toMatch(/^APPROVAL_CANCELLED: /);
    expect(await card.locator(".state .badge").innerText()).toContain("Cancelled");
    expect(await card.getByRole("button").count()).toBe(0);
    expect(await card.innerText()).not.toMatch(/min left/);
    await expectAccessible(approver, "first-use-approval-cancelled");
  });

  it("a long unbroken word (a ticket URL as a rejection's reason) wraps: no table or page scrolls sideways at 1280 px", async () => {
    const { owner, runId, approver, card } = await pendingApprovalCard();
    const reason = `See https://tickets.example.com/browse/FIN-4411?focusedCommentId=${"7".repeat(60)}&page=com.atlassian.jira.plugin.system.issuetabpanels%3Acomment-tabpanel%23comment-${"1".repeat(60)}`;
    await card.getByLabel(/^Reason/).fill(reason);
    await card.getByRole("button", { name: "Reject…" }).click();
    await card.getByRole("button", { name: "Confirm rejection" }).click();
    await card.locator("p.decided").waitFor();
    const sideways = (page: typeof owner, selector: string) =>
      page.locator(selector).evaluateAll((boxes) => boxes.map((box) => box.scrollWidth - box.clientWidth));
    // The decided card, and the Decided table it joined.
    expect(await sideways(approver, "article.approval, .scroll")).toEqual([0, 0]);
    await timelineHas(owner, "run.finished");
    await owner.locator('article.call[data-tool="recordInvoice"]').waitFor();
    expect(await owner.evaluate("document.documentElement.scrollWidth")).toBe(1280);
    expect(await sideways(owner, "article.call")).toEqual([0, 0, 0]);
    await go(owner, "#/runs");
    await owner.locator(`tr[data-run-id="${runId}"]`).waitFor();
    expect(await sideways(owner, ".scroll")).toEqual([0]);
  });

  it("policies without policy:admin: the API's refusal naming the permission, and no editor or buttons that can only fail", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner", "#/policies");
    await expect
      .poll(() => page.getByRole("alert").first().innerText())
      .toBe('FORBIDDEN: This needs the "policy:admin" permission, which the caller lacks.');
    expect(await page.locator("main h1").innerText()).toBe("Policies");
    expect(await page.locator("main form, main textarea, main button, main table").count()).toBe(0);
    await expectAccessible(page, "first-use-policies-refused");
  });

  it("usage without MODEL_PRICES: says costs are not known (no fake zero, no cost chart); tokens and runs still shown", async () => {
    const run = await ownerRun("Calculate tax on 150 BDT for a client in Bangladesh");
    expect([run.status, run.cost]).toEqual(["completed", null]);
    const page = await stack.pages.signedIn(stack.dev, "owner", "#/usage");
    await page.locator("#tokens-chart svg").waitFor();
    // The last day drawn is today.
    expect(
      Number(await page.locator("#tokens-chart g.day").last().getAttribute("data-total")),
    ).toBeGreaterThan(0);
    expect(await page.locator("#cost-chart").count()).toBe(0);
    expect(await page.locator(".charts").innerText()).toContain(
      "Cost is not known: no model prices are configured (MODEL_PRICES).",
    );
    expect(await page.locator('tr[data-limit="You (usr_demo): cost today"]').innerText()).toMatch(
      /not known: no model prices are configured \(MODEL_PRICES\)/,
    );
    const you = page.locator('tr[data-user="usr_demo"]');
    expect(await you.innerText()).toMatch(/^usr_demo\s+[1-9]\d*\s+[1-9][\d\u202f]*\s+—\s/);
    expect(await page.locator("main").innerText()).not.toMatch(/0\.0000\d\d/);
    await expectAccessible(page, "first-use-usage-no-prices");
  });

  it("names each tool call card's regions apart (tool and call number), so axe finds no landmark-unique", async () => {
    // The RECORD_PROMPT run started from the page above.
    const page = await stack.pages.signedIn(stack.dev, "owner", `#/runs/${recordRunId}`);
    await page.locator('article.call[data-tool="recordInvoice"]').waitFor();
    const tools = await page
      .locator("article.call")
      .evaluateAll((cards) => cards.map((card) => String(card.getAttribute("data-tool"))));
    expect(tools.length).toBeGreaterThan(1);
    const names = await page
      .locator("article.call section")
      .evaluateAll((regions) => regions.map((region) => region.getAttribute("aria-label")));
    expect(names).toEqual(
      tools.flatMap((tool, i) => [
        `Arguments of call ${i + 1} (${tool})`,
        `The backend's result of call ${i + 1} (${tool})`,
      ]),
    );
    await expectAccessible(page, "first-use-run-cards");
  });

  it("offers every status GET /v1/runs filters by, a run waiting for budget's too, and no other", async () => {
    const page = await stack.pages.signedIn(stack.dev, "owner", "#/runs?status=awaiting_quota");
    const offered = await page
      .getByLabel("Status")
      .locator("option")
      .evaluateAll((options) => options.map((o) => o.getAttribute("value") ?? ""));
    expect(new Set(offered)).toEqual(new Set(["", ...RECORD_STATUSES, ...RUN_STATUSES]));
    expect(offered).toHaveLength(1 + RECORD_STATUSES.length + RUN_STATUSES.length);
    expect(await page.getByLabel("Status").locator("option:checked").innerText()).toBe("Waiting for budget");
    await expect.poll(() => page.locator("#view").innerText()).toContain("No runs match.");
  });

  it("names whose runs the list shows: one user's when Started by is set, even with Mine (the API lists that user's)", async () => {
    const page = await stack.pages.signedIn(stack.dev, "approver", "#/runs?scope=own&userId=usr_demo");
    await expect.poll(() => page.locator("tbody tr").count()).toBeGreaterThan(0);
    const starters = await page
      .locator("tbody tr")
      .evaluateAll((rows) => rows.map((row) => row.querySelectorAll("td")[3]?.textContent));
    expect(new Set(starters)).toEqual(new Set(["usr_demo"]));
    expect(await page.locator("table caption").innerText()).toBe("Runs of usr_demo, newest first");
    await go(page, "#/runs?scope=tenant&userId=usr_approver_01");
    await expect.poll(() => page.locator("table caption").innerText()).toBe("Your runs, newest first");
  });

  it("policies saved by someone else meanwhile: says who saved which version, keeps the text, and the next save goes on from it", async () => {
    const POLICY = '@id("base")\npermit(principal, action, resource);';
    const [first, second] = [
      await stack.pages.signedIn(stack.dev, "govAdmin", "#/policies"),
      await stack.pages.signedIn(stack.dev, "govAdmin", "#/policies"),
    ];
    for (const page of [first, second]) await page.getByLabel("Cedar policies").fill(POLICY);
    await first.getByRole("button", { name: "Check and save" }).click();
    await first.getByText("Saved version 1 (enforced).").waitFor();
    const mine = `${POLICY}\n// mine`;
    await second.getByLabel("Cedar policies").fill(mine);
    await second.getByRole("button", { name: "Check and save" }).click();
    await expect
      .poll(() => second.getByRole("alert").first().innerText())
      .toBe(
        "Not saved: usr_gov_admin saved version 1 while you were editing. Your text is still in the editor; compare it with the versions below, then save again.",
      );
    expect(await second.getByLabel("Cedar policies").inputValue()).toBe(mine);
    await expect.poll(() => second.locator("#view").innerText()).toMatch(/Version\s+1\s+Mode/);
    await second.getByRole("button", { name: "Check and save" }).click();
    await second.getByText("Saved version 2 (enforced).").waitFor();
  });

  it("a run waiting for approval, seen by a user who may not decide: says who decides, with no link to an inbox the API refuses them", async () => {
    const writer = await stack.pages.signedIn(stack.dev, "writer");
    const runId = await startRun(writer, SEED_PROMPT);
    const waiting = writer.locator(".fact.wide dd");
    await expect.poll(() => waiting.innerText(), { timeout: 30_000 }).toMatch(/^approval of recordInvoice/);
    expect(await waiting.innerText()).toBe(
      "approval of recordInvoice, 1800.00 GBP. A person of your tenant with billing:approve decides it.",
    );
    expect(await waiting.getByRole("link").count()).toBe(0);
    // Its approver still gets the link to the inbox.
    const owner = await stack.pages.signedIn(stack.dev, "owner", `#/runs/${runId}`);
    await owner.locator(".fact.wide dd").getByRole("link", { name: "Open the approvals inbox" }).waitFor();
    const cancelled = await fetch(`${stack.dev.url}/v1/runs/${runId}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${await tokenFor(stack.dev, "owner")}` },
    });
    expect(cancelled.status).toBe(200);
  });

  it("finds a run by its id typed in capitals (run ids are lower case), asking the API only in lower case", async () => {
    // Any run of the owner's: the RECORD_PROMPT run started from the page above.
    const runId = recordRunId;
    const page = await stack.pages.signedIn(stack.dev, "owner");
    const asked: string[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === "/v1/runs" && url.searchParams.has("runId"))
        asked.push(String(url.searchParams.get("runId")));
    });
    const start = runId.slice(0, 12);
    await page.getByLabel("Run id (or its start)").fill(start.toUpperCase());
    await page.getByRole("button", { name: "Find runs" }).click();
    await expect
      .poll(
        () => page.locator("tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run-id"))),
        {
          timeout: 10_000,
        },
      )
      .toEqual([runId]);
    expect(asked).toEqual([start]);
    expect(await page.getByLabel("Run id (or its start)").inputValue()).toBe(start);
    // A whole id in capitals opens the run.
    await page.getByLabel("Run id (or its start)").fill(runId.toUpperCase());
    await page.getByRole("button", { name: "Find runs" }).click();
    await page.getByRole("heading", { name: `Run ${runId}`, level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/runs/${runId}`);
  });
});
