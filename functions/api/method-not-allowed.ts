import { METHODS, type OpenApiDocument, withEveryOperation } from "./openapi-document.js";
import { ProblemError } from "./problem-details.js";

/** The reusable response every operation lists for 405 (`#/components/responses/MethodNotAllowed`). */
const RESPONSE_NAME = "MethodNotAllowed";

/**
 * The 405 of the document: problem+json METHOD_NOT_ALLOWED with `Allow` (RFC 9110 §15.5.6), which a
 * request to a documented path with a method the path does not serve gets.
 */
const METHOD_NOT_ALLOWED_RESPONSE = {
  description:
    "METHOD_NOT_ALLOWED: this path with a method it does not serve; `Allow` lists the methods it does (so does the `detail`).",
  headers: {
    Allow: { description: "The methods the path serves, e.g. `GET, POST`.", schema: { type: "string" } },
  },
  content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
};

/**
 * `document` with a 405 response on every operation that documents none of its own (`GET /mcp` answers a
 * JSON-RPC 405 itself), referring to one `components.responses.MethodNotAllowed`. A new object; the
 * input is not changed.
 */
export function withMethodNotAllowed<T extends object>(input: T): T {
  return withEveryOperation(
    input,
    { name: RESPONSE_NAME, response: METHOD_NOT_ALLOWED_RESPONSE },
    (_, operation) =>
      operation.responses?.["405"]
        ? operation
        : {
            ...operation,
            responses: { ...operation.responses, 405: { $ref: `#/components/responses/${RESPONSE_NAME}` } },
          },
  );
}

/**
 * The methods each documented path serves, as upper-case names by a matcher of the path (OpenAPI
 * `{param}`: one non-empty segment), read from the document as generated (before
 * {@link withMethodNotAllowed}). An operation documenting its own 405 does not count (`GET /mcp` refuses). `extra` adds routes the document does not list (`GET /openapi.json`).
 */
export function servedMethods(
  document: object,
  extra: ReadonlyArray<{ method: string; path: string }> = [],
): Array<{ pattern: RegExp; methods: string[] }> {
  const byPath = new Map<string, Set<string>>();
  const add = (path: string, method: string) => byPath.set(path, (byPath.get(path) ?? new Set()).add(method));
  for (const [path, item] of Object.entries((document as OpenApiDocument).paths ?? {})) {
    for (const [key, operation] of Object.entries(item)) {
      if (METHODS.includes(key) && operation && !operation.responses?.["405"]) add(path, key.toUpperCase());
    }
  }
  for (const route of extra) add(route.path, route.method.toUpperCase());
  return [...byPath].map(([path, methods]) => ({
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
    methods: [...methods].sort(),
  }));
}

/**
 * The answer to a request no route matched: 405 METHOD_NOT_ALLOWED with `Allow` when its path is served
 * with other methods (`served`: {@link servedMethods}), else 404 NOT_FOUND.
 */
export function unmatchedRequest(
  method: string,
  path: string,
  served: ReadonlyArray<{ pattern: RegExp; methods: string[] }>,
): ProblemError {
  const allow = served.find((entry) => entry.pattern.test(path))?.methods;
  if (!allow) return new ProblemError("NOT_FOUND", "No such route.");
  return new ProblemError(
    "METHOD_NOT_ALLOWED",
    `${method} is not served at ${path}; it serves ${allow.join(", ")}.`,
    { headers: { allow: allow.join(", ") } },
  );
}
