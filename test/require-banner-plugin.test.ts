/**
 * infra/require-banner-plugin.ts: the `require` banner of a split build stays only where the code after
 * it names `require`, and every file keeps its line count (its source map maps by line).
 */
import { describe, expect, it } from "vitest";
import { REQUIRE_BANNER, withRequireBannerWhereUsed } from "../infra/require-banner-plugin.js";

const file = (code: string) => `${REQUIRE_BANNER}\n${code}\n//# sourceMappingURL=x.mjs.map\n`;
const lines = (text: string) => text.split("\n").length;

describe("withRequireBannerWhereUsed", () => {
  it("leaves the banner out of a file that never names require, keeping its line", () => {
    const text = file('import{a as b}from"./chunk.mjs";var required=b("required field");export{required};');
    const kept = withRequireBannerWhereUsed(text);
    expect(kept).toBe(text.slice(REQUIRE_BANNER.length));
    expect(kept.startsWith("\nimport{a as b}")).toBe(true);
    expect(lines(kept)).toBe(lines(text));
  });

  it("keeps it where the code calls require or esbuild's __require helper reads it", () => {
    for (const code of [
      'var a=require("node:fs");',
      'var c=(x=>typeof require<"u"?require:x)(function(x){throw Error(x)});',
      "var d=e.require;",
      'throw Error("Dynamic require of "+x);',
    ]) {
      expect(withRequireBannerWhereUsed(file(code)), code).toBe(file(code));
    }
  });

  it("leaves a file without the banner as it is", () => {
    expect(withRequireBannerWhereUsed('var a=require("x");')).toBe('var a=require("x");');
    expect(withRequireBannerWhereUsed("export{};")).toBe("export{};");
  });
});
