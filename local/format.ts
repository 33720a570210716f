/**
 * Formats rows as a plain-text table with padded columns (for terminal output).
 * @example formatTable(["a", "b"], [["1", "22"]]) // "  a  b \n  1  22"
 */
export function formatTable(headers: string[], rows: string[][]): string {
  if (rows.length === 0) return "  (none)";
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: string[]) =>
    `  ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ")}`.trimEnd();
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
