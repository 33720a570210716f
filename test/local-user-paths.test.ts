import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { REPO_ROOT, scriptEnv } from "./support/scripts.js";

// The local commands run from another directory with `npm --prefix <repo> run …`, as a user who keeps
// events and variable files elsewhere would: npm runs the script in the repository, and a relative path
// on the command line means the directory npm was run in (INIT_CWD, local/user-path.ts).

let dir: string;
let model: LocalModelServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "boundloop-user-paths-"));
  model = await startModelServer();
});
afterAll(async () => {
  await model?.stop();
});

/** `npm --prefix <repo> run -s <args>` in the temporary directory: exit status and output. */
function npmFromElsewhere(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "npm",
      ["--prefix", REPO_ROOT, "run", "-s", ...args],
      { cwd: dir, env: scriptEnv(env), timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe("relative paths on the local command lines are from where npm was run", { timeout: 150_000 }, () => {
  it('npm run invoke -- "my event.json" --env-vars env.json: both read from that directory, the event invoked', async () => {
    copyFileSync(join(REPO_ROOT, "events/malformed-body.json"), join(dir, "my event.json"));
    writeFileSync(join(dir, "env.json"), JSON.stringify({ MAX_CYCLES: 2 }));
    const { code, stdout, stderr } = await npmFromElsewhere(
      ["invoke", "--", "my event.json", "--env-vars", "env.json"],
      {
        DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
        OPENAI_BASE_URL: model.baseURL,
        TABLE_NAME: `test-user-paths-${randomUUID()}`,
      },
    );
    expect(stderr).toContain("env: 1 variable(s) from env.json");
    expect(stderr).toContain("invoke: my event.json → functions/api/handler.ts handler");
    expect(stdout.split("\n")[0]).toBe("HTTP 400");
    expect(code).toBe(1);
  });

  it("npm run invoke on a missing event names the path it looked at, exit 2", async () => {
    const { code, stdout, stderr } = await npmFromElsewhere(["invoke", "--", "no-such-event.json"]);
    expect([code, stdout]).toEqual([2, ""]);
    expect(stderr.trim()).toBe(
      `invoke: no-such-event.json: no such file (${join(dir, "no-such-event.json")})`,
    );
  });

  it("npm run dev -- --env-vars <file> reads the file there (one that is no JSON object is refused, naming it)", async () => {
    writeFileSync(join(dir, "array-env.json"), "[]");
    const { code, stderr } = await npmFromElsewhere([
      "dev",
      "--",
      "--port",
      "0",
      "--env-vars",
      "array-env.json",
    ]);
    expect([code, stderr.trim()]).toEqual([1, "dev: array-env.json must hold a JSON object."]);
  });

  it("npm start -- --policies <file> reads the file there (one that does not validate is refused, naming the policy)", async () => {
    writeFileSync(
      join(dir, "typo.cedar"),
      'permit (principal, action, resource);\n@id("typo")\nforbid (principal, action, resource) when { context.facts.grosMinor > 1 };\n',
    );
    const { code, stderr } = await npmFromElsewhere(["start", "--", "--policies", "typo.cedar"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /^start: --policies typo\.cedar: not a valid policy set: line 3, column \d+, policy "typo": /,
    );
    const missing = await npmFromElsewhere(["start", "--", "--policies", "no-such.cedar"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.split("\n")[0]).toBe(
      `start: --policies no-such.cedar: no such file (${join(dir, "no-such.cedar")})`,
    );
  });

  it("npm run eval -- <scenario> --compare <report>: both read there; a missing one names the path looked at", async () => {
    writeFileSync(
      join(dir, "bad.yaml"),
      "name: bad\ndescription: d\ncaller: { tenant: t, user: u }\nprompt: p\npolicy: []\n",
    );
    const invalid = await npmFromElsewhere(["eval", "--", "bad.yaml"]);
    expect([invalid.code, invalid.stderr.trim()]).toEqual([
      1,
      `eval: ${join(dir, "bad.yaml")}: (root): Unrecognized key: "policy"`,
    ]);
    const missing = await npmFromElsewhere(["eval", "--", "evals/tax-only.yaml"]);
    expect([missing.code, missing.stderr.split("\n")[0]]).toEqual([
      2,
      `eval: evals/tax-only.yaml: no such file or folder (${join(dir, "evals/tax-only.yaml")})`,
    ]);
    const scenario = join(REPO_ROOT, "evals/tax-only.yaml");
    writeFileSync(join(dir, "not-a-report.json"), JSON.stringify({ cases: 3 }));
    const notReport = await npmFromElsewhere(["eval", "--", scenario, "--compare", "not-a-report.json"]);
    expect(notReport.code).toBe(2);
    expect(notReport.stderr).toMatch(/^eval: --compare not-a-report\.json: /);
    expect(notReport.stderr).not.toContain("no such file");
    const noReport = await npmFromElsewhere(["eval", "--", scenario, "--compare", "no-such-report.json"]);
    expect([noReport.code, noReport.stderr.split("\n")[0]]).toEqual([
      2,
      `eval: --compare no-such-report.json: no such file (${join(dir, "no-such-report.json")})`,
    ]);
  });

  it("npm run token -- --issuer-file <file> looks there", async () => {
    const { code, stderr } = await npmFromElsewhere(["token", "--", "--issuer-file", "no-issuer.json"]);
    expect(code).not.toBe(0);
    expect(stderr).toContain(`No local issuer at ${join(dir, "no-issuer.json")}`);
  });
});
