import { getCallerRoute } from "../contract/caller.js";
import { routeGroup } from "./deps.js";

/** `GET /v1/me`: the caller's verified security context, mapped to JSON and nothing else. */
export function callerRoutes() {
  return routeGroup().openapi(getCallerRoute, (c) => {
    const { userId, tenantId, permissions } = c.get("security");
    return c.json({ userId, tenantId, permissions: [...permissions] }, 200);
  });
}
