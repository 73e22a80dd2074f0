import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, test } from 'vitest';
import { EmbeddingError } from '../../src/knowledge/embedder.js';
import { LOCAL_EMBEDDING_MODEL, LOCAL_MAX_TEXT_CHARS, LocalEmbedder } from '../../src/knowledge/local-embedder.js';
import { npmStartFlags } from '../support/start-flags.js';

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

async function waitFor(predicate: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('LocalEmbedder (USE lite in a worker thread)', () => {
  const embedder = new LocalEmbedder();
  afterAll(() => embedder.close());

  test('512-dimensional unit vectors, one per text, no billed tokens', async () => {
    expect(embedder.model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(embedder.dimension).toBe(512);
    const { vectors, tokens } = await embedder.embed(['hello world', 'a second text']);
    expect(tokens).toBe(0);
    expect(vectors).toHaveLength(2);
    for (const v of vectors) {
      expect(v).toHaveLength(512);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    expect(embedder.loaded).toBe(true);
  });

  test('a paraphrase is closer than an unrelated sentence', async () => {
    const [q, para, unrelated] = (
      await embedder.embed(['How do I reset my password?', 'I forgot my login credentials', 'The weather in Paris is sunny today'])
    ).vectors;
    expect(cosine(q, para)).toBeGreaterThan(cosine(q, unrelated) + 0.2);
  });

  test('concurrent calls each get their own vectors in input order', async () => {
    const big = Array.from({ length: 70 }, (_, i) => `sentence number ${i} about topic ${i % 7}`); // several batches
    const small = [['the cat sat on the mat'], ['invoices are due in thirty days', 'refunds take a week'], ['hello there']];
    const [bigResult, ...smallResults] = await Promise.all([embedder.embed(big), ...small.map((t) => embedder.embed(t))]);

    const alone = (await embedder.embed([...big, ...small.flat()])).vectors;
    expect(bigResult.vectors).toHaveLength(70);
    bigResult.vectors.forEach((v, i) => expect(cosine(v, alone[i])).toBeGreaterThan(0.9999));
    let k = big.length;
    smallResults.forEach((r, j) => {
      expect(r.vectors).toHaveLength(small[j].length);
      for (const v of r.vectors) expect(cosine(v, alone[k++])).toBeGreaterThan(0.9999);
    });
  });

  test('empty and blank texts still get a vector each (the model alone would drop or throw on them)', async () => {
    const { vectors } = await embedder.embed(['hello', '', '   \n']);
    expect(vectors).toHaveLength(3);
    for (const v of vectors) expect(v).toHaveLength(512);
    expect((await embedder.embed([''])).vectors).toHaveLength(1);
  });

  test('very long texts are cut at a word boundary before the model sees them (5,000 words)', async () => {
    // Uncut, the tokenizer's cost grows much faster than the text; the cut bounds it (speed is measured in bench/).
    const words = 'customers may pay invoices by card or transfer within thirty days of receipt'.split(' ');
    const long = Array.from({ length: 5_000 }, (_, i) => words[i % words.length]).join(' ');
    const kept = long.slice(0, long.lastIndexOf(' ', LOCAL_MAX_TEXT_CHARS));
    const { vectors } = await embedder.embed([long, `${long} and a tail that only the cut removes`, kept]);
    expect(cosine(vectors[0], vectors[1])).toBeGreaterThan(0.9999);
    // The long text's vector is the vector of its first LOCAL_MAX_TEXT_CHARS characters, up to the last whole word.
    expect(cosine(vectors[0], vectors[2])).toBeGreaterThan(0.9999);
    expect(kept.length).toBeLessThanOrEqual(LOCAL_MAX_TEXT_CHARS);
  });

  test('an aborted call rejects with EmbeddingError', async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expect(embedder.embed(['x'], ctl.signal)).rejects.toBeInstanceOf(EmbeddingError);

    const late = new AbortController();
    const pending = embedder.embed(Array.from({ length: 200 }, (_, i) => `text ${i}`), late.signal);
    late.abort();
    await expect(pending).rejects.toThrow(/aborted/);
    expect((await embedder.embed(['still works'])).vectors).toHaveLength(1);
  });

  test('a crashed worker fails pending calls with EmbeddingError and the next call starts a new one', async () => {
    const first = expect(embedder.embed(Array.from({ length: 200 }, (_, i) => `text ${i}`))).rejects.toBeInstanceOf(EmbeddingError);
    const queued = expect(embedder.embed(['queued behind it'])).rejects.toThrow(/worker exited/);
    await new Promise((r) => setTimeout(r, 20));
    // Simulate a crash: the worker goes away without the embedder asking for it.
    await (embedder as any).worker.terminate();
    await first;
    await queued;
    expect(embedder.loaded).toBe(false);
    expect((await embedder.embed(['after the crash'])).vectors[0]).toHaveLength(512);
  });

  test('unloads after idleMs without use and loads again on demand', async () => {
    const idle = new LocalEmbedder({ idleMs: 50 });
    try {
      const before = (await idle.embed(['reload me'])).vectors[0];
      expect(idle.loaded).toBe(true);
      await waitFor(() => !idle.loaded, 5_000);
      const after = (await idle.embed(['reload me'])).vectors[0];
      expect(idle.loaded).toBe(true);
      expect(cosine(before, after)).toBeGreaterThan(0.9999);
    } finally {
      await idle.close();
    }
  });

  test('close() terminates the worker, fails waiting calls and refuses new ones', async () => {
    const closing = new LocalEmbedder();
    await closing.embed(['load it']);
    const pending = expect(closing.embed(Array.from({ length: 100 }, (_, i) => `text ${i}`))).rejects.toThrow(/closed/);
    await closing.close();
    await pending;
    expect(closing.loaded).toBe(false);
    await expect(closing.embed(['x'])).rejects.toBeInstanceOf(EmbeddingError);
    await closing.close(); // idempotent
  });
});

describe('LocalEmbedder under npm start\'s Node flags', () => {
  // `npm start` gives V8 one background thread (--v8-pool-size=1). The model's first load used to race the
  // WASM backend's start against reading the model's files; with that thread busy (a sandboxed run had just
  // used it, here a WebAssembly compile), the files won and the ingest failed with "Backend 'wasm' has not
  // yet been initialized".
  test('the model loads while V8\'s background thread is busy', async () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const flags = npmStartFlags();
    expect(flags).toContain('--v8-pool-size=1');
    const { stdout } = await promisify(execFile)(process.execPath, [...flags, '--import', 'tsx', path.join(import.meta.dirname, 'busy-platform-load.ts')], { cwd: root });
    const outcome = JSON.parse(stdout.trim().split('\n').at(-1)!) as { ok: boolean; dimension?: number; error?: string; compiles: number };
    expect(outcome.compiles, 'the compiles kept the background thread busy while the model loaded').toBeGreaterThan(0);
    expect(outcome).toMatchObject({ ok: true, dimension: 512 });
  });
});
