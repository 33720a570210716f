import * as z from "zod";
import { ProblemError } from "./errors.js";

/**
 * Who is calling, taken only from the verified identity API Gateway attaches to the event
 * (never from the request body).
 * - `userId`: the token's `sub`
 * - `tenantId`: the tenant claim (default `tenant_id`); every DynamoDB key starts with it
 * - `permissions`: scopes such as `billing:write`
 */
export interface SecurityContext {
  userId: string;
  tenantId: string;
  permissions: readonly string[];
}

/** Claim values as API Gateway delivers them: strings, or arrays of strings. */
const ClaimsSchema = z
  .object({
    sub: z.string().trim().min(1).max(256),
    tenant_id: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, "tenant_id must be 1-64 characters of A-Z a-z 0-9 _ -"),
    scope: z.union([z.string(), z.array(z.string())]).optional(),
  })
  .loose();

/**
 * Splits a permission claim: a space separated string, API Gateway's "[a b]" rendering of an array,
 * or a real array.
 */
function splitPermissions(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const items = Array.isArray(value) ? value : value.replace(/^\[(.*)\]$/s, "$1").split(/[\s,]+/);
  return [...new Set(items.map((item) => item.trim()).filter((item) => item.length > 0))];
}

/**
 * Builds the security context from an API Gateway HTTP API (v2) event's JWT authorizer claims
 * (`requestContext.authorizer.jwt.claims`).
 * @throws ProblemError UNAUTHENTICATED (401) when there are no claims, or `sub`/`tenant_id` are missing
 */
export function securityContextFromEvent(event: unknown): SecurityContext {
  const claims = (event as { requestContext?: { authorizer?: { jwt?: { claims?: unknown } } } } | undefined)
    ?.requestContext?.authorizer?.jwt?.claims;
  if (claims === undefined || claims === null) {
    throw new ProblemError(
      "UNAUTHENTICATED",
      "No verified identity: the request carried no authorizer claims.",
    );
  }
  const parsed = ClaimsSchema.safeParse(claims);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((issue) => issue.path.join(".") || "claims");
    throw new ProblemError("UNAUTHENTICATED", `The verified identity is incomplete: ${fields.join(", ")}.`);
  }
  return {
    userId: parsed.data.sub,
    tenantId: parsed.data.tenant_id,
    permissions: splitPermissions(parsed.data.scope),
  };
}
