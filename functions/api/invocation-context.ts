import type { Context as LambdaContext } from "aws-lambda";

/** The invocations whose Lambda context a logger was given (one context object per invocation). */
const given = new WeakSet<object>();

/**
 * Gives `logger` the invocation's Lambda context (request id, function, cold start) once per invocation,
 * whichever of the request's steps gets there first (the `/v1` and `/mcp` request middleware, the MCP
 * route that loads the dependencies, the entry's error handler). Powertools reads the process's cold
 * start at its first `addContext` and says false at every later one, so a second call for the same
 * invocation would log the cold invocation's later lines as warm.
 */
export function addInvocationContext(
  logger: { addContext(context: LambdaContext): void } | undefined,
  context: LambdaContext | undefined,
): void {
  if (!logger || !context || given.has(context)) return;
  given.add(context);
  logger.addContext(context);
}
