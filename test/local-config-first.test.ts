import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { runScript } from "./support/scripts.js";

// `npm run invoke`, `npm start` and `npm run dev` check the configuration before they start anything
// (docs/local-workflow.md: an invalid configuration is exit 2 for invoke, naming the variable): an
// invalid value is named at once, not after DynamoDB Local's JVM has started (seconds; the first run
// also wrote its class-data archive) only to be stopped again.

/**
 * The environment of a script whose configuration is invalid, with a `java` first on PATH that notes
 * each start in a file and then runs the real one: the file says whether DynamoDB Local was started.
 */
function invalidEnv(): { env: Record<string, string>; javaStarts: () => string } {
  const dir = mkdtempSync(join(tmpdir(), "boundloop-java-"));
  const log = join(dir, "starts.log");
  const java = join(dir, "java");
  writeFileSync(java, `#!/bin/sh\necho "java $*" >> '${log}'\nPATH='${process.env.PATH}' exec java "$@"\n`);
  chmodSync(java, 0o755);
  return {
    env: { MAX_CYCLES: "1e1", PATH: `${dir}${delimiter}${process.env.PATH}`, BOUNDLOOP_CACHE_DIR: dir },
    // The first two words of each start ("java -version", "java -Xms64m"): the whole line is the classpath.
    javaStarts: () =>
      (existsSync(log) ? readFileSync(log, "utf8") : "")
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(" ").slice(0, 2).join(" "))
        .join("; "),
  };
}
const NAMED = /Invalid configuration: MAX_CYCLES: must be a whole number in plain decimal digits/;

describe("an invalid configuration is refused before any dependency starts", () => {
  it("npm run invoke: exit 2, the variable named, no DynamoDB and no model server started", async () => {
    const { env, javaStarts } = invalidEnv();
    const { code, stdout, stderr } = await runScript("tsx", ["local/invoke.ts", "events/de-only.json"], env);
    expect(javaStarts()).toBe("");
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(NAMED);
    expect(stderr).not.toMatch(/^(dynamodb|model):/m);
  });

  it("npm start: the variable named, nothing started", async () => {
    const { env, javaStarts } = invalidEnv();
    const { code, stderr } = await runScript("tsx", ["local/start.ts"], env);
    expect(javaStarts()).toBe("");
    expect(code).not.toBe(0);
    expect(stderr).toMatch(NAMED);
    expect(stderr).not.toMatch(/^(dynamodb|model):/m);
  });

  it("npm run dev: the variable named, nothing started", async () => {
    const { env, javaStarts } = invalidEnv();
    const { code, stderr } = await runScript("tsx", ["local/dev.ts", "--port", "0"], env);
    expect(javaStarts()).toBe("");
    expect(code).not.toBe(0);
    expect(stderr).toMatch(NAMED);
    expect(stderr).not.toMatch(/^(dynamodb|model|dev):.*started/m);
  });
});
