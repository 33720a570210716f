/**
 * How `npm run tenant -- limits` (local/tenant.ts) reaches the runs of a running `npm run dev` that wait
 * for budget when it changes a local table's limits. Their durable waits live in the dev server's
 * process, so only that process can wake them, and only through its API: when a running dev server uses
 * the same table (its issuer file, `.boundloop/dev-issuer-<port>.json` of a live process, names its URL
 * and table: local/dev-serve.ts), the change is sent to its `PUT /v1/limits` with a short-lived token of
 * its local issuer (sub `operator:<login>`, the tenant, `limits:admin`). The one use case
 * (shared/quotas/api.ts limitsChange) then stores it once, checked against the dev server's settings,
 * and wakes the tenant's waiting runs. Sending an empty change after writing the table would not do:
 * every `PUT /v1/limits` writes `updatedBy` and `updatedAt` again.
 *
 * Otherwise the command stores the change itself, and {@link devServerOnTable} or
 * {@link changeThroughDevServer} says why no run was woken: no dev server running, one on another table
 * (or one that does not say which: started before it named it), or one that answered an error.
 */
import { z } from "zod";
import { LimitsResponseSchema } from "../functions/api/contract/quotas.js";
import { DomainError } from "../shared/domain-errors.js";
import type { SecurityContext } from "../shared/identity.js";
import { LIMITS_ADMIN, type LimitsView } from "../shared/quotas/api.js";
import type { LimitsChange } from "../shared/quotas/limits.js";
import { type DevIssuerFile, mintToken, readIssuerFile, runningIssuerFiles } from "./dev-auth.js";

/** Why runs waiting for budget were not woken, and when they try again (docs/quotas.md "Per-tenant overrides"). */
export const LOCAL_WAKE_NOTE =
  "Runs waiting for budget were not woken from here: each tries again with the new limits when its wait times out (the end of the UTC day, or its last try once QUOTA_WAIT_SECONDS are spent), or at once after PUT /v1/limits (an empty body is enough) on the dev server it runs in.";

/** How long the dev server has to answer `PUT /v1/limits` (ms) before the change is stored here instead. */
const DEV_SERVER_TIMEOUT_MS = 30_000;

/** How long the token minted for that one request lives. */
const TOKEN_LIFETIME = "2m";

/** A running dev server on the command's table: its port, URL and local issuer. */
export interface DevServerOnTable {
  port: number;
  url: string;
  issuer: DevIssuerFile;
  /** Ports of further dev servers on the same table: their waiting runs are not woken (one is asked). */
  others: number[];
}

/** A table as the command targets it: a local DynamoDB endpoint and the table's name. */
export interface LocalTable {
  endpoint: string;
  table: string;
}

/** An endpoint's URL with the loopback names made one (`localhost`, `[::1]` → 127.0.0.1), or the text as is. */
function endpointKey(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    if (["localhost", "[::1]"].includes(url.hostname)) url.hostname = "127.0.0.1";
    return url.origin;
  } catch {
    return endpoint;
  }
}

/**
 * The running dev server that uses `target`'s table (the same table name at the same DynamoDB endpoint,
 * loopback names alike), the first by port when several do; else a note saying why none is asked.
 * @param directory where dev servers write their issuer files (default the repo's `.boundloop/`)
 */
