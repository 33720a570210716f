import { listApprovals } from "../../../shared/runs/queries.js";
import { decideApprovalRoute, listApprovalsRoute } from "../contract/approvals.js";
import { type GetDeps, routeGroup } from "./deps.js";

/**
 * `POST /v1/runs/{runId}/approvals/{approvalId}` (shared/runs/approvals.ts, loaded on the first decision)
 * and `GET /v1/approvals` (shared/runs/queries.ts).
 */
export function approvalRoutes(deps: GetDeps) {
  return routeGroup()
    .openapi(decideApprovalRoute, async (c) => {
      const { decideApproval } = await import("../../../shared/runs/approval-service.js");
      const approval = await decideApproval(
        deps(),
        c.get("security"),
        c.req.valid("param"),
        c.req.valid("json"),
      );
      return c.json(approval, 200);
    })
    .openapi(listApprovalsRoute, async (c) => {
      return c.json(await listApprovals(deps().approvals, c.get("security"), c.req.valid("query")), 200);
    });
}
