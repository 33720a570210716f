import { type OpenApiOperation, withEveryOperation } from "./openapi-document.js";

/** The reusable response of an operation that documents no 400 (`#/components/responses/UnreadableRequest`). */
const RESPONSE_NAME = "UnreadableRequest";

/** What every such 400 says. */
const DESCRIPTION =
  "INVALID_REQUEST: the Lambda edge could not read the request (a body on GET or HEAD, a body flagged isBase64Encoded that is not base64, a JSON body that is not UTF-8, a header value with NUL, CR or LF; docs/http-edge.md), before any route ran.";

/** The problem+json media type of that 400, by reference to the document's Problem schema. */
const PROBLEM_CONTENT = { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } };

/**
 * `document` with the 400 INVALID_REQUEST problem+json that functions/api/lambda-adapter.ts answers on
 * every path before any route runs (`guardLambdaEdge`): an operation without a 400 gets one
 * (`components.responses.UnreadableRequest`; a HEAD operation the same without content, as its other
 * answers), and a 400 of another media type only (`POST /mcp`'s JSON-RPC error) gets problem+json
 * beside it. A new object; the input is not changed.
 */
export function withUnreadableRequest<T extends object>(input: T): T {
  const response = { description: DESCRIPTION, content: PROBLEM_CONTENT };
  return withEveryOperation(input, { name: RESPONSE_NAME, response }, withBadRequest);
}

/** `operation` (of `method`) with the edge's 400, unless it already documents a problem+json one. */
function withBadRequest(method: string, operation: OpenApiOperation): OpenApiOperation {
  const own = operation.responses?.["400"];
  if (own?.$ref || own?.content?.["application/problem+json"] || (own && method === "head")) return operation;
  const badRequest = own
    ? {
        ...own,
        description: `${own.description ?? ""} Or ${DESCRIPTION}`,
        content: { ...own.content, ...PROBLEM_CONTENT },
      }
    : method === "head"
      ? { description: DESCRIPTION }
      : { $ref: `#/components/responses/${RESPONSE_NAME}` };
  return { ...operation, responses: { ...operation.responses, 400: badRequest } };
}
