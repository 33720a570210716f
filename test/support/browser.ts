import { existsSync, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { REPO_ROOT } from "./scripts.js";

/**
 * Where a Chromium is: `CHROMIUM_PATH` when set, else the first of Debian's `chromium` (what .ci/run
 * installs with apt-get) and the usual names on other systems that exists on PATH or at its usual path.
 * @throws Error naming what was tried (the browser tests need a real browser; they are never skipped)
 */
export function findChromium(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const names = ["chromium", "chromium-browser", "google-chrome-stable", "google-chrome"];
  const dirs = [...(process.env.PATH ?? "").split(":"), "/usr/bin", "/usr/local/bin", "/snap/bin"];
  for (const name of names) {
    for (const dir of dirs) {
      const candidate = join(dir, name);
      if (dir && existsSync(candidate)) return candidate;
    }
  }
  throw new Error(
    `No Chromium found (tried ${names.join(", ")} on PATH); install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH.`,
  );
}

/** Launches headless Chromium through playwright-core with {@link findChromium}'s executable. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(),
    headless: true,
    // The suite runs as root in CI containers, where Chromium's sandbox cannot start.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** Where the browser tests save their screenshots (the test output; not committed). */
export const SCREENSHOT_DIR = join(REPO_ROOT, "test-results", "console");

/** Saves a full-page screenshot of `page` as `<name>.png` under {@link SCREENSHOT_DIR}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

const axeSource = readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** One axe-core violation: rule id, impact and the selectors of the nodes it found. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  nodes: string[];
}

/**
 * Moderate rules checked as well: several regions of one name (each card's "Arguments") make a
 * screen reader's list of landmarks a list of the same words, which tells nobody where each one is.
 */
const ALSO_CHECKED = new Set(["landmark-unique"]);

/**
 * Runs axe-core in `page` (WCAG 2 A/AA rules and best practices) and returns its serious and critical
 * violations, and those of {@link ALSO_CHECKED}. axe is injected through the DevTools protocol's isolated
 * evaluation, which the page's CSP does not govern, so the page under test keeps its own policy. It is
 * injected once per document: the console changes views without loading a new one, and evaluating axe's
 * half a megabyte of script again for each view cost up to a second on a busy machine.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate<boolean>('typeof window.axe?.run === "function"')))
    await page.evaluate(await axeSource);
  const violations = await page.evaluate<AxeViolation[]>(`(async () => {
    const result = await axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21aa", "best-practice"] },
    });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }));
  })()`);
  return violations.filter(
    (v) => v.impact === "serious" || v.impact === "critical" || ALSO_CHECKED.has(v.id),
  );
}
