/**
 * `npm run dev` on a port in use: refused at once, before DynamoDB Local, the model
 * server or the handler start, with one line saying what to do.
 */
import { once } from "node:events";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runScript } from "./support/scripts.js";

const taken = createServer();
let port: number;
beforeAll(async () => {
  taken.listen(0, "127.0.0.1");
  await once(taken, "listening");
  port = (taken.address() as { port: number }).port;
});
afterAll(() => {
  taken.close();
});

describe("npm run dev on a port in use", { timeout: 60_000 }, () => {
  it("exits 1 with one line naming the port, having started nothing", async () => {
    const { code, stdout, stderr } = await runScript("tsx", ["local/dev.ts", "--port", String(port)], {});
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      `dev: port ${port} on 127.0.0.1 is in use (another npm run dev?): stop that server, or use --port <n> (--port 0 picks a free one).`,
    );
    expect(stderr).not.toMatch(/dynamodb: started|model: started|EADDRINUSE/);
    expect(stdout).toBe("");
  });
});
