import type { Context } from "hono";

/** The liveness route's path (public: no authorizer; see functions/api/contract/health.ts `healthRoute`). */
export const HEALTH_PATH = "/healthz";

/**
 * `GET /healthz`: 200 `{"status":"ok"}`. One handler for both places that serve it: the deployed entry
 * (functions/api/handler.ts, which answers it before loading the app) and the app (functions/api/app.ts,
 * whose OpenAPI document describes it).
 */
export function healthResponse(c: Context) {
  return c.json({ status: "ok" as const }, 200);
}
