/**
 * Usage and cost (`#/usage`; docs/quotas.md): the limits in force today and how close each is
 * (`GET /v1/usage`: the caller's, and with billing:read the tenant's), tokens and cost per UTC day for the
 * tenant and per user as stacked bar charts, today per user against the per-user limits, and the runs
 * a quota refused. The days' figures are sums of the runs' own recorded tokens and cost (`GET /v1/runs`,
 * the tenant's with billing:read), added exactly: cost in integer micro-units, never floating point.
 */
import { amountOfMicro, microOf } from "../../shared/money/micro.js";
import { api, type RunRecord } from "./api.js";
import { type StackedBars, stackedBars } from "./chart.js";
import { alert, count, h, idLink, paged, problemText, scrollTable, time, view } from "./dom.js";
import { holds, session } from "./session.js";

/** One scope of `GET /v1/usage`. */
interface ScopeUsage {
  day: {
    start: string;
    tokens: { used: number; reserved: number; limit: number | null };
    cost: { used: string; limit: string | null; currency: string | null };
    runs: number;
  };
  minute: { start: string; runs: number; limit: number | null };
}

/** `GET /v1/usage`'s answer. */
interface Usage {
  user: ScopeUsage;
  tenant: (ScopeUsage & { inFlight: { runs: number; limit: number | null } }) | null;
}

/**
 * Why no cost is shown: without a price table the backend records no cost (a run's cost is null, the runs
 * list's "—"), so a sum of zero would be made up.
 */
const NO_PRICES = "no model prices are configured (MODEL_PRICES)";

