import { limitsChange, limitsView, usageOfCaller } from "../../../shared/quotas/api.js";
import { getLimitsRoute, getUsageRoute, putLimitsRoute } from "../contract/quota-routes.js";
import { type GetDeps, routeGroup } from "./deps.js";

/**
 * `GET /v1/usage`, `GET /v1/limits` and `PUT /v1/limits` (docs/quotas.md): each maps HTTP to the quotas' application layer
 * (shared/quotas/api.ts) and back, nothing else.
 */
export function quotaRoutes(deps: GetDeps) {
  return routeGroup()
    .openapi(getUsageRoute, async (c) => c.json(await usageOfCaller(deps(), c.get("security")), 200))
    .openapi(getLimitsRoute, async (c) => c.json(await limitsView(deps(), c.get("security")), 200))
    .openapi(putLimitsRoute, async (c) =>
      c.json(await limitsChange(deps(), c.get("security"), c.req.valid("json")), 200),
    );
}
