// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (rendered text, as a person reads it), not the DOM property
import { createHash, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { decodeJwt, decodeProtectedHeader } from "jose";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDevIssuer, mintToken } from "../local/dev-auth.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { launchChromium, screenshot, seriousViolations } from "./support/browser.js";
import { type OidcIssuer, startOidcIssuer } from "./support/oidc-issuer.js";
import { type RunningScript, startScript } from "./support/scripts.js";

// The console's OIDC sign-in (console/client/oidc.ts: oidc-client-ts, authorization code + PKCE) in
// headless Chromium against a real OpenID Provider (panva's oidc-provider, test/support/oidc-issuer.ts)
// and `npm run dev` trusting that issuer through JWT_ISSUER / JWT_JWKS_URL / JWT_AUDIENCE, as the
// deployed API's JWT authorizer does. Nothing in the sign-in is stubbed.

const AUDIENCE = "boundloop-api";
const CLIENT_ID = "boundloop-console";
const ACCOUNTS = {
  usr_oidc_01: { tenantId: "tenant_oidc_01", permissions: ["billing:read", "billing:write"] },
};
const SEED_PROMPT = (
  JSON.parse(
    JSON.parse(readFileSync(new URL("../events/seed-scenario.json", import.meta.url), "utf8")).body,
  ) as { prompt: string }
).prompt;

