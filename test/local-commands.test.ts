import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findRunningIssuerFile } from "../local/dev-auth.js";
import { localFunctionTimeout } from "../local/function-timeout.js";
import { pollProgress } from "../local/poll-progress.js";
import { CONFIG_DEFAULTS } from "../shared/config.js";
import { runScript } from "./support/scripts.js";

// The local commands a new user meets first: npm start's command line, the function timeout local runs
// give a slow model, npm run token finding the dev server, and --async's progress lines.

describe("npm start's command line", { timeout: 60_000 }, () => {
  it("--help prints the usage on stdout and exits 0, starting nothing", async () => {
    const { code, stdout, stderr } = await runScript("tsx", ["local/start.ts", "--help"], {});
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: npm start -- \["<prompt>"\] \[options\]/);
    expect(stdout).toContain("--then");
    expect(stderr).not.toMatch(/dynamodb: started| {4}at /);
    // Every option the command line accepts (local/start.ts parseOptions) has its line in the usage.
    const source = readFileSync(new URL("../local/start.ts", import.meta.url), "utf8");
    const block = source.slice(source.indexOf("options: {"), source.indexOf("allowPositionals"));
    const options = [...block.matchAll(/^ +(\w+): \{ type:/gm)].map((match) => match[1]);
    expect(options).toEqual(expect.arrayContaining(["then", "trace", "watch", "help"]));
    for (const option of options)
      expect(stdout, option).toMatch(new RegExp(`^ +(-\\w, )?--${option}\\b`, "m"));
  });

  it("an unknown option or a missing value: one line naming it, the usage, exit 2, no stack trace", async () => {
    for (const [args, message] of [
      [["--bogus"], "start: Unknown option '--bogus'"],
      [["--then"], "start: Option '--then <value>' argument missing"],
      [["--continue"], "start: Option '--continue <value>' argument missing"],
    ] as const) {
      const { code, stderr } = await runScript("tsx", ["local/start.ts", ...args], {});
      expect(code, args.join(" ")).toBe(2);
      expect(stderr.split("\n")[0]).toContain(message);
      expect(stderr).toContain("usage: npm start");
      expect(stderr).not.toMatch(/\n\s+at /);
    }
  });
});

describe("npm start -- --trace", { timeout: 120_000 }, () => {
  it("prints the run's span tree even with TRACING set, whose exporter would otherwise replace the tree's", async () => {
    const { code, stdout } = await runScript("tsx", ["local/start.ts", "--trace"], { TRACING: "console" });
    expect(code).toBe(0);
    expect(stdout).toContain("--trace prints the spans; TRACING=console is not used");
    const tree = stdout.slice(stdout.indexOf("Spans (OpenTelemetry"));
    expect(tree).toMatch(/^ {2}invoke_agent boundloop {2}[\d.]+ ms {2}boundloop\.run\.status="completed"/m);
    expect(tree).toMatch(/^ {4}execute_tool recordInvoice /m);
  });
});

