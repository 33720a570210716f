import { handle } from "hono/aws-lambda";
import { type Config, loadConfig } from "../../shared/config.js";
import type { AppDeps } from "../../shared/deps.js";
import { createApp } from "./app.js";

/**
 * Builds the Lambda handler over the given dependencies (or a factory for them, called on the first
 * request that needs them). Tests and local scripts use this with their own clients.
 */
export function createHandler(deps: AppDeps | (() => AppDeps)) {
  return handle(createApp(deps));
}

/** The event shapes the handler accepts (hono/aws-lambda's: API Gateway v1/v2, function URL, ALB). */
export type ApiEvent = Parameters<ReturnType<typeof createHandler>>[0];

/** Request paths whose routes never touch the dependencies: serving them loads no client code. */
export const DEPENDENCY_FREE_PATHS: ReadonlySet<string> = new Set(["/healthz", "/openapi.json"]);

/**
 * A handler whose dependencies are loaded on the first request that may need them, by a dynamic
 * `import()` of shared/deps.ts: openai, the AWS SDK, the stores and the tools are neither loaded nor
 * evaluated by a cold start that serves only {@link DEPENDENCY_FREE_PATHS} (measured in bench/cold-start.ts).
 * Loading happens once; concurrent first requests share it. When loading fails, the request is answered
 * by the app's error mapping (500 problem+json) and the next request tries again.
 */
export function createLazyHandler(config: Config) {
  let deps: AppDeps | undefined;
  let loadError: unknown;
  let loading: Promise<void> | undefined;
  const load = () =>
    import("../../shared/deps.js").then(
      (module) => {
        deps = module.createDeps(config);
      },
      (error: unknown) => {
        loadError = error;
        loading = undefined;
      },
    );
  const inner = createHandler(() => {
    if (deps) return deps;
    throw loadError ?? new Error("The dependencies were not loaded before a route that needs them.");
  });
  const handler: typeof inner = async (event, lambdaContext) => {
    if (!deps && !DEPENDENCY_FREE_PATHS.has(requestPath(event))) {
      loading ??= load();
      await loading;
    }
    return inner(event, lambdaContext);
  };
  return handler;
}

/** The request path of a v2 (`rawPath`), v1 or ALB (`path`) event; "" when neither is there. */
function requestPath(event: unknown): string {
  const { rawPath, path } = (event ?? {}) as { rawPath?: unknown; path?: unknown };
  return typeof rawPath === "string" ? rawPath : typeof path === "string" ? path : "";
}

/**
 * The Lambda entry point the stack deploys (API Gateway HTTP API v2 payloads). Config is parsed at
 * cold start (an invalid environment fails the init with a clear message); the clients and their code
 * are loaded on the first request that needs them (see {@link createLazyHandler}).
 */
export const handler = createLazyHandler(loadConfig(process.env));
