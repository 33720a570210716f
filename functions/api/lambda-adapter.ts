import { isUtf8 } from "node:buffer";
import type { handle } from "hono/aws-lambda";
import { PROBLEM_CONTENT_TYPE, ProblemError, problemCodeOf, toProblem } from "./problem-details.js";

/** A Lambda handler as hono/aws-lambda's `handle(app)` returns it: (event, context) → API Gateway result. */
export type LambdaHandler = ReturnType<typeof handle>;

/** The event shapes the handler accepts (hono/aws-lambda's: API Gateway v1/v2, function URL, ALB). */
export type ApiEvent = Parameters<LambdaHandler>[0];

/** The result a {@link LambdaHandler} resolves to (API Gateway v1/v2 or ALB proxy result). */
type LambdaResult = Awaited<ReturnType<LambdaHandler>>;

/** The members of an API Gateway / function URL event this module reads. */
interface RawEvent {
  rawPath?: unknown;
  httpMethod?: unknown;
  body?: unknown;
  isBase64Encoded?: unknown;
  headers?: Record<string, unknown> | null;
  multiValueHeaders?: Record<string, unknown> | null;
  requestContext?: { stage?: unknown; http?: unknown };
}

/**
 * The values of request header `name` (any case) exactly as API Gateway or the function URL put them in
 * the event, before hono/aws-lambda touches them (it percent-encodes any value with a non-ASCII
 * character and drops empty ones). REST v1 events: every value of `multiValueHeaders`, else `headers`
 * (as hono/aws-lambda reads them); HTTP API v2 and function URL events: `headers`, where API Gateway
 * has already joined repeated headers with commas.
 * @param event the raw Lambda event (any shape; non-objects have no headers)
 * @param name the header name, compared case-insensitively
 * @returns the values in event order; `[]` when the header is absent; `undefined` when the event has
 *   no header map at all (not an API Gateway event: read the Request's headers instead)
 */
export function rawHeaderValues(event: unknown, name: string): string[] | undefined {
  const raw = (typeof event === "object" && event !== null ? event : {}) as RawEvent;
  if (!raw.headers && !raw.multiValueHeaders) return undefined;
  const wanted = name.toLowerCase();
  const collect = (bag: Record<string, unknown> | null | undefined): string[] =>
    Object.entries(bag ?? {})
      .filter(([key]) => key.toLowerCase() === wanted)
      .flatMap(([, value]) => (Array.isArray(value) ? value : [value]))
      .filter((value): value is string => typeof value === "string");
  const multi = collect(raw.multiValueHeaders);
  return multi.length > 0 ? multi : collect(raw.headers);
}

/**
 * The event with the stage taken off the path, when API Gateway put it there. An HTTP API (payload
 * v2) invoked on a named stage through its execute-api URL sends `rawPath` `/dev/v1/runs` with
 * `requestContext.stage` `dev` (the `$default` stage has no prefix; AWS docs, "Working with stages for
 * HTTP APIs"). The prefix is removed only when it is a whole first segment equal to the stage: on
 * `$default`, or with a custom domain's mapping that leaves the stage out, the path is untouched.
 * REST API (v1) events are not changed: hono/aws-lambda routes them by `path`, which never holds the
 * stage (`requestContext.path` does, and is not used for routing).
 * @returns the same event, or a shallow copy with `rawPath` rewritten (`/dev` alone becomes `/`)
 */
export function withoutStagePrefix<E>(event: E): E {
  const raw = event as RawEvent;
  const stage = raw.requestContext?.stage;
  if (typeof raw.rawPath !== "string" || !raw.requestContext?.http) return event;
  if (typeof stage !== "string" || stage === "" || stage === "$default") return event;
  const prefix = `/${stage}`;
  if (raw.rawPath !== prefix && !raw.rawPath.startsWith(`${prefix}/`)) return event;
  return { ...event, rawPath: raw.rawPath.slice(prefix.length) || "/" };
}

