import { constants } from "node:os";

/** The signals a local script treats as "stop now": Ctrl-C, `kill`, a closed terminal. */
export const SHUTDOWN_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** One of {@link SHUTDOWN_SIGNALS}. */
export type ShutdownSignal = (typeof SHUTDOWN_SIGNALS)[number];

/** The conventional exit status of a process stopped by `signal`: 128 + its number (SIGINT → 130). */
export function signalExitCode(signal: ShutdownSignal): number {
  return 128 + constants.signals[signal];
}

/** A repeat of a signal within this many ms of the first is the same stop request (ms). */
const REPEAT_WINDOW_MS = 1_000;
/** How often the parent watch checks whether the parent process is still there (ms). */
const PARENT_POLL_MS = 1_000;

/**
 * Installs handlers for SIGINT, SIGTERM and SIGHUP that run `cleanup` once (stop servers, stop the
 * DynamoDB Local java process, remove files), then exit with `exitCode(signal)` (default 128 + signal
 * number). A Ctrl-C reaches a script twice under `npm run` (from the terminal, and forwarded by npm),
 * so a repeat within 1 s is ignored; a later repeat, or a cleanup still running after `graceMs` (ms,
 * default 10 000), exits at once, and the `exit` hooks of local/dynamo.ts still SIGKILL any child left.
 * Without these handlers Node dies on the signal without running its `exit` hooks, which would orphan
 * child processes.
 * With `watchParent`, the same cleanup runs (as for SIGHUP) when the parent process goes away, e.g.
 * `npm run` killed with SIGKILL, so a server is never left running without its launcher.
 * @returns a function that removes the handlers
 */
export function onShutdownSignal(
  cleanup: (signal: ShutdownSignal) => Promise<void>,
  options: {
    exitCode?: (signal: ShutdownSignal) => number;
    graceMs?: number;
    watchParent?: boolean;
    log?: (line: string) => void;
  } = {},
): () => void {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const exitCode = options.exitCode ?? signalExitCode;
  const graceMs = options.graceMs ?? 10_000;
  let stoppingSince: number | undefined;
  const handler = (signal: ShutdownSignal) => {
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince < REPEAT_WINDOW_MS) return;
      log(`${signal} again: exiting now`);
      process.exit(exitCode(signal));
    }
    stoppingSince = Date.now();
    log(`${signal}: stopping`);
    const timer = setTimeout(() => {
      log(`cleanup still running after ${graceMs} ms: exiting now`);
      process.exit(exitCode(signal));
    }, graceMs);
    timer.unref();
    cleanup(signal).then(
      () => process.exit(exitCode(signal)),
      (error: unknown) => {
        log(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(exitCode(signal));
      },
    );
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, handler);
  const parent = process.ppid;
  const watch = options.watchParent
    ? setInterval(() => {
        if (process.ppid === parent || stoppingSince !== undefined) return;
        log(`the parent process (pid ${parent}) is gone`);
        handler("SIGHUP");
      }, PARENT_POLL_MS).unref()
    : undefined;
  return () => {
    clearInterval(watch);
    for (const signal of SHUTDOWN_SIGNALS) process.removeListener(signal, handler);
  };
}