describe("the function timeout of local runs (local/function-timeout.ts)", () => {
  const limits = (runTimeoutMs: number) => ({ runTimeoutMs, deadlineReserveMs: 1_500 });

  it("is the deployed 29 s while RUN_TIMEOUT_MS fits in it, with nothing to say", () => {
    expect(localFunctionTimeout(CONFIG_DEFAULTS.limits)).toEqual({ timeoutMs: 29_000, note: undefined });
    expect(localFunctionTimeout(limits(27_500))).toEqual({ timeoutMs: 29_000, note: undefined });
  });

  it("takes a longer RUN_TIMEOUT_MS (a slow local model) and says that a deployed synchronous run is capped", () => {
    const { timeoutMs, note } = localFunctionTimeout(limits(300_000));
    expect(timeoutMs).toBe(301_500);
    expect(note).toContain("this local run gives the function 301.5 s");
    expect(note).toContain("a synchronous run there ends within 27500 ms");
    expect(note).toContain("--async");
  });

  it("says when DEADLINE_RESERVE_MS leaves nothing of the deployed timeout, never a negative time", () => {
    const { timeoutMs, note } = localFunctionTimeout({ runTimeoutMs: 25_000, deadlineReserveMs: 30_000 });
    expect(timeoutMs).toBe(55_000);
    expect(note).toBe(
      "RUN_TIMEOUT_MS 25000 ms: this local run gives the function 55 s. Deployed, the function times out after 29 s, " +
        "which DEADLINE_RESERVE_MS 30000 ms leaves nothing of: every synchronous run there would end deadline_exceeded " +
        "before its first model call (the synth refuses it).",
    );
  });

  it("an explicit --timeout wins and says what it caps RUN_TIMEOUT_MS to; Lambda's 900 s bounds invoke and dev", () => {
    expect(localFunctionTimeout(limits(60_000), 29)).toEqual({
      timeoutMs: 29_000,
      note: "RUN_TIMEOUT_MS 60000 ms is capped by the function timeout (--timeout 29 s): a run ends within 27500 ms (the function timeout less DEADLINE_RESERVE_MS 1500 ms).",
    });
    expect(localFunctionTimeout(limits(20_000), 60)).toEqual({ timeoutMs: 60_000, note: undefined });
    const bounded = localFunctionTimeout(limits(900_000), undefined, 900);
    expect(bounded.timeoutMs).toBe(900_000);
    expect(bounded.note).toContain("capped by Lambda's largest function timeout (900 s)");
  });
});

describe("npm run token finds the running dev server's issuer file, whatever its port", () => {
  const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid;
  const write = (dir: string, port: number, pid: number | undefined) =>
    writeFileSync(join(dir, `dev-issuer-${port}.json`), JSON.stringify({ issuer: "x", pid }));

  it("the one file of a running server, skipping a killed server's leftover", async () => {
    const dir = mkdtempSync(join(tmpdir(), "boundloop-issuers-"));
    write(dir, 3000, deadPid());
    write(dir, 3100, process.pid);
    writeFileSync(join(dir, "unrelated.json"), "{}");
    await expect(findRunningIssuerFile(dir)).resolves.toBe(join(dir, "dev-issuer-3100.json"));
  });

  it("says to start npm run dev when none runs, and to pass --port naming the ports when several do", async () => {
    const dir = mkdtempSync(join(tmpdir(), "boundloop-issuers-"));
    await expect(findRunningIssuerFile(dir)).rejects.toThrow(/start it first \(or pass --port/);
    await expect(findRunningIssuerFile(join(dir, "missing"))).rejects.toThrow(/No running `npm run dev`/);
    write(dir, 3100, process.pid);
    write(dir, 3000, process.pid);
    await expect(findRunningIssuerFile(dir)).rejects.toThrow(
      "Several dev servers are running (ports 3000, 3100): pass --port <n>.",
    );
  });
});

describe("--async progress lines (local/poll-progress.ts)", () => {
  it("a line for the first poll and for each change of status or cycles, none for a poll that changes nothing", () => {
    const next = pollProgress();
    const polls = [
      ["running", 0],
      ["running", 0],
      ["running", 1],
      ["running", 1],
      ["running", 1],
      ["running", 2],
      ["completed", 3],
    ] as const;
    const lines = polls.map(([status, cycles], i) =>
      next({ httpStatus: 200, status, cycles }, 10_000 + i * 1_000),
    );
    expect(lines.filter((line) => line !== undefined)).toEqual([
      "poll 1 (0.0 s): HTTP 200, status running, cycles 0",
      "poll 3 (2.0 s): HTTP 200, status running, cycles 1",
      "poll 6 (5.0 s): HTTP 200, status running, cycles 2",
      "poll 7 (6.0 s): HTTP 200, status completed, cycles 3",
    ]);
  });
});
