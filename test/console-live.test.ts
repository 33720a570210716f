import { describe, expect, it } from "vitest";
import { consoleStack, startRun, tokenFor } from "./support/console.js";

// A run followed live in the console from start to end: over the streaming function URL (another
// origin), in one stream, each event on the page before the run has gone one step further. Each of the
// model's answers is held until the page shows the events of the cycle before it: a reader that showed
// events only once the run had gone on (a poll in pieces, a stream flushed by the next cycle) would
// never show them, and the run would stay held. No wall-clock margin: the file runs beside the others.

const tax = (amount: string, currency: string, jurisdiction: string) =>
  JSON.stringify({ amount, currency, jurisdiction, taxPointDate: null });

/** A model answer held until `open()`: the run waits there for as long as the test needs. */
function gate(): { held: Promise<void>; open: () => void } {
  let open = () => {};
  const held = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { held, open };
}

const stack = consoleStack();

describe("the console follows a run live", { timeout: 120_000 }, () => {
  it("to its end in one stream on the streaming URL, each event shown before the run's next model call answers", async () => {
    const gates = [gate(), gate(), gate()] as const;
    stack.model.script([
      {
        toolCalls: [{ id: "c1", name: "calculateTax", arguments: tax("1500", "GBP", "UK") }],
        heldUntil: gates[0].held,
      },
      {
        toolCalls: [{ id: "c2", name: "calculateTax", arguments: tax("200", "BDT", "BD") }],
        heldUntil: gates[1].held,
      },
      { content: "GB tax is 300.00 GBP; BD tax is 30.00 BDT.", heldUntil: gates[2].held },
    ]);
    const page = await stack.pages.signedIn(stack.dev, "owner");
    // Each timeline row as it is added, with how many model calls the run had made by then.
    const arrivals: Array<{ seq: number; type: string; modelCalls: number }> = [];
    const before = stack.model.requests.length;
    const modelCalls = () => stack.model.requests.length - before;
    await page.exposeBinding("timelineRowAdded", (_source, seq: number, type: string) => {
      arrivals.push({ seq, type, modelCalls: modelCalls() });
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
    const shown = (type: string) => arrivals.filter((row) => row.type === type).length;
    // Call k answers once the page shows cycle k - 1's model event and tool call (call 1 at once): the
    // run cannot go past call k meanwhile, so what the page shows came without the run going on.
    for (const [index, { open }] of gates.entries()) {
      await expect.poll(modelCalls, { timeout: 60_000 }).toBe(index + 1);
      await expect
        .poll(() => [shown("model.call.finished"), shown("tool.call.finished")], { timeout: 30_000 })
        .toEqual([index, index]);
      open();
    }
    await expect.poll(() => shown("run.finished"), { timeout: 30_000 }).toBe(1);
    stack.model.usePlanner();

    // One stream, on the streaming function URL, for the whole run: no resume, no poll.
    expect(streams).toEqual([`${stack.dev.streamUrl}/v1/runs/${runId}/events`]);
    expect(arrivals.map((row) => row.seq)).toEqual(arrivals.map((_, index) => index + 1));
    expect(arrivals.at(-1)?.type).toBe("run.finished");
    // Cycle k's model event reached the page before the run's call k + 2 went out (the page lags the
    // run by less than one model call).
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
