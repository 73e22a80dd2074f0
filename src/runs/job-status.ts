// The answer of `GET /api/jobs/{jobId}` (Sim's SDKs poll it; as in the reference service no rate limit covers
// it). A run's output can be megabytes: reading the whole row and serializing its output again on every poll cost
// about 160 ms of the event loop for a 3.4 MB output, so ten clients polling held every other request up to
// 0.8 s. A poll reads the row without its large columns; a completed run's output is taken as the database's JSON
// text, kept as bytes for finished runs (they never change) within bounds, and placed into the answer as it is.
import type { FastifyReply } from 'fastify';
import type { Database } from '../db/database.js';
import { BoundedCache } from '../workflows/bounded-cache.js';
import { publicExecutionId } from './execution-ids.js';
import * as store from './store.js';
import type { ExecutionHead } from './store.js';

/** Finished runs' outputs (JSON bytes) kept for polls (an output is at most WEFT_MAX_RUN_RESULT_BYTES). */
const OUTPUT_CACHE = { maxEntries: 1000, maxBytes: 32 * 1024 * 1024 } as const;

export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled';

/**
 * A job is done with once its run pauses for a person, as in the reference service: clients poll until
 * `completed` or `failed`, and a resume starts a run of its own (with its own job). `paused: true` and `pause`
 * tell Weft's clients that the output is a pause.
 */
export const jobStatus = (s: ExecutionHead['status']): JobStatus => (s === 'paused' ? 'completed' : s);

export class JobAnswers {
  private readonly outputs = new BoundedCache<Buffer>(OUTPUT_CACHE);

  constructor(private readonly db: Database) {}

  /** The async run among `ids` (the job's stored ids in the caller's workspaces), without its large columns. */
  find(ids: string[]): Promise<ExecutionHead | undefined> {
    return store.findExecutionAmong(this.db, ids, { input: false, output: false, trace: false });
  }

  /** The answer's JSON bytes for `row` (found by `find`, the caller authorized for its workspace). */
  async answer(jobId: string, row: ExecutionHead): Promise<Buffer> {
    const status = jobStatus(row.status);
    const terminal = status === 'completed' || status === 'failed' || status === 'cancelled';
    const head = JSON.stringify({
      success: true,
      taskId: jobId,
      status,
      metadata: {
        workflowId: row.workflow_id,
        executionId: publicExecutionId(row.id),
        createdAt: row.created_at.toISOString(),
        startedAt: row.started_at ? row.started_at.toISOString() : null,
        completedAt: terminal && row.ended_at ? row.ended_at.toISOString() : null,
        duration: terminal ? row.duration_ms : null,
      },
      ...(status === 'failed' ? { error: row.error ?? 'Execution failed' } : {}),
      ...(row.status === 'paused' ? { paused: true } : {}),
    });
    // Bytes, not a string: a string of megabytes is measured for its length and encoded again on every send.
    if (status === 'completed') {
      const wrapper = JSON.stringify({ success: true, workflowId: row.workflow_id, executionId: publicExecutionId(row.id) });
      const executedAt = JSON.stringify(row.ended_at?.toISOString() ?? null);
      // A paused run's output is its pause (form and resume links), bounded like any result; it changes on
      // resume, so it is not kept with the finished runs' outputs.
      const paused = row.status === 'paused';
      const output = paused ? Buffer.from((await store.executionOutputText(this.db, row.id)) ?? 'null') : await this.completedOutput(row.id);
      return Buffer.concat([
        Buffer.from(`${head.slice(0, -1)},"output":${wrapper.slice(0, -1)},"output":`),
        output,
        Buffer.from(`,"executedAt":${executedAt}}`),
        ...(paused ? [Buffer.from(',"pause":'), output] : []),
        Buffer.from('}'),
      ]);
    }
    return Buffer.from(head);
  }

  private async completedOutput(id: string): Promise<Buffer> {
    const hit = this.outputs.get(id);
    if (hit !== undefined) return hit;
    const bytes = Buffer.from((await store.executionOutputText(this.db, id)) ?? 'null');
    this.outputs.set(id, bytes, bytes.length);
    return bytes;
  }
}

/** Sends JSON bytes as they are: Fastify passes a Buffer by its serializer. */
export function sendJsonBytes(reply: FastifyReply, json: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json);
}
