/**
 * File paths given on the command lines of the local scripts (`npm run invoke`, `npm run dev`,
 * `npm start`, `npm run eval`, `npm run token`). npm runs a script in the package's root, whatever
 * directory the user ran it from, and says which one that was in INIT_CWD
 * (https://docs.npmjs.com/cli/v10/commands/npm-run-script): a relative path the user typed means that
 * directory, so `npm --prefix ~/boundloop run invoke -- "my event.json"` reads ./my event.json.
 * Node's built-ins only: the scripts resolve their arguments before anything else loads.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";

/**
 * The absolute path a command-line path means: itself when absolute, else resolved from INIT_CWD (the
 * directory npm was run from), or from the working directory when the script was started without npm.
 */
export function userPath(path: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.INIT_CWD || process.cwd(), path);
}

/**
 * Reads a command-line file as UTF-8 text (see {@link userPath}).
 * @param label how the message names the file, e.g. "--env-vars env.json"
 * @throws Error naming `label` and the resolved path when the file cannot be read, e.g.
 *   "--env-vars env.json: no such file (/home/me/env.json)" (see {@link resolvedNote})
 */
export async function readUserFile(
  path: string,
  label: string = path,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const absolute = userPath(path, env);
  try {
    return await readFile(absolute, "utf8");
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const reason = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a folder, not a file" : message;
    throw new Error(`${label}: ${reason}${resolvedNote(path, env)}`);
  }
}

/**
 * " (<absolute path>)" when a command-line path is relative, so a message about a missing file says
 * where it was looked for; "" when the path was absolute (the message names it already).
 */
export function resolvedNote(path: string, env: NodeJS.ProcessEnv = process.env): string {
  const absolute = userPath(path, env);
  return absolute === path ? "" : ` (${absolute})`;
}
