/**
 * DynamoDB Local's class-data archive (local/dynamo-class-data.ts): a run without one
 * records its classes and writes it when it stops; the next start maps it and serves as before. In a cache
 * directory of this file's own (BOUNDLOOP_CACHE_DIR), so the suite's archive is never touched.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { javaMajorVersion, startLocalDynamo } from "../local/dynamo.js";

const HAS_JAVA = (javaMajorVersion() ?? 0) >= 17;
const saved = { dir: process.env.BOUNDLOOP_CACHE_DIR, mode: process.env.BOUNDLOOP_CLASS_DATA };
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "boundloop-cache-"));
  process.env.BOUNDLOOP_CACHE_DIR = dir;
  process.env.BOUNDLOOP_CLASS_DATA = "auto";
});
afterAll(() => {
  process.env.BOUNDLOOP_CACHE_DIR = saved.dir;
  process.env.BOUNDLOOP_CLASS_DATA = saved.mode;
  if (saved.dir === undefined) delete process.env.BOUNDLOOP_CACHE_DIR;
  rmSync(dir, { recursive: true, force: true });
});

/** Creates a table and lists it: what a start must still serve. */
async function serves(endpoint: string): Promise<string[]> {
  const client = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    await client.send(
      new CreateTableCommand({
        TableName: "classdata",
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    client.destroy();
  }
}

/** The java command line of a running pid (Linux /proc), NUL-separated arguments. */
const commandLine = (pid: number | undefined) =>
  existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0") : [];

describe.skipIf(!HAS_JAVA)("DynamoDB Local's class-data archive", { timeout: 240_000 }, () => {
  it("is recorded and written by a first run, then mapped by the next start, which serves the same", async () => {
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    const first = await startLocalDynamo({ backend: "dynamodb-local", log, writeClassData: true });
    expect(first.classData).toBe("recording");
    const args = commandLine(first.pid);
    expect(args).toEqual(expect.arrayContaining(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]));
    expect(args.some((arg) => arg.startsWith("-XX:DumpLoadedClassList="))).toBe(true);
    expect(await serves(first.endpoint)).toEqual(["classdata"]);
    await first.stop();
    expect(lines).toContain(
      "dynamodb: writing DynamoDB Local's class-data archive, once, so later starts are faster…",
    );
    expect(lines.join("\n")).toMatch(/dynamodb: class-data archive written in [\d.]+ s/);
    const archives = readdirSync(dir).filter((name) => name.endsWith(".jsa"));
    expect(archives).toHaveLength(1);
    // Nothing is left behind: no class list, no lock, no partial archive.
    expect(readdirSync(dir).filter((name) => /classlist|lock|tmp/.test(name))).toEqual([]);

    const second = await startLocalDynamo({ backend: "dynamodb-local", log, writeClassData: true });
    try {
      expect(second.classData).toBe("used");
      expect(commandLine(second.pid)).toContain(`-XX:SharedArchiveFile=${join(dir, archives[0] ?? "")}`);
      expect(await serves(second.endpoint)).toEqual(["classdata"]);
    } finally {
      await second.stop();
    }
  });

  it("BOUNDLOOP_CLASS_DATA=off starts the jar as it comes, with the quick-start flags only", async () => {
    process.env.BOUNDLOOP_CLASS_DATA = "off";
    const plain = await startLocalDynamo({ backend: "dynamodb-local", log: () => undefined });
    try {
      expect(plain.classData).toBe("none");
      const args = commandLine(plain.pid);
      expect(args).toContain("-jar");
      expect(args.some((arg) => arg.includes("SharedArchiveFile"))).toBe(false);
      expect(await serves(plain.endpoint)).toEqual(["classdata"]);
    } finally {
      await plain.stop();
      process.env.BOUNDLOOP_CLASS_DATA = "auto";
    }
  });
});
