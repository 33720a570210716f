/**
 * The operator console's server side (docs/console.md): `GET /console`, one HTML page, and
 * `GET /console/assets/{file}`, its hashed script and stylesheet (console/build.ts). The page holds no
 * data: its script calls the public API with the caller's bearer token, so these routes need none
 * (infra/routes.ts lists them public). Served by the handler's entry before the app is loaded
 * (functions/api/handler.ts), so a console request loads neither zod, the AWS SDK nor openai.
 *
 * Every answer carries a Content-Security-Policy that allows scripts and styles from this origin only
 * (no inline script, no third-party origin), connections to this origin and to the OIDC issuer when one
 * is configured, Trusted Types for DOM sinks, and no framing. Assets are immutable for a year (their names
 * change with their content); the page itself is revalidated on every load.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The console's settings (Config `console`): `issuer` and `clientId` both set, the page signs in at the
 * issuer; `streamUrl`, the streaming function URL it follows run events on (undefined: this origin).
 */
export interface ConsoleSettings {
  issuer: string | undefined;
  clientId: string | undefined;
  streamUrl?: string | undefined;
}

/** An HTTP answer of the console: status, headers, body. */
export interface ConsoleResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Assets {
  manifest: { script: string; style: string; files: Record<string, string> };
  body(name: string): Promise<string | undefined>;
}

let loading: Promise<Assets> | undefined;

/**
 * The built assets: from `CONSOLE_ASSETS_DIR`, else `<LAMBDA_TASK_ROOT>/console` on Lambda (written
 * there by infra/bundle.ts); elsewhere (unbundled local runs and tests) built in memory once by
 * console/build.ts, which the bundle never contains.
 */
function loadAssets(): Promise<Assets> {
  loading ??= (async (): Promise<Assets> => {
    const root = process.env.LAMBDA_TASK_ROOT;
    const dir = process.env.CONSOLE_ASSETS_DIR ?? (root ? join(root, "console") : undefined);
    if (dir) {
      const manifest = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")) as Assets["manifest"];
      const cache = new Map<string, Promise<string>>();
      return {
        manifest,
        body: async (name) => {
          if (!Object.hasOwn(manifest.files, name)) return undefined;
          if (!cache.has(name)) cache.set(name, readFile(join(dir, name), "utf8"));
          return cache.get(name);
        },
      };
    }
    const builder = "../../console/build.js";
    const built = await (
      (await import(builder)) as {
        buildConsoleAssets(): Promise<{ manifest: Assets["manifest"]; bodies: Record<string, string> }>;
      }
    ).buildConsoleAssets();
    return {
      manifest: built.manifest,
      body: async (name) => (Object.hasOwn(built.bodies, name) ? built.bodies[name] : undefined),
    };
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/**
 * The Content-Security-Policy of every console answer. `issuer` (the OIDC issuer, when sign-in is
 * configured) adds its origin to `connect-src` (discovery, keys, token endpoint); a Cognito user pool's
 * issuer (`cognito-idp.<region>.amazonaws.com`) also its region's hosted domains, where its token endpoint is.
 * `streamUrl` (the streaming function URL) adds its origin, where the page reads run events.
 */
export function consolePolicy(issuer: string | undefined, streamUrl?: string): string {
  const connect = ["'self'"];
  if (streamUrl) connect.push(new URL(streamUrl).origin);
  if (issuer) {
    const { origin, hostname } = new URL(issuer);
    connect.push(origin);
    const region = /^cognito-idp\.([a-z0-9-]+)\.amazonaws\.com$/.exec(hostname)?.[1];
    if (region) connect.push(`https://*.auth.${region}.amazoncognito.com`);
  }
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect.join(" ")}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join("; ");
}

const escapeAttribute = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/**
 * The page: a shell the script fills; `meta` tags carry the sign-in settings (no inline script). Its
 * empty icon keeps browsers from asking for `/favicon.ico`, a path the API answers 401 (no token).
 */
function page(assets: Assets["manifest"], settings: ConsoleSettings): string {
  const oidc =
    (settings.issuer && settings.clientId
      ? `<meta name="boundloop-oidc-issuer" content="${escapeAttribute(settings.issuer)}">` +
        `<meta name="boundloop-oidc-client-id" content="${escapeAttribute(settings.clientId)}">`
      : "") +
    (settings.streamUrl
      ? `<meta name="boundloop-stream-url" content="${escapeAttribute(settings.streamUrl)}">`
      : "");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>boundloop console</title>${oidc}
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/${assets.style}">
<script type="module" src="/console/assets/${assets.script}"></script>
</head><body>
<a class="skip" href="#view">Skip to content</a>
<header><p class="brand">boundloop console</p><nav aria-label="Console"><ul>
<li><a href="#/runs">Runs</a></li><li hidden><a href="#/approvals">Approvals</a></li><li hidden><a href="#/ledger">Ledger</a></li><li><a href="#/usage">Usage</a></li><li hidden><a href="#/policies">Policies</a></li>
</ul></nav><p id="who" aria-live="polite"></p></header>
<main id="view" tabindex="-1"><p>Loading…</p></main>
<noscript><p>The console needs JavaScript.</p></noscript>
</body></html>`;
}

/**
 * Answers a console request: `path` `/console` (the page) or `/console/assets/<file>`; anything else is 404.
 * @throws the asset loader's errors (a bundle without its console assets): the caller's 500
 */
export async function consoleResponse(path: string, settings: ConsoleSettings): Promise<ConsoleResponse> {
  const assets = await loadAssets();
  const headers = {
    "content-security-policy": consolePolicy(
      settings.clientId ? settings.issuer : undefined,
      settings.streamUrl,
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  if (path === "/console" || path === "/console/") {
    return {
      status: 200,
      headers: { ...headers, "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" },
      body: page(assets.manifest, settings),
    };
  }
  const name = path.startsWith("/console/assets/") ? path.slice("/console/assets/".length) : "";
  // Own entries only: `constructor`, `__proto__` or `toString` name members every object inherits.
  const body = await assets.body(name);
  const type = Object.hasOwn(assets.manifest.files, name) ? assets.manifest.files[name] : undefined;
  if (body === undefined || type === undefined) {
    // Not text/plain: the Lambda edge (lambda-adapter.ts) takes that for the adapter's own failures.
    const notFound =
      '<!doctype html><html lang="en"><title>Not found</title><p>No such console file.</p></html>\n';
    return {
      status: 404,
      headers: { ...headers, "content-type": "text/html; charset=utf-8" },
      body: notFound,
    };
  }
  return {
    status: 200,
    headers: { ...headers, "content-type": type, "cache-control": "public, max-age=31536000, immutable" },
    body,
  };
}