export async function devServerOnTable(
  target: LocalTable,
  directory?: string,
): Promise<DevServerOnTable | { note: string }> {
  const running = await runningIssuerFiles(directory);
  const reasons: string[] = [];
  const matches: Array<{ port: number; url: string; issuer: DevIssuerFile }> = [];
  for (const { port, path } of running) {
    const issuer = await readIssuerFile(path).catch(() => undefined);
    if (!issuer) continue;
    const { table, url } = issuer;
    if (!table || !url) {
      reasons.push(
        `\`npm run dev\` on port ${port} does not say which table it uses (it started before dev servers did: restart it).`,
      );
    } else if (
      table.name !== target.table ||
      endpointKey(table.endpoint ?? "") !== endpointKey(target.endpoint)
    ) {
      reasons.push(
        `\`npm run dev\` on port ${port} uses the table ${table.name} at ${table.endpoint ?? "AWS"}, not ${target.table} at ${target.endpoint}.`,
      );
    } else matches.push({ port, url, issuer });
  }
  const [first, ...rest] = matches;
  if (first) return { ...first, others: rest.map((match) => match.port) };
  if (reasons.length === 0)
    reasons.push(
      "No `npm run dev` with a local issuer is running (no .boundloop/dev-issuer-<port>.json of a live process).",
    );
  return { note: `${reasons.join(" ")} ${LOCAL_WAKE_NOTE}` };
}

/** The parts of a problem+json (or the gateway's `{message}`) an answer is described by. */
const AnswerSchema = z.looseObject({
  code: z.string().optional(),
  detail: z.string().optional(),
  message: z.string().optional(),
  errors: z.array(z.unknown()).optional(),
});

/** What became of a change sent to a dev server: its answer (the limits in force there, what the tenant set) once it stored it, and a note. */
export interface DevServerAnswer {
  view?: LimitsView;
  note: string;
}

/**
 * Sends `change` to the dev server's `PUT /v1/limits` as `security` (a token of its issuer, valid two
 * minutes, with `limits:admin`), which stores it and wakes the tenant's waiting runs.
 * @returns its answer (the limits in force there, what the tenant has set) and a note naming the dev
 *   server; or, when the dev server
 *   did not answer or answered an error other than a refusal of the change, only a note saying so (the
 *   change is then not stored by it: the caller stores it)
 * @throws DomainError INVALID_REQUEST when the dev server refuses the change (e.g. a cost limit while its
 *   model has no price in its MODEL_PRICES): nothing stored
 */
export async function changeThroughDevServer(
  server: DevServerOnTable,
  security: SecurityContext,
  change: LimitsChange,
): Promise<DevServerAnswer> {
  const where = `\`npm run dev\` on port ${server.port}`;
  const failed = (what: string) => ({
    note: `${where} ${what}: the change was stored here instead. ${LOCAL_WAKE_NOTE}`,
  });
  let status: number;
  let body: unknown;
  try {
    const token = await mintToken(
      server.issuer,
      { sub: security.userId, tenant_id: security.tenantId, scope: LIMITS_ADMIN },
      { expiresIn: TOKEN_LIFETIME },
    );
    const response = await fetch(`${server.url}/v1/limits`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(change),
      signal: AbortSignal.timeout(DEV_SERVER_TIMEOUT_MS),
    });
    status = response.status;
    const text = await response.text();
    body = text ? JSON.parse(text) : undefined;
  } catch (error) {
    return failed(`did not answer (${error instanceof Error ? error.message : String(error)})`);
  }
  if (status === 200) {
    const parsed = LimitsResponseSchema.safeParse(body);
    if (!parsed.success) return failed("answered 200 with a body that is not PUT /v1/limits'");
    const view = parsed.data;
    const others =
      server.others.length > 0
        ? ` The dev servers on ports ${server.others.join(", ")} use this table too: their waiting runs were not woken.`
        : "";
    const note = `Stored by ${where} (PUT /v1/limits), which was asked to wake the tenant's runs waiting for budget there: each tries again with the new limits.${others}`;
    return { view, note };
  }
  const answer = AnswerSchema.safeParse(body);
  const problem = answer.success ? answer.data : {};
  if (status === 400 && problem.code === "INVALID_REQUEST") {
    throw new DomainError("INVALID_REQUEST", `${where} refused the change: ${problem.detail ?? ""}`, {
      facts: { errors: problem.errors ?? [] },
    });
  }
  const said = problem.detail ?? problem.message;
  return failed(`answered ${status}${problem.code ? ` ${problem.code}` : ""}${said ? ` (${said})` : ""}`);
}
