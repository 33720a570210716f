/**
 * Who is signed in (display only: the API decides every permission from the verified token) and the
 * live work of the view on screen, which leaving the view aborts.
 */
import type { Caller } from "./api.js";

/** The signed-in caller, from the token's claims; null when signed out. */
export const session: { caller: Caller | null; leaving: AbortController } = {
  caller: null,
  leaving: new AbortController(),
};

/** Whether the token names `permission` (to offer a control; the API still decides). */
export const holds = (permission: string) => session.caller?.scopes.includes(permission) ?? false;
