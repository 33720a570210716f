import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withLiteralKeys } from "../infra/aws-sdk-unused-plugin.js";
import { API_BUNDLE_OPTIONS, PROJECT_ROOT } from "../infra/bundle.js";

// The Lambda client built exactly as the deployed bundles build it (every plugin of infra/bundle.ts),
// sending to a local HTTP server: the schemas it keeps still write its requests and read its answers and
// errors, and what the plugin replaced throws an error naming it.

type Bundled = typeof import("@aws-sdk/client-lambda");

const seen: Array<{ method: string; url: string; body: string }> = [];
let server: ReturnType<typeof createServer>;
let outdir: string;
let sdk: Bundled;
let endpoint: string;

const bodyOf = async (request: IncomingMessage) => {
  let body = "";
  for await (const chunk of request) body += chunk;
  return body;
};

beforeAll(async () => {
  server = createServer(async (request, response) => {
    seen.push({ method: request.method ?? "", url: request.url ?? "", body: await bodyOf(request) });
    if (request.url?.includes("missing")) {
      response.writeHead(404, {
        "content-type": "application/json",
        "x-amzn-errortype": "ResourceNotFoundException",
      });
      response.end(JSON.stringify({ Type: "User", message: "Function not found: missing" }));
      return;
    }
    response.writeHead(200, { "content-type": "application/json", "x-amz-executed-version": "7" });
    response.end(JSON.stringify({ answered: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  outdir = mkdtempSync(join(tmpdir(), "boundloop-sdk-plugin-"));
  await build({
    ...API_BUNDLE_OPTIONS,
    splitting: false,
    sourcemap: false,
    metafile: false,
    stdin: {
      // Named, as shared/durable/lambda-executions.ts imports it: the unused schemas drop out.
      contents:
        'export { InvokeCommand, LambdaClient, ResourceNotFoundException } from "@aws-sdk/client-lambda";',
      resolveDir: PROJECT_ROOT,
      loader: "js",
    },
    outfile: join(outdir, "lambda.mjs"),
    outdir: undefined,
  });
  sdk = (await import(pathToFileURL(join(outdir, "lambda.mjs")).href)) as Bundled;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(outdir, { recursive: true, force: true });
});

describe("the AWS SDK as the Lambda bundles hold it (infra/aws-sdk-unused-plugin.ts)", () => {
  const client = () =>
    new sdk.LambdaClient({
      region: "eu-west-2",
      endpoint,
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    });

  it("sends an operation and reads its answer with the schemas it kept", async () => {
    const result = await client().send(
      new sdk.InvokeCommand({
        FunctionName: "runner",
        InvocationType: "RequestResponse",
        Payload: '{"a":1}',
      }),
    );
    expect(result.StatusCode).toBe(200);
    expect(result.ExecutedVersion).toBe("7");
    expect(JSON.parse(new TextDecoder().decode(result.Payload))).toEqual({ answered: true });
    expect(seen.at(-1)).toMatchObject({
      method: "POST",
      url: "/2015-03-31/functions/runner/invocations",
      body: '{"a":1}',
    });
  });

  it("reads a service error as its class", async () => {
    const error = await client()
      .send(new sdk.InvokeCommand({ FunctionName: "missing" }))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(sdk.ResourceNotFoundException);
    expect((error as Error).message).toBe("Function not found: missing");
  });

  it("has an event-stream marshaller that throws naming the plugin", () => {
    const marshaller = (client().config as unknown as { eventStreamMarshaller: { deserialize(): unknown } })
      .eventStreamMarshaller;
    expect(() => marshaller.deserialize()).toThrow(/infra\/aws-sdk-unused-plugin\.ts/);
  });

  it("writes a schema module's constant keys as their strings, and only those", () => {
    const source = 'const _h = "http";\nconst _x = `x`;\nexport var A$ = [9, { [_h]: 1, [_x]: 2, [_y]: 3 }];';
    expect(withLiteralKeys(source)).toBe(
      'const _h = "http";\nconst _x = `x`;\nexport var A$ = [9, { "http": 1, [_x]: 2, [_y]: 3 }];',
    );
  });
});
