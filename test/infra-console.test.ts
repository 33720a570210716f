import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { consoleOrigins } from "../infra/console-wiring.js";
import { BoundloopStack } from "../infra/stack.js";
import { loadConfig } from "../shared/config.js";

// The console follows runs on the streaming function URL (docs/console.md): the stack names the URL on
// the API function (CONSOLE_STREAM_URL, the console's page) and the console's origins on the streaming
// function (CONSOLE_ORIGINS, its CORS), which the function's own schema accepts.

type Resource = { Type: string; Properties: Record<string, unknown> };

function synth(context: Record<string, unknown>) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
  const template = Template.fromStack(new BoundloopStack(app, "Test"));
  return template.toJSON().Resources as Record<string, Resource>;
}

const variables = (resources: Record<string, Resource>, prefix: string) => {
  const [fn] = Object.entries(resources).filter(
    ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith(prefix),
  );
  return ((fn?.[1].Properties.Environment ?? {}) as { Variables: Record<string, unknown> }).Variables;
};

const idOf = (resources: Record<string, Resource>, type: string) =>
  Object.entries(resources).find(([, resource]) => resource.Type === type)?.[0];

describe("the console's wiring to the streaming function", () => {
  const resources = synth({
    jwtIssuer: "https://issuer.example.com",
    jwtAudience: "boundloop-api",
    consoleCallbackUrls: "https://console.example.com/console,http://localhost:3000/console",
  });

  it("names the function URL on the API function's console page", () => {
    const url = idOf(resources, "AWS::Lambda::Url");
    expect(variables(resources, "ApiFunction").CONSOLE_STREAM_URL).toEqual({
      "Fn::GetAtt": [url, "FunctionUrl"],
    });
  });

  it("lets the HTTP API's origin and the https callback origins call the streaming function, no other", () => {
    const api = idOf(resources, "AWS::ApiGatewayV2::Api");
    const origins = variables(resources, "StreamFunction").CONSOLE_ORIGINS as {
      "Fn::Join": [string, unknown[]];
    };
    const joined = JSON.stringify(origins);
    expect(joined).toContain(`{"Fn::GetAtt":["${api}","ApiEndpoint"]}`);
    expect(joined).toContain(",https://console.example.com");
    expect(joined).not.toContain("localhost");
    expect(variables(resources, "ApiFunction")).not.toHaveProperty("CONSOLE_ORIGINS");
    // The function URL itself configures no CORS: the function answers preflights (functions/stream/entry.ts).
    const [, url] = Object.entries(resources).find(([, r]) => r.Type === "AWS::Lambda::Url") ?? [];
    expect(url?.Properties).not.toHaveProperty("Cors");
  });

  it("consoleOrigins keeps each origin once, the API's first, and only https callbacks", () => {
    expect(
      consoleOrigins("https://abc.execute-api.eu-west-2.amazonaws.com", [
        "https://console.example.com/console",
        "https://console.example.com/callback",
        "http://localhost:3000/callback",
      ]),
    ).toEqual(["https://abc.execute-api.eu-west-2.amazonaws.com", "https://console.example.com"]);
  });

  it("the function's schema takes what the stack writes, and refuses what is not an origin", () => {
    const config = loadConfig({
      CONSOLE_ORIGINS: "https://abc.execute-api.eu-west-2.amazonaws.com,https://console.example.com",
      CONSOLE_STREAM_URL: "https://x.lambda-url.eu-west-2.on.aws/",
    });
    expect(config.console.origins).toEqual([
      "https://abc.execute-api.eu-west-2.amazonaws.com",
      "https://console.example.com",
    ]);
    expect(config.console.streamUrl).toBe("https://x.lambda-url.eu-west-2.on.aws");
    expect(() => loadConfig({ CONSOLE_ORIGINS: "https://console.example.com/console" })).toThrow(
      /CONSOLE_ORIGINS/,
    );
  });
});
