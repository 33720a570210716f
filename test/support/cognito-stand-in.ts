import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { PreTokenGenerationV2TriggerEvent } from "aws-lambda";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import { USER_POOL_POLICY } from "../../shared/user-roles.js";

/**
 * A local HTTP stand-in for the two AWS endpoints `npm run user` talks to, so the real AWS SDK clients
 * run against it unchanged (AWS_ENDPOINT_URL): Cognito user pools (JSON 1.1 protocol, `X-Amz-Target:
 * AWSCognitoIdentityProviderService.<Operation>`) and CloudFormation's DescribeStacks (query protocol,
 * XML answer). Every request is recorded with its operation, parsed body and whether it was SigV4-signed;
 * a request with the wrong content type, target or missing required members gets the 400 Cognito gives.
 *
 * Tokens are issued as Cognito issues them: RS256 with a `kid`, `iss`
 * `https://cognito-idp.<region>.amazonaws.com/<poolId>`, access tokens with `client_id` and no `aud`,
 * `token_use`, `scope`, `cognito:groups`, and the pool's pre token generation trigger (event V2_0,
 * the function passed in) applied to the access token's claims and scopes; a trigger that throws fails
 * the sign-in with UserLambdaValidationException "PreTokenGeneration failed with error …".
 */
export interface CognitoStandIn {
  url: string;
  region: string;
  poolId: string;
  clientId: string;
  issuer: string;
  publicJwk: JWK;
  /** Every request, in order. */
  requests: Array<{ operation: string; body: Record<string, unknown>; signed: boolean }>;
  /** Adds a user directly (for users `npm run user -- add` would refuse to create). */
  seedUser(user: {
    email: string;
    password: string;
    attributes?: Record<string, string>;
    groups?: string[];
  }): void;
  stop(): Promise<void>;
}

interface StoredUser {
  sub: string;
  email: string;
  password: string;
  status: "FORCE_CHANGE_PASSWORD" | "CONFIRMED";
  attributes: Record<string, string>;
  groups: string[];
  created: Date;
}

class CognitoError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** The name of a stack the stand-in describes without pool outputs (deployed with its own issuer). */
export const OWN_ISSUER_STACK = "BoundloopOwnIssuer";

type Trigger = (event: PreTokenGenerationV2TriggerEvent) => Promise<PreTokenGenerationV2TriggerEvent>;

