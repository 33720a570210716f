import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Context as LambdaContext } from "aws-lambda";
import { TrieRouter } from "hono/router/trie-router";
import type { ZodError } from "zod";
import type { ApiDeps } from "../../../shared/deps.js";
import type { SecurityContext } from "../../../shared/identity.js";
import { plainJsonOnly } from "../json-media-type.js";
import { ProblemError } from "../problem-details.js";

/** What hono/aws-lambda puts in `c.env`: the raw event and the Lambda context. */
export interface LambdaBindings {
  event?: unknown;
  lambdaContext?: LambdaContext;
}

/** Hono environment of the app: Lambda bindings, and the caller's security context once verified. */
export interface AppEnv {
  Bindings: LambdaBindings;
  Variables: { security: SecurityContext; problemCode: string };
}

/** The API's dependencies, built on the first request that needs them (see functions/api/app.ts). */
export type GetDeps = () => ApiDeps;

/** Where a validation issue was found, as the problem's `errors[].in` says it. */
const TARGET_NAMES: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
};

/**
 * A zod failure of one request part as INVALID_REQUEST, with each issue's location and field path. A
 * query parameter sent more than once (`query`: every parameter's values, as Hono's `c.req.queries()`
 * gives them) is one issue saying so, in place of what its schema said of the array Hono hands over.
 */
export function invalidRequest(
  target: string,
  error: ZodError,
  query: Record<string, string[]> = {},
): ProblemError {
  const where = TARGET_NAMES[target] ?? target;
  const repeated = new Map(
    target === "query" ? Object.entries(query).filter(([, values]) => values.length > 1) : [],
  );
  const errors: Array<{ in: string; path: string; message: string }> = [];
  for (const [name, values] of repeated) {
    const shown = values.map((value) => JSON.stringify(value)).join(", ");
    errors.push({
      in: where,
      path: name,
      message: `${name} was given ${values.length} times (${shown}); send it once`,
    });
  }
  for (const issue of error.issues) {
    if (repeated.has(String(issue.path[0]))) continue;
    errors.push({ in: where, path: issue.path.map(String).join(".") || "(root)", message: issue.message });
  }
  return new ProblemError("INVALID_REQUEST", "The request is invalid.", { extensions: { errors } });
}

/**
 * A route group: an OpenAPIHono whose request validation fails as INVALID_REQUEST (400), and whose
 * routes that read a JSON body take `application/json` in UTF-8 only (415 otherwise, before the body is
 * read: ../json-media-type.ts), whatever other `+json` type or charset the library's own gate lets by.
 */
export function routeGroup(): OpenAPIHono<AppEnv> {
  const group = new OpenAPIHono<AppEnv>({
    // hono's TrieRouter, not its default SmartRouter over two routers: the same matches, in less code
    // (the Lambda bundles drop the default's routers, infra/unreached-files-plugin.ts).
    router: new TrieRouter(),
    defaultHook: (result, c) => {
      if (!result.success) throw invalidRequest(result.target, result.error, c.req.queries());
    },
  });
  const register = group.openapi as (route: RouteConfig, ...rest: unknown[]) => unknown;
  group.openapi = ((route: RouteConfig, ...rest: unknown[]) =>
    register(
      readsJson(route)
        ? { ...route, middleware: [plainJsonOnly, ...[route.middleware ?? []].flat()] }
        : route,
      ...rest,
    )) as typeof group.openapi;
  return group;
}

/** Whether a route declares an `application/json` request body. */
function readsJson(route: RouteConfig): boolean {
  return route.request?.body?.content["application/json"] !== undefined;
}
