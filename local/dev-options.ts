/**
 * `npm run dev`'s command line (see USAGE): parsed and checked before anything else loads, so `--help`
 * and a bad option answer at once (local/dev.ts). Node's built-ins and one constant only.
 */
import { parseArgs } from "node:util";
import { FUNCTION_TIMEOUT_SECONDS } from "../shared/config/function-timeout.js";
import { userPath } from "./user-path.js";

/** The dev server's default address, as `sam local start-api`'s. */
export const DEFAULT_HOST = "127.0.0.1";
/** The dev server's default port, as `sam local start-api`'s. */
export const DEFAULT_PORT = 3000;
/** The function timeout as deployed (s). */
const DEFAULT_TIMEOUT_S = FUNCTION_TIMEOUT_SECONDS;

/** Writes one line to stderr, where `npm run dev`'s progress goes. */
export const log = (line: string) => process.stderr.write(`${line}\n`);

const USAGE = `usage: npm run dev -- [options]

  --port <n>           port on 127.0.0.1 (default ${DEFAULT_PORT}; 0 picks a free one)
  --host <addr>        address to listen on (default ${DEFAULT_HOST})
  --env-vars <file>    variables for the function: flat JSON, SAM's shape, or a dotenv file
  --timeout <s>        function timeout in seconds (default ${DEFAULT_TIMEOUT_S}, as deployed, or more when RUN_TIMEOUT_MS needs it)
  --issuer <iss>       issuer the JWT check accepts and tokens carry (default urn:boundloop:local-dev-issuer)
  --audience <aud>     audience the JWT check accepts and tokens carry (default boundloop-api)
  --issuer-file <f>    where to write the issuer key for npm run token (default .boundloop/dev-issuer-<port>.json)
  --policies <file>    a Cedar policy file as the default policy set (POLICIES, docs/policies.md), checked
                       against the tools' schema first
  --as <sub>           also print a console link for this user of the demo tenant (the second pair of eyes)

With JWT_ISSUER set (environment or --env-vars), tokens of that issuer are accepted instead of a local
one's: keys from JWT_JWKS_URL (default <issuer>/.well-known/jwks.json) or JWT_JWKS, audiences
JWT_AUDIENCE (default --audience, else boundloop-api); the console signs in there with CONSOLE_CLIENT_ID.`;

/** The options of `npm run dev` (see USAGE). */
const OPTIONS = {
  host: { type: "string", default: DEFAULT_HOST },
  port: { type: "string", default: String(DEFAULT_PORT) },
  "env-vars": { type: "string", short: "n" },
  timeout: { type: "string", short: "t" },
  issuer: { type: "string" },
  audience: { type: "string" },
  "issuer-file": { type: "string" },
  as: { type: "string", multiple: true },
  policies: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** The parsed options of `npm run dev`. */
export type DevOptions = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>["values"];

/** Parses and checks the options; undefined after printing the usage for `--help`. */
export function parseOptions(
  argv: string[],
): (DevOptions & { portNumber: number; timeoutS?: number }) | undefined {
  const { values } = parseArgs({ args: argv, options: OPTIONS });
  if (values.help) {
    log(USAGE);
    return undefined;
  }
  const port = Number(values.port);
  const timeoutS = values.timeout === undefined ? undefined : Number(values.timeout);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error("--port must be 0 to 65535.");
  if (timeoutS !== undefined && (!Number.isFinite(timeoutS) || timeoutS <= 0 || timeoutS > 900)) {
    throw new Error("--timeout must be a number of seconds in (0, 900].");
  }
  // The issuer file is where the user ran npm (local/user-path.ts), and the token command printed at
  // start names it absolutely, so it works from any directory; --env-vars and --policies are read so too.
  const issuerFile =
    values["issuer-file"] === undefined ? {} : { "issuer-file": userPath(values["issuer-file"]) };
  return { ...values, ...issuerFile, portNumber: port, ...(timeoutS === undefined ? {} : { timeoutS }) };
}
