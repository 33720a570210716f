import { AssetHashType, DockerImage } from "aws-cdk-lib";
import { Code } from "aws-cdk-lib/aws-lambda";
import { buildApiBundleSync, PROJECT_ROOT } from "./bundle.js";

/**
 * The code of a deployed function: `entry` (default: the API handler) bundled at synth by the local
 * esbuild with infra/bundle.ts (index.mjs plus the chunks it loads on demand; the benchmarks measure the
 * same build). No Docker: the image below is never pulled, local bundling either succeeds or fails the
 * synth with esbuild's messages. A non-default entry is written into the bundling environment because
 * that is part of the asset's cache key: without it the CDK would reuse the API function's bundle (same
 * source directory, and `local` is not part of the key). `options.tracingSdk` bundles the OpenTelemetry
 * SDK (infra/bundle.ts `withoutTracingSdk` leaves it out otherwise; the stack asks for it when the deploy
 * setting `tracing` exports from the function, shared/telemetry/entry.ts `bundlesTracingSdk`), and is
 * in the cache key the same way.
 */
export function bundledCode(entry?: string, options: { tracingSdk?: boolean } = {}): Code {
  const environment = {
    ...(entry === undefined ? {} : { BOUNDLOOP_ENTRY: entry }),
    ...(options.tracingSdk ? { BOUNDLOOP_TRACING_SDK: "1" } : {}),
  };
  return Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry("dummy"),
      ...(Object.keys(environment).length === 0 ? {} : { environment }),
      local: {
        tryBundle(outputDir) {
          buildApiBundleSync(outputDir, entry, { tracingSdk: options.tracingSdk ?? false });
          return true;
        },
      },
    },
  });
}
