import { endpointOf, readEndpointFailure } from "../shared/model/endpoint-failure.js";
import { createModelClient } from "../shared/model-client.js";

/** How long the check waits for the endpoint (ms): a server on this machine or the network answers sooner. */
const CHECK_TIMEOUT_MS = 5_000;

/** The model endpoint a local command was pointed at could not be used (its one line says why). */
export class ModelEndpointError extends Error {}

/** What {@link checkModelEndpoint} found: whether the endpoint can be used, and one line saying so. */
export interface ModelCheck {
  ok: boolean;
  line: string;
}

/**
 * Checks a model endpoint (OPENAI_BASE_URL, or OpenAI's) once, before the first run: `GET /models` through
 * the same openai client the service builds (shared/model-client.ts), no retries, at most 5 s. Not usable
 * (`ok` false): connection refused, a host that does not resolve, a timeout, a TLS failure, or 401/403;
 * the line is the sentence the run itself would end with (shared/model/endpoint-failure.ts), naming the
 * endpoint and the cause, never the key. Anything else answering is usable: a server without a model list
 * (404) or with another error says so in the line.
 * @param model OPENAI_MODEL, looked for in the list the endpoint gives
 */
export async function checkModelEndpoint(
  baseURL: string,
  apiKey: string | undefined,
  model: string,
): Promise<ModelCheck> {
  const where = endpointOf(baseURL);
  // A key is sent only when one is set; local servers (Ollama, llama.cpp) take any.
  const client = createModelClient({ apiKey: apiKey || "not-set", baseURL, maxRetries: 0 });
  try {
    const ids: string[] = [];
    for await (const entry of client.models.list({ timeout: CHECK_TIMEOUT_MS })) {
      ids.push(entry.id);
      if (ids.length >= 1000) break;
    }
    const listed = ids.includes(model)
      ? `${model} among them`
      : `${model} (OPENAI_MODEL) is not among them: the first run will say if the server refuses it`;
    return {
      ok: true,
      line: `model: checked ${where}: it answers, ${ids.length} model(s) listed, ${listed}`,
    };
  } catch (error) {
    const failure = readEndpointFailure(error, baseURL);
    if (failure && failure.code !== "MODEL_NOT_FOUND") {
      return { ok: false, line: `model: ${failure.message}` };
    }
    const status = (error as { status?: number }).status;
    return {
      ok: true,
      line: `model: checked ${where}: it answers, but GET /models gave ${status ? `HTTP ${status}` : String(error)} (some servers list no models; the first run will tell)`,
    };
  }
}
