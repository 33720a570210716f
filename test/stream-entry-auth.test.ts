import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { StreamifyHandler } from "aws-lambda";
import { calculateJwkThumbprint, exportJWK, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { installLambdaStreaming, invokeStreaming } from "../local/lambda-streaming.js";
import { functionUrlEvent } from "./support/streaming.js";

// The deployed streaming entry (functions/stream/handler.ts, configured from its environment as on AWS)
// against an issuer whose key set is served over HTTP, as Cognito's is: which bearer tokens it lets
// reach the app. `GET /openapi.json` is the probe: the app answers it without dependencies, so a 200
// means the token was accepted and a 401 that it was refused before any route ran.

const ISSUER = "https://issuer.example/pool";
const AUDIENCE = "boundloop-api";
let jwks: Server;
let jwksRequests = 0;
let privateKey: KeyObject;
let kid: string;
let handler: StreamifyHandler;

beforeAll(async () => {
  // A Node key object, usable under any RSA algorithm (RS256, RS512, PS256), as the issuer's key is.
  const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
  privateKey = pair.privateKey;
  // No `alg` on the published key (RFC 7517 makes it optional; many issuers leave it out), so the
  // key alone does not pin the algorithm: the verifier must.
  const publicJwk = await exportJWK(pair.publicKey);
  kid = await calculateJwkThumbprint(publicJwk);
  jwks = createServer((_req, res) => {
    jwksRequests += 1;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys: [{ ...publicJwk, kid, use: "sig" }] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
  process.env.JWT_ISSUER = ISSUER;
  process.env.JWT_AUDIENCE = AUDIENCE;
  process.env.JWT_JWKS_URL = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
  installLambdaStreaming();
  ({ handler } = await import("../functions/stream/handler.js"));
});

afterAll(async () => {
  await new Promise((resolve) => jwks?.close(resolve));
});

/** A token signed with the issuer's key: `alg` RS256, `iss`, 1 h of life, unless `options` say otherwise. */
async function sign(
  claims: JWTPayload,
  options: { alg?: string; exp?: boolean; iat?: number } = {},
): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? "RS256", kid })
    .setIssuer(ISSUER)
    .setIssuedAt(options.iat);
  if (options.exp !== false) jwt.setExpirationTime("1h");
  return jwt.sign(privateKey);
}

const WRITER = { sub: "usr_a1", tenant_id: "tenant_a", scope: "billing:read billing:write", aud: AUDIENCE };

/** `GET /openapi.json` through the streaming entry with `token`: status, headers and body. */
async function probe(token: string | undefined) {
  const { stream, done } = invokeStreaming(
    handler,
    functionUrlEvent("GET", "/openapi.json", { token }),
    createLambdaContext(900_000, "boundloop-stream"),
  );
  let body = "";
  stream.on("data", (chunk: Buffer) => {
    body += chunk.toString("utf8");
  });
  await done;
  const metadata = await stream.metadata;
  return { status: metadata.statusCode, headers: metadata.headers ?? {}, body };
}

/** Asserts a 401 problem from the function whose challenge and detail say `reason`. */
async function refused(token: string, reason: RegExp): Promise<void> {
  const response = await probe(token);
  expect(response.status, reason.source).toBe(401);
  expect(response.headers["content-type"]).toMatch(/^application\/problem\+json/);
  const problem = ProblemSchema.parse(JSON.parse(response.body));
  expect(problem.code).toBe("UNAUTHENTICATED");
  expect(problem.detail).toMatch(reason);
  const challenge = response.headers["www-authenticate"] ?? "";
  expect(challenge).toMatch(/^Bearer realm="boundloop", error="invalid_token", error_description="/);
  // The description is a quoted-string: its own double quotes come escaped.
  expect(challenge.replaceAll('\\"', '"')).toMatch(reason);
}

describe("the streaming entry's token check (one verifier, issuer and audience from configuration)", () => {
  it("accepts the API's tokens: RS256, its issuer, its audience in `aud`, or in `client_id` without `aud`", async () => {
    expect((await probe(await sign(WRITER))).status).toBe(200);
    const { aud: _aud, ...withoutAud } = WRITER;
    // A Cognito access token names the app client in `client_id` and has no `aud`.
    const cognitoAccess = await sign({
      ...withoutAud,
      sub: "usr_b1",
      tenant_id: "tenant_b",
      client_id: AUDIENCE,
    });
    expect((await probe(cognitoAccess)).status).toBe(200);
  });

  it("refuses a token without `exp`: it would never expire", async () => {
    await refused(await sign(WRITER, { exp: false }), /"exp" claim/);
  });

  it("refuses a token without `sub`: no user to act for", async () => {
    const { sub: _sub, ...anonymous } = WRITER;
    await refused(await sign(anonymous), /"sub" claim/);
  });

  it("pins the algorithm: the issuer's RSA key under RS512 or PS256 is refused", async () => {
    for (const alg of ["RS512", "PS256"]) {
      await refused(await sign(WRITER, { alg }), /algorithm/);
    }
  });

  it("refuses a token whose `aud` names another resource even when its `client_id` is this API", async () => {
    await refused(
      await sign({ ...WRITER, aud: "https://other.example/api", client_id: AUDIENCE }),
      /audience/,
    );
    // An MCP token (its audience is the /mcp endpoint's URL) is not an API token either.
    await refused(await sign({ ...WRITER, aud: "https://api.example/mcp" }), /audience/);
  });

  it("refuses a token issued in the future, as API Gateway's JWT authorizer does", async () => {
    await refused(await sign(WRITER, { iat: Math.floor(Date.now() / 1000) + 600 }), /"iat" claim/);
  });

  it("answers no token with a challenge that carries no error code (RFC 6750 section 3.1)", async () => {
    const response = await probe(undefined);
    expect(response.status).toBe(401);
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="boundloop"');
    expect(ProblemSchema.parse(JSON.parse(response.body)).code).toBe("UNAUTHENTICATED");
  });

  it("fetches the issuer's key set once and keeps it for every later token", async () => {
    for (const user of ["usr_a2", "usr_a3", "usr_b2"]) {
      expect((await probe(await sign({ ...WRITER, sub: user }))).status).toBe(200);
    }
    expect(jwksRequests).toBe(1);
  });
});
