/** The HTTP contract of `GET /v1/me`: the caller as the API verified it. */

import { createRoute, z } from "@hono/zod-openapi";
import { security } from "./common.js";
import { authErrors } from "./problems.js";

/** 200 body of `GET /v1/me`: the verified security context (shared/identity.ts SecurityContext). */
export const CallerSchema = z
  .object({
    userId: z.string(),
    tenantId: z.string(),
    permissions: z.array(z.string()),
  })
  .strict()
  .openapi("Caller", {
    description: "The caller as every route sees it: the permissions the routes check.",
  });

/** `GET /v1/me`: who the caller is and what it holds, so a client offers only what the API allows. */
export const getCallerRoute = createRoute({
  method: "get",
  path: "/v1/me",
  summary: "The caller as the API verified it: user, tenant and permissions",
  security,
  responses: {
    200: { description: "The caller.", content: { "application/json": { schema: CallerSchema } } },
    ...authErrors,
  },
});
