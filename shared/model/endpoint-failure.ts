import { APIConnectionTimeoutError, APIError } from "openai/core/error";

/**
 * A failed call to an OpenAI-compatible endpoint read for the client: a stable `code`, a fixed `message`
 * naming what failed and where (the endpoint as {@link endpointOf} shows it, never a key), and `detail`,
 * what the error said, for the logs only.
 */
export interface EndpointFailure {
  code: string;
  message: string;
  detail: string;
}

/** Node's TLS and certificate error codes (tls, OpenSSL), as a connection error's cause carries them. */
const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|UNABLE_TO_(GET|VERIFY)|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$)/;

/** What a connection error's cause code means, as the rest of a sentence about the endpoint. */
const CONNECTION_CODES: Record<string, { code: string; text: string }> = {
  ECONNREFUSED: {
    code: "MODEL_CONNECTION_REFUSED",
    text: "refused the connection: nothing is listening there",
  },
  ENOTFOUND: { code: "MODEL_HOST_NOT_FOUND", text: "has a host name that does not resolve (DNS)" },
  EAI_AGAIN: { code: "MODEL_HOST_NOT_FOUND", text: "has a host name that could not be resolved now (DNS)" },
  ETIMEDOUT: { code: "MODEL_TIMEOUT", text: "did not answer the connection in time (timeout)" },
  EHOSTUNREACH: { code: "MODEL_UNREACHABLE", text: "is on a host the network cannot reach" },
  ENETUNREACH: { code: "MODEL_UNREACHABLE", text: "is on a network this machine cannot reach" },
  ECONNRESET: { code: "MODEL_CONNECTION_FAILED", text: "dropped the connection" },
  EPIPE: { code: "MODEL_CONNECTION_FAILED", text: "dropped the connection" },
};

/**
 * The endpoint as a failure names it: scheme, host, port and path of `baseURL`, without user info, query
 * or fragment (where a key could sit).
 */
export function endpointOf(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, "")}`;
  } catch {
    return "(an invalid base URL)";
  }
}

/** The Node error code of a connection error's cause (the fetch error under the SDK's APIConnectionError). */
function causeCode(error: unknown): string | undefined {
  for (let at: unknown = error, depth = 0; at && depth < 4; depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return code;
    at = (at as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Reads a failed chat-completions (or models) call to `baseURL`: connection refused, a host that does not
 * resolve, a timeout, a TLS failure (certificate or protocol), a dropped connection, or the endpoint's
 * 401, 403 or 404. Undefined for anything else (429 and 5xx are retried by the SDK and reported by
 * status; a context-window refusal is read elsewhere). The messages are fixed sentences plus the endpoint
 * and the error code: no key, no provider text.
 */
export function readEndpointFailure(error: unknown, baseURL: string): EndpointFailure | undefined {
  const where = `The model endpoint ${endpointOf(baseURL)}`;
  const detail = error instanceof Error ? `${error.message}${causeText(error)}` : String(error);
  if (error instanceof APIConnectionTimeoutError) {
    return { code: "MODEL_TIMEOUT", message: `${where} did not answer in time (timeout).`, detail };
  }
  if (error instanceof APIError && error.status !== undefined) return byStatus(error.status, where, detail);
  const code = causeCode(error);
  if (!code) return undefined;
  if (TLS_CODES.test(code)) {
    return {
      code: "MODEL_TLS_FAILED",
      message: `${where} failed TLS (${code}): check its certificate, or the scheme (http/https) in the base URL.`,
      detail,
    };
  }
  const known = CONNECTION_CODES[code];
  if (!known) return undefined;
  return { code: known.code, message: `${where} ${known.text} (${code}).`, detail };
}

/** A 401, 403 or 404 from the endpoint; undefined for other statuses. */
function byStatus(status: number, where: string, detail: string): EndpointFailure | undefined {
  if (status === 401) {
    return {
      code: "MODEL_AUTH_FAILED",
      message: `${where} refused the API key (HTTP 401): check the key it was given (OPENAI_API_KEY, or the secret on AWS).`,
      detail,
    };
  }
  if (status === 403) {
    return {
      code: "MODEL_ACCESS_DENIED",
      message: `${where} refused access (HTTP 403): the key may not use this model.`,
      detail,
    };
  }
  if (status === 404) {
    return {
      code: "MODEL_NOT_FOUND",
      message: `${where} answered HTTP 404: check the base URL (OpenAI-compatible servers serve it under /v1) and the model name.`,
      detail,
    };
  }
  return undefined;
}

/** ": <cause message>" of an error with a cause, for the logs. */
function causeText(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `: ${cause.message}` : "";
}
