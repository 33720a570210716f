/**
 * Loads the handler's code (the app and its dependencies' modules: hono, zod, openai, the AWS SDK, …)
 * while a local command's dependencies start: DynamoDB Local's JVM runs in its own process, so the two
 * overlap on a multi-core machine instead of following each other. The modules read no environment
 * when loaded; the handler built later from them reads the variables the stack resolved. A load that
 * fails here fails again, with its error, where the module is really needed.
 */
export function warmHandlerModules(): Promise<void> {
  return Promise.all([import("../functions/api/app.js"), import("../shared/deps.js")]).then(
    () => undefined,
    () => undefined,
  );
}
