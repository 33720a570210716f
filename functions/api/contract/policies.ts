/**
 * The HTTP contract of the policies (docs/policies.md): `GET`, `HEAD` and `PUT /v1/policies`, the kept
 * versions, the shadow decisions, the generated schema, and a check that stores nothing. Every route needs
 * the permission `policy:admin`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { MAX_POLICIES_CHARS } from "../../../shared/config/policies.js";
import {
  PolicyIssueSchema as IssueSchema,
  PolicyModeSchema,
  PolicySetBodySchema,
  PolicySetVersionSchema,
  ShadowDecisionRecordSchema,
} from "../../../shared/store/policy-records.js";
import { InvoiceListQuery, security } from "./common.js";
import { authErrors, payloadTooLarge, problem } from "./problems.js";

/** The ETag header of a policy set's answers. */
const ETAG_HEADER = z.object({
  ETag: z.string().openapi({
    description:
      'The set\'s version as an entity tag (`"v3"`; `"default"` for the default set); send it as `If-Match`.',
  }),
});

/**
 * 200 body of `GET` and `PUT /v1/policies`: the view's one schema (shared/store/policy-records.ts); `.strict()`
 * (which it is already) makes an instance built after @hono/zod-openapi extended zod, as for `PolicyIssue`.
 */
export const PolicySetSchema = PolicySetBodySchema.strict().openapi("PolicySet");

/** Body of `PUT /v1/policies`; {@link CheckPoliciesBody} is derived from it. */
export const PutPoliciesBody = z
  .object({
    policies: z
      .string()
      .min(1)
      .max(MAX_POLICIES_CHARS)
      .openapi({ description: "Cedar policies (docs/policies.md)." }),
    // `.describe`, not `.openapi`: the shared schema may be built before @hono/zod-openapi extends zod.
    mode: PolicyModeSchema.describe(
      "`enforce`: the set decides from now on; `shadow`: the enforced set stays, this one is recorded beside it.",
    ),
  })
  .strict()
  .openapi("PutPolicies");

/**
 * Body of `POST /v1/policies/check`: the PUT's body with `mode` optional. A check validates the text
 * alone, so `mode` is not needed; it is still accepted (as PUT checks it) so a client can send the body
 * it is about to PUT, and then ignored.
 */
export const CheckPoliciesBody = PutPoliciesBody.partial({ mode: true }).openapi("CheckPolicies", {
  description: "The set to check: `policies` as for PUT; `mode`, if sent, is checked as for PUT and ignored.",
});

/** Headers of `PUT /v1/policies`: one precondition is required. */
const PutPoliciesHeaders = z.object({
  "if-match": z
    .string()
    .max(256)
    .optional()
    .openapi({
      param: { name: "if-match", in: "header" },
      description: "The ETag of the set you edited (from GET). Stale: 412, nothing stored.",
    }),
  "if-none-match": z
    .string()
    .max(256)
    .optional()
    .openapi({
      param: { name: "if-none-match", in: "header" },
      description: "`*` for the tenant's first set (it has none of its own yet).",
    }),
});

/** One issue of an invalid set: the policy, where, and the engine's message. */
export const PolicyIssueSchema = IssueSchema.strict().openapi("PolicyIssue");

/** 200 body of `POST /v1/policies/check`. */
export const PolicyCheckSchema = z
  .object({ valid: z.boolean(), issues: z.array(PolicyIssueSchema) })
  .strict()
  .openapi("PolicyCheck");

/** 200 body of `GET /v1/policies/versions`: the tenant's kept versions, newest first. */
export const PolicyVersionPageSchema = z
  .object({ items: z.array(PolicySetVersionSchema), nextCursor: z.string().nullable() })
  .strict()
  .openapi("PolicyVersionPage");

/** 200 body of `GET /v1/policies/shadow-decisions`: decisions the shadow set would have made otherwise. */
export const ShadowDecisionPageSchema = z
  .object({ items: z.array(ShadowDecisionRecordSchema), nextCursor: z.string().nullable() })
  .strict()
  .openapi("ShadowDecisionPage");

/** 200 body of `GET /v1/policies/schema`: the vocabulary policies are validated against. */
export const PolicySchemaSchema = z
  .object({
    cedar: z.string().openapi({ description: "The generated schema in Cedar's schema syntax." }),
    json: z
      .record(z.string(), z.unknown())
      .openapi({ description: "The same in Cedar's JSON schema format." }),
  })
  .strict()
  .openapi("PolicySchema");

/** Page query of the lists (as `GET /v1/invoices`). */
const PageQuery = z.object({ limit: InvoiceListQuery.shape.limit, cursor: InvoiceListQuery.shape.cursor });

const forbidden = problem("FORBIDDEN: the caller lacks policy:admin (`requiredPermission`).");

