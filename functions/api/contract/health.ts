/** The HTTP contract of `GET /healthz`. */

import { createRoute, z } from "@hono/zod-openapi";
import { HEALTH_PATH } from "../health.js";

/** 200 body of `GET /healthz`. */
export const HealthSchema = z
  .object({ status: z.literal("ok") })
  .strict()
  .openapi("Health");

/** `GET /healthz`: liveness, no auth. */
export const healthRoute = createRoute({
  method: "get",
  path: HEALTH_PATH,
  summary: "Liveness check (no auth)",
  responses: {
    200: {
      description: "The function is up.",
      content: { "application/json": { schema: HealthSchema } },
    },
  },
});
