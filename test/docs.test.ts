import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import GithubSlugger from "github-slugger";
import { marked, type Token, type Tokens } from "marked";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import * as z from "zod/mini";
import { CreateRunBody } from "../functions/api/contract.js";
import { RUNNER } from "../infra/durable-runner.js";
import { ROUTES } from "../infra/routes.js";
import { RUNTIME_SETTINGS } from "../infra/settings.js";
import { BoundloopStack } from "../infra/stack.js";
import {
  CONFIG_REFERENCE_COMMAND,
  CONFIG_REFERENCE_PATH,
  configReferenceFile,
  describeAccepted,
  describeDefault,
  renderConfigReference,
} from "../local/gen-config-docs.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { ConfigSchema, loadConfig } from "../shared/config.js";
import { CONFIG_DOCS } from "../shared/config-docs.js";
import { type InvokeOutput, parseInvokeOutput, runScript } from "./support/scripts.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const markdownFiles = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** Every token of a Markdown document, nested ones included (links inside lists and tables). */
function tokens(markdown: string): Token[] {
  const all: Token[] = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    all.push(token);
  });
  return all;
}

/** The GitHub anchors of a Markdown file's headings (`## Exactly-once effects` → `exactly-once-effects`). */
function anchors(path: string): Set<string> {
  const slugger = new GithubSlugger();
  return new Set(
    tokens(read(path)).flatMap((token) => (token.type === "heading" ? [slugger.slug(token.text)] : [])),
  );
}

/** The body rows of every Markdown table in `markdown`, as trimmed cells (header and rule rows left out). */
function tableRows(markdown: string): string[][] {
  return tokens(markdown).flatMap((token) =>
    token.type === "table"
      ? (token as Tokens.Table).rows.map((cells) => cells.map((cell) => cell.text.trim()))
      : [],
  );
}

