/**
 * The parts of a DynamoDB `SET` update of `fields`: every name and value goes through a placeholder
 * (`#f0` / `:f0`, …), so reserved words such as `status` and `usage` are safe.
 * @example setFields({ status: "failed" }) // { expression: "SET #f0 = :f0", names: { "#f0": "status" }, values: { ":f0": "failed" } }
 */
export function setFields(fields: Record<string, unknown>): {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
} {
  const entries = Object.entries(fields);
  return {
    expression: `SET ${entries.map((_, i) => `#f${i} = :f${i}`).join(", ")}`,
    names: Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
    values: Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
  };
}
