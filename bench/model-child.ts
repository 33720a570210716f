/**
 * The load test's model, in a process of its own (as a remote model would be): the local model server in
 * planner mode, and a latency front on another port that waits BENCH_MODEL_LATENCY_MS (default 50) before
 * passing each request through to it. Prints `{"direct": "<baseURL>", "delayed": "<baseURL>"}` on stdout
 * when listening; SIGTERM stops it.
 */
import { once } from "node:events";
import { Agent, createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { startModelServer } from "../local/model-server.js";

async function main(): Promise<void> {
  const latencyMs = Number(process.env.BENCH_MODEL_LATENCY_MS ?? 50);
  const model = await startModelServer();
  // The server records every request for tests to inspect; under load, keep only the last second's.
  setInterval(() => {
    model.requests.length = 0;
  }, 1000).unref();
  const upstream = new URL(model.baseURL);
  const agent = new Agent({ keepAlive: true });
  const front = createServer(async (request, response) => {
    await sleep(latencyMs);
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: request.url,
        method: request.method,
        headers: request.headers,
        agent,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forward.on("error", () => response.destroy());
    request.pipe(forward);
  });
  front.listen(0, "127.0.0.1");
  await once(front, "listening");
  const { port } = front.address() as AddressInfo;
  console.log(JSON.stringify({ direct: model.baseURL, delayed: `http://127.0.0.1:${port}/v1`, latencyMs }));
  process.once("SIGTERM", async () => {
    front.closeAllConnections();
    front.close();
    agent.destroy();
    await model.stop();
    process.exit(0);
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
