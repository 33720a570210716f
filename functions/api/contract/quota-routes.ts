import { createRoute } from "@hono/zod-openapi";
import { security } from "./common.js";
import { authErrors, payloadTooLarge, problem } from "./problems.js";
import { LimitsChangeBody, LimitsResponseSchema, QuotaUsageSchema } from "./quotas.js";

/** `GET /v1/usage`: the caller's usage today, and the tenant's with billing:read (docs/quotas.md). */
export const getUsageRoute = createRoute({
  method: "get",
  path: "/v1/usage",
  summary: "Usage today and this minute: the caller's, and the tenant's with billing:read",
  security,
  responses: {
    200: {
      description: "The usage and the limits in force.",
      content: { "application/json": { schema: QuotaUsageSchema } },
    },
    ...authErrors,
  },
});

/** `GET /v1/limits`: the tenant's limits in force and its own overrides (`limits:admin` or `billing:read`). */
export const getLimitsRoute = createRoute({
  method: "get",
  path: "/v1/limits",
  summary: "The tenant's limits in force and what it set itself (limits:admin or billing:read)",
  security,
  responses: {
    200: {
      description:
        "The limits in force, what the tenant set itself (the rest comes from the deploy settings), who set it and when (null: never); the same body as PUT /v1/limits answers. Read afresh: a change shows at once.",
      content: { "application/json": { schema: LimitsResponseSchema } },
    },
    403: problem(
      "FORBIDDEN: the caller holds neither `limits:admin` nor `billing:read` (`requiredPermission`: limits:admin).",
    ),
    ...authErrors,
  },
});

/** `PUT /v1/limits`: change the tenant's own limits (permission `limits:admin`). */
export const putLimitsRoute = createRoute({
  method: "put",
  path: "/v1/limits",
  summary: "Change the tenant's own limits (limits:admin); null falls back to the deploy setting",
  security,
  request: { body: { required: true, content: { "application/json": { schema: LimitsChangeBody } } } },
  responses: {
    200: {
      description:
        "The limits in force now. Runs waiting for budget (`awaiting_quota`) are woken to try again.",
      content: { "application/json": { schema: LimitsResponseSchema } },
    },
    400: problem(
      "INVALID_REQUEST: the body fails the schema (`errors` says where), or sets a cost limit while the configured model has no price in MODEL_PRICES.",
    ),
    403: problem("FORBIDDEN: the caller lacks `limits:admin` (`requiredPermission`)."),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    ...authErrors,
  },
});
