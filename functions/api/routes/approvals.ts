import { decideApprovalRoute, listApprovalsRoute } from "../contract/approvals.js";
import { withCursorProblem } from "../pagination.js";
import { type GetDeps, routeGroup } from "./deps.js";

/**
 * `POST /v1/runs/{runId}/approvals/{approvalId}` and `GET /v1/approvals` (shared/runs/approvals.ts,
 * loaded on the first approval request).
 */
export function approvalRoutes(deps: GetDeps) {
  return routeGroup()
    .openapi(decideApprovalRoute, async (c) => {
      const { decideApproval } = await import("../../../shared/runs/approvals.js");
      const approval = await decideApproval(
        deps(),
        c.get("security"),
        c.req.valid("param"),
        c.req.valid("json"),
      );
      return c.json(approval, 200);
    })
    .openapi(listApprovalsRoute, async (c) => {
      const { listApprovalPage } = await import("../../../shared/runs/approvals.js");
      const { status, limit, cursor } = c.req.valid("query");
      const page = () => listApprovalPage(deps().approvals, c.get("security"), { status, limit, cursor });
      return c.json(await withCursorProblem(page), 200);
    });
}