/** A media type whose body must be JSON: `application/json` or any `application/…+json`. */
const JSON_MEDIA_TYPE = /^[ \t]*application\/(?:[!#$%&'*.^_`|~0-9a-z-]+\+)?json[ \t]*(?:;|$)/i;

/**
 * Why an event's body cannot be read, or undefined when it can. A body flagged `isBase64Encoded` must
 * be canonical base64 (RFC 4648 section 4: the `A–Z a–z 0–9 + /` alphabet, `=` padding to a multiple
 * of 4 characters, no line breaks or spaces, zero pad bits), which is what API Gateway and Lambda
 * function URLs send. base64url (`-`, `_`, RFC 4648 section 5) is refused: neither service produces it,
 * so such a body did not come from them as flagged. A decoded body sent as JSON (`application/json`,
 * `application/…+json`) must be valid UTF-8 (RFC 8259 section 8.1); any other media type is left to
 * the route (which answers 415).
 * @returns a ProblemError INVALID_REQUEST (400) naming the body, or undefined
 */
export function unreadableBody(event: unknown): ProblemError | undefined {
  const raw = (typeof event === "object" && event !== null ? event : {}) as RawEvent;
  if (raw.isBase64Encoded !== true || typeof raw.body !== "string" || raw.body === "") return undefined;
  const bytes = Buffer.from(raw.body, "base64");
  if (bytes.toString("base64") !== raw.body) {
    return invalidBody(
      "The body is flagged isBase64Encoded but is not base64 (RFC 4648 section 4: A-Z a-z 0-9 + /, padded with = to a multiple of 4; base64url is not accepted).",
    );
  }
  const contentType = rawHeaderValues(event, "content-type")?.[0] ?? "";
  if (JSON_MEDIA_TYPE.test(contentType) && !isUtf8(bytes)) {
    return invalidBody(
      "The base64-decoded body is not valid UTF-8, which JSON requires (RFC 8259 section 8.1).",
    );
  }
  return undefined;
}

function invalidBody(message: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", message, {
    extensions: { errors: [{ in: "body", path: "(root)", message }] },
  });
}

/**
 * Names of the event's headers the WHATWG Headers class refuses (a NUL, CR or LF inside the value, or a
 * name that is not an RFC 9110 token), which makes hono/aws-lambda fail to build the Request. Values with a non-ASCII character are not
 * listed: hono/aws-lambda percent-encodes those before building the Request.
 */
function unreadableHeaders(event: unknown): string[] {
  const raw = (typeof event === "object" && event !== null ? event : {}) as RawEvent;
  const names = new Set<string>();
  for (const bag of [raw.headers, raw.multiValueHeaders]) {
    for (const [name, value] of Object.entries(bag ?? {})) {
      for (const one of Array.isArray(value) ? value : [value]) {
        if (typeof one !== "string" || /[^\p{ASCII}]/u.test(one)) continue;
        try {
          new Headers().append(name, one);
        } catch {
          names.add(name);
        }
      }
    }
  }
  return [...names];
}

/** The 400 of an event hono/aws-lambda could not read, naming the headers at fault when there are any. */
function unreadableRequest(event: unknown): ProblemError {
  const names = unreadableHeaders(event);
  if (names.length === 0) {
    return new ProblemError(
      "INVALID_REQUEST",
      "The request could not be read (a body on GET or HEAD, or a malformed header).",
    );
  }
  const message = "not a valid HTTP header (a NUL, CR or LF in the value, or a malformed name)";
  return new ProblemError(
    "INVALID_REQUEST",
    `The request could not be read: header ${names.join(", ")}: ${message}.`,
    {
      extensions: { errors: names.map((name) => ({ in: "header", path: name, message })) },
    },
  );
}

/** The event's method: `requestContext.http.method` (HTTP API v2, function URL) or `httpMethod` (REST v1). */
function methodOf(raw: RawEvent): string {
  const http = raw.requestContext?.http as { method?: unknown } | undefined;
  const method = http?.method ?? raw.httpMethod;
  return typeof method === "string" ? method.toUpperCase() : "";
}

