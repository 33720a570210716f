/**
 * The README's layout table names every top-level folder the repository tracks and every Lambda entry
 * under functions/ (console/, functions/stream/ and functions/pre-token/ were missing).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/scripts.js";

const readme = readFileSync(`${REPO_ROOT}README.md`, "utf8");
const layout = readme.slice(readme.indexOf("## Layout"), readme.indexOf("## A first API call"));
const listed = new Set([...layout.matchAll(/^\| `([^`]+)`/gm)].map((m) => m[1]));
const tracked = execFileSync("git", ["ls-files"], { cwd: REPO_ROOT, encoding: "utf8" }).split("\n");
const folders = (depth: number, under = "") =>
  [
    ...new Set(
      tracked
        .filter((path) => path.startsWith(under) && path.split("/").length > depth)
        .map((path) => `${path.split("/").slice(0, depth).join("/")}/`),
    ),
  ].sort();

describe("the README's layout table", () => {
  it("lists every top-level folder", () => {
    const top = folders(1);
    expect(top).toEqual(expect.arrayContaining(["console/", "functions/", "local/"]));
    for (const folder of top.filter((f) => f !== "functions/" && f !== "shared/")) {
      expect(listed, folder).toContain(folder);
    }
    expect(listed).toContain("shared/");
  });

  it("lists every Lambda entry under functions/", () => {
    const entries = folders(2, "functions/");
    expect(entries).toEqual([
      "functions/api/",
      "functions/pre-token/",
      "functions/runner/",
      "functions/stream/",
    ]);
    for (const folder of entries) expect(listed, folder).toContain(folder);
  });
});
