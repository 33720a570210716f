/**
 * A promise to hold a scripted model reply with (the local model server's `heldUntil`), and the function
 * that lets it go: the run's model call stays in flight, the run `running`, until the test releases it.
 */
export function heldReply(): { heldUntil: Promise<void>; release: () => void } {
  let release: () => void = () => {};
  const heldUntil = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { heldUntil, release };
}
