import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { javaMajorVersion } from "../local/dynamo.js";
import {
  descendantsOf,
  HAS_PROC,
  isAlive,
  killLeftovers,
  parseInvokeOutput,
  type RunningScript,
  startScript,
  waitUntilGone,
  watchDescendants,
} from "./support/scripts.js";

// The scripts start their own dependencies here (no DYNAMODB_ENDPOINT / OPENAI_BASE_URL): DynamoDB Local
// is a java child process, the model server runs inside the script. Every process seen under a script
// must be gone once it has stopped, however it was stopped.

const HAS_JAVA = (javaMajorVersion() ?? 0) >= 17;
const HAS_SETPRIV = (process.env.PATH ?? "").split(delimiter).some((dir) => existsSync(join(dir, "setpriv")));
const ENV = { BOUNDLOOP_DYNAMO_BACKEND: "dynamodb-local" };

/** Temporary directories of this file (issuer files a SIGKILLed server could not remove). */
const dirs: string[] = [];

afterEach(() => {
  killLeftovers();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The java pid a script reported in its progress line ("dynamodb: started … (java pid N, …)"). */
async function javaPid(script: RunningScript): Promise<number> {
  const match = await script.waitFor(
    /dynamodb: started dynamodb-local on port \d+ \(java pid (\d+),/,
    90_000,
  );
  return Number(match[1]);
}

/** Starts the dev server with its own dependencies; `java` is undefined with dynalite. */
async function startDev(
  command: "npm" | "tsx",
  options: { detached?: boolean; backend?: "dynamodb-local" | "dynalite" } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), "boundloop-dev-"));
  dirs.push(dir);
  const issuerFile = join(dir, "issuer.json");
  const args = ["--port", "0", "--issuer-file", issuerFile];
  const env = { BOUNDLOOP_DYNAMO_BACKEND: options.backend ?? "dynamodb-local" };
  const script =
    command === "npm"
      ? startScript("npm", ["dev", "--", ...args], env, options)
      : startScript("tsx", ["local/dev.ts", ...args], env, options);
  const java = env.BOUNDLOOP_DYNAMO_BACKEND === "dynamodb-local" ? await javaPid(script) : undefined;
  await script.waitFor(/Ctrl-C stops the server/, 90_000);
  return { script, java, issuerFile, processes: descendantsOf(script.child.pid as number) };
}

describe.skipIf(!HAS_PROC || !HAS_JAVA)(
  "processes the local scripts start are stopped at exit",
  { timeout: 150_000 },
  () => {
    it("npm run invoke: its DynamoDB Local (java) and model server stop when the invocation ends; a key replays on the table it started", async () => {
      // replay-idempotency-key.json twice in one command, on the table the command started (no
      // DYNAMODB_ENDPOINT, as a new user's first try): the second is the first's answer, replayed.
      const replay = "events/replay-idempotency-key.json";
      const script = startScript("npm", ["invoke", "--", "events/seed-scenario.json", replay, replay], ENV);
      const watch = watchDescendants(script.child.pid as number);
      const java = await javaPid(script);
      const { code } = await script.exited;
      const seen = watch.stop();
      expect(code).toBe(0);
      const [seed, first, second] = script
        .stdout()
        .split(/^(?=HTTP \d{3}$)/m)
        .map(parseInvokeOutput);
      expect(seed?.status).toBe(200);
      expect(script.stderr().match(/^invoke: \S+ → /gm)).toHaveLength(3);
      expect([first?.status, second?.status]).toEqual([200, 200]);
      expect(first?.headers["idempotent-replayed"]).toBeUndefined();
      expect(second?.headers["idempotent-replayed"]).toBe("true");
      expect(second?.body).toBe(first?.body);
      expect(script.stderr()).toMatch(
        /model: started the local deterministic planner \(not an LLM\) on port \d+/,
      );
      expect(script.stderr()).toMatch(/dynamodb: stopped dynamodb-local on port \d+/);
      expect(seen).toContain(java);
      expect(isAlive(java)).toBe(false);
      expect(await waitUntilGone(seen, 3_000)).toEqual([]);
    });

    it("npm run invoke: SIGTERM while it runs stops DynamoDB Local and exits 143", async () => {
      const script = startScript("tsx", ["local/invoke.ts", "events/seed-scenario.json"], ENV);
      const java = await javaPid(script);
      script.child.kill("SIGTERM");
      const { code } = await script.exited;
      expect(code).toBe(143);
      expect(script.stderr()).toContain("SIGTERM: stopping");
      expect(script.stdout()).toBe("");
      expect(isAlive(java)).toBe(false);
    });

    it("npm run dev: Ctrl-C (SIGINT to the whole process group) stops the server and everything it started", async () => {
      const { script, java, issuerFile, processes } = await startDev("npm", { detached: true });
      expect(processes).toContain(java);
      process.kill(-(script.child.pid as number), "SIGINT");
      await script.exited;
      expect(script.stderr()).toContain("dev: stopped");
      expect(await waitUntilGone(processes, 5_000)).toEqual([]);
      expect(existsSync(issuerFile)).toBe(false);
    });

    it("npm run dev: when npm dies by SIGKILL, the server sees its parent gone and stops everything", async () => {
      const { script, java, processes } = await startDev("npm");
      expect(processes).toContain(java);
      script.child.kill("SIGKILL");
      expect(await waitUntilGone(processes, 15_000)).toEqual([]);
      expect(script.stderr()).toMatch(/the parent process \(pid \d+\) is gone/);
    });

    it.skipIf(!HAS_SETPRIV)(
      "SIGKILL of the dev server itself still takes DynamoDB Local down (setpriv --pdeathsig)",
      async () => {
        const { script, java } = await startDev("tsx");
        expect(java).toBeDefined();
        script.child.kill("SIGKILL");
        await script.exited;
        expect(await waitUntilGone([java as number], 5_000)).toEqual([]);
      },
    );
  },
);
