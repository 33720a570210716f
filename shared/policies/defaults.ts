/**
 * The deployment's default policy set (docs/policies.md): POLICIES (Cedar text), or the policies the
 * APPROVAL_RULES shorthand stands for. A tenant's own enforced set replaces it.
 */
import { Decimal, MINOR_UNITS } from "../money/money.js";

/** APPROVAL_RULES parsed: tool → ISO 4217 currency → threshold (decimal string, major units). */
export type ApprovalThresholds = Readonly<Record<string, Readonly<Record<string, string>> | undefined>>;

/** The id of the base permit the APPROVAL_RULES shorthand's set starts with. */
export const BASE_POLICY_ID = "boundloop.base";

/** The id of the approval policy APPROVAL_RULES makes for one tool and currency. */
export function approvalRuleId(toolName: string, currency: string): string {
  return `approval-rules.${toolName}.${currency}`;
}

/**
 * The threshold of an APPROVAL_RULES entry in minor units: the smallest whole number of minor units at
 * or above it (a gross total is whole minor units, so "at or above 1000.005 GBP" is ≥ 100001). A
 * currency outside the service's table counts 2 digits: no quote is ever in it.
 */
export function thresholdMinor(threshold: string, currency: string): number {
  // A currency the service does not support never matches a quote: its digits do not matter.
  const digits = MINOR_UNITS[currency] ?? 2;
  const scaled = new Decimal(threshold).times(new Decimal(`1e${digits}`));
  return Number(scaled.round(0, 3 /* Big.roundUp */).toFixed(0));
}

/**
 * The Cedar the APPROVAL_RULES shorthand stands for: a base permit of every call, and per tool and
 * currency an approval policy on the backend's gross total, e.g. for `{"recordInvoice":{"GBP":"1000.00"}}`:
 *
 * ```cedar
 * @id("boundloop.base")
 * permit (principal, action, resource);
 *
 * @id("approval-rules.recordInvoice.GBP")
 * @approval("required")
 * permit (principal, action == Action::"recordInvoice", resource)
 * when { context.facts.currency == "GBP" && context.facts.grossMinor >= 100000 };
 * ```
 */
export function approvalRulesCedar(rules: ApprovalThresholds): string {
  const approvals = Object.entries(rules).flatMap(([toolName, thresholds]) =>
    Object.entries(thresholds ?? {}).map(
      ([currency, threshold]) =>
        `@id("${approvalRuleId(toolName, currency)}")\n@approval("required")\n` +
        `permit (principal, action == Action::"${toolName}", resource)\n` +
        `when { context.facts.currency == "${currency}" && context.facts.grossMinor >= ${thresholdMinor(threshold, currency)} };\n`,
    ),
  );
  return [`@id("${BASE_POLICY_ID}")\npermit (principal, action, resource);\n`, ...approvals].join("\n");
}

/** The approval policies' thresholds by policy id, so a preview can say which threshold was reached. */
export function approvalRuleThresholds(rules: ApprovalThresholds): Map<string, string> {
  return new Map(
    Object.entries(rules).flatMap(([toolName, thresholds]) =>
      Object.entries(thresholds ?? {}).map(([currency, threshold]) => [
        approvalRuleId(toolName, currency),
        threshold,
      ]),
    ),
  );
}

/**
 * The default set's text: POLICIES when set, else the APPROVAL_RULES shorthand's when it has a rule, else
 * null (no policies: every call that passes its permission runs, as before policies). Config refuses the
 * two together (shared/config.ts), so neither silently changes the other.
 */
export function defaultPolicyText(policies: string | undefined, rules: ApprovalThresholds): string | null {
  if (policies) return policies;
  const hasRule = Object.values(rules).some((thresholds) => thresholds && Object.keys(thresholds).length > 0);
  return hasRule ? approvalRulesCedar(rules) : null;
}
