import { schemaText } from "../../../shared/policies/sets.js";
import { POLICY_ADMIN, requirePermission } from "../../../shared/runs/access.js";
import { readPage } from "../../../shared/runs/queries.js";
import {
  checkPoliciesRoute,
  getPoliciesRoute,
  getPolicySchemaRoute,
  headPoliciesRoute,
  listPolicyVersionsRoute,
  listShadowDecisionsRoute,
  putPoliciesRoute,
} from "../contract.js";
import { ProblemError } from "../problem-details.js";
import { type GetDeps, routeGroup } from "./deps.js";

/**
 * The policies' routes (docs/policies.md), all needing policy:admin: `GET`, `HEAD` and `PUT /v1/policies`, the
 * kept versions, the shadow decisions, the schema and a check. They map HTTP to the policy service
 * (shared/policies/sets.ts) and its outcomes back, nothing else.
 */
export function policyRoutes(deps: GetDeps) {
  const group = routeGroup();
  // Documented only: Hono answers HEAD with the GET route below and drops the body (functions/api/app.ts).
  group.openAPIRegistry.registerPath(headPoliciesRoute);
  return group
    .openapi(getPoliciesRoute, async (c) => {
      const { tenantId } = requirePermission(c.get("security"), POLICY_ADMIN);
      const { etag, ...view } = await deps().policies.sets.view(tenantId);
      return c.json(view, 200, { ETag: etag });
    })
    .openapi(putPoliciesRoute, async (c) => {
      const { tenantId, userId } = requirePermission(c.get("security"), POLICY_ADMIN);
      const headers = c.req.valid("header");
      const outcome = await deps().policies.sets.put(tenantId, userId, c.req.valid("json"), {
        ifMatch: headers["if-match"],
        ifNoneMatch: headers["if-none-match"],
      });
      switch (outcome.kind) {
        case "precondition_required":
          throw new ProblemError(
            "PRECONDITION_REQUIRED",
            "Send If-Match with the ETag of the set you edited (GET /v1/policies), or If-None-Match: * for the first set. Nothing was stored.",
          );
        case "precondition_failed":
          throw new ProblemError(
            "PRECONDITION_FAILED",
            `The policy set changed since that ETag (it is ${outcome.etag} now), or the tenant already has a set. Nothing was stored.`,
            { extensions: { etag: outcome.etag } },
          );
        case "invalid": {
          const first = outcome.issues[0];
          const where = first
            ? `${first.policyId ? `policy "${first.policyId}", ` : ""}line ${first.line}: ${first.message}`
            : "";
          throw new ProblemError(
            "INVALID_POLICIES",
            `The policy set is not valid (${where}). Nothing was stored.`,
            {
              extensions: { issues: outcome.issues },
            },
          );
        }
        case "stored": {
          const { etag, ...view } = outcome.view;
          return c.json(view, 200, { ETag: etag });
        }
      }
    })
    .openapi(checkPoliciesRoute, async (c) => {
      requirePermission(c.get("security"), POLICY_ADMIN);
      const issues = await deps().policies.sets.check(c.req.valid("json").policies);
      return c.json({ valid: issues.length === 0, issues }, 200);
    })
    .openapi(listPolicyVersionsRoute, async (c) => {
      const { tenantId } = requirePermission(c.get("security"), POLICY_ADMIN);
      const page = await readPage(c.req.valid("query"), async (options) => {
        const read = await deps().policies.store.versions(tenantId, options);
        return { items: read.versions, nextCursor: read.nextCursor };
      });
      return c.json(page, 200);
    })
    .openapi(listShadowDecisionsRoute, async (c) => {
      const { tenantId } = requirePermission(c.get("security"), POLICY_ADMIN);
      const page = await readPage(c.req.valid("query"), async (options) => {
        const read = await deps().policies.store.shadowDecisions(tenantId, options);
        return { items: read.decisions, nextCursor: read.nextCursor };
      });
      return c.json(page, 200);
    })
    .openapi(getPolicySchemaRoute, async (c) => {
      requirePermission(c.get("security"), POLICY_ADMIN);
      const { schema } = deps().policies.sets;
      return c.json({ cedar: await schemaText(schema), json: schema as Record<string, unknown> }, 200);
    });
}