let model: LocalModelServer;
let op: OidcIssuer;
let dev: RunningScript;
let devUrl: string;
let streamUrl: string;
let browser: Browser;
/** Chromium's launch, which runs beside the issuer's and `npm run dev`'s starts. */
let launching: Promise<Browser> | undefined;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  launching = launchChromium();
  [model, op] = await Promise.all([
    startModelServer(),
    startOidcIssuer({ audience: AUDIENCE, accounts: ACCOUNTS }),
  ]);
  // npm run dev trusts the issuer, so it starts once the issuer is up.
  dev = startScript("tsx", ["local/dev.ts", "--port", "0"], {
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-console-oidc-${randomUUID()}`,
    JWT_ISSUER: op.issuer,
    JWT_JWKS_URL: op.jwksUrl,
    JWT_AUDIENCE: AUDIENCE,
    CONSOLE_CLIENT_ID: CLIENT_ID,
  });
  devUrl = (
    await dev.waitFor(/dev: local API on port \d+ at (http:\/\/127\.0\.0\.1:\d+)/, 80_000)
  )[1] as string;
  streamUrl = (await dev.waitFor(/function URL's stand-in at (http:\/\/127\.0\.0\.1:\d+)/))[1] as string;
  await dev.waitFor(/Ctrl-C stops the server/);
  op.register({ clientId: CLIENT_ID, redirectOrigin: devUrl });
  browser = await launching;
}, 120_000);

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {});
  // The launch's browser, also when the start failed before it was awaited.
  await (await launching?.catch(() => undefined))?.close();
  if (dev) {
    dev.child.kill("SIGTERM");
    await dev.exited;
  }
  await op?.stop();
  await model?.stop();
});

/** Every request a page made: its URL, method, body, and the URL of the document it came from. */
interface Seen {
  url: string;
  method: string;
  body: string | null;
  from: string;
}

/**
 * A new browser context (own storage) on the console, recording every request and every CSP report the
 * console's documents print. The provider's sign-in pages load a web font from Google; there is no
 * network here, so that one request is answered empty.
 */
async function openConsole(): Promise<{ page: Page; seen: Seen[]; cspReports: string[] }> {
  const context = await browser.newContext();
  contexts.push(context);
  await context.route("https://fonts.googleapis.com/**", (route) => route.fulfill({ body: "" }));
  const page = await context.newPage();
  const seen: Seen[] = [];
  const cspReports: string[] = [];
  page.on("request", (request: Request) => {
    seen.push({
      url: request.url(),
      method: request.method(),
      body: request.postData(),
      from: request.frame().url(),
    });
  });
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspReports.push(message.text());
  });
  page.on("pageerror", (error) => {
    throw error;
  });
  await page.goto(`${devUrl}/console`);
  await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
  return { page, seen, cspReports };
}

/** Signs in at the provider as `login`: its login page, then its consent page; back on the console. */
async function signInAtIssuer(page: Page, login: string): Promise<void> {
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(`${op.issuer}/interaction/**`);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL(`${devUrl}/console#/runs`);
}

const sessionToken = (page: Page) =>
  page.evaluate<string | null>('sessionStorage.getItem("boundloop.console.token")');

describe("the console's sign-in at a real OpenID Provider", () => {
  it("is offered with the issuer as the only other origin the page may connect to (beside the streaming function URL), and npm run dev trusts that issuer", async () => {
    const response = await fetch(`${devUrl}/console`);
    const csp = response.headers.get("content-security-policy") ?? "";
    const directives = Object.fromEntries(
      csp.split(";").map((part) => {
        const [name = "", ...sources] = part.trim().split(/\s+/);
        return [name, sources];
      }),
    );
    expect(directives["connect-src"]).toEqual(["'self'", streamUrl, op.issuer]);
    expect(csp.match(/https?:\/\/[^\s;]+/g)).toEqual([streamUrl, op.issuer]);
    expect(directives["script-src"]).toEqual(["'self'"]);
    const html = await response.text();
    expect(html).toContain(`<meta name="boundloop-oidc-issuer" content="${op.issuer}">`);
    expect(html).toContain(`<meta name="boundloop-oidc-client-id" content="${CLIENT_ID}">`);
    expect(dev.stderr()).toContain(
      `issuer ${op.issuer} (JWT_ISSUER), audience ${AUDIENCE}, keys from ${op.jwksUrl}`,
    );
    expect(dev.stdout()).toContain(`${devUrl}/console signs in at the issuer (client ${CLIENT_ID})`);
    expect(dev.stdout()).not.toMatch(/#token=/);
  });

  it("signs in with code + PKCE, then lists and starts the user's runs with the issuer's access token, which no URL carries", async () => {
    const { page, seen, cspReports } = await openConsole();
    await signInAtIssuer(page, "usr_oidc_01");
    await expect
      .poll(() => page.locator("#who").innerText())
      .toMatch(/^Signed in as usr_oidc_01 \(tenant tenant_oidc_01\)/);
    await page.getByRole("heading", { name: "Runs", level: 1 }).waitFor();

    // The authorization request asked for a code with an S256 challenge; the token request proved it.
    const authorize = new URL(seen.find((r) => r.url.startsWith(`${op.issuer}/auth?`))?.url ?? "");
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      client_id: CLIENT_ID,
      response_type: "code",
      redirect_uri: `${devUrl}/console`,
      code_challenge_method: "S256",
    });
    const tokenRequest = seen.find((r) => r.method === "POST" && r.url === `${op.issuer}/token`);
    const exchange = new URLSearchParams(tokenRequest?.body ?? "");
    expect(exchange.get("grant_type")).toBe("authorization_code");
    const verifier = exchange.get("code_verifier") ?? "";
    expect(verifier).toMatch(/^[\w-]{43,128}$/);
    expect(createHash("sha256").update(verifier).digest("base64url")).toBe(
      authorize.searchParams.get("code_challenge"),
    );

    // The access token is the issuer's RS256 JWT for the API, with the claims the API maps.
    const token = String(await sessionToken(page));
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "RS256", typ: "at+jwt" });
    expect(decodeJwt(token)).toMatchObject({
      iss: op.issuer,
      aud: AUDIENCE,
      sub: "usr_oidc_01",
      client_id: CLIENT_ID,
      tenant_id: "tenant_oidc_01",
      permissions: ["billing:read", "billing:write"],
    });
    expect(await page.evaluate("localStorage.length")).toBe(0);

    // With it, the page starts the seed run and follows it to the end, then lists it.
    await page.getByLabel("Prompt").fill(SEED_PROMPT);
    await page.getByRole("button", { name: "Start run" }).click();
    await page.waitForURL(/#\/runs\/run_[\w-]+$/);
    const runId = new URL(page.url()).hash.slice("#/runs/".length);
    await page.locator('ol.timeline > li[data-type="run.finished"]').waitFor({ timeout: 30_000 });
    await expect.poll(() => page.locator(".title-row .badge").getAttribute("data-status")).toBe("completed");
    expect(await page.locator("dl.facts").innerText()).toMatch(/Started by\s+usr_oidc_01/);
    await page.getByRole("link", { name: "Runs" }).click();
    const rows = page.locator("table tbody tr");
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().getAttribute("data-run-id")).toBe(runId);
    expect(await rows.first().innerText()).toMatch(/^\W*Completed\s+run_/);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, "oidc-signed-in");

    // The API accepted the token: the dev server's request log, which names the verified tenant.
    const log = dev.stderr();
    expect(log).toMatch(/dev: POST \/v1\/runs → 202 in \d+ ms \(tenant tenant_oidc_01\)/);
    expect(log).toMatch(
      /dev: GET \/v1\/runs\?limit=20&scope=tenant → 200 in \d+ ms \(tenant tenant_oidc_01\)/,
    );
    expect(log).toMatch(
      // The console follows a run at the streaming function URL (its stand-in), which checks the token too.
      new RegExp(`dev: stream URL GET /v1/runs/${runId}/events\\S* → 200 in \\d+ ms`),
    );
    // No URL carried a token: not one the browser requested, not one the dev server or the issuer logged.
    const signature = token.split(".")[2] as string;
    for (const url of [...seen.map((r) => r.url), ...op.requests]) expect(url).not.toContain(signature);
    expect(log).not.toContain(signature);
    // What the dev server did log of the sign-in is the redirect's one-time code, already spent: the
    // issuer refuses it again, even with the right verifier.
    const code = /dev: GET \/console\?code=([^&\s]+)&/.exec(log)?.[1];
    expect(code).toBe(exchange.get("code"));
    const again = await fetch(`${op.issuer}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...Object.fromEntries(exchange), code_verifier: verifier }),
    });
    expect([again.status, ((await again.json()) as { error: string }).error]).toEqual([400, "invalid_grant"]);
    // The console's own documents connected to this origin and the issuer only, within their CSP.
    const fromConsole = seen.filter((r) => r.from.startsWith(`${devUrl}/console`));
    expect(fromConsole.length).toBeGreaterThan(5);
    expect(new Set(fromConsole.map((r) => new URL(r.url).origin))).toEqual(
      new Set([devUrl, streamUrl, op.issuer]),
    );
    expect(cspReports).toEqual([]);

    // Signing out leaves no token in the tab.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    const stored = await page.evaluate<string>("JSON.stringify(Object.assign({}, sessionStorage))");
    expect(stored).not.toContain(signature);
  });

  it("a sign-in cancelled at the issuer comes back as an explained error, with no token and a clean address", async () => {
    const { page } = await openConsole();
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${op.issuer}/interaction/**`);
    await page.getByRole("link", { name: "[ Cancel ]" }).click();
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/^Sign-in failed: .*aborted/i);
    expect(new URL(page.url()).search).toBe("");
    expect(await sessionToken(page)).toBeNull();
  });

  it("refuses a token with the issuer's name that the issuer did not sign", async () => {
    const impostor = await createDevIssuer({ issuer: op.issuer, audience: AUDIENCE });
    const forged = await mintToken(impostor, {
      sub: "usr_oidc_01",
      tenant_id: "tenant_oidc_01",
      scope: "billing:read",
    });
    const response = await fetch(`${devUrl}/v1/runs`, { headers: { authorization: `Bearer ${forged}` } });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain("no key matches the token's kid");
  });
});
