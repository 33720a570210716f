import { describe, expect, it } from "vitest";
import { Deadline, DeadlineExceededError } from "../shared/agent/deadline.js";
import { ManualClock } from "./support/streaming.js";

/** Lets the clock's woken sleepers (promise callbacks) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("a deadline on an injected clock", () => {
  it("counts down and fires its signal when the clock reaches it, not before", async () => {
    const clock = new ManualClock();
    const start = clock.now();
    const deadline = new Deadline(1_000, clock);
    expect(deadline.at).toBe(start + 1_000);
    clock.advance(999);
    await settle();
    expect(deadline.remainingMs()).toBe(1);
    expect(deadline.expired).toBe(false);
    expect(deadline.signal.aborted).toBe(false);
    clock.advance(1);
    await settle();
    expect(deadline.remainingMs()).toBe(0);
    expect(deadline.signal.reason).toBeInstanceOf(DeadlineExceededError);
    expect(deadline.expired).toBe(true);
  });

  it("until(at) keeps the absolute instant; extendTo moves it and re-arms a fresh signal", async () => {
    const clock = new ManualClock();
    const deadline = Deadline.until(clock.now() + 500, clock);
    clock.advance(500);
    await settle();
    expect(deadline.signal.aborted).toBe(true);
    deadline.extendTo(clock.now() + 300);
    expect(deadline.signal.aborted).toBe(false);
    expect(deadline.remainingMs()).toBe(300);
    clock.advance(299);
    await settle();
    expect(deadline.signal.aborted).toBe(false);
    clock.advance(1);
    await settle();
    expect(deadline.signal.aborted).toBe(true);
  });

  it("dispose stops its timer: the clock passing the instant no longer fires the signal", async () => {
    const clock = new ManualClock();
    const deadline = new Deadline(100, clock);
    deadline.dispose();
    expect(clock.sleepers).toBe(0);
    clock.advance(1_000);
    await settle();
    expect(deadline.signal.aborted).toBe(false);
    expect(deadline.expired).toBe(true);
  });
});
