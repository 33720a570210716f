/**
 * Who is signed in, as the API verified it (`GET /v1/me`: the API still decides every call), and the
 * live work of the view on screen, which leaving the view aborts.
 */
import type { Caller } from "./api.js";

/**
 * The signed-in caller as `GET /v1/me` answered for `callerToken` (read again when the token changes);
 * null when signed out or not read yet.
 */
export const session: { caller: Caller | null; callerToken: string | null; leaving: AbortController } = {
  caller: null,
  callerToken: null,
  leaving: new AbortController(),
};

/** Whether the API says the caller holds `permission` (to offer a control; the API still decides). */
export const holds = (permission: string) => session.caller?.scopes.includes(permission) ?? false;
