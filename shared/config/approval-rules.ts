/**
 * Configuration section: human approval (docs/approvals.md).
 * - APPROVAL_RULES (default none): which tool calls wait for a person's approval, see {@link ApprovalRules}.
 * - APPROVAL_TIMEOUT_SECONDS (default 86400 s = 24 h, the issue's default): how long an approval waits
 *   for a decision before the call gets business_error APPROVAL_EXPIRED. At most 30 days (an approval
 *   must be decided within the run records' retention: RUN_TTL_SECONDS must exceed it, checked at cold
 *   start by the retention section, shared/config/retention.ts).
 */
import * as z from "zod/mini";
import { jsonEnv, positiveInt } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/**
 * APPROVAL_RULES: JSON object from a tool that declares an approval policy (today `recordInvoice`) to
 * a per-currency threshold (ISO 4217 code → a positive decimal string in major units, e.g.
 * `{"recordInvoice":{"GBP":"1000.00"}}`). A call whose backend amount (for recordInvoice: the quote's
 * gross total) is at or above its currency's threshold waits for a person's approval
 * (docs/approvals.md). Unset or empty: no approvals.
 */
const ApprovalRules = z.pipe(
  jsonEnv,
  z.strictObject({
    recordInvoice: z.optional(
      z
        .record(
          z.string(),
          z
            .string()
            .check(
              z.regex(
                /^(?:0|[1-9]\d{0,14})(?:\.\d{1,4})?$/,
                'thresholds must be decimal strings in major units, e.g. "1000.00"',
              ),
            ),
        )
        .check(
          z.refine((rule) => Object.keys(rule).every((currency) => /^[A-Z]{3}$/.test(currency)), {
            message: "keys must be ISO 4217 currency codes (GBP, BDT, …)",
          }),
        ),
    ),
  }),
);

/** The approvals section's variables, see the module comment. */
export const approvalFields = {
  APPROVAL_RULES: ApprovalRules,
  APPROVAL_TIMEOUT_SECONDS: positiveInt(86_400, 30 * 86_400),
};

/** APPROVAL_RULES parsed: tool name → ISO 4217 currency → threshold (decimal string, major units). */
export type ApprovalRulesConfig = z.output<typeof ApprovalRules>;

/**
 * The approvals section: `approvals`, `rules` (per tool the per-currency thresholds, decimal strings,
 * major units; `{}` means no approvals) and `timeoutSeconds`, how long an approval waits for its decision.
 */
export const approvalSection = configSection({
  fields: approvalFields,
  config: (env): { approvals: { rules: ApprovalRulesConfig; timeoutSeconds: number } } => ({
    approvals: { rules: env.APPROVAL_RULES, timeoutSeconds: env.APPROVAL_TIMEOUT_SECONDS },
  }),
});

/** The prose of the approvals section's variables (docs/configuration.md). */
export const approvalDocs: SectionDocs<typeof approvalFields> = {
  APPROVAL_RULES: {
    group: "Approvals",
    description:
      'Which tool calls wait for a person\'s approval (docs/approvals.md): JSON from a tool with an approval policy (`recordInvoice`) to ISO 4217 currency → threshold in major units, e.g. `{"recordInvoice":{"GBP":"1000.00"}}`: an invoice whose quote\'s gross total is at or above it waits. Unset: no approvals. Needs a durable runner (else such a call gets business_error APPROVAL_UNAVAILABLE and does not run).',
  },
  APPROVAL_TIMEOUT_SECONDS: {
    group: "Approvals",
    unit: "s",
    description:
      "How long an approval waits for its decision; then the call gets business_error APPROVAL_EXPIRED and the run goes on. Default 24 h. Time spent waiting does not count against the run's deadline; the stack sizes the runner's execution timeout to hold it. RUN_TTL_SECONDS must exceed it.",
  },
};
