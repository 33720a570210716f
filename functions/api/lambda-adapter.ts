import type { handle } from "hono/aws-lambda";
import { PROBLEM_CONTENT_TYPE, ProblemError, problemCodeOf, toProblem } from "../../shared/errors.js";

/** A Lambda handler as hono/aws-lambda's `handle(app)` returns it: (event, context) → API Gateway result. */
export type LambdaHandler = ReturnType<typeof handle>;

/** The event shapes the handler accepts (hono/aws-lambda's: API Gateway v1/v2, function URL, ALB). */
export type ApiEvent = Parameters<LambdaHandler>[0];

/**
 * Wraps hono/aws-lambda's handler so that its own failures are problem+json like every other error.
 *
 * An event hono/aws-lambda cannot turn into a Request (a GET or HEAD with a body, a header value the
 * WHATWG Headers class refuses) never reaches the app: the adapter answers 400 "Invalid request" (or 500
 * "Internal Server Error") as text/plain. The apps never answer text/plain, so such an answer is
 * rewritten here as the problem+json of INVALID_REQUEST (INTERNAL for the 500).
 */
export function answerAdapterFailuresAsProblems(lambda: LambdaHandler): LambdaHandler {
  return async (event, context) => {
    const result = await lambda(event, context);
    const headers = (result as { headers?: Record<string, string> }).headers ?? {};
    const multi = (result as { multiValueHeaders?: Record<string, string[]> }).multiValueHeaders ?? {};
    const contentType = headers["content-type"] ?? multi["content-type"]?.[0] ?? "";
    if (!contentType.startsWith("text/plain")) return result;
    const problem = toProblem(
      problemCodeOf(result.statusCode) === "INVALID_REQUEST"
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