describe("configuration reference", () => {
  it(`${CONFIG_REFERENCE_PATH} is what \`${CONFIG_REFERENCE_COMMAND}\` generates from the config schema`, () => {
    const committed = read(CONFIG_REFERENCE_PATH);
    expect(
      committed === configReferenceFile(),
      `${CONFIG_REFERENCE_PATH} is stale: run \`${CONFIG_REFERENCE_COMMAND}\` and commit the result`,
    ).toBe(true);
  });

  it("lists every variable of the schema once, with the default the schema applies", () => {
    const rows = tableRows(read(CONFIG_REFERENCE_PATH));
    const defaults = ConfigSchema.parse({});
    for (const name of Object.keys(ConfigSchema.shape)) {
      expect(
        rows.filter((row) => row[0] === `\`${name}\``),
        name,
      ).toHaveLength(1);
    }
    const row = (name: string) => rows.find((cells) => cells[0] === `\`${name}\``)?.slice(0, 3);
    expect(row("MAX_CYCLES")).toEqual([
      "`MAX_CYCLES`",
      "integer, 1–50 model calls",
      `${defaults.MAX_CYCLES} model calls`,
    ]);
    expect(row("TENANT_CLAIMS")).toEqual([
      "`TENANT_CLAIMS`",
      "list of string matching `^[A-Za-z0-9:_.-]{1,128}$`, at least 1",
      `\`${defaults.TENANT_CLAIMS.join(",")}\``,
    ]);
  });

  it("reads bounds, accepted values and defaults from the schema, not from the prose", () => {
    const schema = z.object({
      WAIT_MS: z._default(z.coerce.number().check(z.int(), z.positive(), z.maximum(90_000)), 30_000),
      RETENTION_SECONDS: z._default(
        z.coerce.number().check(z.int(), z.minimum(60), z.maximum(864_000)),
        172_800,
      ),
      MODE: z.pipe(
        z.pipe(
          z.optional(z.string()),
          z.transform((value) => value?.trim().toLowerCase() ?? "fast"),
        ),
        z.enum(["fast", "safe"]),
      ),
      ENDPOINT: z.optional(z.url()),
      NAMES: z.pipe(
        z.transform((value: string | undefined) => (value ?? "a,b").split(",")),
        z.array(z.string().check(z.regex(/^[a-z]+$/))).check(z.minLength(2)),
      ),
    });
    expect(describeAccepted(schema.shape.WAIT_MS, "ms")).toBe("integer, 1–90000 ms");
    expect(describeDefault(schema.shape.WAIT_MS, "ms")).toBe("30000 ms (30 s)");
    expect(describeAccepted(schema.shape.RETENTION_SECONDS, "s")).toBe("integer, 60–864000 s");
    expect(describeDefault(schema.shape.RETENTION_SECONDS, "s")).toBe("172800 s (2 days)");
    expect(describeAccepted(schema.shape.MODE)).toBe("one of `fast`, `safe`");
    expect(describeDefault(schema.shape.MODE)).toBe("`fast`");
    expect(describeAccepted(schema.shape.ENDPOINT)).toBe("URL");
    expect(describeDefault(schema.shape.ENDPOINT)).toBe("unset");
    expect(describeAccepted(schema.shape.NAMES)).toBe("list of string matching `^[a-z]+$`, at least 2");
    expect(describeDefault(schema.shape.NAMES)).toBe("`a,b`");
    expect(describeDefault(z.string())).toBe("required");

    const docs = {
      WAIT_MS: { group: "Limits of a run", unit: "ms", description: "How long | to wait." },
      RETENTION_SECONDS: { group: "Quotes, idempotency and audit", unit: "s", description: "Kept." },
      MODE: { group: "Model", description: "Mode." },
      ENDPOINT: { group: "DynamoDB", description: "Endpoint." },
      NAMES: { group: "HTTP and identity", description: "Names." },
    } as const;
    const rendered = renderConfigReference(schema, docs);
    expect(tableRows(rendered)).toContainEqual([
      "`WAIT_MS`",
      "integer, 1–90000 ms",
      "30000 ms (30 s)",
      "How long | to wait.",
    ]);
    expect(rendered).toContain("How long \\| to wait.");
    expect(rendered.indexOf("## Model")).toBeLessThan(rendered.indexOf("`MODE`"));
    expect(rendered.indexOf("`MODE`")).toBeLessThan(rendered.indexOf("## DynamoDB"));
    expect(rendered).not.toContain("## Observability");
    expect(() => renderConfigReference(schema, { ...docs, NAMES: undefined } as never)).toThrow(
      "No description in shared/config-docs.ts for NAMES",
    );
  });

  it("has prose for exactly the variables of the schema", () => {
    expect(Object.keys(CONFIG_DOCS).sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
  });
});

describe("README", () => {
  const readme = read("README.md");
  const lines = readme.split("\n");

  it("is at most 200 lines", () => {
    expect(lines.at(-1)).toBe("");
    expect(lines.length - 1).toBeLessThanOrEqual(200);
  });

  it("gives the two set-up commands before its first section", () => {
    const firstSection = lines.findIndex((line) => line.startsWith("## "));
    const install = lines.findIndex((line) => line.startsWith("npm install && npm start"));
    const test = lines.findIndex((line) => line.startsWith("npm test"));
    expect(firstSection).toBeGreaterThan(0);
    expect(install).toBeGreaterThan(0);
    expect(install).toBeLessThan(firstSection);
    expect(test).toBeGreaterThan(install);
    expect(test).toBeLessThan(firstSection);
  });

  it("links every file under docs/", () => {
    const linked = new Set(
      tokens(readme).flatMap((token) => (token.type === "link" ? [token.href.split("#")[0]] : [])),
    );
    for (const path of markdownFiles.filter((path) => path.startsWith("docs/"))) {
      expect(linked, `README.md does not link ${path}`).toContain(path);
    }
  });
});

describe("relative links in README.md and docs/*.md", () => {
  it.each(markdownFiles)("%s: every relative link points at a file (and heading) that exists", (path) => {
    const broken: string[] = [];
    const links = tokens(read(path)).flatMap((token) => (token.type === "link" ? [token.href] : []));
    for (const href of links) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto:, …
      const [file = "", anchor] = href.split("#");
      const target = file === "" ? path : relative(root, resolve(root, dirname(path), decodeURI(file)));
      if (target.startsWith("..") || !existsSync(join(root, target))) {
        broken.push(`${href} (no file ${target})`);
      } else if (anchor && target.endsWith(".md") && !anchors(target).has(anchor)) {
        broken.push(`${href} (no heading #${anchor} in ${target})`);
      }
    }
    expect(broken).toEqual([]);
  });
});

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

  it("lists every runtime setting of infra/settings.ts, with its variable and the functions that get it", () => {
    const rows = tableRows(deploy).filter((row) => row.length === 3 && /^`[A-Z_]+`$/.test(row[1] ?? ""));
    const label = { api: "API", runner: "runner" } as const;
    expect(rows).toEqual(
      RUNTIME_SETTINGS.map((setting) => [
        `\`${setting.context}\``,
        `\`${setting.env}\``,
        setting.functions.map((fn) => label[fn]).join(", "),
      ]),
    );
  });

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

/** The inline and block code of a Markdown file, with the text around each inline code span. */
function paragraphsOf(path: string): Tokens.Generic[] {
  return tokens(read(path)).filter((token) => token.type === "paragraph" || token.type === "text");
}

