/** The parts of an OpenAPI 3.1 document (as @hono/zod-openapi generates it) the edge's additions read. */
export interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation | undefined>>;
  components?: { responses?: Record<string, unknown> };
  [key: string]: unknown;
}

/** An operation's responses, as far as the edge's additions read them. */
export interface OpenApiOperation {
  responses?: Record<string, { $ref?: string; content?: Record<string, unknown>; description?: string }>;
}

/** The operations of a path item (its other members, such as `parameters`, are not methods). */
export const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/**
 * `input` with `edit` applied to every operation of every path, and `response` registered as the
 * reusable `components.responses[name]` the edits may refer to. A new object; the input is not changed.
 * @param edit gets the operation's method (lower case) and the operation, returns the operation to keep
 */
export function withEveryOperation<T extends object>(
  input: T,
  component: { name: string; response: unknown },
  edit: (method: string, operation: OpenApiOperation) => OpenApiOperation,
): T {
  const document = input as OpenApiDocument;
  const paths = Object.fromEntries(
    Object.entries(document.paths ?? {}).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([key, operation]) =>
          METHODS.includes(key) && operation ? [key, edit(key, operation)] : [key, operation],
        ),
      ),
    ]),
  );
  const components = {
    ...document.components,
    responses: { ...document.components?.responses, [component.name]: component.response },
  };
  return { ...document, paths, components } as unknown as T;
}
