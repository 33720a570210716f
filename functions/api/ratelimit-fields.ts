import { serializeList } from "structured-headers";
import type { AdmissionPolicy } from "../../shared/domain-errors.js";

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers) of a 429 RATE_LIMITED
 * (docs/quotas.md "Admission"; functions/api/problem-details.ts adds them): `RateLimit-Policy` lists every
 * admission policy in force (`"user-minute";q=2;w=60`, `"tenant-concurrent";q=5;qu="concurrent-requests"`)
 * and `RateLimit` what is left of each (`"user-minute";r=0;t=37`), both as Structured Field lists
 * (RFC 9651, serialized with `structured-headers`).
 */
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
