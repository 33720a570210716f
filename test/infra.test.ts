import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { BoundloopStack } from "../infra/stack.js";

describe("the CDK stack", () => {
  const template = Template.fromStack(new BoundloopStack(new App(), "Test"));

  it("has the table with pk/sk and a TTL attribute", () => {
    template.resourceCountIs("AWS::DynamoDB::GlobalTable", 1);
    template.hasResourceProperties("AWS::DynamoDB::GlobalTable", {
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
      TimeToLiveSpecification: { AttributeName: "ttl", Enabled: true },
    });
  });

  it("deploys the handler on the newest Node runtime, ARM64, under the API timeout", () => {
    const functions = template.findResources("AWS::Lambda::Function", {
      Properties: { Handler: "index.handler" },
    });
    const [fn] = Object.values(functions) as Array<{ Properties: Record<string, unknown> }>;
    expect(fn?.Properties.Runtime).toBe("nodejs24.x");
    expect(fn?.Properties.Architectures).toEqual(["arm64"]);
    expect(fn?.Properties.Timeout).toBeLessThan(30);
  });

  it("routes /healthz and POST /v1/runs through the HTTP API", () => {
    template.hasResourceProperties("AWS::ApiGatewayV2::Route", { RouteKey: "GET /healthz" });
    template.hasResourceProperties("AWS::ApiGatewayV2::Route", { RouteKey: "POST /v1/runs" });
    template.hasResourceProperties("AWS::ApiGatewayV2::Api", {
      ProtocolType: "HTTP",
      Name: Match.anyValue(),
    });
  });
});
