/**
 * The console's size (`npm run bench`, section "console"; `npm run bench -- --only console` alone): the
 * browser assets console/build.ts makes, gzip-compressed as a browser receives them. The first view a
 * signed-in person loads is the page's script, what it imports statically, the runs view's chunk and its
 * own static imports, and the stylesheet; every other view (a run, approvals, the ledger) and the OIDC
 * sign-in are chunks loaded when first shown. Goal: the first view ≤ 150 kB gzip.
 */
import { gzipSync } from "node:zlib";
import { buildConsoleAssets } from "../console/build.js";

/** The goal for the first view loaded, in gzip bytes. */
export const FIRST_VIEW_GOAL_BYTES = 150 * 1024;

/** The console's sizes: gzip bytes of the first view, of each view's own chunks, of everything. */
export interface ConsoleSize {
  firstViewGzipBytes: number;
  firstViewFiles: string[];
  /** Per view, the gzip bytes its chunks add to what is already loaded (the first view's). */
  viewsGzipBytes: Record<string, number>;
  oidcGzipBytes: number;
  allGzipBytes: number;
  goalBytes: number;
  ratioToGoal: number;
  met: boolean;
}

/** The files `name` needs loaded with it: itself and its static imports, recursively. */
function closure(name: string, imports: Record<string, { static: string[] }>, into = new Set<string>()) {
  if (into.has(name)) return into;
  into.add(name);
  for (const next of imports[name]?.static ?? []) closure(next, imports, into);
  return into;
}

/** Builds the console and measures it (see the module comment). */
export async function benchConsoleSize(): Promise<ConsoleSize> {
  const { manifest, bodies, imports } = await buildConsoleAssets();
  const gz = (name: string) => gzipSync(bodies[name] ?? "", { level: 9 }).length;
  const names = Object.keys(bodies);
  const chunk = (prefix: string) => names.find((name) => name.startsWith(`${prefix}-`)) as string;
  const app = closure(manifest.script, imports);
  const first = closure(chunk("runs"), imports, new Set(app));
  first.add(manifest.style);
  const sum = (files: Iterable<string>) => [...files].reduce((total, name) => total + gz(name), 0);
  const viewsGzipBytes: Record<string, number> = {};
  for (const view of ["runs", "run", "approvals", "ledger"]) {
    const files = closure(chunk(view), imports);
    viewsGzipBytes[view] = sum([...files].filter((name) => !app.has(name)));
  }
  const firstViewGzipBytes = sum(first);
  return {
    firstViewGzipBytes,
    firstViewFiles: [...first].sort(),
    viewsGzipBytes,
    oidcGzipBytes: sum(closure(chunk("oidc"), imports)),
    allGzipBytes: sum(names),
    goalBytes: FIRST_VIEW_GOAL_BYTES,
    ratioToGoal: Math.round((firstViewGzipBytes / FIRST_VIEW_GOAL_BYTES) * 1000) / 1000,
    met: firstViewGzipBytes <= FIRST_VIEW_GOAL_BYTES,
  };
}

const kB = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;

/** The console's section of bench/results/latest.md. */
export function renderConsoleSize(size: ConsoleSize): string {
  const views = Object.entries(size.viewsGzipBytes)
    .map(([view, bytes]) => `| ${view} view, its own chunks | ${kB(bytes)} |`)
    .join("\n");
  return [
    "## Console size",
    "",
    "The operator console's JavaScript and CSS as console/build.ts builds them, gzip (level 9), as a browser",
    "receives them: the first view a signed-in person loads (the page's script with its static imports, the",
    "runs view's chunk, the stylesheet), then what each view adds when first opened, and the OIDC sign-in's",
    "chunk (loaded only on that path).",
    "",
    "| what | gzip |",
    "|---|---|",
    `| first view (${size.firstViewFiles.length} files), goal ≤ ${kB(size.goalBytes)} | ${kB(size.firstViewGzipBytes)} (${size.ratioToGoal} of the goal: ${size.met ? "met" : "not met"}) |`,
    views,
    `| OIDC sign-in (oidc-client-ts) | ${kB(size.oidcGzipBytes)} |`,
    `| every file | ${kB(size.allGzipBytes)} |`,
    "",
  ].join("\n");
}
