/**
 * `npm run tenant -- limits <tenant> …` on the table of a running `npm run dev` (local/tenant.ts,
 * local/tenant-wake.ts, docs/quotas.md "Per-tenant overrides"): the dev server's app as `npm run dev` serves
 * it (the deployed handler with durable runs on the local runner, behind the dev gateway's JWT check, its
 * issuer file naming its URL and table), DynamoDB Local, the local model server. A durable run paused
 * waiting for budget resumes once the command sends the change through that dev server, which stores it
 * once; with no dev server on the table, or one that answers an error, the command stores the change
 * itself and its note says why no run was woken. The quotas' clock is the test's (09:00 UTC today), so a
 * run's budget wait lasts until the end of that day whatever the wall clock says.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createDevIssuer, type DevIssuerFile, devIssuerEnv, writeIssuerFile } from "../local/dev-auth.js";
import { type DevServer, type Handler, startDevServer } from "../local/dev-server.js";
import { main, parseLimitsCommand, runLimitsCommand } from "../local/tenant.js";
import { LOCAL_WAKE_NOTE } from "../local/tenant-wake.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { QuotaLimitStore } from "../shared/store/quota-limits.js";
import { QuotaWaitStore } from "../shared/store/quota-waits.js";
import { pollUntil } from "./support/approvals.js";
import { BUDGET_PROMPT, budgetWaitScript } from "./support/budget-wait.js";
import { type DurableStack, startAsyncRun, startDurableStack } from "./support/durable.js";

const PRICES = JSON.stringify({
  "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
});
/** The quotas' clock: 09:00 UTC today, so a budget wait times out 15 h later, never during the test. */
const QUOTAS_NOW = (() => {
  const today = new Date();
  return Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate(), 9);
})();
const OPERATOR = `operator:${userInfo().username}`;

let stack: DurableStack;
let issuer: DevIssuerFile;
let server: DevServer;
/** The directory of the running dev server's issuer file, as `.boundloop/` holds `npm run dev`'s. */
let devServers: string;
beforeAll(async () => {
  issuer = await createDevIssuer();
  stack = await startDurableStack(
    { USER_TOKENS_PER_DAY: "3500", ...devIssuerEnv(issuer) },
    { quotas: { now: () => QUOTAS_NOW } },
  );
  server = await startDevServer({
    serve: {
      handler: ((event) => stack.invoke(event as never)) as Handler,
      verifier: createTokenVerifier(stack.config.auth),
      timeoutMs: 29_000,
    },
    host: "127.0.0.1",
    port: 0,
    log: () => {},
  });
  devServers = await issuerDirectory(issuer, stack.config.table.name);
});
afterAll(async () => {
  await server?.stop();
  await stack?.stop();
});

/** A directory with the dev server's issuer file as `npm run dev` writes it, naming `table` and `url`. */
async function issuerDirectory(
  file: DevIssuerFile,
  table: string | undefined,
  url = server.url,
): Promise<string> {
  const directory = mkdtempSync(join(tmpdir(), "boundloop-dev-servers-"));
  const named = table === undefined ? {} : { table: { endpoint: stack.config.table.endpoint, name: table } };
  await writeIssuerFile(join(directory, `dev-issuer-${server.port}.json`), { ...file, url, ...named });
  return directory;
}

/** The command `limits <tenant> <args>` on the dev server's table, dev servers looked for in `directory`. */
function limitsOnTable(tenantId: string, args: string[], directory: string, env: NodeJS.ProcessEnv = {}) {
  const where = ["--endpoint", stack.config.table.endpoint as string, "--table", stack.config.table.name];
  return runLimitsCommand(parseLimitsCommand(["limits", tenantId, ...args, ...where], {}), env, {
    devServers: directory,
  });
}

