// The gateway's counting thread (src/ai/token-counter.ts): its counts are the tokenizer's, and where it cannot
// answer within its bounds it says so at once instead of making the caller wait.
import { afterEach, describe, expect, it } from 'vitest';
import { OffThreadTokenCounter } from '../../src/ai/token-counter.js';
import { countTokens } from '../../src/tokenizer.js';

const counters: OffThreadTokenCounter[] = [];
const counter = (opts: ConstructorParameters<typeof OffThreadTokenCounter>[0] = {}) => {
  // A generous timeout unless a test sets one: starting the thread and loading the ranks can take seconds on a busy host.
  const c = new OffThreadTokenCounter({ timeoutMs: 60_000, ...opts });
  counters.push(c);
  return c;
};
afterEach(async () => {
  await Promise.all(counters.splice(0).map((c) => c.close()));
});

/** Random printable characters: the tokenizer's slow case (few merges, many pieces). */
function randomText(chars: number): string {
  let s = '';
  for (let i = 0; i < chars; i++) s += String.fromCharCode(33 + Math.floor(Math.random() * 90));
  return s;
}

async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never: ${what}`);
}

describe('OffThreadTokenCounter', () => {
  it("counts as the tokenizer does, each text in order", async () => {
    const texts = ['hello world', 'Grüße aus Köln — 東京 🚀', '<|endoftext|> is ordinary text here', 'x'.repeat(5000)];
    expect(await counter().count(texts)).toEqual(texts.map((t) => countTokens(t)));
  });

  it('refuses at once a count past its backlog, without starting its thread', async () => {
    const c = counter({ maxBacklogChars: 100 });
    expect(await c.count(['a'.repeat(101)])).toBeUndefined();
    expect(c.running).toBe(false);
    expect(await c.count(['a'.repeat(100)])).toEqual([countTokens('a'.repeat(100))]);
  });

  it('gives up on a count that takes longer than its timeout; the late answer is dropped', async () => {
    const c = counter({ timeoutMs: 1, idleMs: 20 });
    // Starting the thread and loading the ranks alone takes longer than 1 ms.
    expect(await c.count([randomText(50_000)])).toBeUndefined();
    // The thread finishes the count, its answer finds no caller, and it goes idle like any other.
    await eventually(() => !c.running, 'the thread went idle after its late answer');
  });

  it('stops its thread when idle and starts it again for the next count', async () => {
    const c = counter({ idleMs: 20 });
    await c.count(['one']);
    await eventually(() => !c.running, 'the idle thread stopped');
    expect(await c.count(['two words'])).toEqual([countTokens('two words')]);
  });

  it('answers nothing once closed', async () => {
    const c = counter();
    await c.close();
    expect(await c.count(['late'])).toBeUndefined();
  });
});
