/**
 * `npm run -s token -- [--tenant T] [--sub U] [--scope S]... [--claim k=v]... [--expires-in 12h]
 * [--audience A] [--issuer I] [--port N | --issuer-file F]`: prints a token signed by the local
 * issuer of a running `npm run dev` (its key is in `.boundloop/dev-issuer-<port>.json`; without `--port`
 * the one running dev server's, whatever its port), for pasting into `authorization: Bearer …`. Defaults are the demo caller: sub usr_demo, tenant tenant_demo_01,
 * scope "billing:read billing:write", valid 12 h.
 *
 * `--scope` may repeat and may hold several space separated scopes; `--scope ''` gives a token with no
 * scope. `--claim k=v` adds any claim (a JSON value such as `["a","b"]` or `42` is kept as JSON, else a
 * string). `--expires-in -5m`, `--audience other` or `--issuer other` mint tokens the dev server must
 * reject with 401. Exit status 1 with a message on stderr when no dev server's issuer file is found.
 */
import { parseArgs } from "node:util";
import type { JWTPayload } from "jose";
import {
  DEMO_CLAIMS,
  defaultIssuerFile,
  findRunningIssuerFile,
  mintToken,
  readIssuerFile,
} from "./dev-auth.js";
import { userPath } from "./user-path.js";

const USAGE = `usage: npm run -s token -- [options]

  --tenant <id>        tenant_id claim (default ${DEMO_CLAIMS.tenant_id})
  --sub <id>           sub claim, the user id (default ${DEMO_CLAIMS.sub})
  --scope <scopes>     permissions, space separated; repeatable (default "${DEMO_CLAIMS.scope}")
  --claim <k=v>        any other claim; v is parsed as JSON when it is JSON; repeatable
  --expires-in <span>  lifetime, e.g. 12h, 30m (default 12h); --expires-in=-5m for an expired token
  --audience <aud>     override the audience (the dev server accepts only its own)
  --issuer <iss>       override the issuer (the dev server accepts only its own)
  --port <n>           the dev server's port, to find its key (default: the one dev server running)
  --issuer-file <f>    the issuer file the dev server wrote (default .boundloop/dev-issuer-<port>.json)`;

function claimValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenant: { type: "string", default: DEMO_CLAIMS.tenant_id },
      sub: { type: "string", default: DEMO_CLAIMS.sub },
      scope: { type: "string", multiple: true },
      claim: { type: "string", multiple: true },
      "expires-in": { type: "string", default: "12h" },
      audience: { type: "string" },
      issuer: { type: "string" },
      port: { type: "string" },
      "issuer-file": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  const issuer = await readIssuerFile(
    (values["issuer-file"] === undefined ? undefined : userPath(values["issuer-file"])) ??
      (values.port === undefined ? await findRunningIssuerFile() : defaultIssuerFile(Number(values.port))),
  );
  const scope = (values.scope ?? [DEMO_CLAIMS.scope]).join(" ").trim();
  const claims: JWTPayload = {
    sub: values.sub,
    tenant_id: values.tenant,
    ...(scope ? { scope } : {}),
  };
  for (const pair of values.claim ?? []) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new Error(`--claim wants key=value, got "${pair}".`);
    claims[pair.slice(0, at)] = claimValue(pair.slice(at + 1));
  }
  const token = await mintToken(issuer, claims, {
    expiresIn: values["expires-in"],
    audience: values.audience,
    issuer: values.issuer,
  });
  process.stdout.write(`${token}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`token: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