async function readBody(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

function need(body: Record<string, unknown>, ...names: string[]): void {
  for (const name of names) {
    if (body[name] === undefined || body[name] === "") {
      throw new CognitoError(
        "InvalidParameterException",
        `1 validation error detected: ${name} must not be null`,
      );
    }
  }
}

function checkPassword(password: string): void {
  const ok =
    password.length >= USER_POOL_POLICY.minPasswordLength &&
    /[a-z]/.test(password) &&
    /[A-Z]/.test(password) &&
    /\d/.test(password) &&
    /[^A-Za-z0-9]/.test(password);
  if (!ok) throw new CognitoError("InvalidPasswordException", "Password does not conform to policy");
}

/**
 * Starts the stand-in on 127.0.0.1 (a free port) with one pool, one public client, the groups `groups`
 * and the stack outputs a deployed stack with the built-in pool has.
 */
export async function startCognitoStandIn(options: {
  trigger: Trigger;
  groups: readonly string[];
  stackName?: string;
}): Promise<CognitoStandIn> {
  const region = "eu-west-2";
  const poolId = `${region}_StandIn01`;
  const clientId = "3n4b5urk1ft4fl3mg5e62d9ado";
  const issuer = `https://cognito-idp.${region}.amazonaws.com/${poolId}`;
  const stackName = options.stackName ?? "Boundloop";
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  const publicJwk: JWK = { ...jwk, kid, alg: "RS256", use: "sig" };
  const users = new Map<string, StoredUser>();
  const sessions = new Map<string, string>();
  const requests: CognitoStandIn["requests"] = [];

  const find = (username: unknown): StoredUser => {
    const user = [...users.values()].find((u) => u.email === username || u.sub === username);
    if (!user) throw new CognitoError("UserNotFoundException", "User does not exist.");
    return user;
  };
  const checkPool = (body: Record<string, unknown>) => {
    need(body, "UserPoolId");
    if (body.UserPoolId !== poolId)
      throw new CognitoError("ResourceNotFoundException", "User pool does not exist.");
  };
  const userType = (user: StoredUser) => ({
    Username: user.sub,
    Attributes: Object.entries({ sub: user.sub, ...user.attributes }).map(([Name, Value]) => ({
      Name,
      Value,
    })),
    UserStatus: user.status,
    Enabled: true,
    UserCreateDate: user.created.getTime() / 1000,
    UserLastModifiedDate: user.created.getTime() / 1000,
  });

  async function tokens(user: StoredUser, triggerSource: string) {
    const event = {
      version: "2",
      triggerSource,
      region,
      userPoolId: poolId,
      userName: user.sub,
      callerContext: { awsSdkVersion: "aws-sdk-unknown-unknown", clientId },
      request: {
        userAttributes: { sub: user.sub, "cognito:user_status": user.status, ...user.attributes },
        groupConfiguration: {
          groupsToOverride: [...user.groups],
          iamRolesToOverride: [],
          preferredRole: null,
        },
        scopes: ["aws.cognito.signin.user.admin"],
      },
      response: { claimsAndScopeOverrideDetails: null },
    } as unknown as PreTokenGenerationV2TriggerEvent;
    let shaped: PreTokenGenerationV2TriggerEvent;
    try {
      shaped = await options.trigger(structuredClone(event));
    } catch (error) {
      throw new CognitoError(
        "UserLambdaValidationException",
        `PreTokenGeneration failed with error ${error instanceof Error ? error.message : String(error)}.`,
      );
    }
    const access = shaped.response.claimsAndScopeOverrideDetails?.accessTokenGeneration;
    const scopes = new Set(event.request.scopes);
    for (const scope of access?.scopesToAdd ?? []) scopes.add(scope);
    for (const scope of access?.scopesToSuppress ?? []) scopes.delete(scope);
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: JWTPayload) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid })
        .setIssuer(issuer)
        .setIssuedAt(now)
        .setExpirationTime(now + USER_POOL_POLICY.accessTokenHours * 3600)
        .setJti(randomUUID())
        .sign(privateKey);
    const accessToken = await sign({
      ...(access?.claimsToAddOrOverride ?? {}),
      sub: user.sub,
      "cognito:groups": user.groups,
      client_id: clientId,
      origin_jti: randomUUID(),
      event_id: randomUUID(),
      token_use: "access",
      scope: [...scopes].join(" "),
      auth_time: now,
      username: user.sub,
    });
    const idToken = await sign({
      sub: user.sub,
      "cognito:groups": user.groups,
      email_verified: user.attributes.email_verified === "true",
      "cognito:username": user.sub,
      aud: clientId,
      token_use: "id",
      auth_time: now,
      ...user.attributes,
    });
    return {
      AuthenticationResult: {
        AccessToken: accessToken,
        IdToken: idToken,
        RefreshToken: randomUUID(),
        ExpiresIn: USER_POOL_POLICY.accessTokenHours * 3600,
        TokenType: "Bearer",
      },
      ChallengeParameters: {},
    };
  }

  const operations: Record<string, (body: Record<string, unknown>) => Promise<unknown> | unknown> = {
    AdminCreateUser(body) {
      checkPool(body);
      need(body, "Username");
      const email = String(body.Username);
      if ([...users.values()].some((u) => u.email === email)) {
        throw new CognitoError("UsernameExistsException", "An account with the given email already exists.");
      }
      const attributes = Object.fromEntries(
        ((body.UserAttributes ?? []) as Array<{ Name: string; Value: string }>).map((a) => [a.Name, a.Value]),
      );
      const password = String(body.TemporaryPassword ?? "Generated-by-Cognito-1");
      checkPassword(password);
      const user: StoredUser = {
        sub: randomUUID(),
        email,
        password,
        status: "FORCE_CHANGE_PASSWORD",
        attributes,
        groups: [],
        created: new Date(),
      };
      users.set(user.sub, user);
      return { User: userType(user) };
    },
    AdminAddUserToGroup(body) {
      checkPool(body);
      need(body, "Username", "GroupName");
      if (!options.groups.includes(String(body.GroupName))) {
        throw new CognitoError("ResourceNotFoundException", "Group not found.");
      }
      const user = find(body.Username);
      if (!user.groups.includes(String(body.GroupName))) user.groups.push(String(body.GroupName));
      return {};
    },
    AdminDeleteUser(body) {
      checkPool(body);
      need(body, "Username");
      users.delete(find(body.Username).sub);
      return {};
    },
    ListUsers(body) {
      checkPool(body);
      return { Users: [...users.values()].map(userType) };
    },
    ListUsersInGroup(body) {
      checkPool(body);
      need(body, "GroupName");
      return {
        Users: [...users.values()].filter((u) => u.groups.includes(String(body.GroupName))).map(userType),
      };
    },
    async InitiateAuth(body) {
      need(body, "AuthFlow", "ClientId", "AuthParameters");
      if (body.ClientId !== clientId)
        throw new CognitoError("ResourceNotFoundException", "User pool client does not exist.");
      if (body.AuthFlow !== "USER_PASSWORD_AUTH") {
        throw new CognitoError(
          "InvalidParameterException",
          `Unsupported auth flow ${String(body.AuthFlow)}.`,
        );
      }
      const params = body.AuthParameters as Record<string, string>;
      const user = [...users.values()].find((u) => u.email === params.USERNAME);
      if (!user || user.password !== params.PASSWORD) {
        throw new CognitoError("NotAuthorizedException", "Incorrect username or password.");
      }
      if (user.status === "FORCE_CHANGE_PASSWORD") {
        const session = randomUUID();
        sessions.set(session, user.sub);
        return {
          ChallengeName: "NEW_PASSWORD_REQUIRED",
          Session: session,
          ChallengeParameters: {
            USER_ID_FOR_SRP: user.sub,
            requiredAttributes: "[]",
            userAttributes: JSON.stringify({ email: user.email }),
          },
        };
      }
      return tokens(user, "TokenGeneration_Authentication");
    },
    async RespondToAuthChallenge(body) {
      need(body, "ClientId", "ChallengeName", "Session", "ChallengeResponses");
      const sub = sessions.get(String(body.Session));
      if (!sub) throw new CognitoError("NotAuthorizedException", "Invalid session for the user.");
      const responses = body.ChallengeResponses as Record<string, string>;
      const user = find(sub);
      if (
        body.ChallengeName !== "NEW_PASSWORD_REQUIRED" ||
        responses.USERNAME !== sub ||
        !responses.NEW_PASSWORD
      ) {
        throw new CognitoError("InvalidParameterException", "Invalid challenge response.");
      }
      checkPassword(responses.NEW_PASSWORD);
      sessions.delete(String(body.Session));
      user.password = responses.NEW_PASSWORD;
      user.status = "CONFIRMED";
      return tokens(user, "TokenGeneration_NewPasswordChallenge");
    },
  };

  const describeStacks = (form: URLSearchParams): string => {
    // OWN_ISSUER_STACK: a stack deployed with jwtIssuer, which has no pool outputs.
    const ownIssuer = form.get("StackName") === OWN_ISSUER_STACK;
    if (form.get("StackName") !== stackName && !ownIssuer) {
      throw new CognitoError("ValidationError", `Stack with id ${form.get("StackName")} does not exist`);
    }
    const outputs = ownIssuer
      ? { ApiUrl: "https://example.invalid/" }
      : { UserPoolId: poolId, UserPoolClientId: clientId, ApiUrl: "https://example.invalid/" };
    const members = Object.entries(outputs)
      .map(
        ([key, value]) => `<member><OutputKey>${key}</OutputKey><OutputValue>${value}</OutputValue></member>`,
      )
      .join("");
    return `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member><StackName>${stackName}</StackName><StackId>arn:aws:cloudformation:${region}:123456789012:stack/${stackName}/1</StackId><CreationTime>2026-12-01T00:00:00Z</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus><Outputs>${members}</Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></DescribeStacksResponse>`;
  };

  const server: Server = createServer(async (req, res) => {
    const text = await readBody(req);
    const signed = /^AWS4-HMAC-SHA256 Credential=\S+\/\d{8}\/[a-z0-9-]+\/[a-z-]+\/aws4_request/.test(
      req.headers.authorization ?? "",
    );
    const contentType = req.headers["content-type"] ?? "";
    if (contentType.startsWith("application/x-www-form-urlencoded")) {
      const form = new URLSearchParams(text);
      requests.push({
        operation: `cloudformation:${form.get("Action")}`,
        body: Object.fromEntries(form),
        signed,
      });
      try {
        if (form.get("Action") !== "DescribeStacks" || !signed)
          throw new CognitoError("InvalidAction", "Unsupported");
        const xml = describeStacks(form);
        res.writeHead(200, { "content-type": "text/xml" }).end(xml);
      } catch (error) {
        const e = error as CognitoError;
        res
          .writeHead(400, { "content-type": "text/xml" })
          .end(
            `<ErrorResponse><Error><Type>Sender</Type><Code>${e.type}</Code><Message>${e.message}</Message></Error><RequestId>1</RequestId></ErrorResponse>`,
          );
      }
      return;
    }
    const target = String(req.headers["x-amz-target"] ?? "");
    const operation = target.replace(/^AWSCognitoIdentityProviderService\./, "");
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text || "{}") as Record<string, unknown>;
    } catch {
      body = {};
    }
    requests.push({ operation, body, signed });
    const handler = operations[operation];
    try {
      if (
        contentType !== "application/x-amz-json-1.1" ||
        !target.startsWith("AWSCognitoIdentityProviderService.")
      ) {
        throw new CognitoError(
          "SerializationException",
          "Expected application/x-amz-json-1.1 and an X-Amz-Target",
        );
      }
      if (!handler) throw new CognitoError("UnknownOperationException", `Unknown operation ${operation}`);
      const isPublic = operation === "InitiateAuth" || operation === "RespondToAuthChallenge";
      if (!isPublic && !signed)
        throw new CognitoError("MissingAuthenticationTokenException", "Missing Authentication Token");
      const result = await handler(body);
      res.writeHead(200, { "content-type": "application/x-amz-json-1.1" }).end(JSON.stringify(result));
    } catch (error) {
      const e =
        error instanceof CognitoError ? error : new CognitoError("InternalErrorException", String(error));
      res
        .writeHead(400, { "content-type": "application/x-amz-json-1.1", "x-amzn-errortype": e.type })
        .end(JSON.stringify({ __type: e.type, message: e.message }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    region,
    poolId,
    clientId,
    issuer,
    publicJwk,
    requests,
    seedUser({ email, password, attributes = {}, groups = [] }) {
      const sub = randomUUID();
      users.set(sub, {
        sub,
        email,
        password,
        status: "CONFIRMED",
        attributes: { email, email_verified: "true", ...attributes },
        groups,
        created: new Date(),
      });
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
