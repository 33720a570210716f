/**
 * An esbuild plugin for the Lambda bundles (infra/bundle.ts): the openai SDK's API resources the model
 * adapter never calls are left out.
 */
import type { Plugin } from "esbuild";

/**
 * The resources the openai client (`new OpenAI()`, openai/client.mjs) constructs, by their module under
 * `openai/resources/` (as the resource index names it; webhooks also by the module the client imports),
 * and the class each exports. The model adapter
 * (shared/model/openai-chat.ts) calls `chat.completions.create` only, so `chat` (re-exported whole) is
 * not listed here and stays real.
 */
export const UNUSED_OPENAI_RESOURCES: Record<string, string> = {
  "./admin/admin.mjs": "Admin",
  "./audio/audio.mjs": "Audio",
  "./batches.mjs": "Batches",
  "./beta/beta.mjs": "Beta",
  "./completions.mjs": "Completions",
  "./containers/containers.mjs": "Containers",
  "./conversations/conversations.mjs": "Conversations",
  "./embeddings.mjs": "Embeddings",
  "./evals/evals.mjs": "Evals",
  "./files.mjs": "Files",
  "./fine-tuning/fine-tuning.mjs": "FineTuning",
  "./graders/graders.mjs": "Graders",
  "./images.mjs": "Images",
  "./models.mjs": "Models",
  "./moderations.mjs": "Moderations",
  "./realtime/realtime.mjs": "Realtime",
  "./responses/responses.mjs": "Responses",
  "./skills/skills.mjs": "Skills",
  "./uploads/uploads.mjs": "Uploads",
  "./vector-stores/vector-stores.mjs": "VectorStores",
  "./videos.mjs": "Videos",
  "./webhooks.mjs": "Webhooks",
  "./webhooks/webhooks.mjs": "Webhooks",
};

/**
 * Leaves the openai SDK's unused API resources out of the Lambda bundles (~50 kB minified, esbuild's
 * metafile: Admin, Beta, VectorStores, FineTuning and the rest of {@link UNUSED_OPENAI_RESOURCES}). The
 * client constructs every resource in its constructor, so each module is replaced, wherever the SDK
 * imports it from, by a class of the same name whose instances throw a clear Error naming this plugin on any use
 * (`client.beta.…`): a reach would not go unnoticed. A name the index imports that a replacement lacks
 * fails the build. test/infra-synth.test.ts runs a model call through the bundle; unbundled code (local
 * runs, tests) keeps the real SDK.
 */
export const withoutUnusedOpenAIResources: Plugin = {
  name: "without-unused-openai-resources",
  setup(esbuild) {
    const modules = Object.keys(UNUSED_OPENAI_RESOURCES).map(
      (file) => `/node_modules/openai/resources/${file.slice(2)}`,
    );
    esbuild.onResolve({ filter: /resources\/|^\.\.?\// }, async (args) => {
      if (args.pluginData === "without-unused-openai-resources") return undefined;
      if (!args.importer.replaceAll("\\", "/").includes("/node_modules/openai/")) return undefined;
      const real = await esbuild.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: "without-unused-openai-resources",
      });
      const index = modules.findIndex((module) => real.path.replaceAll("\\", "/").endsWith(module));
      const name = Object.values(UNUSED_OPENAI_RESOURCES)[index];
      return name ? { path: name, namespace: "without-unused-openai-resources" } : undefined;
    });
    esbuild.onLoad({ filter: /.*/, namespace: "without-unused-openai-resources" }, ({ path }) => {
      const message = JSON.stringify(
        `openai's ${path} resource is not in the Lambda bundle (infra/openai-resources-plugin.ts)`,
      );
      return {
        contents: `export class ${path} { constructor() { return new Proxy(this, { get() { throw new Error(${message}); } }); } }`,
        loader: "js",
      };
    });
  },
};

/** Where {@link withoutUnreachedOpenAIClientParts}'s replacements say they come from. */
const CLIENT_PARTS_ORIGIN =
  "not in the Lambda bundle (infra/openai-resources-plugin.ts withoutUnreachedOpenAIClientParts)";

/**
 * The openai client's own modules the model adapter never reaches, by their file under `openai/`, and
 * the replacement's code: a streamed response's reader (`core/streaming.mjs`, with its line decoder;
 * the adapter never sends `stream: true`) and workload identity federation
 * (`auth/workload-identity-auth.mjs`; the client is built with an API key or Bedrock's short-term key).
 */
export const UNREACHED_OPENAI_CLIENT_PARTS: Record<string, string> = {
  "core/streaming.mjs": [
    `const unreached = () => { throw new Error(${JSON.stringify(`openai's Stream is ${CLIENT_PARTS_ORIGIN}`)}); };`,
    "export class Stream { constructor() { unreached(); } static fromSSEResponse() { unreached(); } static fromReadableStream() { unreached(); } }",
    "export function _iterSSEMessages() { unreached(); }",
  ].join("\n"),
  "auth/workload-identity-auth.mjs": `export class WorkloadIdentityAuth { constructor() { throw new Error(${JSON.stringify(`openai's WorkloadIdentityAuth is ${CLIENT_PARTS_ORIGIN}`)}); } }`,
};

/**
 * Leaves {@link UNREACHED_OPENAI_CLIENT_PARTS} out of the Lambda bundles (~7 kB minified, esbuild's
 * metafile). openai/client.mjs and its response parser import them statically; each is replaced,
 * wherever the SDK imports it from, by exports of the same names that throw a clear Error naming this
 * plugin if ever reached. test/infra-synth.test.ts runs a model call through the bundle; unbundled code
 * (local runs, tests) keeps the real SDK.
 */
export const withoutUnreachedOpenAIClientParts: Plugin = {
  name: "without-unreached-openai-client-parts",
  setup(esbuild) {
    esbuild.onResolve({ filter: /(?:streaming|workload-identity-auth)\.mjs$/ }, (args) => {
      const importer = args.importer.replaceAll("\\", "/");
      if (!importer.includes("/node_modules/openai/")) return undefined;
      const target = new URL(args.path, `file://${importer}`).pathname;
      const part = Object.keys(UNREACHED_OPENAI_CLIENT_PARTS).find((file) =>
        target.endsWith(`/node_modules/openai/${file}`),
      );
      return part ? { path: part, namespace: "without-unreached-openai-client-parts" } : undefined;
    });
    esbuild.onLoad({ filter: /.*/, namespace: "without-unreached-openai-client-parts" }, ({ path }) => ({
      contents: UNREACHED_OPENAI_CLIENT_PARTS[path] ?? "",
      loader: "js",
    }));
  },
};
