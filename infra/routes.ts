/**
 * The HTTP API's routes as the stack deploys them, and how each is authorized: by the JWT authorizer,
 * or public (no authorizer). Free of CDK imports, so the local dev server (local/dev-server.ts) routes
 * by the same table (404 for any other request, as the deployed API has no catch-all route) and applies
 * the same public routes without loading aws-cdk-lib; test/infra-settings.test.ts holds these, the app's
 * documented routes and the dev server's public routes equal.
 */

/**
 * How a route is authorized: by the gateway's JWT authorizer, public (no auth), or `bearer`: no gateway
 * authorizer, the function verifies the bearer token itself (`/mcp`, an OAuth 2.1 resource server that
 * must answer 401 with `WWW-Authenticate: Bearer resource_metadata=…`, which the gateway cannot).
 */
export type RouteAuth = "jwt" | "public" | "bearer";

/**
 * One route: HTTP method, path (API Gateway syntax, `{param}`), authorization. The HTTP API matches the
 * method exactly: a GET route does not take HEAD, so a HEAD the API answers is a route of its own.
 */
export interface ApiRoute {
  method: "GET" | "HEAD" | "POST" | "PUT";
  path: string;
  auth: RouteAuth;
}

/** The HTTP API's routes; every route goes to the one function. */
export const ROUTES: readonly ApiRoute[] = [
  { method: "POST", path: "/v1/runs", auth: "jwt" },
  { method: "GET", path: "/v1/runs", auth: "jwt" },
  { method: "GET", path: "/v1/runs/{runId}", auth: "jwt" },
  { method: "GET", path: "/v1/runs/{runId}/events", auth: "jwt" },
  { method: "POST", path: "/v1/runs/{runId}/cancel", auth: "jwt" },
  { method: "POST", path: "/v1/runs/{runId}/approvals/{approvalId}", auth: "jwt" },
  { method: "GET", path: "/v1/approvals", auth: "jwt" },
  { method: "GET", path: "/v1/invoices", auth: "jwt" },
  { method: "GET", path: "/v1/invoices/{invoiceId}", auth: "jwt" },
  { method: "POST", path: "/v1/a2a", auth: "jwt" },
  { method: "POST", path: "/v1/agui", auth: "jwt" },
  { method: "GET", path: "/v1/policies", auth: "jwt" },
  // GET's headers (the ETag a PUT's If-Match needs) without the body (docs/policies.md).
  { method: "HEAD", path: "/v1/policies", auth: "jwt" },
  { method: "PUT", path: "/v1/policies", auth: "jwt" },
  { method: "POST", path: "/v1/policies/check", auth: "jwt" },
  { method: "GET", path: "/v1/policies/versions", auth: "jwt" },
  { method: "GET", path: "/v1/policies/shadow-decisions", auth: "jwt" },
  { method: "GET", path: "/v1/policies/schema", auth: "jwt" },
  { method: "GET", path: "/v1/usage", auth: "jwt" },
  { method: "GET", path: "/v1/limits", auth: "jwt" },
  { method: "PUT", path: "/v1/limits", auth: "jwt" },
  { method: "GET", path: "/v1/me", auth: "jwt" },
  { method: "POST", path: "/mcp", auth: "bearer" },
  { method: "GET", path: "/mcp", auth: "bearer" },
  { method: "GET", path: "/.well-known/oauth-protected-resource", auth: "public" },
  { method: "GET", path: "/.well-known/oauth-protected-resource/mcp", auth: "public" },
  { method: "GET", path: "/.well-known/agent-card.json", auth: "public" },
  { method: "GET", path: "/healthz", auth: "public" },
  { method: "GET", path: "/openapi.json", auth: "public" },
  // The operator console's page and its hashed assets (functions/api/console.ts): a browser navigating
  // sends no bearer token; the page then calls the API above with one.
  { method: "GET", path: "/console", auth: "public" },
  { method: "GET", path: "/console/assets/{file}", auth: "public" },
];

/** The routes without a gateway authorizer (public and `bearer`) as `"METHOD /path"` (API Gateway syntax, `{param}` for one path segment). */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(
  ROUTES.filter((route) => route.auth !== "jwt").map((route) => `${route.method} ${route.path}`),
);

/**
 * Whether a request (`method`, `path` without query) goes to a public route: its `"METHOD /path"` is one
 * of {@link PUBLIC_ROUTES}, where a `{param}` matches one non-empty path segment, as API Gateway does.
 */
export function isPublicRoute(method: string, path: string): boolean {
  return matchesAny(PUBLIC_ROUTES, method, path);
}

/** Every route of {@link ROUTES} as `"METHOD /path"`. */
const DECLARED_ROUTES: ReadonlySet<string> = new Set(ROUTES.map((route) => `${route.method} ${route.path}`));

/**
 * Whether the HTTP API routes a request (`method`, `path` without query) at all: its `"METHOD /path"` is
 * one of {@link ROUTES} (methods matched exactly, `{param}` one non-empty segment). The API answers any
 * other request itself, 404 `{"message":"Not Found"}`, before any authorizer.
 */
export function isDeclaredRoute(method: string, path: string): boolean {
  return matchesAny(DECLARED_ROUTES, method, path);
}

/** Whether `"method path"` matches one of `routes` (`"METHOD /path"`, `{param}`: one non-empty segment). */
function matchesAny(routes: ReadonlySet<string>, method: string, path: string): boolean {
  for (const route of routes) {
    const pattern = route.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+");
    if (new RegExp(`^${pattern}$`).test(`${method} ${path}`)) return true;
  }
  return false;
}
