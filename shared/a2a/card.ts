/**
 * boundloop's A2A Agent Card (served without authentication at /.well-known/agent-card.json, as the A2A
 * specification allows): its JSON-RPC interface at `<origin>/v1/a2a`, its skills (one per tool of the
 * registry, phrased from the tool's own description, plus the whole task), and its security: a bearer
 * JWT of the same issuer the API trusts (JWT_ISSUER), with the API's audience rules, as an HTTP bearer
 * scheme and, when the issuer is an http(s) URL, an OpenID Connect scheme. docs/a2a.md.
 */
import type { AgentCard, AgentSkill, SecurityScheme } from "@a2a-js/sdk";
import type { ToolRegistry } from "../agent/dispatcher.js";
import type { Config } from "../config.js";

/** The A2A protocol version the card declares (the SDK's JSON-RPC binding). */
export const A2A_PROTOCOL_VERSION = "1.0";

/** The path of the JSON-RPC endpoint under the API's origin. */
export const A2A_PATH = "/v1/a2a";

/** The names of the card's security schemes. */
const BEARER = "bearer";
const OIDC = "oidc";

/**
 * The card for an API served at `origin` (scheme, host and port, no path).
 * @param tools the tool registry: each tool a skill (its permission a tag)
 */
export function agentCardOf(config: Pick<Config, "auth">, tools: ToolRegistry, origin: string): AgentCard {
  const schemes: Record<string, SecurityScheme> = {
    [BEARER]: {
      scheme: {
        $case: "httpAuthSecurityScheme",
        value: {
          description: `A JWT of the API's issuer (${config.auth.issuer ?? "none configured"}) with the API's audience; its claims give the tenant, user and permissions.`,
          scheme: "Bearer",
          bearerFormat: "JWT",
        },
      },
    },
  };
  // Only an http(s) issuer has a discovery document (OpenID Connect Discovery §4); a `urn:` issuer (the
  // dev server's) would make openIdConnectUrl a string no client can fetch.
  if (config.auth.issuer && /^https?:\/\//i.test(config.auth.issuer)) {
    schemes[OIDC] = {
      scheme: {
        $case: "openIdConnectSecurityScheme",
        value: {
          description: "The issuer of the API's tokens.",
          openIdConnectUrl: `${config.auth.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`,
        },
      },
    };
  }
  return {
    name: "boundloop",
    description:
      "An accounting agent in a bounded loop: the model chooses tools, the backend decides every number, permission, rule and side effect (tax in GB and BD, invoices recorded once).",
    supportedInterfaces: [
      {
        url: `${origin}${A2A_PATH}`,
        protocolBinding: "JSONRPC",
        tenant: "",
        protocolVersion: A2A_PROTOCOL_VERSION,
      },
    ],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: schemes,
    securityRequirements: [{ schemes: { [BEARER]: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain", "application/json"],
    skills: [TASK_SKILL, ...[...tools.values()].map(skillOf)],
    signatures: [],
  };
}

/** The whole task: a request in words, run through the loop with every tool the caller may use. */
const TASK_SKILL: AgentSkill = {
  id: "accounting-task",
  name: "Accounting task",
  description:
    "Hand over a task in words (calculate tax, record an invoice, look invoices up); the run uses the tools below within its limits and answers with the backend's results as artifacts.",
  tags: ["accounting", "tax", "invoices"],
  examples: ["Calculate tax on 1500 GBP for a client in the UK and record the invoice for Acme Ltd."],
  inputModes: ["text/plain"],
  outputModes: ["text/plain", "application/json"],
  securityRequirements: [],
};

/** One tool as a skill: its name, description, and tags saying whether it writes and what it needs. */
function skillOf(tool: {
  name: string;
  description: string;
  isMutating: boolean;
  requiredPermission?: string | undefined;
}): AgentSkill {
  return {
    id: tool.name,
    name: tool.name,
    description: tool.description,
    tags: [
      tool.isMutating ? "writes" : "reads",
      ...(tool.requiredPermission ? [tool.requiredPermission] : []),
    ],
    examples: [],
    inputModes: ["text/plain"],
    outputModes: ["application/json"],
    securityRequirements: [],
  };
}
