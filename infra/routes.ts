/**
 * The HTTP API's routes as the stack deploys them, and how each is authorized: by the JWT authorizer,
 * or public (no authorizer). Free of CDK imports, so the local dev server (local/dev-server.ts) applies
 * the same public routes without loading aws-cdk-lib; test/infra.test.ts holds these, the app's
 * documented routes and the dev server's public routes equal.
 */

/** How a route is authorized: by the JWT authorizer, or public (no auth). */
export type RouteAuth = "jwt" | "public";

/** One route: HTTP method, path (API Gateway syntax, `{param}`), authorization. */
export interface ApiRoute {
  method: "GET" | "POST";
  path: string;
  auth: RouteAuth;
}

/** The HTTP API's routes; every route goes to the one function. */
export const ROUTES: readonly ApiRoute[] = [
  { method: "POST", path: "/v1/runs", auth: "jwt" },
  { method: "GET", path: "/v1/runs/{runId}", auth: "jwt" },
  { method: "POST", path: "/v1/runs/{runId}/cancel", auth: "jwt" },
  { method: "POST", path: "/v1/runs/{runId}/approvals/{approvalId}", auth: "jwt" },
  { method: "GET", path: "/v1/approvals", auth: "jwt" },
  { method: "GET", path: "/v1/invoices", auth: "jwt" },
  { method: "GET", path: "/v1/invoices/{invoiceId}", auth: "jwt" },
  { method: "GET", path: "/healthz", auth: "public" },
  { method: "GET", path: "/openapi.json", auth: "public" },
];

/** The public routes as `"METHOD /path"` (none has a path parameter). */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(
  ROUTES.filter((route) => route.auth === "public").map((route) => `${route.method} ${route.path}`),
);
