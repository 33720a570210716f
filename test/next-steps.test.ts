import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { BoundloopStack } from "../infra/stack.js";
import { formatNextSteps } from "../local/next-steps.js";

/** The stack's outputs as CloudFormation resolves them, with made-up ids for the refs. */
function deployedOutputs(context: Record<string, unknown>): Record<string, string> {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
  const outputs = Template.fromStack(new BoundloopStack(app, "Boundloop")).toJSON().Outputs as Record<
    string,
    { Value: unknown }
  >;
  const resolve = (value: unknown): string => {
    if (typeof value === "string") return value;
    const v = value as Record<string, unknown>;
    if (v["Fn::Join"]) {
      const [separator, parts] = v["Fn::Join"] as [string, unknown[]];
      return parts.map(resolve).join(separator);
    }
    if (v.Ref === "AWS::Region") return "eu-west-2";
    if (v.Ref === "AWS::URLSuffix") return "amazonaws.com";
    if (typeof v.Ref === "string" && v.Ref.startsWith("HttpApi")) return "a1b2c3d4e5";
    return `<${JSON.stringify(value).slice(0, 20)}>`;
  };
  return Object.fromEntries(Object.entries(outputs).map(([key, output]) => [key, resolve(output.Value)]));
}

describe("what npm run deploy prints last", { timeout: 120_000 }, () => {
  it("with the built-in pool: the API URL, the user command, then the smoke command against that URL", () => {
    const text = formatNextSteps(deployedOutputs({}));
    const url = "https://a1b2c3d4e5.execute-api.eu-west-2.amazonaws.com/";
    expect(text.split("\n").slice(0, 6)).toEqual([
      "",
      `API URL: ${url}`,
      "",
      "Next:",
      "  1. npm run user -- add --email you@example.com --tenant tenant_demo_01 --role writer",
      `  2. BOUNDLOOP_TOKEN="$(npm run -s user -- token --email you@example.com)" npm run smoke -- --url ${url}`,
    ]);
  });

  it("with your own issuer: the smoke command with a token from that issuer", () => {
    const text = formatNextSteps(
      deployedOutputs({ jwtIssuer: "https://auth.example.com/", jwtAudience: "api" }),
    );
    expect(text).toContain(
      'BOUNDLOOP_TOKEN="<an access token from https://auth.example.com/>" npm run smoke -- --url https://a1b2c3d4e5.execute-api.eu-west-2.amazonaws.com/',
    );
    expect(text).not.toContain("npm run user");
  });
});
