/**
 * Structural rules of shared/store/, read from the source with the TypeScript parser:
 * - the store layer depends on nothing above it: no file imports from shared/agent/, shared/tools/ or
 *   functions/ (type-only imports included);
 * - the table's attribute names (`pk`, `sk`, `ttl`, the listing index's `listPk` and `listSk`) and the
 *   index's name are spelled only in table.ts (TABLE_SCHEMA): no other store file has them as an
 *   identifier, a property name or a word inside a string or template.
 * Comments may mention them.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { TABLE_SCHEMA } from "../shared/store/table.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const STORE = join(ROOT, "shared", "store");
const storeFiles = readdirSync(STORE)
  .filter((name) => name.endsWith(".ts"))
  .map((name) => join(STORE, name));

const parse = (file: string, text = readFileSync(file, "utf8")) =>
  ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);

/** Every module specifier of a file: import/export declarations and dynamic `import("…")`. */
function importsOf(source: ts.SourceFile): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    }
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Files of this repository a file imports, as paths relative to the repository root. */
function localImports(file: string): string[] {
  return importsOf(parse(file))
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => relative(ROOT, resolve(dirname(file), specifier)));
}

const FORBIDDEN_LAYERS = ["shared/agent/", "shared/tools/", "functions/"];

/** `pk`, `sk` or `ttl` as an identifier, property name, or whole word of a string or template part. */
function tableLiterals(source: ts.SourceFile): string[] {
  const names = Object.values(TABLE_SCHEMA) as string[];
  const word = new RegExp(`\\b(${names.join("|")})\\b`);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    const line = () => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    if ((ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) && names.includes(node.text)) {
      found.push(`${line()}: identifier ${node.text}`);
    } else if (
      (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) &&
      word.test((node as ts.LiteralLikeNode).text)
    ) {
      found.push(`${line()}: ${JSON.stringify((node as ts.LiteralLikeNode).text)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("shared/store dependency direction", () => {
  it("reads the imports it checks (the store files import each other and the SDK)", () => {
    expect(storeFiles.map((file) => relative(STORE, file))).toEqual(
      expect.arrayContaining(["idempotency.ts", "lease.ts", "ledger.ts", "quotes.ts", "runs.ts", "table.ts"]),
    );
    expect(localImports(join(STORE, "ledger.ts"))).toEqual(
      expect.arrayContaining(["shared/hash.js", "shared/store/query.js", "shared/store/table.js"]),
    );
    // A type-only import and a dynamic import are imports too.
    const sample = parse(
      join(STORE, "sample.ts"),
      'import type { X } from "../agent/loop.js";\nconst m = await import("../tools/registry.js");',
    );
    expect(importsOf(sample)).toEqual(["../agent/loop.js", "../tools/registry.js"]);
  });

  it("no file under shared/store/ imports from shared/agent/, shared/tools/ or functions/", () => {
    const violations = storeFiles.flatMap((file) =>
      localImports(file)
        .filter((target) => FORBIDDEN_LAYERS.some((layer) => target.startsWith(layer)))
        .map((target) => `${relative(ROOT, file)} imports ${target}`),
    );
    expect(violations).toEqual([]);
  });
});

describe("table attribute names", () => {
  it("finds the names as code, not in comments", () => {
    const sample = parse(
      join(STORE, "sample.ts"),
      [
        "// pk and sk in a comment are fine",
        "const key = { pk: 1 };",
        'const condition = "attribute_not_exists(sk)";',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: source text with a template literal
        "const expression = `SET #x = :x, ttl = ${1}`;",
        'const fine = "task #ttl_x skate";',
      ].join("\n"),
    );
    expect(tableLiterals(sample)).toEqual([
      "2: identifier pk",
      '3: "attribute_not_exists(sk)"',
      '4: "SET #x = :x, ttl = "',
    ]);
  });

  it("are spelled only in table.ts, whose TABLE_SCHEMA is the one source", () => {
    expect(tableLiterals(parse(join(STORE, "table.ts"))).length).toBeGreaterThanOrEqual(3);
    const violations = storeFiles
      .filter((file) => !file.endsWith(`${join("store", "table.ts")}`))
      .flatMap((file) => tableLiterals(parse(file)).map((hit) => `${relative(ROOT, file)}:${hit}`));
    expect(violations).toEqual([]);
  });
});
