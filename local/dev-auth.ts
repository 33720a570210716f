/**
 * The local stand-in for the identity provider used by `npm run dev` and `npm run token`: an RS256 key
 * pair generated at start, tokens signed with it, and the token settings that trust it
 * ({@link devAuthSettings}). The tokens are checked by the service's one verifier
 * (shared/auth/token-verifier.ts), whose `gateway` rules follow API Gateway's JWT authorizer.
 */
import { chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";
import type { AuthSettings } from "../shared/auth/settings.js";

/** The audience the dev server accepts by default (the one events/seed-scenario.json carries). */
export const DEV_AUDIENCE = "boundloop-api";
/** The issuer of locally minted tokens. Not a URL anyone can fetch: the key never leaves this machine. */
export const DEV_ISSUER = "urn:boundloop:local-dev-issuer";
/** The only algorithm used and accepted (what Cognito signs with, and API Gateway's JWT authorizer verifies). */
export const DEV_ALG = "RS256";
/** The claims of the demo token `npm run dev` prints. */
export const DEMO_CLAIMS = {
  sub: "usr_demo",
  tenant_id: "tenant_demo_01",
  scope: "billing:read billing:write",
} as const;

/** What `npm run dev` writes for `npm run token`: who issues, for whom, and the private signing key. */
export interface DevIssuerFile {
  issuer: string;
  audience: string;
  alg: typeof DEV_ALG;
  /** The private key as a JWK, with `kid` (its RFC 7638 thumbprint) and `alg`. */
  privateJwk: JWK;
  /** The public half, as the issuer's JWKS would publish it. */
  publicJwk: JWK;
  /** The writing dev server's process id (so a file left by a killed server is told apart). */
  pid?: number;
  /** The writing dev server's URL (`http://<host>:<port>`), for tools that call its API. */
  url?: string;
  /**
   * The table the writing dev server's functions use: its DynamoDB endpoint (undefined: AWS's) and name,
   * so `npm run tenant -- limits` can tell whether a change it makes is to that server's table.
   */
  table?: { endpoint: string | undefined; name: string };
}

/** The default issuer file of a dev server on `port`: `.boundloop/dev-issuer-<port>.json` in the repo. */
export function defaultIssuerFile(port: number): string {
  return fileURLToPath(new URL(`../.boundloop/dev-issuer-${port}.json`, import.meta.url));
}

/**
 * Generates a fresh RS256 key pair for a local issuer.
 * @returns the issuer description, ready for {@link writeIssuerFile}, {@link mintToken} and
 *   {@link devAuthSettings}
 */
export async function createDevIssuer(
  options: { issuer?: string; audience?: string } = {},
): Promise<DevIssuerFile> {
  const { privateKey, publicKey } = await generateKeyPair(DEV_ALG, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    issuer: options.issuer ?? DEV_ISSUER,
    audience: options.audience ?? DEV_AUDIENCE,
    alg: DEV_ALG,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: DEV_ALG, use: "sig" },
    publicJwk: { ...publicJwk, kid, alg: DEV_ALG, use: "sig" },
  };
}

