/**
 * Charts as inline SVG made with DOM calls (no library, nothing inline for the CSP to refuse: colours
 * come from the stylesheet's classes). A stacked bar chart of values per day and series (a user), with
 * its legend and the same numbers as a table for whoever cannot read the picture.
 */
import { h, scrollTable } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element with attributes and children. */
function s(
  tag: string,
  attrs: Record<string, string | number>,
  ...children: Array<Node | string>
): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  for (const child of children) element.append(child);
  return element;
}

/** One series of a chart: its name (a user id) and one value per day, in the chart's unit. */
export interface Series {
  name: string;
  values: number[];
}

/** What {@link stackedBars} draws: a title, the days (`YYYY-MM-DD`), the series, how a value reads. */
export interface StackedBars {
  id: string;
  title: string;
  days: string[];
  series: Series[];
  /** A value as people read it (`12 345 tokens`, `0.012345 USD`). */
  format: (value: number) => string;
}

/** How many colours the stylesheet has for series (`.series-0` …); more series reuse them, in order. */
const COLOURS = 8;

/** The top of the value axis: the largest day's total, rounded up to 1, 2 or 5 × a power of ten. */
export function axisTop(max: number): number {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  const step = [1, 2, 5, 10].find((m) => m * power >= max) ?? 10;
  return step * power;
}

const WIDTH = 720;
const HEIGHT = 260;
const PAD = { left: 112, right: 12, top: 14, bottom: 36 };

/** The chart's SVG: axis, grid lines, one stacked bar per day, each part titled with its series and value. */
function chartSvg(chart: StackedBars, summary: string): SVGElement {
  const totals = chart.days.map((_, day) =>
    chart.series.reduce((sum, one) => sum + (one.values[day] ?? 0), 0),
  );
  const top = axisTop(Math.max(0, ...totals));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const y = (value: number) => PAD.top + plotH - (value / top) * plotH;
  const slot = plotW / Math.max(1, chart.days.length);
  const barW = Math.max(4, Math.min(40, slot * 0.6));
  const grid = [0, 0.5, 1].map((f) =>
    s(
      "g",
      { class: "grid" },
      s("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(top * f), y2: y(top * f) }),
      s("text", { x: PAD.left - 6, y: y(top * f) + 4, "text-anchor": "end" }, chart.format(top * f)),
    ),
  );
  const bars = chart.days.map((day, index) => {
    const x = PAD.left + slot * index + (slot - barW) / 2;
    let base = 0;
    const parts = chart.series.flatMap((one, n) => {
      const value = one.values[index] ?? 0;
      if (value <= 0) return [];
      const rect = s(
        "rect",
        {
          x,
          y: y(base + value),
          width: barW,
          height: Math.max(1, y(base) - y(base + value)),
          class: `series-${n % COLOURS}`,
        },
        s("title", {}, `${one.name}, ${day}: ${chart.format(value)}`),
      );
      base += value;
      return [rect];
    });
    const showLabel = chart.days.length <= 16 || index % Math.ceil(chart.days.length / 16) === 0;
    const label = showLabel
      ? [s("text", { x: x + barW / 2, y: HEIGHT - PAD.bottom + 16, "text-anchor": "middle" }, day.slice(5))]
      : [];
    return s("g", { class: "day", "data-day": day, "data-total": totals[index] ?? 0 }, ...parts, ...label);
  });
  return s(
    "svg",
    {
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      role: "img",
      "aria-label": summary,
      class: "chart",
      focusable: "false",
    },
    ...grid,
    s("line", { class: "axis", x1: PAD.left, x2: WIDTH - PAD.right, y1: y(0), y2: y(0) }),
    ...bars,
  );
}

/**
 * A stacked bar chart in a figure: its caption, the SVG (one bar per day, a part per series), the legend,
 * and the numbers as a table under a disclosure (the picture's words for screen readers and for exact
 * reading). `data-series` on the figure lists the series drawn.
 */
export function stackedBars(chart: StackedBars): HTMLElement {
  const grand = chart.series.reduce((sum, one) => sum + one.values.reduce((a, b) => a + b, 0), 0);
  const summary = `${chart.title}: ${chart.series.length} series over ${chart.days.length} days, ${chart.format(grand)} in all.`;
  const legend = h(
    "ul",
    { class: "legend" },
    ...chart.series.map((one, n) =>
      h(
        "li",
        {},
        h("span", { class: `swatch series-${n % COLOURS}`, "aria-hidden": "true" }),
        `${one.name}: ${chart.format(one.values.reduce((a, b) => a + b, 0))}`,
      ),
    ),
  );
  const rows = h(
    "tbody",
    {},
    ...chart.days.map((day, index) =>
      h(
        "tr",
        {},
        h("th", { scope: "row" }, day),
        ...chart.series.map((one) => h("td", { class: "num" }, chart.format(one.values[index] ?? 0))),
      ),
    ),
  );
  const table = scrollTable(
    `${chart.title}, per day`,
    ["Day (UTC)", ...chart.series.map((one) => ({ label: one.name, class: "num" }))],
    rows,
  );
  return h(
    "figure",
    { class: "chart-box", id: chart.id, "data-series": chart.series.map((one) => one.name).join(" ") },
    h("figcaption", {}, chart.title),
    chart.series.length === 0
      ? h("p", { class: "muted" }, "Nothing in these days.")
      : chartSvg(chart, summary),
    legend,
    h("details", {}, h("summary", {}, "The numbers as a table"), table),
  );
}
