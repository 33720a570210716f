import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";
import Provider, { type Configuration } from "oidc-provider";

/**
 * A real OpenID Provider on loopback for the console's sign-in tests: panva's `oidc-provider` (an
 * OpenID-certified implementation, not a stand-in), configured as a deployment would configure its
 * issuer for this API:
 * - one public client (no secret; authorization code with PKCE S256 required) that may redirect only to
 *   the console;
 * - its access tokens are JWTs (RFC 9068) signed RS256 with a key generated at start, for the API's
 *   audience without the client naming it (the resource indicator is the issuer's default for the
 *   client), carrying the claims shared/identity.ts maps: `sub`, `tenant_id` and `permissions`;
 * - sign-in and consent on the provider's own interaction pages (`devInteractions`: any password; the
 *   login names the account, which must be one of `accounts`).
 * Browsers may call its discovery and token endpoints from the console's origin only (CORS).
 */
export interface OidcIssuer {
  /** `http://127.0.0.1:<port>`: the `iss` of its tokens, and JWT_ISSUER. */
  issuer: string;
  /** Where its public signing keys are (JWT_JWKS_URL). */
  jwksUrl: string;
  /** Every request it served, as `METHOD path?query`, in order. */
  requests: string[];
  /**
   * Configures the provider with the console's client (redirect URI `<redirectOrigin>/console`): the
   * server answers 503 until then, since the console's address is known only once `npm run dev` listens.
   */
  register(client: { clientId: string; redirectOrigin: string }): void;
  stop(): Promise<void>;
}

/** An account of the issuer: its tenant and permissions, as the access token carries them. */
export interface OidcAccount {
  tenantId: string;
  permissions: string[];
}

/** The resource indicator (RFC 8707) the issuer resolves for the console's client: the API. */
const API_RESOURCE = "urn:boundloop:api";

/**
 * Starts an {@link OidcIssuer} on a free loopback port.
 * @param options.audience the `aud` of its access tokens (the API's JWT_AUDIENCE)
 * @param options.accounts who can sign in, by login (= `sub`)
 */
export async function startOidcIssuer(options: {
  audience: string;
  accounts: Record<string, OidcAccount>;
}): Promise<OidcIssuer> {
  const requests: string[] = [];
  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (callback) return callback(req, res);
    res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const signingKey = {
    ...privateJwk,
    kid: await calculateJwkThumbprint(privateJwk),
    alg: "RS256",
    use: "sig",
  };
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    requests,
    register(client) {
      const provider = new Provider(issuer, providerConfiguration({ ...options, ...client, signingKey }));
      callback = provider.callback();
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The provider's configuration (see {@link OidcIssuer}). */
function providerConfiguration(options: {
  audience: string;
  accounts: Record<string, OidcAccount>;
  clientId: string;
  redirectOrigin: string;
  signingKey: Record<string, unknown>;
}): Configuration {
  const account = (id: string | undefined) =>
    id !== undefined && Object.hasOwn(options.accounts, id) ? options.accounts[id] : undefined;
  return {
    clients: [
      {
        client_id: options.clientId,
        token_endpoint_auth_method: "none",
        redirect_uris: [`${options.redirectOrigin}/console`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    pkce: { required: () => true },
    // Lifetimes (s) of what a sign-in leaves behind; an access token lives an hour (the resource's).
    ttl: {
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      AuthorizationCode: 60,
      IdToken: 3600,
      AccessToken: 3600,
    },
    jwks: { keys: [options.signingKey] },
    cookies: { keys: ["boundloop-console-test-cookie-key"] },
    findAccount: (_ctx, id) => (account(id) ? { accountId: id, claims: () => ({ sub: id }) } : undefined),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => API_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: "",
          audience: options.audience,
          accessTokenFormat: "jwt",
          accessTokenTTL: 3600,
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
    extraTokenClaims: (_ctx, token) => {
      const found = account("accountId" in token ? token.accountId : undefined);
      return found ? { tenant_id: found.tenantId, permissions: found.permissions } : undefined;
    },
    clientBasedCORS: (_ctx, origin, client) =>
      client.redirectUris?.some((uri) => new URL(uri).origin === origin) ?? false,
  };
}
