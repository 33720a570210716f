/**
 * The one body format of the API's JSON routes: `application/json` in UTF-8 (docs/http-api.md). JSON
 * between systems is UTF-8 (RFC 8259 §8.1) and its registration defines no `charset` (§11), so a
 * `charset` parameter is tolerated only as UTF-8's, which clients often send; another charset cannot
 * describe a JSON body. Other `+json` types are other formats, not JSON documents to read as these:
 * `application/merge-patch+json` is a patch (RFC 7396), vendor types have their own rules. The routes'
 * own gate (@hono/zod-openapi) takes any `…+json` type with any parameters, so {@link plainJsonOnly}
 * runs before it on every route that reads a JSON body (./routes/deps.ts `routeGroup`).
 */
import type { MiddlewareHandler } from "hono";
import { ProblemError } from "./problem-details.js";

/** The detail of every 415 UNSUPPORTED_MEDIA_TYPE (this check's and the route gate's). */
export const UNSUPPORTED_MEDIA_TYPE_DETAIL =
  "Send the body as application/json, in UTF-8 (no other charset).";

/**
 * Whether a `Content-Type` value is `application/json` (any case, RFC 9110 §8.3.1) whose `charset`, if it
 * has one, is UTF-8 (quoted or not). Other parameters are left to the route's gate.
 */
export function isPlainJson(contentType: string): boolean {
  const [essence = "", ...parameters] = contentType.split(";");
  if (essence.trim().toLowerCase() !== "application/json") return false;
  return parameters.every((parameter) => {
    const [name = "", value = ""] = parameter.split("=", 2);
    if (name.trim().toLowerCase() !== "charset") return true;
    return (
      value
        .trim()
        .replace(/^"(.*)"$/, "$1")
        .toLowerCase() === "utf-8"
    );
  });
}

/**
 * A route's middleware: a request whose `Content-Type` is not {@link isPlainJson} is 415
 * UNSUPPORTED_MEDIA_TYPE before its body is read, so nothing runs or is written. A request without one
 * goes on to the route's gate (415 when it has a body).
 */
export const plainJsonOnly: MiddlewareHandler = async (c, next) => {
  const contentType = c.req.header("content-type");
  if (contentType !== undefined && !isPlainJson(contentType)) {
    throw new ProblemError("UNSUPPORTED_MEDIA_TYPE", UNSUPPORTED_MEDIA_TYPE_DETAIL);
  }
  await next();
};
