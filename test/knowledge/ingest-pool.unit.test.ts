import { afterEach, describe, expect, it } from 'vitest';
import { IngestWorkerPool, ParseTimeLimitError, type ParseJob } from '../../src/knowledge/ingest-pool.js';
import { UNBOUNDED } from '../../src/knowledge/ingest-bounds.js';

// The ingest worker pool with real worker threads: fair turns between workspaces, the per-document parse time
// limit counted from when a worker takes the document, and an aborted parse freeing its slot.

const job = (workspaceId: string, text = 'A short document.'): ParseJob => ({
  workspaceId, kind: 'txt', bytes: new TextEncoder().encode(text), chunking: { maxSize: 256, minSize: 1, overlap: 0 }, bounds: UNBOUNDED,
});

let pool: IngestWorkerPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('IngestWorkerPool', () => {
  it('gives the next turn to a workspace that waits behind another workspace\'s queue', async () => {
    pool = new IngestWorkerPool({ workers: 1, heapMb: 128 });
    const order: string[] = [];
    const signal = new AbortController().signal;
    const run = (workspace: string, name: string) => pool!.run(job(workspace), signal, () => order.push(name));
    // a-1 takes the only worker; the rest queue before it answers.
    const runs = [run('a', 'a-1'), run('a', 'a-2'), run('a', 'a-3'), run('a', 'a-4'), run('b', 'b-1'), run('c', 'c-1'), run('b', 'b-2')];
    await Promise.all(runs);
    // First come, first served would run b-1 fifth; shared, each workspace takes its turn.
    expect(order).toEqual(['a-1', 'b-1', 'c-1', 'a-2', 'b-2', 'a-3', 'a-4']);
  });

  it('stops a parse past the time limit with a clear error, and frees its worker for the next document', async () => {
    // 1 ms, counted from when the worker begins to read (its own start does not count): documents that take
    // tens of milliseconds to read and chunk.
    pool = new IngestWorkerPool({ workers: 1, heapMb: 128, parseTimeoutMs: 1 });
    const signal = new AbortController().signal;
    let started = 0;
    const long = 'ordinary words in a long document. '.repeat(20_000);
    const first = pool.run(job('a', long), signal, () => started++);
    const second = pool.run(job('b', long), signal, () => started++);
    await expect(first).rejects.toThrow(ParseTimeLimitError);
    await expect(first).rejects.toThrow('Reading the document took longer than 1 ms, the limit for one document (WEFT_KNOWLEDGE_PARSE_TIMEOUT_MS); it was stopped');
    await expect(second).rejects.toThrow(ParseTimeLimitError);
    expect(started).toBe(2);
  });

  it('terminates an aborted parse and hands its slot to the next document', async () => {
    pool = new IngestWorkerPool({ workers: 1, heapMb: 256 });
    const abort = new AbortController();
    const big = job('a', 'ordinary words in a long document. '.repeat(400_000));
    // Aborted once the worker is on it (it needs far longer than this to start and read the document).
    const aborted = pool.run(big, abort.signal, () => setTimeout(() => abort.abort(new Error('the document was deleted')), 20));
    const next = pool.run(job('b'), new AbortController().signal);
    await expect(aborted).rejects.toThrow('the document was deleted');
    const parsed = await next;
    expect(parsed.chunks.map((c) => c.content)).toEqual(['A short document.']);
  });
});