/** Writes the issuer file readable only by this user (directory 0700, file 0600), with this process's pid. */
export async function writeIssuerFile(path: string, issuer: DevIssuerFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, `${JSON.stringify({ ...issuer, pid: process.pid }, null, 2)}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
}

/** Removes the issuer file (missing is fine). */
export async function removeIssuerFile(path: string): Promise<void> {
  await rm(path, { force: true });
}

/** Whether process `pid` is running (signal 0 checks without sending anything). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The issuer files of the dev servers still running: each `.boundloop/dev-issuer-<port>.json` in
 * `directory` whose writer's pid is alive (or that names none), by port; unreadable files are skipped.
 * @param directory where dev servers write their files (default the repo's `.boundloop/`)
 */
export async function runningIssuerFiles(
  directory: string = dirname(defaultIssuerFile(0)),
): Promise<Array<{ port: number; path: string }>> {
  let names: string[] = [];
  try {
    names = await readdir(directory);
  } catch {
    // No directory: no dev server ever ran here.
  }
  const running: Array<{ port: number; path: string }> = [];
  for (const name of names) {
    const port = /^dev-issuer-(\d+)\.json$/.exec(name)?.[1];
    if (!port) continue;
    const path = join(directory, name);
    try {
      const { pid } = JSON.parse(await readFile(path, "utf8")) as DevIssuerFile;
      if (pid === undefined || isRunning(pid)) running.push({ port: Number(port), path });
    } catch {
      // Unreadable or being written: not a usable issuer.
    }
  }
  return running.sort((a, b) => a.port - b.port);
}

/**
 * The issuer file of the running dev server, when neither `--port` nor `--issuer-file` says which: the one
 * `.boundloop/dev-issuer-<port>.json` whose server is still running ({@link runningIssuerFiles}).
 * @param directory where dev servers write their files (default the repo's `.boundloop/`)
 * @throws Error saying to start `npm run dev` when none is running, or naming the ports and `--port`
 *   when several are
 */
export async function findRunningIssuerFile(
  directory: string = dirname(defaultIssuerFile(0)),
): Promise<string> {
  const running = await runningIssuerFiles(directory);
  if (running.length === 1) return (running[0] as { path: string }).path;
  if (running.length === 0) {
    throw new Error("No running `npm run dev` found: start it first (or pass --port or --issuer-file).");
  }
  const ports = running.map((entry) => entry.port);
  throw new Error(`Several dev servers are running (ports ${ports.join(", ")}): pass --port <n>.`);
}

/**
 * Reads an issuer file written by `npm run dev`.
 * @throws Error saying to start `npm run dev` when the file is missing or unreadable
 */
export async function readIssuerFile(path: string): Promise<DevIssuerFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    throw new Error(`No local issuer at ${path}: start \`npm run dev\` first (or pass --issuer-file).`);
  }
  const parsed = JSON.parse(text) as DevIssuerFile;
  if (!parsed.privateJwk?.kid || !parsed.issuer || !parsed.audience) {
    throw new Error(`${path} is not an issuer file written by \`npm run dev\`.`);
  }
  return parsed;
}

/**
 * Options of {@link mintToken}. `expiresIn` is a jose time span ("12h", "30m", "-5m" for a token
 * that has already expired); `audience` and `issuer` override the issuer file's (to mint tokens the
 * authorizer must reject).
 */
export interface MintOptions {
  expiresIn?: string;
  audience?: string;
  issuer?: string;
}

/**
 * Signs a token with the local issuer's key: RS256, `kid` in the header, `iat` now, `exp` from
 * `expiresIn` (default 12 h), `iss` and `aud` from the issuer.
 * @param claims any claims; API Gateway hands them to the function as strings
 */
export async function mintToken(
  issuer: DevIssuerFile,
  claims: JWTPayload,
  options: MintOptions = {},
): Promise<string> {
  const key = await importJWK(issuer.privateJwk, DEV_ALG);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: DEV_ALG, kid: issuer.privateJwk.kid, typ: "JWT" })
    .setIssuer(options.issuer ?? issuer.issuer)
    .setAudience(options.audience ?? issuer.audience)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "12h")
    .sign(key);
}

/**
 * The token settings (Config `auth`) that trust a local issuer: its `iss`, its audience as the API's, RS256,
 * and its public key as the key set (inline, as JWT_JWKS holds it), for the one verifier
 * (shared/auth/token-verifier.ts). `mcpResourceUrl` is the `/mcp` URL tokens may also name.
 */
export function devAuthSettings(
  issuer: Pick<DevIssuerFile, "issuer" | "audience" | "publicJwk">,
  options: { mcpResourceUrl?: string } = {},
): AuthSettings {
  return {
    issuer: issuer.issuer,
    audiences: [issuer.audience],
    algorithms: [DEV_ALG],
    jwksUrl: undefined,
    jwks: { keys: [issuer.publicJwk as Record<string, unknown>] },
    mcpResourceUrl: options.mcpResourceUrl,
  };
}

/**
 * The same settings as the environment variables the functions read (JWT_ISSUER, JWT_AUDIENCE, JWT_JWKS),
 * for `npm run dev` and test stacks that trust a local issuer.
 */
export function devIssuerEnv(issuer: Pick<DevIssuerFile, "issuer" | "audience" | "publicJwk">) {
  return {
    JWT_ISSUER: issuer.issuer,
    JWT_AUDIENCE: issuer.audience,
    JWT_JWKS: JSON.stringify({ keys: [issuer.publicJwk] }),
  };
}
