import { build } from "esbuild";

const { API_BUNDLE_OPTIONS, API_ENTRY } = await import(process.cwd() + "/infra/bundle.ts");
const r = await build({
  ...API_BUNDLE_OPTIONS,
  entryPoints: [API_ENTRY],
  outdir: "/tmp/metaout",
  metafile: true,
  write: false,
});
const pat = new RegExp(process.argv[2]);
const rows = [];
for (const [f, o] of Object.entries(r.metafile.outputs)) {
  if (!f.endsWith(".mjs")) continue;
  for (const [inp, v] of Object.entries(o.inputs))
    if (pat.test(inp)) rows.push([inp.replace(/.*node_modules\//, ""), v.bytesInOutput]);
}
rows.sort((a, b) => b[1] - a[1]);
console.log(
  rows
    .slice(0, +process.argv[3] || 25)
    .map(([k, v]) => `${(v / 1000).toFixed(1).padStart(7)} ${k}`)
    .join("\n"),
);
