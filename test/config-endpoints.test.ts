import { App } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { DeploySettingsError, readDeploySettings } from "../infra/settings.js";
import { loadConfig } from "../shared/config.js";

// Settings the functions use to reach something (an endpoint, a key set, a table) are refused at cold
// start, naming the variable, when no request could ever succeed with them, instead of failing each
// request later as 500 INTERNAL, 502 MODEL_UNAVAILABLE or a 401 whose reason is a URL parser's.

/** The message loadConfig throws for `env`, or "" when it accepts it. */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
    return "";
  } catch (error) {
    return (error as Error).message;
  }
}

describe("endpoint settings are http or https URLs", () => {
  const ENDPOINTS = ["OPENAI_BASE_URL", "BEDROCK_BASE_URL", "DYNAMODB_ENDPOINT", "JWT_JWKS_URL"];

  it("refuse another scheme at cold start, naming the variable", () => {
    for (const name of ENDPOINTS) {
      for (const value of [
        "file:///etc/passwd",
        "ftp://models.example/v1",
        "javascript:alert(1)",
        "localhost:8000",
      ]) {
        expect(refusal({ [name]: value }), `${name}=${value}`).toBe(
          `Invalid configuration: ${name}: must be an http:// or https:// URL`,
        );
      }
      expect(refusal({ [name]: "http://127.0.0.1:8000/v1" }), name).toBe("");
      expect(refusal({ [name]: "https://example.com/v1" }), name).toBe("");
    }
  });

  it("refuse it at synth too (openaiBaseUrl), naming the deploy setting and its variable", () => {
    let error: unknown;
    try {
      readDeploySettings(new App({ context: { openaiBaseUrl: "file:///etc/passwd" } }));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DeploySettingsError);
    expect((error as DeploySettingsError).issues).toEqual([
      "openaiBaseUrl (OPENAI_BASE_URL): must be an http:// or https:// URL",
    ]);
  });
});

describe("TABLE_NAME", () => {
  it("is a DynamoDB table name: A-Z a-z 0-9 _ . -, 3 to 255 characters", () => {
    expect(loadConfig({ TABLE_NAME: "boundloop-dev_2.x" }).table.name).toBe("boundloop-dev_2.x");
    for (const value of ["bad name", "tenant/table", "tablé", "a:b", "ab", "t".repeat(256)]) {
      expect(refusal({ TABLE_NAME: value }), value).toBe(
        "Invalid configuration: TABLE_NAME: must be a DynamoDB table name: 3 to 255 of A-Z a-z 0-9 _ . -",
      );
    }
  });
});

describe("JWT_ISSUER", () => {
  it("without a key set of its own must be an http(s) URL, where its keys are found", () => {
    expect(refusal({ JWT_ISSUER: "urn:example:issuer" })).toBe(
      "Invalid configuration: JWT_ISSUER (urn:example:issuer) is not an http(s) URL, so its keys cannot be read from <JWT_ISSUER>/.well-known/jwks.json: set JWT_JWKS_URL or JWT_JWKS.",
    );
    expect(refusal({ JWT_ISSUER: "https://issuer.example/pool" })).toBe("");
    expect(
      refusal({ JWT_ISSUER: "urn:example:issuer", JWT_JWKS_URL: "https://keys.example/jwks.json" }),
    ).toBe("");
    expect(refusal({ JWT_ISSUER: "urn:example:issuer", JWT_JWKS: '{"keys":[{"kty":"RSA"}]}' })).toBe("");
  });
});
