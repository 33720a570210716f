/**
 * The commands README.md and docs/*.md show do what the docs say: docs/deploy.md's command turning
 * approvals on, and every `npm run invoke` command, run against the table in docs/local-workflow.md.
 */
import { randomUUID } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { Tokens } from "marked";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BoundloopStack } from "../infra/stack.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { loadConfig } from "../shared/config.js";
import { markdownFiles, read, root, tableRows, tokens } from "./support/markdown.js";
import { type InvokeOutput, parseInvokeOutput, runScript } from "./support/scripts.js";

/** The code blocks of a Markdown file (their text). */
function codeBlocks(path: string): string[] {
  return tokens(read(path)).flatMap((token) => (token.type === "code" ? [(token as Tokens.Code).text] : []));
}

/**
 * The words of a shell command line as a POSIX shell splits them: backslash-newline joins lines,
 * single quotes keep everything, double quotes keep all but `\"`, unquoted `\x` is `x`. Enough for the
 * commands the docs show (no expansions are run: `$(...)` stays as text).
 */
function shellWords(line: string): string[] {
  const text = line.replace(/\\\n/g, " ");
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (char === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? "") + text.slice(i + 1, end);
      i = end;
    } else if (char === '"') {
      let j = i + 1;
      let part = "";
      while (j < text.length && text[j] !== '"') {
        if (text[j] === "\\" && text[j + 1] === '"') j++;
        part += text[j];
        j++;
      }
      word = (word ?? "") + part;
      i = j;
    } else if (char === "\\") {
      word = (word ?? "") + (text[i + 1] ?? "");
      i++;
    } else if (/\s/.test(char)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (char === "#" && word === null) {
      break;
    } else {
      word = (word ?? "") + char;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** The `-c key=value` pairs of a `cdk`/`npm run deploy` command, as the CLI hands them to the app. */
function contextOf(command: string): Record<string, string> {
  const words = shellWords(command);
  const context: Record<string, string> = {};
  words.forEach((word, i) => {
    if (word !== "-c" && word !== "--context") return;
    const pair = words[i + 1] ?? "";
    const at = pair.indexOf("=");
    context[pair.slice(0, at)] = pair.slice(at + 1);
  });
  return context;
}

describe("docs/deploy.md", () => {
  const deploy = read("docs/deploy.md");

  it("its command turning approvals on synthesizes a stack whose functions pause invoices as the doc says", {
    timeout: 120_000,
  }, () => {
    const command = codeBlocks("docs/deploy.md").find((block) => block.includes("approvalRules"));
    expect(command).toBeDefined();
    const context = contextOf(command ?? "");
    expect(Object.keys(context)).toEqual([
      "jwtIssuer",
      "jwtAudience",
      "approvalRules",
      "approvalTimeoutSeconds",
    ]);
    const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
    const stack = new BoundloopStack(app, "DocsApprovals");
    const functions = Object.entries(Template.fromStack(stack).findResources("AWS::Lambda::Function"));
    type LambdaResource = { Properties: { Environment: { Variables: Record<string, unknown> } } };
    const envOf = (prefix: string) =>
      ((functions.find(([id]) => id.startsWith(prefix)) ?? [])[1] as LambdaResource).Properties.Environment
        .Variables;
    const strings = (env: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(env).filter(([, value]) => typeof value === "string")) as Record<
        string,
        string
      >;
    for (const prefix of ["ApiFunction", "RunnerFunction"]) {
      const config = loadConfig(strings(envOf(prefix)));
      expect(config.approvals, prefix).toEqual({
        rules: { recordInvoice: { GBP: "1000.00" } },
        timeoutSeconds: 172_800,
      });
    }
    // "the runner's execution timeout becomes 600 + 300 + 172 800 = 173 700 s"
    const stated = deploy.match(/execution timeout\s+becomes [\d +]+ = ([\d ]+) s/)?.[1]?.replace(/ /g, "");
    const runner = (functions.find(([id]) => id.startsWith("RunnerFunction")) ?? [])[1] as {
      Properties: { DurableConfig: { ExecutionTimeout: number } };
    };
    expect(runner.Properties.DurableConfig.ExecutionTimeout).toBe(Number(stated));
  });
});

/** `npm run invoke -- events/….json …` commands in code blocks and code spans of README.md and docs/. */
function invokeCommands(): Array<{ path: string; command: string }> {
  const found: Array<{ path: string; command: string }> = [];
  for (const path of markdownFiles) {
    for (const token of tokens(read(path))) {
      if (token.type !== "code" && token.type !== "codespan") continue;
      for (const [command] of (token as Tokens.Code).text.matchAll(
        /npm run invoke -- events\/[\w.-]+\.json(?: events\/[\w.-]+\.json)*/g,
      )) {
        if (!command.includes("events/x.json")) found.push({ path, command });
      }
    }
  }
  return found;
}

describe("every npm run invoke command the docs show", () => {
  const table = new Map(
    tableRows(read("docs/local-workflow.md")).flatMap((row) =>
      row[0]?.startsWith("`npm run invoke -- events/")
        ? [[row[0].replace(/`/g, ""), row[2] ?? ""] as const]
        : [],
    ),
  );
  const commands = [...new Set(invokeCommands().map((found) => found.command))];
  const argsOf = (command: string) => command.replace(/^npm run invoke -- /, "").split(" ");
  let model: LocalModelServer;
  /** Each command's answers, in the order of its events. */
  const answers = new Map<string, InvokeOutput[]>();
  let transcript = "";
  // One `npm run invoke` with every command's events in turn (one process start instead of one per
  // command), on the suite's DynamoDB with a table of its own and the local model. The events name no
  // run another creates (the continuation's previousRunId is no run's), so each answers as it would alone.
  beforeAll(async () => {
    model = await startModelServer();
    const { stdout } = await runScript("tsx", ["local/invoke.ts", ...commands.flatMap(argsOf)], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-docs-${randomUUID()}`,
      OPENAI_BASE_URL: model.baseURL,
    });
    transcript = stdout;
    const outputs = stdout.split(/^(?=HTTP \d{3}$)/m).map(parseInvokeOutput);
    for (const command of commands) answers.set(command, outputs.splice(0, argsOf(command).length));
  }, 180_000);
  afterAll(async () => {
    await model?.stop();
  });

  it("each is in docs/local-workflow.md's table of events, and every events/ file is there", () => {
    for (const { path, command } of invokeCommands())
      expect([...table.keys()], `${path}: ${command}`).toContain(command);
    const files = readdirSync(join(root, "events")).filter((name) => !name.endsWith(".env.json"));
    const named = [...table.keys()].flatMap((command) => command.match(/events\/[\w.-]+\.json/g) ?? []);
    expect([...new Set(named)].sort()).toEqual(files.map((name) => `events/${name}`).sort());
  });

  it.each(commands)("`%s` answers what the table says", (command) => {
    const expected = table.get(command) ?? "";
    const outputs = answers.get(command) ?? [];
    const stdout = transcript;
    expect(outputs).toHaveLength(argsOf(command).length);
    const [first] = outputs;
    expect(String(first?.status), stdout).toBe(expected.match(/^\d{3}/)?.[0]);
    const body = JSON.parse(first?.body ?? "{}") as { status?: string; code?: string };
    const named = expected.match(/`([A-Za-z_]+)`/)?.[1];
    if (named && /^[a-z_]+$/.test(named)) expect(body.status).toBe(named);
    if (named && /^[A-Z_]+$/.test(named)) expect(body.code).toBe(named);
    if (expected.includes("then the same answer with `Idempotent-Replayed: true`")) {
      expect(outputs[1]?.headers["idempotent-replayed"]).toBe("true");
      expect(outputs[1]?.body).toBe(first?.body);
    }
  });
});
