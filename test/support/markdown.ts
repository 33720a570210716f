/**
 * The repository's Markdown as the docs tests read it (test/docs.test.ts, docs-commands.test.ts,
 * docs-config-reference.test.ts): README.md and docs/*.md, their tokens as marked lexes them, and the
 * body rows of their tables.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { marked, type Token, type Tokens } from "marked";

/** The repository's root directory (absolute, no trailing slash). */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The text of the file at `path` (relative to the repository root). */
export const read = (path: string) => readFileSync(join(root, path), "utf8");

/** README.md and every Markdown file directly under docs/, as paths relative to the repository root. */
export const markdownFiles = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** Every token of a Markdown document, nested ones included (links inside lists and tables). */
export function tokens(markdown: string): Token[] {
  const all: Token[] = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    all.push(token);
  });
  return all;
}

/** The body rows of every Markdown table in `markdown`, as trimmed cells (header and rule rows left out). */
export function tableRows(markdown: string): string[][] {
  return tokens(markdown).flatMap((token) =>
    token.type === "table"
      ? (token as Tokens.Table).rows.map((cells) => cells.map((cell) => cell.text.trim()))
      : [],
  );
}
