/**
 * The response headers of the API a browser page reads only when CORS exposes them: every header
 * /openapi.json declares on a response (none is CORS-safelisted: Cache-Control, Content-Language,
 * Content-Length, Content-Type, Expires, Last-Modified and Pragma are readable anyway). The one list of
 * them: the streaming function URL's CORS exposes it (functions/stream/entry.ts `consoleCors`); the HTTP
 * API declares no CORS (the console is served on its own origin). test/stream-cors.test.ts holds it equal
 * to the document's, so a header a route starts to declare is exposed too. No imports: the streaming
 * entry reads it at cold start without loading the app.
 */
export const EXPOSED_RESPONSE_HEADERS: readonly string[] = [
  "Allow",
  "ETag",
  "Idempotent-Replayed",
  "Location",
  "Preference-Applied",
  "RateLimit",
  "RateLimit-Policy",
  "Retry-After",
  "WWW-Authenticate",
];
