/**
 * `npm run eval` as a user runs it (docs/evals.md): against the local model server (the default), an
 * OpenAI-compatible URL, and Bedrock through the local stand-in; its exit status, table, JSON and markdown
 * reports, and --compare naming a regression. The first case runs it through npm; the others run the
 * script's own command (`node --import tsx local/eval.ts`, package.json) without npm in front of it, and
 * the refused command lines of a case run side by side (each is a process of its own).
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { runScript } from "./support/scripts.js";

let dir: string;
let server: LocalModelServer;
const env = () => ({ DYNAMODB_ENDPOINT: inject("dynamoEndpoint"), TABLE_NAME: `eval-cli-${randomUUID()}` });
/** `npm run eval -- <args>` as package.json defines it: `node --import tsx local/eval.ts <args>`. */
const evalScript = (args: string[]) => runScript("tsx", ["local/eval.ts", ...args], env());

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "boundloop-eval-"));
  server = await startModelServer();
});
afterAll(async () => {
  await server?.stop();
});

describe("npm run eval", () => {
  it("runs scenarios against the local model server: the table, exit 0, JSON and markdown reports", {
    timeout: 180_000,
  }, async () => {
    const json = join(dir, "report.json");
    const markdown = join(dir, "report.md");
    const run = await runScript(
      "npm",
      [
        "eval",
        "--",
        "evals/seed-uk-invoice.yaml",
        "evals/grounding-refused.yaml",
        "--json",
        json,
        "--markdown",
        markdown,
      ],
      env(),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Evals against the local model server/);
    // The model server it started is named as its own, not as an endpoint the user configured.
    expect(run.stderr).toMatch(
      /^model: using the local model server this command started on port \d+ at http:\/\/127\.0\.0\.1:\d+\/v1$/m,
    );
    expect(run.stderr).not.toMatch(/OPENAI_BASE_URL|OPENAI_MODEL/);
    expect(run.stdout).toMatch(/seed-uk-invoice\s+pass\s+1\/1 100%\s+completed/);
    expect(run.stdout).toMatch(/grounding-refused\s+pass\s+1\/1 100%\s+answer_ungrounded/);
    expect(run.stdout).toMatch(/2\/2 cases passed, 2 attempts, 0 disallowed effects\.\s*$/);
    const report = JSON.parse(await readFile(json, "utf8")) as {
      cases: Array<{ name: string; passRate: number }>;
    };
    expect(report.cases.map((c) => [c.name, c.passRate])).toEqual([
      ["grounding-refused", 1],
      ["seed-uk-invoice", 1],
    ]);
    expect(await readFile(markdown, "utf8")).toMatch(/### seed-uk-invoice[\s\S]*\| recordInvoice \|/);
  });

  it("--compare names a regression and fails the run", { timeout: 180_000 }, async () => {
    const scenario = (await readFile("evals/no-amount.yaml", "utf8")).replace(
      "status: completed",
      "status: max_cycles_exceeded",
    );
    const file = join(dir, "no-amount.yaml");
    await writeFile(file, scenario);
    const earlier = join(dir, "earlier.json");
    await writeFile(
      earlier,
      JSON.stringify({ model: "x", cases: [{ name: "no-amount", passRate: 1, passed: true }] }),
    );
    const run = await evalScript([file, "--compare", earlier]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /no-amount\s+FAIL\s+0\/1 0%\s+completed\s+status: expected max_cycles_exceeded, got completed/,
    );
    expect(run.stdout).toMatch(/1 regression\(s\)\.\n {2}REGRESSION {2}no-amount: 100% → 0%/);
  });

  it("--model <url> sends the scenarios to that OpenAI-compatible endpoint", {
    timeout: 180_000,
  }, async () => {
    const before = server.requests.length;
    const run = await evalScript(["evals/bd-record.yaml", "--model", server.baseURL]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`Evals against ${server.baseURL.replaceAll("/", "\\/")} \\(gpt-4o-mini\\)`),
    );
    expect(run.stdout).toMatch(/bd-record\s+pass/);
    // An endpoint the user named is checked and named as theirs.
    expect(run.stderr).toMatch(/model: using .* \(OPENAI_BASE_URL\/OPENAI_API_KEY\)/);
    expect(server.requests.length - before).toBe(3);
  });

  it("--bedrock calls the model through the Bedrock provider, here the local stand-in", {
    timeout: 180_000,
  }, async () => {
    const run = await evalScript(["evals/bd-record.yaml", "--bedrock"]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Evals against Bedrock \(MODEL_PROVIDER=bedrock\)/);
    expect(run.stdout).toMatch(/bd-record\s+pass\s+1\/1 100%\s+completed/);
    expect(run.stderr).toMatch(/started the Bedrock stand-in/);
  });

  it("a bad flag or an invalid scenario file is refused with what is wrong", {
    timeout: 180_000,
  }, async () => {
    const file = join(dir, "bad.yaml");
    await writeFile(
      file,
      "name: bad\ndescription: d\ncaller: { tenant: t, user: u }\nprompt: p\npolicy: []\n",
    );
    const [flag, invalid, ...notDigits] = await Promise.all([
      evalScript(["--repeat", "0"]),
      evalScript([file]),
      // Plain decimal digits only, as every number setting: not 10 attempts from "1e1", nor " 2" or "+2".
      ...["1e1", " 2", "+2", "0x2"].map((repeat) => evalScript(["--repeat", repeat, "--filter", "no-such"])),
    ]);
    for (const refused of [flag, ...notDigits]) {
      expect([refused.code, refused.stderr]).toEqual([
        2,
        expect.stringMatching(/--repeat must be an integer from 1 to 100[\s\S]*usage: npm run eval/),
      ]);
    }
    expect([invalid.code, invalid.stderr.trim()]).toEqual([
      1,
      `eval: ${file}: (root): Unrecognized key: "policy"`,
    ]);
  });

  it("a path that does not exist, or a --compare file that is not a report, is a bad command line (2) before anything runs", {
    timeout: 180_000,
  }, async () => {
    const missing = join(dir, "no-such-scenario.yaml");
    const notReport = join(dir, "not-a-report.json");
    await writeFile(notReport, JSON.stringify({ cases: 3 }));
    const [path, runs] = await Promise.all([
      evalScript([missing]),
      Promise.all(
        [join(dir, "no-such-report.json"), notReport].map(async (compare) => ({
          compare,
          run: await evalScript(["evals/tax-only.yaml", "--compare", compare]),
        })),
      ),
    ]);
    expect([path.code, path.stdout]).toEqual([2, ""]);
    expect(path.stderr).toMatch(new RegExp(`^eval: ${missing}: no such file or folder\\n[\\s\\S]*usage:`));
    for (const { compare, run } of runs) {
      expect([run.code, run.stdout]).toEqual([2, ""]);
      expect(run.stderr).toMatch(new RegExp(`^eval: --compare ${compare}: `));
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
