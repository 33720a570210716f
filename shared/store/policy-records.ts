/**
 * What the policy store keeps of a tenant's sets, as zod schemas, each the source of its type: a kept
 * version and a shadow decision. The store (shared/store/policy-sets.ts) parses what it reads with
 * them, the HTTP contract (functions/api/contract/policies.ts) publishes them, and the console
 * (console/client/policies.ts) imports their types. No store code here, so each imports only the shapes.
 */
import * as z from "zod";

/** Whether a set is enforced, or only evaluated beside the enforced one and recorded (docs/policies.md). */
export const PolicyModeSchema = z.enum(["enforce", "shadow"]);

/** A policy set's mode, see {@link PolicyModeSchema}. */
export type PolicyMode = z.infer<typeof PolicyModeSchema>;

/**
 * One version of a tenant's policy set, as kept: the Cedar text, its mode, its number (1, 2, … per
 * tenant), who stored it and when (ISO 8601).
 */
export const PolicySetVersionSchema = z
  .object({
    policies: z.string(),
    mode: PolicyModeSchema,
    version: z.number().int().positive(),
    updatedBy: z.string(),
    updatedAt: z.string(),
  })
  .strict();

/** One kept version of a tenant's policy set, see {@link PolicySetVersionSchema}. */
export type PolicySetVersion = z.infer<typeof PolicySetVersionSchema>;

/**
 * A decision the shadow set would have made differently from the enforced set (docs/policies.md), kept
 * for the list of what shadow mode would have changed: when, which run and tool call, who, the facts the
 * backend vouched for, and both decisions with their determining policies and set versions (the
 * enforced one's null: the deployment's default set).
 */
export const ShadowDecisionRecordSchema = z
  .object({
    decidedAt: z.string(),
    runId: z.string(),
    toolCallId: z.string(),
    toolName: z.string(),
    userId: z.string(),
    facts: z.record(z.string(), z.unknown()).describe("The facts the backend vouched for."),
    enforced: z
      .object({ decision: z.string(), policyIds: z.array(z.string()), version: z.number().int().nullable() })
      .strict(),
    shadow: z
      .object({ decision: z.string(), policyIds: z.array(z.string()), version: z.number().int() })
      .strict(),
  })
  .strict();

/** A shadow decision that differed, see {@link ShadowDecisionRecordSchema}. */
export type ShadowDecisionRecord = z.infer<typeof ShadowDecisionRecordSchema>;

/**
 * A tenant's set as `GET` and `PUT /v1/policies` answer it (the body; its ETag travels as a header): the
 * latest version (the tenant's own, or the default with `source: "default"` and version null), its mode,
 * who stored it and when, and the version enforced meanwhile (`enforcedVersion`: the latest when
 * enforcing; while in shadow, the last enforced version, null when that is the default).
 */
export const PolicySetBodySchema = z
  .object({
    policies: z.string().describe("The Cedar text (empty: no default set and none of the tenant's)."),
    mode: PolicyModeSchema,
    version: z.number().int().positive().nullable().describe("The tenant's version; null for the default."),
    updatedBy: z.string().nullable(),
    updatedAt: z.string().nullable(),
    source: z.enum(["tenant", "default"]),
    enforcedVersion: z
      .number()
      .int()
      .positive()
      .nullable()
      .describe(
        "The version enforced: this one when `mode` is enforce; while it is in shadow, the tenant's last enforced version (null: the default set is enforced).",
      ),
  })
  .strict();

/** The body of a tenant's set view, see {@link PolicySetBodySchema}. */
export type PolicySetBody = z.infer<typeof PolicySetBodySchema>;

/**
 * Why a set was refused: the policy (its id; null when the text does not parse far enough to say), the
 * 1-based line and column in the set's text, and the engine's message (with its hint, when it gives one).
 */
export const PolicyIssueSchema = z
  .object({
    policyId: z.string().nullable(),
    line: z.number().int().positive(),
    column: z.number().int().positive(),
    message: z.string(),
  })
  .strict();

/** A refused set's issue, see {@link PolicyIssueSchema}. */
export type PolicyIssue = z.infer<typeof PolicyIssueSchema>;
