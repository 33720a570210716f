import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CONFIG_DEFAULTS, ConfigError, FUNCTION_TIMEOUT_SECONDS, loadConfig } from "../shared/config.js";
import { DEFAULT_IDENTITY_CONFIG } from "../shared/identity.js";

const configError = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
};

describe("the HTTP API's configuration (shared/config.ts)", () => {
  it("has documented defaults", () => {
    const config = loadConfig({});
    expect(config.identity).toEqual({
      tenantClaims: ["tenant_id", "custom:tenant_id"],
      permissionClaims: ["scope", "permissions", "cognito:groups"],
      permissionListClaims: ["permissions", "cognito:groups"],
      iamPrincipals: {},
    });
    // The stack sets the issuer, audiences and MCP resource (infra/stack.ts); unset, no token is accepted.
    expect(config.auth).toEqual({
      issuer: undefined,
      audiences: [],
      algorithms: ["RS256"],
      jwksUrl: undefined,
      jwks: undefined,
      mcpResourceUrl: undefined,
    });
    expect(config.http.maxBodyBytes).toBe(65_536);
    expect(config.table.requestTimeoutMs).toBe(3_000);
    expect(config.model).toMatchObject({
      apiKey: undefined,
      apiKeySecretName: undefined,
      secretCacheSeconds: 300,
    });
    expect(config.observability).toEqual({
      serviceName: "boundloop",
      metricsNamespace: "boundloop",
      logLevel: "INFO",
    });
  });

  it("reads claim names, the IAM mapping, the secret name and log level", () => {
    const config = loadConfig({
      TENANT_CLAIMS: " org_id , custom:org ",
      PERMISSION_CLAIMS: "roles",
      IAM_PRINCIPAL_TENANTS:
        '{"arn:aws:iam::111122223333:user/ops":{"tenantId":"t_ops","permissions":["billing:read"]}}',
      OPENAI_API_KEY_SECRET_NAME: "prod/boundloop/openai",
      POWERTOOLS_LOG_LEVEL: "debug",
      TABLE_NAME: "boundloop",
    });
    expect(config.identity.tenantClaims).toEqual(["org_id", "custom:org"]);
    expect(config.identity.permissionClaims).toEqual(["roles"]);
    expect(config.identity.iamPrincipals).toEqual({
      "arn:aws:iam::111122223333:user/ops": { tenantId: "t_ops", permissions: ["billing:read"] },
    });
    expect(config.model.apiKeySecretName).toBe("prod/boundloop/openai");
    expect(config.observability.logLevel).toBe("DEBUG");
    expect(loadConfig({ TENANT_CLAIMS: "" }).identity.tenantClaims).toEqual([
      "tenant_id",
      "custom:tenant_id",
    ]);
  });

  it("reads every flag with the one boolean parser: true/1, false/0, unset or empty for the default", () => {
    const flags = {
      SUMMARIZE_ON_MAX_CYCLES: (env: Record<string, string>) => loadConfig(env).limits.summarizeOnMaxCycles,
      IDEMPOTENCY_KEY_REQUIRED: (env: Record<string, string>) => loadConfig(env).idempotency.keyRequired,
    };
    for (const [name, read] of Object.entries(flags)) {
      const forms = ["true", "1", " 1 ", "false", "0", "", "  "].map((value) => read({ [name]: value }));
      expect(forms, name).toEqual([true, true, true, false, false, false, false]);
      expect(read({}), name).toBe(false);
      for (const bad of ["yes", "TRUE", "2"]) expect(configError({ [name]: bad }), name).toContain(name);
    }
  });

  it("keeps the defaults other code needs in one place (CONFIG_DEFAULTS, FUNCTION_TIMEOUT_SECONDS)", () => {
    expect(CONFIG_DEFAULTS).toEqual(loadConfig({}));
    expect(DEFAULT_IDENTITY_CONFIG).toBe(CONFIG_DEFAULTS.identity);
    // The run's default cap sits below the function timeout, which sits below API Gateway's 30 s.
    expect(CONFIG_DEFAULTS.limits.runTimeoutMs).toBeLessThan(FUNCTION_TIMEOUT_SECONDS * 1000);
    expect(FUNCTION_TIMEOUT_SECONDS).toBe(29);
  });

  it("rejects invalid values with a message naming each variable", () => {
    expect(configError({ OPENAI_API_KEY: "sk-x", OPENAI_API_KEY_SECRET_NAME: "s" })).toMatch(
      /OPENAI_API_KEY.*OPENAI_API_KEY_SECRET_NAME.*not both/,
    );
    expect(configError({ IAM_PRINCIPAL_TENANTS: "{not json" })).toContain(
      "IAM_PRINCIPAL_TENANTS: must be a JSON object",
    );
    expect(configError({ IAM_PRINCIPAL_TENANTS: '{"bob":{"tenantId":"t"}}' })).toContain(
      "IAM_PRINCIPAL_TENANTS",
    );
    expect(
      configError({ IAM_PRINCIPAL_TENANTS: '{"arn:aws:iam::111122223333:user/u":{"tenantId":"TENANT#x"}}' }),
    ).toContain("IAM_PRINCIPAL_TENANTS");
    expect(configError({ TENANT_CLAIMS: "," })).toContain("TENANT_CLAIMS");
    expect(configError({ POWERTOOLS_LOG_LEVEL: "verbose" })).toContain("POWERTOOLS_LOG_LEVEL");
    expect(configError({ MAX_BODY_BYTES: "10" })).toContain("MAX_BODY_BYTES");
    // Token settings: asymmetric algorithms only, an MCP resource without a fragment.
    for (const algorithms of ["HS256", "none", "RS256,HS256", ","]) {
      expect(configError({ JWT_ALGORITHMS: algorithms }), algorithms).toContain("JWT_ALGORITHMS");
    }
    expect(loadConfig({ JWT_ALGORITHMS: " ES256 , RS256" }).auth.algorithms).toEqual(["ES256", "RS256"]);
    expect(configError({ MCP_RESOURCE_URL: "https://api.example/mcp#x" })).toContain("MCP_RESOURCE_URL");
    expect(configError({ MCP_RESOURCE_URL: "ftp://api.example/mcp" })).toContain("MCP_RESOURCE_URL");
    expect(loadConfig({ PERMISSION_LIST_CLAIMS: "none" }).identity.permissionListClaims).toEqual([]);
    const both = configError({ DYNAMODB_REQUEST_TIMEOUT_MS: "0", RUN_TTL_SECONDS: "5" });
    expect(both).toContain("DYNAMODB_REQUEST_TIMEOUT_MS");
    expect(both).toContain("RUN_TTL_SECONDS");
  });

  it("an invalid environment fails the Lambda's cold start (importing the handler) with that message", () => {
    const root = fileURLToPath(new URL("..", import.meta.url));
    const env = { ...process.env, IAM_PRINCIPAL_TENANTS: "{not json", POWERTOOLS_LOG_LEVEL: "INFO" };
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", "await import('./functions/api/handler.ts')"],
      { cwd: root, env, encoding: "utf8", timeout: 60_000 },
    );
    expect(child.status).not.toBe(0);
    expect(child.stderr).toContain("ConfigError");
    expect(child.stderr).toContain("Invalid configuration: IAM_PRINCIPAL_TENANTS: must be a JSON object");

    const ok = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        "const m = await import('./functions/api/handler.ts'); console.log(typeof m.handler)",
      ],
      { cwd: root, env: { ...process.env, IAM_PRINCIPAL_TENANTS: "" }, encoding: "utf8", timeout: 60_000 },
    );
    expect(ok.stderr).toBe("");
    expect(ok.stdout.trim()).toBe("function");
  });
});
