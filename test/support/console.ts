import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll, expect, inject } from "vitest";
import { DEMO_CLAIMS, mintToken, readIssuerFile } from "../../local/dev-auth.js";
import { type LocalModelServer, startModelServer } from "../../local/model-server.js";
import { launchChromium, screenshot, seriousViolations } from "./browser.js";
import { type RunningScript, startScript } from "./scripts.js";

// What the console's browser tests share: `npm run dev` processes, users and their tokens, signed-in
// pages, the layout-shift recorder, and the checks each view gets (axe, a screenshot).

/** The seed scenario's prompt (events/seed-scenario.json). */
export const SEED_PROMPT = (
  JSON.parse(
    JSON.parse(readFileSync(new URL("../../events/seed-scenario.json", import.meta.url), "utf8")).body,
  ) as { prompt: string }
).prompt;

/** A running `npm run dev`: its URL, its streaming function URL stand-in, and its issuer file. */
export interface Dev {
  script: RunningScript;
  url: string;
  streamUrl: string;
  issuerFile: string;
}

/**
 * Starts `npm run dev` (with `--as usr_approver_01`) on the suite's DynamoDB and `modelURL`, with
 * `extra` variables; resolves once it serves.
 */
export async function startDev(modelURL: string, extra: Record<string, string>): Promise<Dev> {
  const issuerFile = join(mkdtempSync(join(tmpdir(), "boundloop-console-")), "issuer.json");
  const script = startScript(
    "tsx",
    ["local/dev.ts", "--port", "0", "--issuer-file", issuerFile, "--as", "usr_approver_01"],
    {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      OPENAI_BASE_URL: modelURL,
      TABLE_NAME: `test-console-${randomUUID()}`,
      ...extra,
    },
  );
  const url = (
    await script.waitFor(/dev: local API on port \d+ at (http:\/\/127\.0\.0\.1:\d+)/, 80_000)
  )[1] as string;
  const streamUrl = (
    await script.waitFor(/function URL's stand-in at (http:\/\/127\.0\.0\.1:\d+)/)
  )[1] as string;
  await script.waitFor(/Ctrl-C stops the server/);
  return { script, url, streamUrl, issuerFile };
}

/** Stops a dev process. */
export async function stopDev(dev: Dev | undefined): Promise<void> {
  if (!dev) return;
  dev.script.child.kill("SIGTERM");
  await dev.script.exited;
}

/** What a console test file runs against: the local model server, Chromium, `npm run dev` on both, pages. */
export interface ConsoleStack {
  model: LocalModelServer;
  browser: Browser;
  dev: Dev;
  pages: Pages;
}

/**
 * Registers the file's hooks that start a {@link ConsoleStack} before its tests (the model server, then
 * Chromium and `npm run dev` with `env` together) and stop all of it after them.
 * @returns the stack, whose fields are set once the file's `beforeAll` has run
 */
export function consoleStack(env: Record<string, string> = {}): ConsoleStack {
  const stack = {} as ConsoleStack;
  beforeAll(async () => {
    stack.model = await startModelServer();
    [stack.browser, stack.dev] = await Promise.all([launchChromium(), startDev(stack.model.baseURL, env)]);
    stack.pages = new Pages(stack.browser);
  }, 120_000);
  afterAll(async () => {
    await stack.pages?.close();
    await stack.browser?.close();
    await stopDev(stack.dev);
    await stack.model?.stop();
  });
  return stack;
}

/** The users of the tests: the run's owner, a second approver of its tenant, another tenant's user. */
export const USERS = {
  owner: { ...DEMO_CLAIMS, scope: "billing:read billing:write billing:approve" },
  approver: { ...DEMO_CLAIMS, sub: "usr_approver_01", scope: "billing:read billing:approve" },
  writer: { ...DEMO_CLAIMS, sub: "usr_writer_01", scope: "billing:write" },
  stranger: {
    sub: "usr_other_01",
    tenant_id: "tenant_other_01",
    scope: "billing:read billing:write billing:approve",
  },
  /** A tenant of its own for the policies and usage views: its administrator, and a writer. */
  govAdmin: {
    sub: "usr_gov_admin",
    tenant_id: "tenant_gov_01",
    scope: "billing:read billing:write policy:admin limits:admin",
  },
  govWriter: { sub: "usr_gov_writer", tenant_id: "tenant_gov_01", scope: "billing:write" },
};

/** A token of `user` from the dev process's issuer. */
export async function tokenFor(dev: Dev, user: keyof typeof USERS): Promise<string> {
  return mintToken(await readIssuerFile(dev.issuerFile), { ...USERS[user] });
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
export async function unpromptedShifts(page: Page): Promise<Array<{ value: number; moved: string[] }>> {
  const all = (await page.evaluate("window.layoutShifts")) as Array<{
    value: number;
    hadRecentInput: boolean;
    moved: string[];
  }>;
  return all.filter((shift) => !shift.hadRecentInput).map(({ value, moved }) => ({ value, moved }));
}

/** A 1280 × 800 window, as the screenshots are taken. */
export const DESKTOP = { viewport: { width: 1280, height: 800 } };

/** 200 % zoom of a 1280 × 800 window: 640 × 400 CSS pixels, each two device pixels. */
export const ZOOMED = { viewport: { width: 640, height: 400 }, deviceScaleFactor: 2 };

/**
 * Opens pages of a browser and closes them all. Each page is a tab of its own, and a tab has its own
 * session storage, where the console keeps its token (console/client/api.ts): two pages signed in as two
 * users are two sessions. Pages with the same context options (viewport, zoom, colour scheme) share one
 * browser context, as tabs of one window do, instead of one context each: a context costs Chromium about
 * a second to make on a busy machine, a tab in an existing one a fraction of that. The console keeps
 * nothing in cookies or local storage, so the tabs of a context share nothing the tests look at.
 */
export class Pages {
  private readonly contexts = new Map<string, Promise<BrowserContext>>();
  constructor(private readonly browser: Browser) {}

  /** A new tab on nothing yet (about:blank), in the context of `options`. */
  async blank(options: BrowserContextOptions = DESKTOP): Promise<Page> {
    const key = JSON.stringify(options);
    let context = this.contexts.get(key);
    if (!context) {
      context = this.browser.newContext(options);
      this.contexts.set(key, context);
    }
    return (await context).newPage();
  }

  /**
   * A page signed in as `user` through the `#token=` link, on `hash`; `options` are the context's (a
   * viewport, a zoom as its device scale factor, a colour scheme).
   */
  async signedIn(
    dev: Dev,
    user: keyof typeof USERS,
    hash = "#/runs",
    options: BrowserContextOptions = DESKTOP,
  ): Promise<Page> {
    const page = await this.blank(options);
    await page.addInitScript(RECORD_LAYOUT_SHIFTS);
    page.on("pageerror", (error) => {
      throw error;
    });
    await page.goto(`${dev.url}/console#token=${await tokenFor(dev, user)}`);
    await page.getByRole("heading", { name: "Runs", level: 1 }).waitFor();
    if (hash !== "#/runs") await go(page, hash);
    return page;
  }

  async close(): Promise<void> {
    for (const context of this.contexts.values()) {
      await context.then((made) => made.close()).catch(() => {});
    }
  }
}

/** Moves a page to `hash` and waits for its view's heading. */
export async function go(page: Page, hash: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.locator("main h1").waitFor();
}

/**
 * Starts a run from the runs view; resolves with its run id once the run view is shown. The first run of
 * a dev process loads the API's code and the durable runner, which a loaded machine makes slow: it waits
 * up to 90 s, and fails at once with the page's alert when the API refused the run.
 */
export async function startRun(page: Page, prompt = SEED_PROMPT): Promise<string> {
  await page.getByLabel("Prompt").fill(prompt);
  await page.getByRole("button", { name: "Start run" }).click();
  const runHeading = page.getByRole("heading", { name: /^Run run_/, level: 1 });
  await runHeading.or(page.locator("main [role=alert]")).first().waitFor({ timeout: 90_000 });
  const hash = new URL(page.url()).hash;
  if (!hash.startsWith("#/runs/run_")) {
    throw new Error(
      `The run was not started: ${await page.locator("main [role=alert]").first().textContent()}`,
    );
  }
  return hash.slice("#/runs/".length);
}

/** The timeline's rows as (seq, type). */
export async function timeline(page: Page): Promise<Array<{ seq: number; type: string }>> {
  return page.locator("ol.timeline > li").evaluateAll((rows) =>
    rows.map((row) => ({
      seq: Number(row.getAttribute("data-seq")),
      type: String(row.getAttribute("data-type")),
    })),
  );
}

/** Waits for the timeline row of an event type. */
export const timelineHas = (page: Page, type: string, timeout = 30_000) =>
  page.locator(`ol.timeline > li[data-type="${type}"]`).first().waitFor({ timeout });

/** axe-core finds no serious or critical violation; then the view's screenshot is saved as `name`. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  expect(await seriousViolations(page), name).toEqual([]);
  await screenshot(page, name);
}

/** The tenant's invoices through the API, as `user`. */
export async function ledgerOf(dev: Dev, user: keyof typeof USERS) {
  const response = await fetch(`${dev.url}/v1/invoices`, {
    headers: { authorization: `Bearer ${await tokenFor(dev, user)}` },
  });
  return ((await response.json()) as { items: Array<{ runId: string; grossTotal: { amount: string } }> })
    .items;
}
