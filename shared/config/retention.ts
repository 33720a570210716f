/**
 * Configuration section: how long quotes, Idempotency-Key records and run records live.
 * - QUOTE_TTL_SECONDS (default 900 s = 15 min): how long a calculateTax quote can be recorded. Long
 *   enough for a run (at most RUN_TIMEOUT_MS) plus a user confirming in a follow-up run; short enough
 *   that a rule-table change or a stale conversation does not reach the ledger much later.
 * - IDEMPOTENCY_TTL_SECONDS (default 86400 s = 24 h): retention of an Idempotency-Key record (24 h, as
 *   Stripe keeps keys); written as the epoch-seconds `ttl` attribute, and checked by every condition
 *   because DynamoDB's TTL deletion lags (up to days).
 * - IDEMPOTENCY_KEY_REQUIRED (default false): when true, `POST /v1/runs` without an Idempotency-Key is a 400.
 * - RUN_TTL_SECONDS (default 2592000 s = 30 days): how long run records and their audit steps live
 *   before DynamoDB TTL removes them. Long enough to answer a dispute or support ticket within a monthly
 *   billing cycle; short enough not to keep model-generated text (tool arguments, answers) for good.
 *   The ledger's invoices never expire: they are the business record, runs are the operational one.
 * - PROMPT_EXCERPT_CHARS (default 500, 0 keeps none): how many characters of a run's prompt its record
 *   keeps (its start), shown to whoever may see the run (GET /v1/runs/{runId}, the console's runs);
 *   the whole prompt's length and SHA-256 are kept either way.
 */
import { approvalFields } from "./approval-rules.js";
import { durableRunsFields } from "./durable-runs.js";
import { envBoolean, envInt, positiveInt } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** The retention section's variables, see the module comment. */
export const retentionFields = {
  QUOTE_TTL_SECONDS: envInt(900, 60, 86_400),
  IDEMPOTENCY_TTL_SECONDS: positiveInt(86_400, 31_536_000),
  IDEMPOTENCY_KEY_REQUIRED: envBoolean(false),
  RUN_TTL_SECONDS: envInt(30 * 86_400, 3_600, 3_650 * 86_400),
  PROMPT_EXCERPT_CHARS: envInt(500, 0, 8_000),
};

/**
 * The retention section: `quotes` (`ttlSeconds`, seconds a tax quote stays usable by recordInvoice),
 * `idempotency` (`ttlSeconds`, record retention in s, and `keyRequired`, the Idempotency-Key header
 * mandatory) and `runs` (audit trail retention, `ttlSeconds`, and how much of a prompt a run record
 * keeps, `promptExcerptChars`, characters).
 *
 * Its rule: RUN_TTL_SECONDS must exceed APPROVAL_TIMEOUT_SECONDS and DURABLE_EXECUTION_TIMEOUT_SECONDS:
 * a run's record lives RUN_TTL_SECONDS from its start, and a durable run (paused for an approval up to
 * APPROVAL_TIMEOUT_SECONDS, within its execution timeout) still writes its outcome to it at the end.
 */
export const retentionSection = configSection({
  fields: retentionFields,
  reads: {
    APPROVAL_TIMEOUT_SECONDS: approvalFields.APPROVAL_TIMEOUT_SECONDS,
    DURABLE_EXECUTION_TIMEOUT_SECONDS: durableRunsFields.DURABLE_EXECUTION_TIMEOUT_SECONDS,
  },
  config: (
    env,
  ): {
    quotes: { ttlSeconds: number };
    idempotency: { ttlSeconds: number; keyRequired: boolean };
    runs: { ttlSeconds: number; promptExcerptChars: number };
  } => ({
    quotes: { ttlSeconds: env.QUOTE_TTL_SECONDS },
    idempotency: { ttlSeconds: env.IDEMPOTENCY_TTL_SECONDS, keyRequired: env.IDEMPOTENCY_KEY_REQUIRED },
    runs: { ttlSeconds: env.RUN_TTL_SECONDS, promptExcerptChars: env.PROMPT_EXCERPT_CHARS },
  }),
  problems: (env) => {
    const ttl = env.RUN_TTL_SECONDS;
    const outlived = [
      ["APPROVAL_TIMEOUT_SECONDS", env.APPROVAL_TIMEOUT_SECONDS, "a run paused for approval"],
      ["DURABLE_EXECUTION_TIMEOUT_SECONDS", env.DURABLE_EXECUTION_TIMEOUT_SECONDS, "a durable run"],
    ] as const;
    return outlived
      .filter(([, seconds]) => ttl <= seconds)
      .map(
        ([name, seconds, why]) =>
          `RUN_TTL_SECONDS (${ttl} s) must exceed ${name} (${seconds} s): ${why} would outlive its run record, and its outcome would be lost.`,
      );
  },
});

/** The prose of the retention section's variables (docs/configuration.md). */
export const retentionDocs: SectionDocs<typeof retentionFields> = {
  QUOTE_TTL_SECONDS: {
    group: "Quotes, idempotency and audit",
    unit: "s",
    description:
      "How long a calculateTax quote can be recorded by recordInvoice: long enough for a run plus a user confirming in a follow-up run, short enough that a rule-table change does not reach the ledger much later.",
  },
  IDEMPOTENCY_TTL_SECONDS: {
    group: "Quotes, idempotency and audit",
    unit: "s",
    description:
      "Retention of an `Idempotency-Key` record from completion, written as the epoch-seconds `ttl` attribute; every condition also compares it with the clock, because DynamoDB's TTL deletion lags.",
  },
  IDEMPOTENCY_KEY_REQUIRED: {
    group: "Quotes, idempotency and audit",
    description: "`true`: `POST /v1/runs` without an `Idempotency-Key` header is a 400 `INVALID_REQUEST`.",
  },
  RUN_TTL_SECONDS: {
    group: "Quotes, idempotency and audit",
    unit: "s",
    description:
      "How long run records and their audit steps live before DynamoDB TTL removes them: enough to answer a dispute within a monthly billing cycle without keeping model-generated text for good. Ledger invoices never expire. Must exceed APPROVAL_TIMEOUT_SECONDS and DURABLE_EXECUTION_TIMEOUT_SECONDS (checked at cold start), or a paused or long durable run would lose its record before it ends.",
  },
  PROMPT_EXCERPT_CHARS: {
    group: "Quotes, idempotency and audit",
    unit: "characters",
    description:
      "How many characters of a run's prompt (its start) the run record keeps, shown with the run to whoever may see it (its user, and the tenant's `billing:read` holders: GET /v1/runs, GET /v1/runs/{runId}, the console). 0 keeps none. The whole prompt's length and SHA-256 are kept either way; the prompt never reaches the run's events or logs.",
  },
};
