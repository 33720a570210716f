import { serializeList } from "structured-headers";
import { type AdmissionPolicy, QuotaUnavailableError, RateLimitedError } from "../../shared/quotas/errors.js";
import { ProblemError } from "./problem-details.js";

/**
 * The quotas' domain errors at the HTTP edge (docs/quotas.md "Admission"): a run refused at the door is
 * 429 RATE_LIMITED with `Retry-After` (RFC 9110 §10.2.3: the seconds until one more is admitted) and the
 * IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy` lists every admission
 * policy in force (`"user-minute";q=2;w=60`, `"tenant-concurrent";q=5;qu="concurrent-requests"`) and
 * `RateLimit` what is left of each (`"user-minute";r=0;t=37`), both as Structured Field lists (RFC 9651,
 * serialized with `structured-headers`). A quota store that failed is 503 QUOTA_UNAVAILABLE with a fixed
 * sentence. Anything else is not the quotas' (undefined).
 */
export function quotaProblem(error: unknown): ProblemError | undefined {
  if (error instanceof RateLimitedError) {
    const { refused, policies, retryAfterSeconds } = error;
    return new ProblemError("RATE_LIMITED", error.message, {
      extensions: { policy: refused.id, limit: refused.quota, retryAfterSeconds },
      headers: { "retry-after": String(retryAfterSeconds), ...rateLimitFields(policies) },
    });
  }
  if (error instanceof QuotaUnavailableError) return new ProblemError("QUOTA_UNAVAILABLE", error.message);
  return undefined;
}

/** The `RateLimit-Policy` and `RateLimit` fields of `policies` (none when the list is empty). */
export function rateLimitFields(policies: readonly AdmissionPolicy[]): Record<string, string> {
  if (policies.length === 0) return {};
  const policy = policies.map((p): [string, Map<string, string | number>] => [
    p.id,
    new Map<string, string | number>([
      ["q", p.quota],
      ...(p.windowSeconds === null ? [] : ([["w", p.windowSeconds]] as Array<[string, number]>)),
      ...(p.unit === "requests" ? [] : ([["qu", p.unit]] as Array<[string, string]>)),
    ]),
  ]);
  const state = policies.map((p): [string, Map<string, number>] => [
    p.id,
    new Map<string, number>([
      ["r", p.remaining],
      ...(p.resetSeconds === null ? [] : ([["t", p.resetSeconds]] as Array<[string, number]>)),
    ]),
  ]);
  return { "ratelimit-policy": serializeList(policy), ratelimit: serializeList(state) };
}
