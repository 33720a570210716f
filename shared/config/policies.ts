/**
 * Configuration section: the default policy set (docs/policies.md).
 * - POLICIES (default none): the default Cedar policy set of every tenant without an enforced set of its
 *   own, at most 32 000 characters. Unset: no policies (every call that passes its permission runs), or
 *   the policies the APPROVAL_RULES shorthand stands for; the two are not set together (the shorthand is
 *   a default set: write its approval policies into POLICIES, docs/policies.md gives the equivalent Cedar).
 *   Validated against the schema generated from the tool registry at synth (infra/settings.ts) and by
 *   `npm start -- --policies`; at cold start only its size is checked, since the engine is loaded off the
 *   cold-start path, and a set that does not validate refuses every decision (fail closed) with the policy
 *   and line in the log.
 */
import * as z from "zod/mini";
import { approvalFields } from "./approval-rules.js";
import { optionalString } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** The longest POLICIES accepted, in characters (a tenant's set has the same bound). */
export const MAX_POLICIES_CHARS = 32_000;

/** The policies section's variables, see the module comment. */
export const policyFields = {
  POLICIES: z.pipe(optionalString, z.optional(z.string().check(z.maxLength(MAX_POLICIES_CHARS)))),
};

/** The policies section: `policies.text`, the default set's Cedar text (undefined: none). */
export const policySection = configSection({
  fields: policyFields,
  reads: { APPROVAL_RULES: approvalFields.APPROVAL_RULES },
  config: (env): { policies: { text: string | undefined } } => ({ policies: { text: env.POLICIES } }),
  problems: (env) =>
    env.POLICIES && Object.keys(env.APPROVAL_RULES).length > 0
      ? [
          "Set POLICIES or APPROVAL_RULES, not both: APPROVAL_RULES is a shorthand for a default policy set; write its approval policies into POLICIES (docs/policies.md gives the equivalent Cedar).",
        ]
      : [],
});

/** The prose of the policies section's variables (docs/configuration.md). */
export const policyDocs: SectionDocs<typeof policyFields> = {
  POLICIES: {
    group: "Approvals",
    description:
      "The default Cedar policy set of every tenant without an enforced set of its own (docs/policies.md), at most 32 000 characters; a tenant's set (PUT /v1/policies) replaces it. Unset: no policies (or APPROVAL_RULES' policies, which it cannot be set with). Validated against the schema generated from the tool registry at synth (the deploy setting `policies`) and by `npm start -- --policies <file>`; a set that does not validate refuses every decision (fail closed, POLICY_CHECK_FAILED) and the log names the policy and line.",
  },
};