/** The UTC days from `days - 1` days before `today` (`YYYY-MM-DD`) to it, oldest first. */
export function dayRange(today: string, days: number): string[] {
  const end = Date.parse(`${today}T00:00:00.000Z`);
  return Array.from({ length: days }, (_, i) =>
    new Date(end - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

/** Per user and day: tokens, cost (micro-units), runs; and the cost's currency. */
export interface DailyUsage {
  users: string[];
  tokens: Map<string, number[]>;
  cost: Map<string, bigint[]>;
  runs: Map<string, number[]>;
  currency: string | null;
}

/** Adds up runs per user and UTC day of `days` (runs outside them are left out). */
export function dailyUsage(runs: readonly RunRecord[], days: readonly string[]): DailyUsage {
  const out: DailyUsage = { users: [], tokens: new Map(), cost: new Map(), runs: new Map(), currency: null };
  for (const run of runs) {
    const day = days.indexOf(run.startedAt.slice(0, 10));
    if (day === -1) continue;
    if (!out.tokens.has(run.userId)) {
      out.users.push(run.userId);
      out.tokens.set(
        run.userId,
        days.map(() => 0),
      );
      out.cost.set(
        run.userId,
        days.map(() => 0n),
      );
      out.runs.set(
        run.userId,
        days.map(() => 0),
      );
    }
    const [tokens, runs, cost] = [
      out.tokens.get(run.userId) as number[],
      out.runs.get(run.userId) as number[],
      out.cost.get(run.userId) as bigint[],
    ];
    tokens[day] = (tokens[day] ?? 0) + run.usage.totalTokens;
    runs[day] = (runs[day] ?? 0) + 1;
    if (run.cost) {
      cost[day] = (cost[day] ?? 0n) + microOf(run.cost.amount);
      out.currency = run.cost.currency;
    }
  }
  out.users.sort();
  return out;
}

/** How much of a limit is used, in words and as a meter (words too: never colour alone). */
function limitRow(
  label: string,
  used: number,
  limit: number | null,
  text: (n: number) => string,
): HTMLElement {
  const share = limit === null || limit === 0 ? null : used / limit;
  const words =
    share === null
      ? `${text(used)}; no limit`
      : `${text(used)} of ${text(limit as number)} (${Math.round(share * 100)}%${share >= 1 ? ", at the limit" : share >= 0.9 ? ", close to the limit" : ""})`;
  return h(
    "tr",
    { "data-limit": label },
    h("th", { scope: "row" }, label),
    h(
      "td",
      {},
      share === null
        ? h("span", { class: "muted" }, "—")
        : h("meter", {
            min: 0,
            max: limit,
            low: (limit as number) * 0.75,
            high: (limit as number) * 0.9,
            optimum: 0,
            value: Math.min(used, limit as number),
            "aria-label": `${label}: ${words}`,
          }),
    ),
    h("td", { class: "limit-words" }, words),
  );
}

/** The rows of one scope's limits: tokens and cost today, runs this minute (and in flight for the tenant). */
function scopeRows(who: string, scope: ScopeUsage, inFlight?: { runs: number; limit: number | null }) {
  const { tokens, cost } = scope.day;
  const money = (micro: number) => `${amountOfMicro(Math.round(micro))} ${cost.currency ?? ""}`.trim();
  const rows = [
    limitRow(
      `${who}: tokens today`,
      tokens.used + tokens.reserved,
      tokens.limit,
      (n) => `${count(n)} tokens`,
    ),
    // The API's cost has no currency without prices (and then no cost limit can be set).
    cost.currency === null
      ? h(
          "tr",
          { "data-limit": `${who}: cost today` },
          h("th", { scope: "row" }, `${who}: cost today`),
          h("td", {}, h("span", { class: "muted" }, "—")),
          h("td", { class: "limit-words" }, `not known: ${NO_PRICES}`),
        )
      : limitRow(
          `${who}: cost today`,
          Number(microOf(cost.used)),
          cost.limit === null ? null : Number(microOf(cost.limit)),
          money,
        ),
    limitRow(`${who}: runs this minute`, scope.minute.runs, scope.minute.limit, (n) => `${count(n)} run(s)`),
  ];
  if (inFlight)
    rows.push(limitRow(`${who}: runs in flight`, inFlight.runs, inFlight.limit, (n) => `${count(n)} run(s)`));
  return rows;
}

/** Reads the runs started since `from` (the tenant's with billing:read), at most `pages` pages of 100. */
async function runsSince(
  from: string,
  scope: string,
  pages = 10,
): Promise<{ runs: RunRecord[]; complete: boolean }> {
  const runs: RunRecord[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < pages; page++) {
    const query = new URLSearchParams({ scope, from, limit: "100" });
    if (cursor) query.set("cursor", cursor);
    const answer = await api<{ items: RunRecord[]; nextCursor: string | null }>(`/v1/runs?${query}`);
    if (!answer.ok) throw new Error(problemText(answer.status, answer.body));
    runs.push(...answer.body.items);
    cursor = answer.body.nextCursor;
    if (!cursor) return { runs, complete: true };
  }
  return { runs, complete: false };
}

/**
 * Today per user: runs, tokens and cost ("—" unless `priced`), and their share of the per-user daily
 * token limit.
 */
function todayTable(daily: DailyUsage, limit: number | null, priced: boolean): HTMLElement {
  const last = (values: Array<number | bigint> | undefined) => values?.at(-1) ?? 0;
  const rows = daily.users.map((user) => {
    const tokens = Number(last(daily.tokens.get(user)));
    return h(
      "tr",
      { "data-user": user },
      h("th", { scope: "row" }, user),
      h("td", { class: "num" }, count(Number(last(daily.runs.get(user))))),
      h("td", { class: "num" }, count(tokens)),
      h(
        "td",
        { class: "num" },
        priced ? `${amountOfMicro(Number(last(daily.cost.get(user))))} ${daily.currency ?? ""}` : "—",
      ),
      h("td", { class: "num" }, limit ? `${Math.round((tokens / limit) * 100)}%` : "no limit"),
    );
  });
  return scrollTable(
    "Today per user (UTC day), from their runs",
    [
      "User",
      { label: "Runs", class: "num" },
      { label: "Tokens", class: "num" },
      { label: "Cost", class: "num" },
      { label: "Of the per-user token limit", class: "num" },
    ],
    h("tbody", {}, ...rows),
  );
}

/** The usage view; `query` is the fragment's query (`days`: 7, 14 or 30). */
export async function usageView(query: string): Promise<void> {
  const days = [7, 30].includes(Number(new URLSearchParams(query).get("days")))
    ? Number(new URLSearchParams(query).get("days"))
    : 14;
  const scope = holds("billing:read") ? "tenant" : "own";
  const status = h("div", { "aria-live": "polite", class: "status" });
  const limits = h("tbody");
  const charts = h("div", { class: "charts" }, h("p", {}, "Reading the runs…"));
  const today = h("div");
  const refused = h("tbody");
  const refusedStatus = h("div", { "aria-live": "polite" });
  const moreRefused = h("button", { type: "button", hidden: true, class: "secondary" }, "More refused runs");
  const range = h(
    "p",
    { class: "range" },
    "Days shown: ",
    ...[7, 14, 30].flatMap((n, i) => [
      i > 0 ? " · " : "",
      n === days
        ? h("strong", { "aria-current": "true" }, `${n}`)
        : h("a", { href: `#/usage?days=${n}` }, `${n}`),
    ]),
  );
  view().replaceChildren(
    h("h1", {}, "Usage and cost"),
    status,
    h("h2", {}, "Limits today and how close each is"),
    scrollTable(
      "The limits in force (UTC day and minute); reserved tokens of calls in flight count as used",
      ["Limit", "How close", "Used"],
      limits,
    ),
    h("h2", {}, scope === "tenant" ? "The tenant per day, by user" : "Your runs per day"),
    range,
    charts,
    today,
    h("h2", {}, "Runs refused by quota"),
    refusedStatus,
    scrollTable(
      "Runs that ended quota_exceeded, newest first",
      ["When", "Run", "Started by", "Why"],
      refused,
    ),
    moreRefused,
  );
  const usage = await api<Usage>("/v1/usage");
  if (usage.ok) {
    limits.replaceChildren(
      ...scopeRows(`You (${session.caller?.sub ?? "?"})`, usage.body.user),
      ...(usage.body.tenant ? scopeRows("The tenant", usage.body.tenant, usage.body.tenant.inFlight) : []),
    );
  } else status.replaceChildren(alert(problemText(usage.status, usage.body)));
  const todayDay = (usage.ok ? usage.body.user.day.start : new Date().toISOString()).slice(0, 10);
  const dayList = dayRange(todayDay, days);
  try {
    const read = await runsSince(`${dayList[0]}T00:00:00.000Z`, scope);
    const daily = dailyUsage(read.runs, dayList);
    const priced = (usage.ok && usage.body.user.day.cost.currency !== null) || daily.currency !== null;
    const chart = (
      id: string,
      title: string,
      values: Map<string, Array<number | bigint>>,
      format: StackedBars["format"],
    ) =>
      stackedBars({
        id,
        title,
        days: dayList,
        series: daily.users.map((name) => ({ name, values: (values.get(name) ?? []).map(Number) })),
        format,
      });
    charts.replaceChildren(
      chart("tokens-chart", "Tokens per day", daily.tokens, (n) => `${count(Math.round(n))} tokens`),
      priced
        ? chart(
            "cost-chart",
            `Cost per day${daily.currency ? ` (${daily.currency})` : ""}`,
            daily.cost,
            (n) => `${amountOfMicro(Math.round(n))}${daily.currency ? ` ${daily.currency}` : ""}`,
          )
        : h("p", { class: "note" }, `Cost is not known: ${NO_PRICES}.`),
      read.complete
        ? ""
        : h(
            "p",
            { class: "note" },
            `The first ${read.runs.length} runs of these days are drawn; narrow the days to see all.`,
          ),
    );
    today.replaceChildren(todayTable(daily, usage.ok ? usage.body.user.day.tokens.limit : null, priced));
  } catch (error) {
    charts.replaceChildren(alert(String((error as Error).message)));
  }
  await paged<RunRecord>(`/v1/runs?scope=${scope}&status=quota_exceeded&limit=20`, {
    status: refusedStatus,
    more: moreRefused,
    show: (items, { first }) => {
      refused.append(
        ...items.map((run) =>
          h(
            "tr",
            { "data-run-id": run.runId },
            h("td", {}, time(run.startedAt)),
            h("td", {}, idLink(`#/runs/${run.runId}`, run.runId)),
            h("td", {}, run.userId),
            h("td", {}, run.reason ?? "—"),
          ),
        ),
      );
      refusedStatus.replaceChildren(
        first && items.length === 0 ? h("p", {}, "No run was refused by a quota.") : "",
      );
    },
  });
}
