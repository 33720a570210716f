/**
 * Sign-in at the configured OIDC issuer with oidc-client-ts (authorization code + PKCE): loaded only
 * when the page carries an issuer and client id (a chunk of its own, so a local console never reads
 * it). The redirect comes back to `/console`; its `code` is exchanged at the issuer's token endpoint and
 * the access token (what the API's JWT authorizer accepts) is returned.
 */
import { UserManager, WebStorageStateStore } from "oidc-client-ts";

function manager(issuer: string, clientId: string): UserManager {
  return new UserManager({
    authority: issuer,
    client_id: clientId,
    redirect_uri: `${location.origin}/console`,
    post_logout_redirect_uri: `${location.origin}/console`,
    response_type: "code",
    scope: "openid",
    userStore: new WebStorageStateStore({ store: sessionStorage }),
    loadUserInfo: false,
  });
}

/** Sends the browser to the issuer's sign-in page. */
export async function signIn(issuer: string, clientId: string): Promise<void> {
  await manager(issuer, clientId).signinRedirect();
}

/**
 * Completes a sign-in the issuer redirected back from (`?code=…&state=…`).
 * @returns the access token
 * @throws oidc-client-ts's error when the state or the code exchange fails
 */
export async function completeSignIn(issuer: string, clientId: string): Promise<string> {
  const user = await manager(issuer, clientId).signinRedirectCallback();
  return user.access_token;
}
