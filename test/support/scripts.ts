import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The repository root (scripts run from here, as `npm run` does). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Variables that point the local scripts at existing dependencies; removed so a script starts its own. */
const DEPENDENCY_VARS = ["DYNAMODB_ENDPOINT", "OPENAI_BASE_URL", "OPENAI_API_KEY", "TABLE_NAME"];

/**
 * A child process's environment: this one's without dependency variables, plus `env`. INIT_CWD is the
 * repository root, as when a user runs `npm run` there: the scripts read relative paths from it
 * (local/user-path.ts), whatever directory started the test runner.
 */
export function scriptEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, INIT_CWD: REPO_ROOT };
  for (const name of DEPENDENCY_VARS) delete base[name];
  return { ...base, ...env };
}

/** A started script with its output so far. */
export interface RunningScript {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout+stderr, or rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves when the process has exited: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Every script started, so a failed test leaves nothing running (see {@link killLeftovers}). */
const started = new Set<ChildProcess>();

/**
 * Starts `command args` in the repository root with `env` (see {@link scriptEnv}), collecting output.
 * `command` "tsx" means `node --import tsx` (one node process, as the npm scripts run it); "npm" runs
 * `npm run --silent <args>`. `detached` makes it the leader of a new process group, like a job in a
 * terminal (so a test can send Ctrl-C's SIGINT to the whole group).
 */
export function startScript(
  command: "tsx" | "npm",
  args: string[],
  env: Record<string, string>,
  options: { detached?: boolean } = {},
): RunningScript {
  const [file, argv] =
    command === "tsx"
      ? [process.execPath, ["--import", "tsx", ...args]]
      : ["npm", ["run", "--silent", ...args]];
  const child = spawn(file, argv, {
    cwd: REPO_ROOT,
    env: scriptEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  started.add(child);
  child.once("exit", () => started.delete(child));
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("close", (code, signal) => resolve({ code, signal }));
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(pattern, timeoutMs = 60_000) {
      const until = Date.now() + timeoutMs;
      let done = false;
      void exited.then(() => {
        done = true;
      });
      while (Date.now() < until) {
        const match = `${out}\n${err}`.match(pattern);
        if (match) return match;
        if (done) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const match = `${out}\n${err}`.match(pattern);
      if (match) return match;
      throw new Error(`No ${pattern} in the output:\n${out}\n${err}`);
    },
  };
}

/** Runs a script to its end. */
export async function runScript(
  command: "tsx" | "npm",
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = startScript(command, args, env);
  const { code } = await script.exited;
  return { code, stdout: script.stdout(), stderr: script.stderr() };
}

/** What `npm run invoke` printed on stdout: `HTTP <status>`, headers, blank line, body. */
export interface InvokeOutput {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses `npm run invoke`'s stdout (see local/invoke.ts). */
export function parseInvokeOutput(stdout: string): InvokeOutput {
  const blank = stdout.indexOf("\n\n");
  const head = (blank >= 0 ? stdout.slice(0, blank) : stdout).split("\n");
  const status = /^HTTP (\d{3})$/.exec(head[0] ?? "")?.[1];
  if (!status) throw new Error(`Not invoke output:\n${stdout}`);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const at = line.indexOf(": ");
    headers[line.slice(0, at)] = line.slice(at + 2);
  }
  return { status: Number(status), headers, body: blank >= 0 ? stdout.slice(blank + 2).trimEnd() : "" };
}

/** Parent pid and state of a process from /proc, or undefined when there is no such process. */
function procStat(pid: number): { ppid: number; state: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(ppid), state: state ?? "" };
  } catch {
    return undefined;
  }
}

/** Whether /proc is there to inspect (Linux). */
export const HAS_PROC = (() => {
  try {
    readdirSync("/proc/self");
    return true;
  } catch {
    return false;
  }
})();

/** The pids of every live descendant of `pid` (children, their children, …), from /proc. */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    const child = Number(name);
    if (!Number.isInteger(child)) continue;
    const stat = procStat(child);
    if (!stat || stat.state === "Z") continue;
    children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), child]);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift() as number) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Whether a process is running (a zombie, dead but not yet reaped, counts as gone). */
export function isAlive(pid: number): boolean {
  if (HAS_PROC) {
    const stat = procStat(pid);
    return stat !== undefined && stat.state !== "Z";
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Polls the descendants of `pid` every 100 ms until `stop()` and returns every pid seen, so processes
 * that lived only briefly are checked too.
 */
export function watchDescendants(pid: number): { stop(): number[] } {
  const seen = new Set<number>();
  const poll = () => {
    for (const child of descendantsOf(pid)) seen.add(child);
  };
  poll();
  const timer = setInterval(poll, 100);
  return {
    stop() {
      clearInterval(timer);
      return [...seen];
    },
  };
}

/** Waits until none of `pids` is alive, or `timeoutMs` passes; returns the ones still alive. */
export async function waitUntilGone(pids: number[], timeoutMs = 10_000): Promise<number[]> {
  const until = Date.now() + timeoutMs;
  let alive = pids.filter(isAlive);
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    alive = alive.filter(isAlive);
  }
  return alive;
}

/** SIGKILLs every script still running and its descendants (cleanup after a failed test). */
export function killLeftovers(): void {
  for (const child of started) {
    const pids = child.pid === undefined ? [] : [child.pid, ...(HAS_PROC ? descendantsOf(child.pid) : [])];
    for (const pid of pids.reverse()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
}
