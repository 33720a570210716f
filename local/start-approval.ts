/**
 * The approval steps of `npm start -- --approval` and `--async` (local/start.ts): waiting for a durable
 * run to pause, approving its pause as a second local user, and the hint printed when an `--async` run
 * pauses with nobody here to decide it. Loaded only by the durable path.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from "aws-lambda";
import { eventForRoute } from "./durable-runner.js";

/**
 * The lines printed once when an `--async` run pauses for approval: `npm start --async` approves
 * nothing, and the approval would otherwise be polled until it expires (24 h). Names the approval and
 * the policies asking, and how to see it approved (`--approval`) or decide it yourself (`npm run dev`).
 */
export function pauseHint(run: Record<string, unknown>, command: string): string {
  const pending = (run.pendingApprovals ?? []) as Array<{
    approvalId: string;
    toolName: string;
    expiresAt: string;
    preview: { policyIds?: string[]; threshold?: string; currency?: string };
  }>;
  const approval = pending[0];
  const what = approval
    ? ` ${approval.approvalId} (${approval.toolName}, ${asking(approval.preview)}), expiring ${approval.expiresAt}`
    : "";
  const again = command.replace(/(^|\s)--async(?=\s|$)/, "$1--approval").trim();
  return [
    `\nRun ${String(run.runId)} awaits approval${what}.`,
    "npm start --async does not approve it, and nobody else can reach this process's runs: stopping here (exit 1).",
    `To see it approved by a second local user (billing:approve), run: npm start -- ${again}`,
    "To decide it yourself, start the run on npm run dev (with the same --policies or APPROVAL_RULES) and approve it in the console",
    "or with POST /v1/runs/{runId}/approvals/{approvalId} as another user of the tenant (docs/approvals.md).",
  ].join("\n");
}

/** Who asks for an approval, from its preview: the policies, and an APPROVAL_RULES threshold. */
function asking(preview: { policyIds?: string[]; threshold?: string; currency?: string }): string {
  const policies = `policies ${(preview.policyIds ?? []).join(", ") || "(none named)"}`;
  return preview.threshold
    ? `${policies}, threshold ${preview.threshold} ${preview.currency ?? ""}`.trim()
    : policies;
}

/** `GET /v1/runs/{runId}` (`poll`) every 200 ms until the run is no longer `running`, at most 30 s; its body. */
export async function pollUntilPaused(
  invoke: (request: APIGatewayProxyEventV2) => Promise<Exclude<APIGatewayProxyResultV2, string>>,
  poll: APIGatewayProxyEventV2,
): Promise<Record<string, unknown>> {
  for (let tries = 0; ; tries++) {
    const body = JSON.parse((await invoke(poll)).body ?? "{}") as Record<string, unknown>;
    if (body.status !== "running" || tries >= 150) return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Prints the paused run's pending approval (the backend's preview) and approves it as `usr_approver_01`
 * (billing:approve, same tenant: the four-eyes rule keeps the run's own user out). False when the run
 * did not pause or the approval failed.
 */
export async function approveAsSecondUser(
  event: APIGatewayProxyEventV2,
  run: Record<string, unknown>,
  invoke: (request: APIGatewayProxyEventV2) => Promise<Exclude<APIGatewayProxyResultV2, string>>,
): Promise<boolean> {
  const pending = (run.pendingApprovals ?? []) as Array<{
    approvalId: string;
    toolName: string;
    requestedBy: string;
    expiresAt: string;
    preview: {
      subtotal: string;
      taxAmount: string;
      grossTotal: string;
      currency: string;
      threshold?: string;
      policyIds?: string[];
    };
  }>;
  const approval = pending[0];
  if (run.status !== "awaiting_approval" || !approval) {
    console.log(`The run did not pause for approval (status ${String(run.status)}).`);
    return false;
  }
  const { preview } = approval;
  console.log(
    `Pending approval ${approval.approvalId}: ${approval.toolName} requested by ${approval.requestedBy}, ` +
      `preview subtotal ${preview.subtotal}, tax ${preview.taxAmount}, gross ${preview.grossTotal} ${preview.currency} ` +
      `(${preview.threshold ? `threshold ${preview.threshold} ${preview.currency}` : asking(preview)}), expires ${approval.expiresAt}`,
  );
  const decision = eventForRoute(
    event,
    "POST",
    `/v1/runs/${String(run.runId)}/approvals/${approval.approvalId}`,
  );
  const claims = (
    decision.requestContext as unknown as { authorizer: { jwt: { claims: Record<string, string> } } }
  ).authorizer.jwt.claims;
  Object.assign(claims, { sub: "usr_approver_01", scope: "billing:approve" });
  decision.body = JSON.stringify({ decision: "approve", reason: "Checked against the purchase order." });
  const response = await invoke(decision);
  const body = JSON.parse(response.body ?? "{}") as Record<string, unknown>;
  console.log(
    `Approval by usr_approver_01: HTTP ${response.statusCode}, status ${String(body.status ?? body.code)}, decided at ${String(body.decidedAt)}`,
  );
  return response.statusCode === 200;
}
