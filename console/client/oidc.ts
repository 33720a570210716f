/**
 * Sign-in at the configured OIDC issuer with oidc-client-ts (authorization code + PKCE): loaded only
 * when the page carries an issuer and client id (a chunk of its own, so a local console never reads
 * it). The redirect comes back to `/console`; its `code` is exchanged at the issuer's token endpoint and
 * the access token (what the API's JWT authorizer accepts) is returned. Everything the library keeps
 * (the sign-in's state and PKCE verifier, then the tokens) lives in this tab's session storage: nothing
 * in local storage outlives the tab.
 */
import { UserManager, WebStorageStateStore } from "oidc-client-ts";

function manager(issuer: string, clientId: string): UserManager {
  const store = new WebStorageStateStore({ store: sessionStorage });
  return new UserManager({
    authority: issuer,
    client_id: clientId,
    redirect_uri: `${location.origin}/console`,
    post_logout_redirect_uri: `${location.origin}/console`,
    response_type: "code",
    scope: "openid",
    userStore: store,
    stateStore: store,
    loadUserInfo: false,
  });
}

/** Sends the browser to the issuer's sign-in page. */
export async function signIn(issuer: string, clientId: string): Promise<void> {
  await manager(issuer, clientId).signinRedirect();
}

/**
 * Completes a sign-in the issuer redirected back from: `?code=…&state=…`, or `?error=…&state=…` when
 * the sign-in was refused or abandoned there.
 * @returns the access token
 * @throws oidc-client-ts's error when the issuer answered an error (its `error` and
 *   `error_description`), or the state or the code exchange fails
 */
export async function completeSignIn(issuer: string, clientId: string): Promise<string> {
  const user = await manager(issuer, clientId).signinRedirectCallback();
  return user.access_token;
}

/** Forgets the tokens oidc-client-ts kept for this tab (signing out of the console, not of the issuer). */
export async function forgetSignIn(issuer: string, clientId: string): Promise<void> {
  await manager(issuer, clientId).removeUser();
}