/**
 * The event as hono/aws-lambda can turn it into a Request, and why the one given could not be, for an
 * entry that builds the Request itself (the streaming function's `streamHandle`, which answers a failure
 * with the text "Internal Server Error" and no status). A body flagged `isBase64Encoded` that is not
 * base64 or not UTF-8 JSON ({@link unreadableBody}), a body on GET or HEAD, or a header value the WHATWG
 * Headers class refuses: the event comes back without that body and those headers, with the 400
 * INVALID_REQUEST {@link guardLambdaEdge} answers for it on the API function.
 * @returns `problem` undefined and the same event when it can be read as it is
 */
export function readableEvent<E>(event: E): { event: E; problem: ProblemError | undefined } {
  const raw = (typeof event === "object" && event !== null ? event : {}) as RawEvent;
  const bodyProblem = unreadableBody(event);
  const bodyOnGet =
    typeof raw.body === "string" && raw.body !== "" && ["GET", "HEAD"].includes(methodOf(raw));
  const headers = unreadableHeaders(event);
  const problem = bodyProblem ?? (bodyOnGet || headers.length > 0 ? unreadableRequest(event) : undefined);
  if (!problem) return { event, problem };
  const without = (bag: Record<string, unknown> | null | undefined) =>
    bag ? Object.fromEntries(Object.entries(bag).filter(([name]) => !headers.includes(name))) : bag;
  const readable = {
    ...raw,
    headers: without(raw.headers),
    ...(raw.multiValueHeaders ? { multiValueHeaders: without(raw.multiValueHeaders) } : {}),
    ...(bodyProblem || bodyOnGet ? { body: undefined, isBase64Encoded: false } : {}),
  };
  return { event: readable as E, problem };
}

/**
 * A problem as the result hono/aws-lambda would have built for this event: `multiValueHeaders` when the
 * event has them (REST v1), else `headers`.
 */
function problemResult(event: unknown, problem: ProblemError): LambdaResult {
  const headers = problem.responseHeaders;
  const base = { statusCode: problem.status, body: JSON.stringify(problem.body), isBase64Encoded: false };
  return (event as RawEvent).multiValueHeaders
    ? { ...base, multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])) }
    : { ...base, headers };
}

/**
 * Wraps hono/aws-lambda's handler with the rules of the Lambda edge, the one place the raw event is
 * read before the app sees it:
 * 1. a named stage's prefix is taken off an HTTP API v2 `rawPath` ({@link withoutStagePrefix});
 * 2. a body flagged `isBase64Encoded` that is not canonical base64, or a JSON body that does not decode
 *    to UTF-8, is answered 400 INVALID_REQUEST problem+json before anything runs ({@link unreadableBody});
 *    hono/aws-lambda would throw on the first (500) and decode the second with U+FFFD replacements;
 * 3. an event hono/aws-lambda cannot turn into a Request (a GET or HEAD with a body, a header value the
 *    WHATWG Headers class refuses) never reaches the app: the adapter answers 400 "Invalid request" (or
 *    500 "Internal Server Error") as text/plain. The apps never answer text/plain, so such an answer is
 *    rewritten as the problem+json of INVALID_REQUEST, with `errors` naming each unreadable header
 *    (INTERNAL for the 500).
 * Nothing is written and no dependency is loaded for a request refused here.
 */
export function guardLambdaEdge(lambda: LambdaHandler): LambdaHandler {
  return async (event, context) => {
    const unreadable = unreadableBody(event);
    if (unreadable) return problemResult(event, toProblem(unreadable));
    const result = await lambda(withoutStagePrefix(event), context);
    const headers = (result as { headers?: Record<string, string> }).headers ?? {};
    const multi = (result as { multiValueHeaders?: Record<string, string[]> }).multiValueHeaders ?? {};
    const contentType = headers["content-type"] ?? multi["content-type"]?.[0] ?? "";
    if (!contentType.startsWith("text/plain")) return result;
    const problem = toProblem(
      problemCodeOf(result.statusCode) === "INVALID_REQUEST"
        ? unreadableRequest(event)
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
