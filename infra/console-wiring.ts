/**
 * How the stack wires the operator console to the streaming function (docs/console.md): the console's
 * page, served by the API function behind the HTTP API, follows run events on the streaming function
 * URL (its `CONSOLE_STREAM_URL`), which answers the console's origins with CORS (its `CONSOLE_ORIGINS`).
 * Imported by `npm run dev` too (local/dev.ts), which wires its local stand-ins the same way.
 */

/**
 * How long one event stream of the API function stays open (s). The HTTP API delivers a response only
 * when it ends, so a short stream, resumed by the client with Last-Event-ID, keeps a reader that is not
 * the console (which follows runs on the streaming function URL) within seconds of the run; the
 * `streamMaxSeconds` setting, when given, wins. The streaming function streams for real (its default).
 */
export const API_STREAM_MAX_SECONDS = 2;

/**
 * The origins whose pages may call the streaming function from a browser: the HTTP API's own (where
 * `/console` is served; `apiEndpoint`, `https://<api-id>.execute-api.<region>.<suffix>`, a token at
 * synth) and every https origin among `consoleCallbackUrls` (a console behind a custom domain); the http
 * ones are for local consoles, which follow their own local stream.
 * @returns the origins, each once
 */
export function consoleOrigins(apiEndpoint: string, callbackUrls: readonly string[]): string[] {
  const custom = callbackUrls.flatMap((url) => {
    const parsed = new URL(url);
    return parsed.protocol === "https:" ? [parsed.origin] : [];
  });
  return [...new Set([apiEndpoint, ...custom])];
}
