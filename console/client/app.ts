/**
 * The operator console's script (served by functions/api/console.ts, built by console/build.ts): sign-in,
 * then the view the URL fragment names, each a chunk loaded when first shown:
 * - `#/runs` (filters in its query: `#/runs?status=…`): the runs, and a prompt box that starts one (runs.ts)
 * - `#/runs/<runId>`: one run, live (run.ts)
 * - `#/approvals`: the tenant's approvals inbox (approvals.ts)
 * - `#/ledger`, `#/invoices/<invoiceId>`: the tenant's invoices, and one (ledger.ts)
 * - `#/usage` (`?days=`): usage, limits and cost per day as charts (usage.ts)
 * - `#/policies`: the tenant's Cedar policies, for policy:admin (policies.ts)
 * Views are built with DOM calls only (dom.ts). Every number shown comes from the API's answers; the
 * page decides nothing: who the caller is and what it holds are the API's answer (`GET /v1/me`).
 */
import { type Caller, fetchCaller, getToken, tokenReads, whenUnauthorized } from "./api.js";
import { alert, h, problemText, view } from "./dom.js";
import { holds, session } from "./session.js";
import { forgetTokens, showCaller, signInView, takeFragmentToken, takeOidcRedirect } from "./signin.js";

/** The views by the fragment they answer; the last one (the runs) answers anything else. */
const ROUTES: Array<[RegExp, (match: RegExpExecArray) => Promise<void>]> = [
  [/^#\/runs\/([\w-]+)$/, async (m) => (await import("./run.js")).runView(m[1] as string)],
  [/^#\/invoices\/([\w-]+)$/, async (m) => (await import("./ledger.js")).invoiceView(m[1] as string)],
  [/^#\/approvals$/, async () => (await import("./approvals.js")).approvalsView()],
  [/^#\/ledger$/, async () => (await import("./ledger.js")).ledgerView()],
  [/^#\/policies$/, async () => (await import("./policies.js")).policiesView()],
  [/^#\/usage(?:\?(.*))?$/, async (m) => (await import("./usage.js")).usageView(m[1] ?? "")],
  [/^#\/runs(?:\?(.*))?$|/, async (m) => (await import("./runs.js")).runsView(m[1] ?? "")],
];

/** Where each navigation link leads, and the fragments that count as being there. */
const SECTIONS: Record<string, RegExp> = {
  "#/runs": /^#\/runs/,
  "#/approvals": /^#\/approvals/,
  "#/ledger": /^#\/(ledger|invoices)/,
  "#/usage": /^#\/usage/,
  "#/policies": /^#\/policies/,
};

/**
 * Navigation links shown only to holders of a permission: the one that the view's listing needs
 * (`GET /v1/approvals`, `GET /v1/invoices`, `GET /v1/policies`: docs/http-api.md), which the API
 * refuses to others. The page's links start hidden, so none shows before the API has said.
 */
const NEEDS: Record<string, string> = {
  "#/approvals": "billing:approve",
  "#/ledger": "billing:read",
  "#/policies": "policy:admin",
};

/**
 * The caller as the API verified `token` (`GET /v1/me`), asked once per token; null when the API
 * refused it (a 401 has shown the sign-in; any other refusal is shown in the view).
 */
async function callerOfToken(token: string): Promise<Caller | null> {
  if (session.callerToken === token && session.caller) return session.caller;
  const caller = await fetchCaller();
  if ("ok" in caller) {
    if (caller.status !== 401) {
      const why = problemText(caller.status, caller.body);
      view().replaceChildren(h("h1", {}, "Console"), alert(`Who you are could not be read: ${why}`));
    }
    return null;
  }
  session.callerToken = token;
  session.caller = caller;
  return caller;
}

async function route(): Promise<void> {
  session.leaving.abort();
  session.leaving = new AbortController();
  const token = getToken();
  if (!token || !tokenReads(token)) return signInView(() => void route());
  if (!(await callerOfToken(token))) return;
  showCaller(() => signInView(() => void route()));
  const hash = location.hash || "#/runs";
  for (const link of document.querySelectorAll("nav a")) {
    const href = link.getAttribute("href") ?? "";
    (link.parentElement as HTMLElement).hidden = NEEDS[href] !== undefined && !holds(NEEDS[href]);
    const here = SECTIONS[href]?.test(hash) ?? false;
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  for (const [pattern, show] of ROUTES) {
    const match = pattern.exec(hash);
    if (match) {
      await show(match);
      break;
    }
  }
  document.title = `${view().querySelector("h1")?.textContent ?? "Console"} · boundloop console`;
}

whenUnauthorized((why) => {
  void forgetTokens();
  const reason = why ? `: ${why.replace(/\.$/, "")}` : " (expired?)";
  signInView(() => void route(), `The API did not accept the token${reason}. Sign in again.`);
});
takeFragmentToken();
// The skip link's `#view` is no route: followed as a link it would change the fragment and show the runs.
document.querySelector("a.skip")?.addEventListener("click", (event) => {
  event.preventDefault();
  view().focus();
});
window.addEventListener("hashchange", () => {
  void route();
  view().focus();
});
takeOidcRedirect().then(
  () => route(),
  (error: unknown) => signInView(() => void route(), `Sign-in failed: ${String(error)}`),
);
