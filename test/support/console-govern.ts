// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (rendered text, as a person reads it), not the DOM property
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { screenshot } from "./browser.js";
import {
  type Dev,
  expectAccessible,
  go,
  type Pages,
  SEED_PROMPT,
  tokenFor,
  type USERS,
  ZOOMED,
} from "./console.js";

// The console's governance views in the browser, registered into test/console.test.ts so they share its
// `npm run dev` and its Chromium: the tenant's policies (saved, refused with a line-numbered error,
// saved in shadow, then enforced), each call's decision and cost in a run's view, and usage and cost per
// day with two users' data, the limits and a run refused by quota. Their own tenant (tenant_gov_01), so
// the other tests' counts are untouched.

/** A set that permits everything but GBP invoices over 1,000.00 gross. */
const ENFORCED = `@id("base")
permit (principal, action, resource);

@id("gbp-invoice-cap")
forbid (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "GBP" && context.facts.grossMinor > 100000 };
`;

/** The same, plus a cap on calculations: what the shadow set adds. */
const STRICTER = `${ENFORCED}
@id("gbp-tax-cap")
forbid (principal, action == Action::"calculateTax", resource)
when { context.facts.currency == "GBP" && context.facts.grossMinor > 100000 };
`;

/** The API as `user` of the dev process: JSON in and out. */
async function call(
  dev: Dev,
  user: keyof typeof USERS,
  path: string,
  init: { method?: string; body?: unknown } = {},
) {
  const response = await fetch(`${dev.url}${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${await tokenFor(dev, user)}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read by the assertions
  return { status: response.status, body: (await response.json()) as any };
}

/** A synchronous run as `user`: its response body. */
const run = (dev: Dev, user: keyof typeof USERS, prompt = SEED_PROMPT) =>
  call(dev, user, "/v1/runs", { method: "POST", body: { prompt } });

/** Types the editor's whole text. */
async function typeSet(page: Page, text: string): Promise<void> {
  await page.getByLabel("Cedar policies").fill(text);
}

/** Saves the editor's text in `mode` and waits for the page to say so. */
async function save(page: Page, mode: "Enforce" | "Shadow", version: number): Promise<void> {
  await page.getByRole("radio", { name: new RegExp(`^${mode}`) }).check();
  await page.getByRole("button", { name: "Check and save" }).click();
  await page.getByText(`Saved version ${version} (${mode === "Enforce" ? "enforced" : "shadow"}).`).waitFor();
}

/** The run view's tool call card of `tool` (the first) as text. */
const card = (page: Page, tool: string) => page.locator(`article.call[data-tool=${tool}]`).first();

/**
 * Registers the governance checks; `context` gives the file's dev process and pages once they exist.
 */
export function governanceChecks(context: () => { dev: Dev; pages: Pages }): void {
  let shadowRunId = "";

  it("policies: a refused set marked at its line, a set saved and enforced, a stricter one in shadow, then enforced", async () => {
    const { dev, pages } = context();
    const writer = await pages.signedIn(dev, "govWriter");
    expect(await writer.getByRole("link", { name: "Policies" }).isVisible()).toBe(false);
    const page = await pages.signedIn(dev, "govAdmin", "#/policies");
    await page.locator("pre.schema").getByText('action "recordInvoice"').waitFor();
    expect(await page.locator(".facts").innerText()).toMatch(
      /Version\s+none of the tenant's: the default set/,
    );

    // Line 6 names a fact no tool vouches for: refused at its line, nothing stored.
    await typeSet(page, ENFORCED.replace("context.facts.grossMinor", "context.facts.grossMinr"));
    await page.getByRole("button", { name: "Check and save" }).click();
    const issue = page.locator("ul.issues li").first();
    await issue.waitFor();
    expect(await issue.getAttribute("data-line")).toBe("6");
    expect(await issue.innerText()).toMatch(/^Line 6, column \d+ \(policy gbp-invoice-cap\): .*grossMinr/);
    expect(await page.locator(".gutter li.bad").allInnerTexts()).toEqual(["✕ 6"]);
    expect(await page.getByLabel("Cedar policies").getAttribute("aria-invalid")).toBe("true");
    expect((await call(dev, "govAdmin", "/v1/policies/versions")).body.items).toEqual([]);
    await expectAccessible(page, "policies-refused");
    await issue.getByRole("button").click();
    expect(await page.evaluate("document.activeElement.id")).toBe("policies");

    await typeSet(page, ENFORCED);
    await save(page, "Enforce", 1);
    expect(await page.locator(".gutter li.bad").count()).toBe(0);
    expect(await page.locator(".facts").innerText()).toMatch(
      /Version\s+1\s+Mode\s+✓\s*Enforced\s+Enforced\s+version 1\s+Saved by\s+usr_gov_admin/,
    );

    await typeSet(page, STRICTER);
    await save(page, "Shadow", 2);
    expect(await page.locator(".facts").innerText()).toMatch(
      /Version\s+2\s+Mode\s+◐\s*Shadow\s+Enforced\s+version 1/,
    );
    // The versions are read again after the save: wait for both rows.
    const versions = page.locator("tr[data-version]");
    await expect
      .poll(() => versions.evaluateAll((rows) => rows.map((r) => r.getAttribute("data-version"))))
      .toEqual(["2", "1"]);
    expect(await versions.first().innerText()).toMatch(/2\s+◐\s*Shadow\s+usr_gov_admin\s+\d{4}-\d\d-\d\d/);

    // A run under both: the enforced set refuses the 1,800.00 GBP invoice; the shadow one would also have
    // refused the calculation, which the enforced set permitted.
    const shadowed = await run(dev, "govWriter");
    expect(shadowed.status).toBe(200);
    shadowRunId = shadowed.body.runId;
    await page.reload();
    await page.locator("tr[data-version]").first().waitFor();
    const differed = page.locator("tbody tr[data-tool-call-id]");
    await expect.poll(() => differed.count()).toBe(1);
    expect(await differed.first().innerText()).toMatch(
      /calculateTax\s+usr_gov_writer[\s\S]*✓\s*Permitted\s+base · version 1\s+✕\s*Refused by policy\s+gbp-tax-cap · version 2/,
    );
    expect(await differed.first().locator("a.id").getAttribute("data-id")).toBe(shadowRunId);
    await expectAccessible(page, "policies");

    await page.getByRole("button", { name: "Enforce version 2" }).click();
    await page.getByText("Saved version 3 (enforced).").waitFor();
    expect(await page.locator(".facts").innerText()).toMatch(
      /Version\s+3\s+Mode\s+✓\s*Enforced\s+Enforced\s+version 3/,
    );
    const head = await call(dev, "govAdmin", "/v1/policies");
    expect([head.body.version, head.body.mode, head.body.policies]).toEqual([3, "enforce", STRICTER]);
  });

  it("a run's view shows each call's policy decision with its policy ids, and each model call's cost", async () => {
    const { dev, pages } = context();
    const page = await pages.signedIn(dev, "govAdmin", `#/runs/${shadowRunId}`);
    await card(page, "recordInvoice").waitFor();
    const tax = await card(page, "calculateTax").innerText();
    expect(tax).toMatch(
      /Policy:?\s*✓\s*Permitted base \(version 1\)\s*Shadow version 2 would have: Refused by policy \(gbp-tax-cap\)/,
    );
    expect(tax).toMatch(/Model call's cost:?\s*\d+\.\d{6} USD/);
    const record = await card(page, "recordInvoice").innerText();
    expect(record).toMatch(/Policy:?\s*✕\s*Refused by policy gbp-invoice-cap \(version 1\)/);
    expect(record).toContain("POLICY_DENIED");
    const stored = await call(dev, "govAdmin", `/v1/runs/${shadowRunId}`);
    const step = stored.body.steps.find((s: { toolCalls: Array<{ name: string }> }) =>
      s.toolCalls.some((c) => c.name === "recordInvoice"),
    );
    expect(step.cost.amount).toMatch(/^0\.\d{6}$/);
    expect(record).toMatch(new RegExp(`Model call's cost:?\\s*${step.cost.amount} USD`));
    await expect
      .poll(() => page.locator(".facts").innerText())
      .toMatch(new RegExp(`Cost\\s+${stored.body.cost.amount} USD`));
    await expectAccessible(page, "run-policy");
  });

  it("usage: two users' tokens and cost per day as charts, the limits and how close each is, a run refused by quota", async () => {
    const { dev, pages } = context();
    expect(
      (await run(dev, "govAdmin", "Calculate tax on 200 BDT for a client in Bangladesh")).body.status,
    ).toBe("completed");
    const used = async (user: "govAdmin" | "govWriter") =>
      (await call(dev, user, "/v1/usage")).body.user.day.tokens.used as number;
    const limit = Math.max(await used("govAdmin"), await used("govWriter")) + 50;
    expect(
      (
        await call(dev, "govAdmin", "/v1/limits", {
          method: "PUT",
          body: { user: { tokensPerDay: limit, costPerDay: "2.5" } },
        })
      ).status,
    ).toBe(200);
    const refused = await run(dev, "govWriter");
    expect([refused.status, refused.body.status]).toEqual([200, "quota_exceeded"]);

    const runs = (await call(dev, "govAdmin", "/v1/runs?scope=tenant&limit=100")).body.items as Array<{
      userId: string;
      usage: { totalTokens: number };
    }>;
    const tokensOf = (user: string) =>
      runs.filter((r) => r.userId === user).reduce((sum, r) => sum + r.usage.totalTokens, 0);
    const page = await pages.signedIn(dev, "govAdmin", "#/usage");
    const chart = page.locator("#tokens-chart");
    await chart.locator("svg").waitFor();
    expect(await chart.getAttribute("data-series")).toBe("usr_gov_admin usr_gov_writer");
    const today = (await call(dev, "govAdmin", "/v1/usage")).body.user.day.start.slice(0, 10);
    const bar = chart.locator(`g.day[data-day="${today}"]`);
    expect(await bar.locator("rect").count()).toBe(2);
    expect(Number(await bar.getAttribute("data-total"))).toBe(
      tokensOf("usr_gov_admin") + tokensOf("usr_gov_writer"),
    );
    const legend = await chart.locator(".legend").innerText();
    expect(legend).toContain(
      `usr_gov_admin: ${tokensOf("usr_gov_admin").toLocaleString("en-GB").replaceAll(",", "\u202f")} tokens`,
    );
    expect(await page.locator("#cost-chart figcaption").innerText()).toBe("Cost per day (USD)");
    expect(await page.locator("#cost-chart").getAttribute("data-series")).toBe(
      "usr_gov_admin usr_gov_writer",
    );

    const limits = page.locator("tr[data-limit]");
    const you = await page.locator('tr[data-limit="You (usr_gov_admin): tokens today"]').innerText();
    expect(you).toMatch(
      new RegExp(`of ${limit.toLocaleString("en-GB").replaceAll(",", "\u202f")} tokens \\(\\d+%`),
    );
    expect(
      await page.locator('tr[data-limit="You (usr_gov_admin): tokens today"] meter').getAttribute("max"),
    ).toBe(String(limit));
    // A cost limit set as "2.5" reads as the API shows it (docs/quotas.md "Cost"), and so does what is used.
    const cost = (await call(dev, "govAdmin", "/v1/usage")).body.user.day.cost as { used: string };
    expect(
      await page.locator('tr[data-limit="You (usr_gov_admin): cost today"] .limit-words').innerText(),
    ).toMatch(new RegExp(`^${cost.used.replace(".", "\\.")} USD of 2\\.500000 USD \\(\\d+%\\)$`));
    expect(await limits.count()).toBe(7);
    expect(await page.locator('tr[data-limit="The tenant: tokens today"]').innerText()).toContain("no limit");
    const refusedRow = page.locator(`tr[data-run-id="${refused.body.runId}"]`);
    await refusedRow.waitFor();
    expect(await refusedRow.innerText()).toContain("usr_gov_writer");
    await expectAccessible(page, "usage");
  });

  it("the policies and usage views read at 200 % zoom and in the dark scheme", async () => {
    const { dev, pages } = context();
    const zoomed = await pages.signedIn(dev, "govAdmin", "#/usage", ZOOMED);
    for (const [hash, name, filled] of [
      ["#/usage", "usage", "#cost-chart svg"],
      ["#/policies", "policies", "tr[data-version]"],
    ] as const) {
      await go(zoomed, hash);
      await zoomed.locator(filled).first().waitFor();
      await zoomed.waitForLoadState("networkidle");
      const sideways = await zoomed.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth",
      );
      expect(sideways, hash).toBe(0);
      await screenshot(zoomed, `zoom-200-${name}`);
    }
    const dark = await pages.signedIn(dev, "govAdmin", "#/usage", {
      viewport: { width: 1280, height: 800 },
      colorScheme: "dark",
    });
    await dark.locator("#tokens-chart svg").waitFor();
    await expectAccessible(dark, "dark-usage");
    await go(dark, "#/policies");
    await dark.locator("tr[data-version]").first().waitFor();
    await expectAccessible(dark, "dark-policies");
  });
}
