/** The rejection of a promise, for comparing errors whole; throws when it resolves. */
export async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads until `done` holds of what was read, every `everyMs`; after `timeoutMs` fails with what it last saw. */
export async function eventually<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 60_000, everyMs = 500): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await read();
  while (!done(last)) {
    if (Date.now() > end) throw new Error(`${what} within ${timeoutMs} ms; last seen: ${JSON.stringify(last)?.slice(0, 3000)}`);
    await sleep(everyMs);
    last = await read();
  }
  return last;
}

/** Waits until `check` holds, every `everyMs`; after `timeoutMs` fails naming what did not happen. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000, everyMs = 200): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}