describe("Markdown that renders as written", () => {
  it.each(markdownFiles)("%s: no accidental blockquote, no code span glued to a word", (path) => {
    const problems: string[] = [];
    for (const token of tokens(read(path))) {
      if (token.type === "blockquote") problems.push(`blockquote: ${token.raw.trim().slice(0, 60)}`);
    }
    for (const paragraph of paragraphsOf(path)) {
      const children = (paragraph.tokens ?? []) as Token[];
      children.forEach((child, i) => {
        if (child.type !== "codespan") return;
        const before = children[i - 1];
        const after = children[i + 1];
        // A plural or possessive right after a span (`ModelTool`s) is fine; a word glued to it is not.
        if (before?.type === "text" && /[A-Za-z0-9]$/.test(before.raw))
          problems.push(`…${before.raw.slice(-20)}${child.raw}`);
        if (after?.type === "text" && /^(?!s\b)[A-Za-z0-9]/.test(after.raw))
          problems.push(`${child.raw}${after.raw.slice(0, 20)}…`);
      });
    }
    expect(problems).toEqual([]);
  });

  it.each(markdownFiles)("%s: shell examples do not overwrite the shell's own variables", (path) => {
    const owned = /^\s*(?:export\s+)?(USER|HOME|PATH|PWD|SHELL|LANG|TERM|HOSTNAME)=/m;
    const blocks = tokens(read(path)).flatMap((token) =>
      token.type === "code" && ["bash", "sh", "shell", ""].includes((token as Tokens.Code).lang ?? "")
        ? [(token as Tokens.Code).text]
        : [],
    );
    expect(blocks.filter((block) => owned.test(block))).toEqual([]);
  });
});

describe("numbers the docs quote", () => {
  it("docs/durable-runs.md gives the runner's default execution timeout the stack deploys", () => {
    const stated = read("docs/durable-runs.md").match(/so ([\d ]+) s\s+with\s+the defaults/)?.[1];
    expect(Number(stated?.replace(/ /g, ""))).toBe(RUNNER.executionTimeoutSeconds);
    expect(read("docs/durable-runs.md")).not.toMatch(/execution timeout 900 s/);
  });

  it("every 'deployed bundle is N kB' is the P4 figure of bench/results/latest.md", () => {
    const measured = read("bench/results/latest.md").match(
      /\| P4 deployed bundle \| [^|]+ \| ([\d.]+) kB/,
    )?.[1];
    expect(measured).toBeDefined();
    for (const path of markdownFiles) {
      for (const [, stated] of read(path).matchAll(/deployed bundle is\s+([\d.]+) kB/g)) {
        expect(stated, path).toBe(measured);
      }
    }
  });

  it("docs/idempotency.md says two identical recordInvoice calls in one turn record one invoice", () => {
    const text = read("docs/idempotency.md").replace(/\s+/g, " ");
    expect(text).not.toContain("two identical calls in one turn are two operations");
    expect(text).toMatch(/Two identical calls in one turn get two keys .*QUOTE_ALREADY_RECORDED/);
  });

  it("the README says which Node the durable SDK asks for, that Node 20 warns and works, and the deployed one", () => {
    const sdk = JSON.parse(read("node_modules/@aws/durable-execution-sdk-js/package.json")) as {
      engines: { node: string };
    };
    const wanted = sdk.engines.node.match(/\d+/)?.[0];
    const readme = read("README.md").replace(/\s+/g, " ");
    expect(readme).toContain(`Node 20+ (${wanted}+ recommended; the deployed runtime is Node 24)`);
    expect(readme).toMatch(
      new RegExp(
        `EBADENGINE\` warning for the durable execution SDK \\(it asks for Node ${wanted}\\); it works on Node 20`,
      ),
    );
  });
});

describe("docs/http-api.md", () => {
  const httpApi = read("docs/http-api.md");
  const rows = tableRows(httpApi);

  it("lists every route of the stack", () => {
    const listed = rows.flatMap((row) =>
      /^`(GET|POST|PUT) \//.test(row[0] ?? "") ? [row[0]?.replace(/`/g, "")] : [],
    );
    expect(listed.sort()).toEqual(ROUTES.map((route) => `${route.method} ${route.path}`).sort());
  });

  it("names every body member POST /v1/runs accepts, and both forms of FORBIDDEN and of the 413", () => {
    const body = httpApi.match(/`POST \/v1\/runs` takes `(\{[^`]+\})`/)?.[1] ?? "";
    const members = [...body.matchAll(/"(\w+)"/g)].map((match) => match[1]);
    expect(members.sort()).toEqual(Object.keys(CreateRunBody.shape).sort());
    const forbidden = rows.find((row) => row[0] === "`FORBIDDEN`")?.[2] ?? "";
    expect(forbidden).toContain("`requiredPermission`");
    expect(forbidden).toContain('`rule: "four_eyes"`');
    const tooLarge = rows.find((row) => row[0] === "`PAYLOAD_TOO_LARGE`")?.[2] ?? "";
    expect(tooLarge).toContain('{"message":"Request Entity Too Large"}');
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
