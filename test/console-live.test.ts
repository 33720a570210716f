import { describe, expect, it } from "vitest";
import { consoleStack, startRun, timelineHas, tokenFor } from "./support/console.js";

// A run followed live in the console from start to end: over the streaming function URL (another
// origin), in one stream, each event on the page before the run has gone one step further. The model
// answers each call after MODEL_DELAY_MS, so a reader that polled in pieces (the 2 s streams the console
// used to read) would see events a model call late. This file asserts how events keep up with a run on
// the wall clock (within one model delay), so it runs with the timed files (vitest.config.ts).

const MODEL_DELAY_MS = 3_000;

const stack = consoleStack();

const tax = (amount: string, currency: string, jurisdiction: string) =>
  JSON.stringify({ amount, currency, jurisdiction, taxPointDate: null });

describe("the console follows a run live", { timeout: 120_000 }, () => {
  it("to its end in one stream on the streaming URL, each event shown before the run's next model call answers", async () => {
    stack.model.script([
      {
        toolCalls: [{ id: "c1", name: "calculateTax", arguments: tax("1500", "GBP", "UK") }],
        delayMs: MODEL_DELAY_MS,
      },
      {
        toolCalls: [{ id: "c2", name: "calculateTax", arguments: tax("200", "BDT", "BD") }],
        delayMs: MODEL_DELAY_MS,
      },
      { content: "GB tax is 300.00 GBP; BD tax is 30.00 BDT.", delayMs: MODEL_DELAY_MS },
    ]);
    const page = await stack.pages.signedIn(stack.dev, "owner");
    // Each timeline row as it is added, with how many model calls the run had made by then.
    const arrivals: Array<{ seq: number; type: string; modelCalls: number }> = [];
    const before = stack.model.requests.length;
    await page.exposeBinding("timelineRowAdded", (_source, seq: number, type: string) => {
      arrivals.push({ seq, type, modelCalls: stack.model.requests.length - before });
    });
    await page.evaluate(`new MutationObserver((changes) => {
      for (const change of changes) for (const node of change.addedNodes) {
        if (node.nodeName === "LI" && node.parentElement?.matches("ol.timeline")) {
          window.timelineRowAdded(Number(node.dataset.seq), node.dataset.type);
        }
      }
    }).observe(document.body, { childList: true, subtree: true })`);
    const streams: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/events") && request.method() === "GET") streams.push(request.url());
    });
    const runId = await startRun(
      page,
      "Tax on 1500 GBP for the UK client and 200 BDT for the one in Bangladesh",
    );
    await timelineHas(page, "run.finished", 60_000);
    stack.model.usePlanner();

    // One stream, on the streaming function URL, for the whole run: no resume, no poll.
    expect(streams).toEqual([`${stack.dev.streamUrl}/v1/runs/${runId}/events`]);
    expect(arrivals.map((row) => row.seq)).toEqual(arrivals.map((_, index) => index + 1));
    expect(arrivals.at(-1)?.type).toBe("run.finished");
    // Cycle k's model event reached the page before the run's call k + 2 went out (the page lags the
    // run by less than one model call); a 2 s polled stream lags by one to two calls of 3 s.
    const models = arrivals.filter((row) => row.type === "model.call.finished");
    expect(models).toHaveLength(3);
    models.forEach((row, index) => {
      expect(row.modelCalls, `model.call.finished of cycle ${index + 1}`).toBeLessThanOrEqual(index + 2);
    });
    const calls = arrivals.filter((row) => row.type.startsWith("tool.call."));
    expect(calls.every((row) => row.modelCalls <= 3)).toBe(true);
    await expect.poll(() => page.locator("article.call").count()).toBe(2);

    // A resume after the final event (what an EventSource does when a stream closes): 204 across
    // origins, which the page may read (CORS), and after which nothing more is asked.
    const token = await tokenFor(stack.dev, "owner");
    const resumed = (await page.evaluate(
      `fetch(${JSON.stringify(`${stack.dev.streamUrl}/v1/runs/${runId}/events`)}, {
        headers: { authorization: ${JSON.stringify(`Bearer ${token}`)}, "last-event-id": "${arrivals.length}" },
      }).then(async (r) => ({ status: r.status, body: await r.text() }))`,
    )) as { status: number; body: string };
    expect(resumed).toEqual({ status: 204, body: "" });
    expect(streams).toHaveLength(2);
  });
});