describe("npm run tenant -- limits with npm run dev on the same table", () => {
  it("sends the change through the dev server, which stores it once and wakes the run waiting for budget", async () => {
    const tenantId = "tenant_dev_wake";
    stack.model.script(budgetWaitScript());
    const started = await startAsyncRun(stack, tenantId, BUDGET_PROMPT);
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(paused.status).toBe("awaiting_quota");
    const waits = new QuotaWaitStore(stack.deps.ddb, stack.config.table.name);
    expect((await waits.list(tenantId)).map((wait) => wait.runId)).toEqual([started.runId]);

    const result = await limitsOnTable(tenantId, ["--user-tokens-per-day", "100000"], devServers);
    // updatedAt is the dev server's quotas clock: it stored the change, and nothing wrote it again.
    const stored = { updatedBy: OPERATOR, updatedAt: new Date(QUOTAS_NOW).toISOString() };
    expect(result).toEqual({
      // The dev server's answer: its limits in force (its USER_TOKENS_PER_DAY replaced by the change).
      limits: {
        tenant: { runsPerMinute: null, concurrentRuns: null, tokensPerDay: null, costPerDay: null },
        user: { runsPerMinute: null, tokensPerDay: 100_000, costPerDay: null },
      },
      tenantSet: { tenant: {}, user: { tokensPerDay: 100_000 } },
      ...stored,
      wake: {
        waiting: 1,
        note: `Stored by \`npm run dev\` on port ${server.port} (PUT /v1/limits), which was asked to wake the tenant's runs waiting for budget there: each tries again with the new limits.`,
      },
    });
    const limits = new QuotaLimitStore(stack.deps.ddb, stack.config.table.name);
    expect(await limits.get(tenantId)).toEqual({ limits: { userTokensPerDay: 100_000 }, ...stored });

    const done = await pollUntil(stack, started.runId, tenantId, ["running", "awaiting_quota"]);
    expect(done.status).toBe("completed");
    expect(done.answer).toBe("The tax is 20.00 GBP.");
    expect(await waits.list(tenantId)).toEqual([]);
  });

  it("fails with the dev server's refusal (its model has no price) and stores nothing", async () => {
    const tenantId = "tenant_dev_refused";
    // The shell has a price; the dev server, whose settings check the change, has none.
    const refused = limitsOnTable(tenantId, ["--user-cost-per-day", "2.50"], devServers, {
      MODEL_PRICES: PRICES,
    });
    await expect(refused).rejects.toThrow(
      `\`npm run dev\` on port ${server.port} refused the change: The model gpt-4o-mini has no price in MODEL_PRICES`,
    );
    // The command line states it as the API does, code and sentence, and exits 2: the input was refused.
    const where = ["--endpoint", stack.config.table.endpoint as string, "--table", stack.config.table.name];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const code = await main(
        ["limits", tenantId, "--user-cost-per-day", "2.50", ...where],
        {
          MODEL_PRICES: PRICES,
        },
        { devServers },
      );
      expect(code).toBe(2);
      expect(stderr.mock.calls.map(([text]) => String(text)).join("")).toBe(
        `tenant: INVALID_REQUEST: \`npm run dev\` on port ${server.port} refused the change: The model gpt-4o-mini has no price in MODEL_PRICES, so a cost limit cannot be checked: give it one there (docs/quotas.md) or set token limits.\n`,
      );
    } finally {
      stderr.mockRestore();
    }
    const limits = new QuotaLimitStore(stack.deps.ddb, stack.config.table.name);
    expect(await limits.get(tenantId)).toEqual({ limits: {}, updatedBy: null, updatedAt: null });
  });
});

describe("npm run tenant -- limits without a dev server that can wake the runs", () => {
  it("stores the change itself and says why none was woken: no dev server, another table, an error", async () => {
    const waits = new QuotaWaitStore(stack.deps.ddb, stack.config.table.name);
    const port = server.port;
    const table = stack.config.table;
    const untrusted = await createDevIssuer();
    const cases = [
      {
        directory: mkdtempSync(join(tmpdir(), "boundloop-no-dev-")),
        why: "No `npm run dev` with a local issuer is running (no .boundloop/dev-issuer-<port>.json of a live process).",
      },
      {
        directory: await issuerDirectory(issuer, "another-table"),
        why: `\`npm run dev\` on port ${port} uses the table another-table at ${table.endpoint}, not ${table.name} at ${table.endpoint}.`,
      },
      {
        directory: await issuerDirectory(issuer, undefined),
        why: `\`npm run dev\` on port ${port} does not say which table it uses (it started before dev servers did: restart it).`,
      },
      {
        // A key the dev server does not trust: its gateway answers 401.
        directory: await issuerDirectory(untrusted, table.name),
        why: `\`npm run dev\` on port ${port} answered 401 (Unauthorized): the change was stored here instead.`,
      },
      {
        directory: await issuerDirectory(issuer, table.name, "http://127.0.0.1:9"),
        why: `\`npm run dev\` on port ${port} did not answer (fetch failed): the change was stored here instead.`,
      },
    ];
    for (const [index, { directory, why }] of cases.entries()) {
      const tenantId = `tenant_dev_none_${index}`;
      const wait = { runId: "run_waiting", callbackId: "cb-1", waitName: "cycle-2:quota#1", since: "x" };
      await waits.put(tenantId, wait, Math.floor(QUOTAS_NOW / 1000) + 86_400);
      const result = await limitsOnTable(tenantId, ["--user-tokens-per-day", "90000"], directory);
      expect(result.wake).toEqual({ waiting: 1, woken: 0, note: `${why} ${LOCAL_WAKE_NOTE}` });
      expect(result.tenantSet).toEqual({ tenant: {}, user: { tokensPerDay: 90_000 } });
      expect(result.updatedBy).toBe(OPERATOR);
      // Still waiting: nothing here could complete its callback.
      expect(await waits.list(tenantId)).toEqual([wait]);
    }
  });
});
