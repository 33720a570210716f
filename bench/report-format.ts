/** Markdown helpers shared by the bench report's sections (bench/report.ts, bench/tracing-report.ts). */

/** Bytes as kilobytes (1 kB = 1000 B), one decimal: `1189.4 kB`. */
export const kb = (bytes: number): string => `${(bytes / 1000).toFixed(1)} kB`;

/** Whether a goal is met, the miss in bold so it stands out in the table. */
export const yes = (met: boolean): string => (met ? "yes" : "**no**");

/** A summary as `median (min–max)`. */
export const range = (s: { median: number; min: number; max: number }): string =>
  `${s.median} (${s.min}–${s.max})`;

/** A number rounded to two decimal places (ratios in the tables). */
export const round2 = (value: number): number => Math.round(value * 100) / 100;

/** A markdown table from a header row and body rows. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const line = (cells: Array<string | number>) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}
