import { AssetHashType, DockerImage } from "aws-cdk-lib";
import { Code } from "aws-cdk-lib/aws-lambda";
import { buildApiBundleSync, PROJECT_ROOT } from "./bundle.js";

/**
 * The code of a deployed function: `entry` (default: the API handler) bundled at synth by the local
 * esbuild with infra/bundle.ts (index.mjs plus the chunks it loads on demand; the benchmarks measure the
 * same build). No Docker: the image below is never pulled, local bundling either succeeds or fails the
 * synth with esbuild's messages. A non-default entry is written into the bundling environment because
 * that is part of the asset's cache key: without it the CDK would reuse the API function's bundle (same
 * source directory, and `local` is not part of the key).
 */
export function bundledCode(entry?: string): Code {
  return Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry("dummy"),
      ...(entry === undefined ? {} : { environment: { BOUNDLOOP_ENTRY: entry } }),
      local: {
        tryBundle(outputDir) {
          buildApiBundleSync(outputDir, ...(entry === undefined ? [] : [entry]));
          return true;
        },
      },
    },
  });
}
