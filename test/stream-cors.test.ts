import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../functions/api/app.js";
import { consoleCors } from "../functions/stream/entry.js";
import { loadConfig } from "../shared/config.js";

// The streaming function URL serves the whole API to the console's pages across origins
// (functions/stream/entry.ts): a page reads a response header only when CORS exposes it.

/** Response headers a page reads without CORS exposing them (Fetch standard, CORS-safelisted). */
const SAFELISTED = [
  "cache-control",
  "content-language",
  "content-length",
  "content-type",
  "expires",
  "last-modified",
  "pragma",
];

type Responses = Record<string, { $ref?: string; headers?: Record<string, unknown> }>;

/** Every response header /openapi.json declares, lower-cased. */
async function documentedHeaders(): Promise<string[]> {
  const app = createApp({
    config: loadConfig({}),
    load: () => {
      throw new Error("no dependencies are needed to serve /openapi.json");
    },
  });
  const document = (await (await app.request("/openapi.json")).json()) as {
    paths: Record<string, Record<string, { responses: Responses }>>;
    components: { responses: Responses };
  };
  const names = new Set<string>();
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses)) {
        const declared = response.$ref
          ? document.components.responses[response.$ref.split("/").at(-1) ?? ""]
          : response;
        for (const name of Object.keys(declared?.headers ?? {})) names.add(name.toLowerCase());
      }
    }
  }
  return [...names].sort();
}

describe("CORS of the streaming function URL", () => {
  it("exposes every response header the API documents, so the console's page can read each", async () => {
    const documented = await documentedHeaders();
    // The headers clients act on: a pause, a replay, a run's URL, a preference, a rate limit, a version.
    expect(documented).toEqual(
      expect.arrayContaining([
        "etag",
        "idempotent-replayed",
        "location",
        "preference-applied",
        "ratelimit",
        "ratelimit-policy",
        "retry-after",
      ]),
    );
    const origin = "https://console.example";
    const entry = new Hono().use(consoleCors([origin])).get("/x", (c) => c.text("ok"));
    const response = await entry.request("/x", { headers: { origin } });
    expect(response.headers.get("access-control-allow-origin")).toBe(origin);
    const exposed = (response.headers.get("access-control-expose-headers") ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .sort();
    expect(exposed).toEqual(documented.filter((name) => !SAFELISTED.includes(name)));
  });
});
