/**
 * The HTTP contract: every request and response schema, and every route, declared once with zod
 * (@hono/zod-openapi), one module per resource in ./contract/. The same schemas validate requests at run
 * time and generate `/openapi.json` (OpenAPI 3.1). Response schemas are strict (`additionalProperties:
 * false`): tests parse every response with them, so a field the document does not declare fails. The
 * response types are derived from them (`z.infer`), and compile-time checks beside each schema fail `tsc`
 * when a domain type the API returns (Invoice, RunRecord, RunOutcome, ToolResult) and its schema differ
 * by a field. A new resource is a new module there and one line here.
 */
export * from "./contract/approvals.js";
export * from "./contract/caller.js";
export * from "./contract/common.js";
export * from "./contract/events.js";
export * from "./contract/health.js";
export * from "./contract/invoices.js";
export * from "./contract/mcp.js";
export * from "./contract/policies.js";
export * from "./contract/problems.js";
export * from "./contract/quota-routes.js";
export * from "./contract/quotas.js";
export * from "./contract/run-list.js";
export * from "./contract/run-results.js";
export * from "./contract/runs.js";
