import { Hono, type Context as HonoContext } from "hono";
import { handle } from "hono/aws-lambda";
import { TrieRouter } from "hono/router/trie-router";
import { type Config, loadConfig } from "../../shared/config.js";
import type { ApiDeps, ApiDepsOptions } from "../../shared/deps.js";
import { onceUntilFailed } from "../../shared/lazy.js";
import { withTracing } from "../../shared/telemetry/entry.js";
import type { LambdaBindings } from "./app.js";
import { HEALTH_PATH, healthResponse } from "./health.js";
import { addInvocationContext } from "./invocation-context.js";
import { guardLambdaEdge, type LambdaHandler } from "./lambda-adapter.js";
import { toProblem } from "./problem-details.js";

export type { ApiEvent, LambdaHandler } from "./lambda-adapter.js";

/** Request paths whose routes never touch the dependencies: serving them loads no client code. */
export const DEPENDENCY_FREE_PATHS: ReadonlySet<string> = new Set([
  HEALTH_PATH,
  "/openapi.json",
  // RFC 9728 metadata of /mcp (functions/api/contract/mcp.ts RESOURCE_METADATA_PATHS), from config alone.
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
]);

/**
 * The deployed handler: it loads, on the first request that needs each, what the request needs and no more.
 * - `GET /healthz` is answered here, by a bare Hono route ({@link healthResponse}, the handler the app
 *   uses too): a cold start that serves it loads neither the app nor zod, openai or the AWS SDK.
 * - Any other request loads the app (functions/api/app.ts: routes, zod contract, OpenAPI document) by a
 *   dynamic `import()` and hands it the request (same Request, same Lambda event and context).
 * - Before a route outside {@link DEPENDENCY_FREE_PATHS}, the dependencies (shared/deps.ts: openai, the
 *   AWS SDK, stores, tools, Powertools) are loaded the same way.
 * Each load happens once; concurrent first requests share it. When a load fails, the request is
 * answered 500 problem+json through functions/api/problem-details.ts's mapping, the failure is logged at ERROR by the
 * service's Powertools logger (loaded then), and the next request tries again. The
 * deployed bundle is split into chunks along these `import()`s (infra/bundle.ts), so what is not loaded
 * is not even read from disk (measured in bench/cold-start.ts).
 * `depsOptions` go to `createApiDeps`: local scripts pass a local durable runner (local/durable-executions.ts).
 */
export function createLazyHandler(config: Config, depsOptions: ApiDepsOptions = {}): LambdaHandler {
  let deps: ApiDeps | undefined;
  const loadDeps = onceUntilFailed(async () => {
    deps = (await import("../../shared/deps.js")).createApiDeps(config, depsOptions);
  });
  const loadApp = onceUntilFailed(async () =>
    (await import("./app.js")).createApp({
      config,
      load: () => {
        if (deps) return deps;
        throw new Error("The dependencies were not loaded before a route that needs them.");
      },
    }),
  );
  // Only a failed load reaches the entry's error handler: its logger is loaded then, not at cold start.
  const loadLogger = onceUntilFailed(async () =>
    (await import("../../shared/observability.js")).createLogger(config.observability),
  );

  // hono's TrieRouter, as every route group's (functions/api/routes/deps.ts routeGroup).
  const entry = new Hono<{ Bindings: LambdaBindings }>({ router: new TrieRouter() });
  entry.get(HEALTH_PATH, healthResponse);
  // The operator console's page and assets need neither the app nor the dependencies.
  const serveConsole = async (c: HonoContext) => {
    const { consoleResponse } = await import("./console.js");
    const { status, headers, body } = await consoleResponse(c.req.path, config.console);
    return c.body(body, status as 200, headers);
  };
  entry.get("/console", serveConsole);
  entry.get("/console/*", serveConsole);
  entry.all("*", async (c) => {
    const app = await loadApp();
    if (!DEPENDENCY_FREE_PATHS.has(c.req.path)) await loadDeps();
    return app.fetch(c.req.raw, c.env);
  });
  entry.onError(async (error, c) => {
    const problem = toProblem(error);
    if (problem.status >= 500) {
      const logger = deps?.logger ?? (await loadLogger().catch(() => undefined));
      addInvocationContext(logger, c.env?.lambdaContext);
      logger?.error("request failed", { code: problem.code, error: error as Error });
    }
    return problem.getResponse();
  });
  return guardLambdaEdge(handle(entry));
}

/**
 * The Lambda entry point the stack deploys. It answers API Gateway HTTP API (v2) and REST API (v1)
 * events and Lambda function URL events, on `$default` or a named stage; the raw event first passes the
 * edge rules of {@link guardLambdaEdge} (stage prefix, `isBase64Encoded` bodies checked before
 * hono/aws-lambda decodes them, adapter failures as problem+json). Config is
 * parsed at cold start (an invalid environment fails the init with a clear ConfigError); the app, the
 * clients and their code are loaded on the first request that needs them (see {@link createLazyHandler}),
 * and the OpenAI key secret is read on the first model call. With TRACING on, every invocation is
 * traced and its spans flushed before it answers (shared/telemetry/entry.ts `withTracing`).
 */
export const handler: LambdaHandler = (() => {
  const config = loadConfig(process.env);
  return withTracing(createLazyHandler(config), config);
})();
