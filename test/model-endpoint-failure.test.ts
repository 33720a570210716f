/**
 * An unreachable or refusing model endpoint is named by its cause: the run's 502 says
 * where (the base URL) and what (connection refused, DNS, TLS, 401, timeout), never the key; `npm start`
 * checks the endpoint once before the first run and stops with one line when it cannot be used.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer as createHttpsServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APIConnectionTimeoutError } from "openai/core/error";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../local/dynamo.js";
import { endpointOf, readEndpointFailure } from "../shared/model/endpoint-failure.js";
import { apiEvent } from "./fixtures/events.js";
import { runScript } from "./support/scripts.js";
import { startTestStack } from "./support/stack.js";

const KEY = "sk-test-ENDPOINT-KEY-7f3a";

/** POST /v1/runs through a handler whose model endpoint is `baseURL`; the 502's problem body. */
async function runAgainst(baseURL: string) {
  const stack = await startTestStack({ OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: KEY });
  try {
    const response = await stack.invoke(
      apiEvent("http-api-v2", { body: { prompt: "Tax on 100 GBP in the UK" } }) as never,
    );
    expect(response.statusCode, response.body).toBe(502);
    expect(response.body).not.toContain(KEY);
    return JSON.parse(response.body ?? "") as { code: string; detail: string; modelErrorCode: string | null };
  } finally {
    await stack.stop();
  }
}

let tls: Server;
let tlsURL: string;
beforeAll(async () => {
  // A server whose certificate nobody trusts (self-signed), as a private endpoint with its own CA would be.
  const dir = mkdtempSync(join(tmpdir(), "boundloop-tls-"));
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"],
      ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
    ],
    { stdio: "ignore" },
  );
  tls = createHttpsServer(
    { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
    (_, res) => res.end("{}"),
  );
  await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
  tlsURL = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/v1`;
});
afterAll(() => {
  tls?.close();
});

describe("the run's 502 names the endpoint and the cause", () => {
  it("connection refused", async () => {
    const baseURL = `http://127.0.0.1:${await freePort()}/v1`;
    const problem = await runAgainst(baseURL);
    expect(problem.code).toBe("MODEL_UNAVAILABLE");
    expect(problem.modelErrorCode).toBe("MODEL_CONNECTION_REFUSED");
    expect(problem.detail).toBe(
      `The model endpoint ${baseURL} refused the connection: nothing is listening there (ECONNREFUSED). The run stopped after 1 cycle(s).`,
    );
  });

  it("a TLS failure (a self-signed certificate)", async () => {
    const problem = await runAgainst(tlsURL);
    expect(problem.modelErrorCode).toBe("MODEL_TLS_FAILED");
    expect(problem.detail).toContain(`The model endpoint ${tlsURL} failed TLS (DEPTH_ZERO_SELF_SIGNED_CERT)`);
  });

  it("401 from the provider: the key was refused, and the key is not in the answer", async () => {
    const stack = await startTestStack({ OPENAI_API_KEY: KEY });
    try {
      // The local model server answers 401, as a provider refusing the key does (401 is not retried).
      stack.model.script([{ status: 401 }]);
      const response = await stack.invoke(
        apiEvent("http-api-v2", { body: { prompt: "Tax on 100 GBP in the UK" } }) as never,
      );
      expect(response.statusCode).toBe(502);
      expect(response.body).not.toContain(KEY);
      const body = JSON.parse(response.body ?? "") as { detail: string; modelErrorCode: string };
      expect(body.modelErrorCode).toBe("MODEL_AUTH_FAILED");
      expect(body.detail).toBe(
        `The model endpoint ${stack.model.baseURL} refused the API key (HTTP 401): check the key it was given (OPENAI_API_KEY, or the secret on AWS). The run stopped after 1 cycle(s).`,
      );
    } finally {
      await stack.stop();
    }
  });

  it("DNS and timeouts are named too; the endpoint is shown without credentials or query", () => {
    const dns = Object.assign(new Error("Connection error."), {
      cause: Object.assign(new Error("getaddrinfo ENOTFOUND models.internal"), { code: "ENOTFOUND" }),
    });
    expect(readEndpointFailure(dns, "https://user:pass@models.internal/v1/?api-key=x")).toMatchObject({
      code: "MODEL_HOST_NOT_FOUND",
      message:
        "The model endpoint https://models.internal/v1 has a host name that does not resolve (DNS) (ENOTFOUND).",
    });
    expect(readEndpointFailure(new APIConnectionTimeoutError(), "http://127.0.0.1:11434/v1/")).toMatchObject({
      code: "MODEL_TIMEOUT",
      message: "The model endpoint http://127.0.0.1:11434/v1 did not answer in time (timeout).",
    });
    expect(endpointOf("https://key:secret@host:8443/openai/v1?api-version=1#x")).toBe(
      "https://host:8443/openai/v1",
    );
    expect(readEndpointFailure(new Error("boom"), "http://x/v1")).toBeUndefined();
  });
});

describe("npm start checks the model endpoint before the first run", { timeout: 90_000 }, () => {
  it("stops with one line naming the endpoint and the cause, before any run, without a stack trace", async () => {
    const baseURL = `http://127.0.0.1:${await freePort()}/v1`;
    const { code, stdout, stderr } = await runScript("tsx", ["local/start.ts"], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      OPENAI_BASE_URL: baseURL,
      OPENAI_API_KEY: KEY,
    });
    expect(code).toBe(1);
    expect(stderr).toContain(
      `start: The model endpoint ${baseURL} refused the connection: nothing is listening there (ECONNREFUSED). Start the server there, fix OPENAI_BASE_URL, or unset OPENAI_BASE_URL and OPENAI_API_KEY to use the local planner.`,
    );
    expect(`${stdout}${stderr}`).not.toContain(KEY);
    expect(stdout).not.toContain("Run run_");
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it("says in one line that a reachable endpoint answers, then runs", async () => {
    const stack = await startTestStack();
    try {
      const { code, stdout, stderr } = await runScript("tsx", ["local/start.ts"], {
        DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
        TABLE_NAME: `test-check-${Date.now()}`,
        OPENAI_BASE_URL: stack.model.baseURL,
      });
      expect(code, stderr).toBe(0);
      expect(stderr).toContain(
        `model: checked ${stack.model.baseURL}: it answers, 1 model(s) listed, gpt-4o-mini (OPENAI_MODEL) is not among them`,
      );
      expect(stdout).toMatch(/Run run_[0-9a-f-]{36}: completed after 3 cycle\(s\)/);
    } finally {
      await stack.stop();
    }
  });
});
