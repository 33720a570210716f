import { handle } from "hono/aws-lambda";
import { type Config, loadConfig } from "../../shared/config.js";
import type { AppDeps } from "../../shared/deps.js";
import { PROBLEM_CONTENT_TYPE, ProblemError, toProblem } from "../../shared/errors.js";
import { createApp } from "./app.js";

type LambdaHandler = ReturnType<typeof handle>;

/** The event shapes the handler accepts (hono/aws-lambda's: API Gateway v1/v2, function URL, ALB). */
export type ApiEvent = Parameters<LambdaHandler>[0];

/**
 * Builds the Lambda handler over the given dependencies (or a factory for them, called on the first
 * request that needs them). Tests and local scripts use this with their own clients.
 *
 * An event hono/aws-lambda cannot turn into a Request (a GET or HEAD with a body, a header value the
 * WHATWG Headers class refuses) never reaches the app: the adapter answers 400 "Invalid request" (or 500
 * "Internal Server Error") as text/plain. The app itself never answers text/plain, so such an answer is
 * rewritten here as the problem+json of INVALID_REQUEST (INTERNAL for the 500), like every other error.
 */
export function createHandler(deps: AppDeps | (() => AppDeps)): LambdaHandler {
  const lambda = handle(createApp(deps));
  return async (event, context) => {
    const result = await lambda(event, context);
    const headers = (result as { headers?: Record<string, string> }).headers ?? {};
    const multi = (result as { multiValueHeaders?: Record<string, string[]> }).multiValueHeaders ?? {};
    const contentType = headers["content-type"] ?? multi["content-type"]?.[0] ?? "";
    if (!contentType.startsWith("text/plain")) return result;
    const problem = toProblem(
      result.statusCode === 400
        ? new ProblemError(
            "INVALID_REQUEST",
            "The request could not be read (a body on GET or HEAD, or a malformed header).",
          )
        : new Error("adapter failure"),
    );
    if (headers["content-type"]) headers["content-type"] = PROBLEM_CONTENT_TYPE;
    if (multi["content-type"]) multi["content-type"] = [PROBLEM_CONTENT_TYPE];
    return {
      ...result,
      statusCode: problem.status,
      body: JSON.stringify(problem.body),
      isBase64Encoded: false,
    };
  };
}

/** Request paths whose routes never touch the dependencies: serving them loads no client code. */
export const DEPENDENCY_FREE_PATHS: ReadonlySet<string> = new Set(["/healthz", "/openapi.json"]);

/**
 * A handler whose dependencies are loaded on the first request that may need them, by a dynamic
 * `import()` of shared/deps.ts: openai, the AWS SDK, the stores and the tools are neither loaded nor
 * evaluated by a cold start that serves only {@link DEPENDENCY_FREE_PATHS} (measured in bench/cold-start.ts).
 * Loading happens once; concurrent first requests share it. When loading fails, the request is answered
 * by the app's error mapping (500 problem+json) and the next request tries again.
 */
export function createLazyHandler(config: Config): LambdaHandler {
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
  return async (event, lambdaContext) => {
    if (!deps && !DEPENDENCY_FREE_PATHS.has(requestPath(event))) {
      loading ??= load();
      await loading;
    }
    return inner(event, lambdaContext);
  };
}

/** The request path of a v2 (`rawPath`), v1 or ALB (`path`) event; "" when neither is there. */
function requestPath(event: unknown): string {
  const { rawPath, path } = (event ?? {}) as { rawPath?: unknown; path?: unknown };
  return typeof rawPath === "string" ? rawPath : typeof path === "string" ? path : "";
}

/**
 * The Lambda entry point the stack deploys. It answers API Gateway HTTP API (v2) and REST API (v1)
 * events and Lambda function URL events (hono/aws-lambda decodes `isBase64Encoded` bodies). Config is
 * parsed at cold start (an invalid environment fails the init with a clear message); the clients and
 * their code are loaded on the first request that needs them (see {@link createLazyHandler}), and the
 * OpenAI key secret is read on the first model call.
 */
export const handler = createLazyHandler(loadConfig(process.env));
