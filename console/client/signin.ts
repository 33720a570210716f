/**
 * Signing in and out: a token in the URL fragment (what `npm run dev` prints) or pasted, or the OIDC
 * sign-in at the configured issuer (oidc-client-ts, a chunk of its own loaded only on that path).
 */
import { clearToken, setToken, tokenReads } from "./api.js";
import { alert, h, view } from "./dom.js";
import { session } from "./session.js";

const meta = (name: string) =>
  document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content || undefined;
const oidc = { issuer: meta("boundloop-oidc-issuer"), clientId: meta("boundloop-oidc-client-id") };

/** A token in the fragment (`#token=…`) moves to session storage at once, and leaves the address bar. */
export function takeFragmentToken(): void {
  const match = /^#token=([^&]+)/.exec(location.hash);
  if (!match?.[1]) return;
  setToken(decodeURIComponent(match[1]));
  history.replaceState(null, "", `${location.pathname}#/runs`);
}

/**
 * Completes an OIDC redirect (`?code=…&state=…`, or `?error=…&state=…` when the issuer refused), then
 * clears the query from the address bar.
 * @throws the sign-in's error (shown on the sign-in form)
 */
export async function takeOidcRedirect(): Promise<void> {
  const query = new URLSearchParams(location.search);
  if (!oidc.issuer || !oidc.clientId || !query.has("state")) return;
  if (!query.has("code") && !query.has("error")) return;
  const { completeSignIn } = await import("./oidc.js");
  try {
    setToken(await completeSignIn(oidc.issuer, oidc.clientId));
  } finally {
    history.replaceState(null, "", `${location.pathname}#/runs`);
  }
}

/** Why a pasted text was not taken as a token. */
const NOT_A_TOKEN =
  "That is not an access token this page can read: paste the whole token, three parts separated by dots (npm run token prints one).";

/**
 * The token in what was pasted: the curl lines `npm run dev` prints carry it as
 * `-H 'authorization: Bearer <token>'`, and a header copied from a browser's tools as
 * `Bearer <token>`; the scheme and header name are not part of the token.
 */
function pastedToken(pasted: string): string {
  return pasted
    .trim()
    .replace(/^-H\s+/, "")
    .replace(/^['"]|['"]$/g, "")
    .replace(/^(authorization:\s*)?bearer\s+/i, "")
    .trim();
}

/** The sign-in form (and the issuer's sign-in button when one is configured); `done` routes on. */
export function signInView(done: () => void, note?: string): void {
  session.leaving.abort();
  document.getElementById("who")?.replaceChildren();
  const field = h("textarea", { id: "token", name: "token", rows: 3, required: true, autocomplete: "off" });
  const form = h(
    "form",
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        const token = pastedToken((field as HTMLTextAreaElement).value);
        // A token whose claims do not read would only bring this form back, with no word of why.
        if (!tokenReads(token)) return signInView(done, NOT_A_TOKEN);
        setToken(token);
        location.hash = "#/runs";
        done();
      },
    },
    h("label", { for: "token" }, "Access token"),
    field,
    h("button", { type: "submit" }, "Sign in with the token"),
  );
  const issuerButton = h(
    "button",
    {
      type: "button",
      onclick: async () => {
        const { signIn } = await import("./oidc.js");
        await signIn(oidc.issuer as string, oidc.clientId as string);
      },
    },
    "Sign in",
  );
  view().replaceChildren(
    h("h1", {}, "Sign in"),
    ...(note ? [alert(note)] : []),
    oidc.issuer && oidc.clientId
      ? h("p", {}, issuerButton)
      : h("p", {}, "Locally, npm run dev prints a console link that signs you in."),
    form,
  );
}

/** Forgets the bearer token, and the tokens oidc-client-ts kept when the page signs in at an issuer. */
export async function forgetTokens(): Promise<void> {
  clearToken();
  session.caller = null;
  session.callerToken = null;
  if (oidc.issuer && oidc.clientId)
    await (await import("./oidc.js")).forgetSignIn(oidc.issuer, oidc.clientId);
}

/** Shows who is signed in, with the sign-out button. */
export function showCaller(onSignedOut: () => void): void {
  const who = document.getElementById("who");
  const { caller } = session;
  if (!who || !caller) return;
  who.replaceChildren(
    `Signed in as ${caller.sub} (tenant ${caller.tenant}) `,
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        onclick: async () => {
          await forgetTokens();
          onSignedOut();
        },
      },
      "Sign out",
    ),
  );
}
