/**
 * README.md and docs/*.md stay true and render as written: the README's shape, relative links, Markdown
 * pitfalls, and the facts and numbers the docs quote from the code. The configuration reference:
 * docs-config-reference.test.ts; the commands the docs show: docs-commands.test.ts.
 */
import { existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import GithubSlugger from "github-slugger";
import type { Token, Tokens } from "marked";
import { describe, expect, it } from "vitest";
import { ResourceMetadataSchema } from "../functions/api/contract/mcp.js";
import { CreateRunBody, RunResponseSchema } from "../functions/api/contract.js";
import { PROBLEM_STATUS } from "../functions/api/problem-details.js";
import { RUNNER } from "../infra/durable-runner.js";
import { ROUTES } from "../infra/routes.js";
import { RUNTIME_SETTINGS } from "../infra/settings.js";
import { markdownFiles, read, root, tableRows, tokens } from "./support/markdown.js";

/** The GitHub anchors of a Markdown file's headings (`## Exactly-once effects` → `exactly-once-effects`). */
function anchors(path: string): Set<string> {
  const slugger = new GithubSlugger();
  return new Set(
    tokens(read(path)).flatMap((token) => (token.type === "heading" ? [slugger.slug(token.text)] : [])),
  );
}

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
      /^`(GET|HEAD|POST|PUT) \//.test(row[0] ?? "") ? [row[0]?.replace(/`/g, "")] : [],
    );
    expect(listed.sort()).toEqual(ROUTES.map((route) => `${route.method} ${route.path}`).sort());
  });

  it("describes each route in its own words: no two routes' answers are the same text", () => {
    const answers = rows.flatMap((row) =>
      /^`(GET|HEAD|POST|PUT) \//.test(row[0] ?? "") ? [[row[0], row[2]] as const] : [],
    );
    const shared = answers.filter(([, text], i) => answers.findIndex(([, other]) => other === text) !== i);
    expect(shared).toEqual([]);
  });

  it("names every member of /mcp's protected-resource metadata, and no other", () => {
    const row = rows.find((cells) => cells[0] === "`GET /.well-known/oauth-protected-resource/mcp`");
    const members = row?.[2]?.match(/`\{([^`]+)\}`/)?.[1]?.split(",") ?? [];
    expect(members.map((member) => member.trim()).sort()).toEqual(
      Object.keys(ResourceMetadataSchema.shape).sort(),
    );
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

  it("names every member of the 200 body of POST /v1/runs", () => {
    const body = httpApi.match(/The 200 body is `\{([^`]+)\}`/)?.[1] ?? "";
    const members = body.split(",").map((member) => member.trim());
    expect(members.sort()).toEqual(Object.keys(RunResponseSchema.shape).sort());
  });

  it("lists every problem code with its status", () => {
    const listed = Object.fromEntries(
      rows.flatMap((row) =>
        /^`[A-Z_]+`$/.test(row[0] ?? "") && /^\d{3}$/.test(row[1] ?? "")
          ? [[row[0]?.replace(/`/g, ""), Number(row[1])]]
          : [],
      ),
    );
    expect(listed).toEqual(PROBLEM_STATUS);
  });
});