/** `GET /v1/policies`: the tenant's set (or the default), with its ETag. */
export const getPoliciesRoute = createRoute({
  method: "get",
  path: "/v1/policies",
  summary: "The tenant's policy set, or the default (needs policy:admin)",
  security,
  responses: {
    200: {
      description: "The set and its ETag.",
      headers: ETAG_HEADER,
      content: { "application/json": { schema: PolicySetSchema } },
    },
    403: forbidden,
    ...authErrors,
  },
});

/**
 * `HEAD /v1/policies`: GET's answers without their bodies (RFC 9110 §9.3.2), so the ETag a PUT's
 * `If-Match` needs. Its own route on the HTTP API (infra/routes.ts), which matches methods exactly; in the
 * app Hono answers it with the GET route and drops the body (functions/api/app.ts), so this operation is
 * documented, not registered.
 */
export const headPoliciesRoute = createRoute({
  method: "head",
  path: "/v1/policies",
  summary: "The ETag of the tenant's policy set, without the set (needs policy:admin)",
  security,
  responses: Object.fromEntries(
    Object.entries(getPoliciesRoute.responses).map(([status, { content: _body, ...headOnly }]) => [
      status,
      headOnly,
    ]),
  ),
});

/** `PUT /v1/policies`: a new version of the tenant's set (needs a precondition). */
export const putPoliciesRoute = createRoute({
  method: "put",
  path: "/v1/policies",
  summary:
    "Store a new version of the tenant's policy set (needs policy:admin and If-Match or If-None-Match)",
  security,
  request: {
    headers: PutPoliciesHeaders,
    body: { required: true, content: { "application/json": { schema: PutPoliciesBody } } },
  },
  responses: {
    200: {
      description: "Stored: the new version and its ETag.",
      headers: ETAG_HEADER,
      content: { "application/json": { schema: PolicySetSchema } },
    },
    400: problem(
      "INVALID_POLICIES: the set does not parse or does not validate against the schema (`issues`: policy, line, column, message); INVALID_REQUEST: a malformed body. Nothing stored.",
    ),
    403: forbidden,
    412: problem(
      "PRECONDITION_FAILED: the set changed since that ETag (`etag`: the current one), or `If-None-Match: *` while the tenant has a set. Nothing stored.",
    ),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    428: problem(
      "PRECONDITION_REQUIRED: send If-Match (or If-None-Match: * for the first set). Nothing stored.",
    ),
    ...authErrors,
  },
});

/** `POST /v1/policies/check`: validates a set as PUT would, storing nothing. */
export const checkPoliciesRoute = createRoute({
  method: "post",
  path: "/v1/policies/check",
  summary: "Check a policy set against the schema without storing it (needs policy:admin)",
  security,
  request: { body: { required: true, content: { "application/json": { schema: CheckPoliciesBody } } } },
  responses: {
    200: {
      description: "Whether it is valid, and its issues.",
      content: { "application/json": { schema: PolicyCheckSchema } },
    },
    400: problem("INVALID_REQUEST: a malformed body."),
    403: forbidden,
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    ...authErrors,
  },
});

/** `GET /v1/policies/versions`: every kept version, newest first. */
export const listPolicyVersionsRoute = createRoute({
  method: "get",
  path: "/v1/policies/versions",
  summary: "The tenant's kept policy set versions, newest first (needs policy:admin)",
  security,
  request: { query: PageQuery },
  responses: {
    200: { description: "One page.", content: { "application/json": { schema: PolicyVersionPageSchema } } },
    400: problem("INVALID_REQUEST: bad `limit` or `cursor`."),
    403: forbidden,
    ...authErrors,
  },
});

/** `GET /v1/policies/shadow-decisions`: what the shadow set would have decided otherwise, newest first. */
export const listShadowDecisionsRoute = createRoute({
  method: "get",
  path: "/v1/policies/shadow-decisions",
  summary: "Decisions a shadow set would have made differently, newest first (needs policy:admin)",
  security,
  request: { query: PageQuery },
  responses: {
    200: { description: "One page.", content: { "application/json": { schema: ShadowDecisionPageSchema } } },
    400: problem("INVALID_REQUEST: bad `limit` or `cursor`."),
    403: forbidden,
    ...authErrors,
  },
});

/** `GET /v1/policies/schema`: the generated Cedar schema. */
export const getPolicySchemaRoute = createRoute({
  method: "get",
  path: "/v1/policies/schema",
  summary: "The Cedar schema policies are validated against, generated from the tools (needs policy:admin)",
  security,
  responses: {
    200: { description: "The schema.", content: { "application/json": { schema: PolicySchemaSchema } } },
    403: forbidden,
    ...authErrors,
  },
});
