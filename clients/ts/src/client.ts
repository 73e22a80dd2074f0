// The Weft client: the generated, fully typed openapi-fetch client (`api`) for every route, and a small
// hand-written layer for what takes more than one call: execute-and-wait, job polling, resume of a
// paused run, knowledge ingestion waits, and streaming of the AI gateway.
import createClient, { type Client } from 'openapi-fetch';
import { WeftApiError, WeftRunError } from './errors.js';
import { pollUntil, type PollOptions } from './poll.js';
import { readSse } from './sse.js';
import type { paths } from './schema.js';

type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type BodyOf<T> = T extends { requestBody?: infer R } ? JsonOf<NonNullable<R>> : never;

/** GET /api/jobs/{jobId}. */
export type Job = JsonOf<paths['/api/jobs/{jobId}']['get']['responses'][200]>;
/** The 202 answer of an async execute. */
export type QueuedExecution = JsonOf<paths['/api/workflows/{workflowId}/execute']['post']['responses'][202]>;
/** The execute request body: `inputs` (or top-level fields) and options. */
export type ExecuteRequest = BodyOf<paths['/api/workflows/{workflowId}/execute']['post']>;
export type ChatCompletionRequest = BodyOf<paths['/api/v1/ai/chat/completions']['post']>;
export type ChatCompletion = JsonOf<paths['/api/v1/ai/chat/completions']['post']['responses'][200]>;
export type KnowledgeDocument = JsonOf<paths['/api/v1/knowledge/{id}/documents/{documentId}']['get']['responses'][200]>['data']['document'];

/** One `chat.completion.chunk` of a streamed completion (the OpenAI wire format). */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; tool_calls?: { index: number; id?: string; type?: 'function'; function?: { name?: string; arguments?: string } }[] };
    finish_reason: string | null;
  }[];
  /** Only in the last chunk, and only with `stream_options: {include_usage: true}`. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

/** Where a paused run resumes: the `_resume` links of a pause (also what `pausesOf` returns). */
export interface ResumeLinks {
  workflowId: string;
  executionId: string;
  contextId: string;
  apiUrl?: string;
  uiUrl?: string;
}

/** A run that came to rest: completed (with its output) or paused for a person (with where to resume). */
export interface RunOutcome<T = unknown> {
  executionId: string;
  status: 'completed' | 'paused';
  /** The workflow's output (a Response block's body as sent); while paused, the pause's form. */
  output: T;
  /** The pauses waiting for input; empty unless paused. */
  pauses: ResumeLinks[];
  /** The answer this was read from: the sync body, or the job. */
  raw: unknown;
}

export interface WeftClientOptions {
  /** The server, e.g. `http://localhost:3000` (no trailing `/api`). */
  baseUrl: string;
  /** Sent as X-API-Key. */
  apiKey?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A fetch to use instead of the global one. */
  fetch?: (input: Request) => Promise<Response>;
}

export interface ExecuteOptions {
  /** Caller-chosen execution id (X-Execution-Id). */
  executionId?: string;
  /** Idempotency-Key: a retried request with the same key answers the first run. */
  idempotencyKey?: string;
  /** Only these block outputs in the answer (`<blockName>.<path>`, ...). */
  selectedOutputs?: string[];
  signal?: AbortSignal;
}

export interface ExecuteAndWaitOptions extends ExecuteOptions, PollOptions {
  /** `sync`: one request that answers when the run ends; `async` (default): queue the run, then poll its job. */
  mode?: 'sync' | 'async';
  /** Async runs only: the run's own time limit in seconds (X-Execution-Timeout-Seconds). */
  executionTimeoutSeconds?: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The data of an openapi-fetch answer, or a WeftApiError for a non-2xx one. */
export async function unwrap<D>(call: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  const { data, error, response } = await call;
  if (!response.ok) throw WeftApiError.from(response, error);
  return data as D;
}

/** The resume links of a paused run's output (one pause, or several in parallel branches). */
export function pausesOf(output: unknown): ResumeLinks[] {
  if (!isObj(output)) return [];
  const links = (data: unknown): ResumeLinks[] => (isObj(data) && isObj(data._resume) ? [data._resume as unknown as ResumeLinks] : []);
  if (Array.isArray(output.pausedBlocks)) return output.pausedBlocks.flatMap(links);
  return links(output.data);
}

export class WeftClient {
  /** The typed client of every route: `api.GET('/api/v1/tables', {params: {query: {workspaceId}}})`. */
  readonly api: Client<paths>;

  constructor(options: WeftClientOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}), ...options.headers },
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  /** Runs a deployed workflow synchronously. A run that fails throws WeftRunError; a refused request, WeftApiError. */
  async execute<T = unknown>(workflowId: string, input: Obj = {}, options: ExecuteOptions = {}): Promise<RunOutcome<T>> {
    const { data, error, response } = await this.api.POST('/api/workflows/{workflowId}/execute', {
      params: { path: { workflowId }, header: executeHeaders(options) },
      body: { inputs: input, ...(options.selectedOutputs ? { selectedOutputs: options.selectedOutputs } : {}) },
      signal: options.signal,
    });
    if (!response.ok) throw runFailure(response, error) ?? WeftApiError.from(response, error);
    const executionId = response.headers.get('x-execution-id') ?? '';
    // A Response block answers its own body; otherwise {success, executionId, output, ...}.
    if (!isObj(data) || data.success !== true || typeof data.executionId !== 'string' || !('output' in data)) {
      return { executionId, status: 'completed', output: data as T, pauses: [], raw: data };
    }
    const paused = data.status === 'paused';
    return { executionId: data.executionId, status: paused ? 'paused' : 'completed', output: data.output as T, pauses: paused ? pausesOf(data.output) : [], raw: data };
  }

  /** Queues a run of a deployed workflow (202): its job id and execution id. */
  async executeAsync(workflowId: string, input: Obj = {}, options: ExecuteOptions & { executionTimeoutSeconds?: number } = {}): Promise<QueuedExecution> {
    const { data, error, response } = await this.api.POST('/api/workflows/{workflowId}/execute', {
      params: {
        path: { workflowId },
        header: { ...executeHeaders(options), ...(options.executionTimeoutSeconds ? { 'x-execution-timeout-seconds': String(options.executionTimeoutSeconds) } : {}) },
      },
      body: { inputs: input, async: true },
      signal: options.signal,
    });
    if (!response.ok) throw WeftApiError.from(response, error);
    if (response.status !== 202) throw new WeftApiError({ status: response.status, message: 'Expected 202 for an async execute', body: data });
    return data as QueuedExecution;
  }

  /** Runs a workflow and waits until it completes or pauses: one sync request, or (default) async + job polling. */
  async executeAndWait<T = unknown>(workflowId: string, input: Obj = {}, options: ExecuteAndWaitOptions = {}): Promise<RunOutcome<T>> {
    if (options.mode === 'sync') return this.execute<T>(workflowId, input, options);
    const queued = await this.executeAsync(workflowId, input, options);
    return this.waitForRun<T>(queued.jobId, options);
  }

  /** GET /api/jobs/{jobId}. */
  getJob(jobId: string, options: { signal?: AbortSignal } = {}): Promise<Job> {
    return unwrap(this.api.GET('/api/jobs/{jobId}', { params: { path: { jobId } }, signal: options.signal }));
  }

  /** Polls a job with backoff until it is completed, failed or cancelled, or its run pauses for a person. */
  waitForJob(jobId: string, options: PollOptions = {}): Promise<Job> {
    return pollUntil(() => this.getJob(jobId, options), jobAtRest, options, `job ${jobId}`);
  }

  /** Waits for a job and reads its run's outcome; a failed or cancelled run throws WeftRunError. */
  async waitForRun<T = unknown>(jobId: string, options: PollOptions = {}): Promise<RunOutcome<T>> {
    return jobOutcome<T>(await this.waitForJob(jobId, options));
  }

  /**
   * Resumes a paused run with a person's input (POST /api/resume/...). A sync run's resume answers its
   * outcome; an async run's is queued: `{jobId}` to poll, or use resumeAndWait.
   */
  async resume<T = unknown>(target: ResumeLinks, input: Obj = {}, options: { signal?: AbortSignal } = {}): Promise<RunOutcome<T> | { queued: true; jobId: string; executionId: string }> {
    const { data, error, response } = await this.api.POST('/api/resume/{workflowId}/{executionId}/{contextId}', {
      params: { path: { workflowId: target.workflowId, executionId: target.executionId, contextId: target.contextId } },
      body: { input },
      signal: options.signal,
    });
    if (!response.ok) throw runFailure(response, error) ?? WeftApiError.from(response, error);
    const body = (data ?? {}) as Obj;
    if (response.status === 202 && typeof body.jobId === 'string') {
      return { queued: true, jobId: body.jobId, executionId: String(body.executionId ?? '') };
    }
    const paused = body.status === 'paused';
    return { executionId: String(body.executionId ?? ''), status: paused ? 'paused' : 'completed', output: body.output as T, pauses: paused ? pausesOf(body.output) : [], raw: body };
  }

  /** Resumes a paused run and waits until it completes or pauses again. */
  async resumeAndWait<T = unknown>(target: ResumeLinks, input: Obj = {}, options: PollOptions = {}): Promise<RunOutcome<T>> {
    const answer = await this.resume<T>(target, input, options);
    return 'queued' in answer ? this.waitForRun<T>(answer.jobId, options) : answer;
  }

  /**
   * Waits until a knowledge document's processing is completed or failed; answers the document. Each
   * request asks the server to hold it (`wait`, up to 30 s) until the processing ends, so a document
   * that takes half a minute costs one or two requests of the API allowance, not one per poll.
   */
  async waitForDocument(knowledgeBaseId: string, documentId: string, workspaceId: string, options: PollOptions = {}): Promise<KnowledgeDocument> {
    const wait = Math.max(0, Math.min(30, Math.floor((options.timeoutMs ?? 600_000) / 1000)));
    const get = () => unwrap(this.api.GET('/api/v1/knowledge/{id}/documents/{documentId}', {
      params: { path: { id: knowledgeBaseId, documentId }, query: { workspaceId, wait } },
      signal: options.signal,
    }));
    const answer = await pollUntil(get, (r) => r.data.document.processingStatus === 'completed' || r.data.document.processingStatus === 'failed', options, `document ${documentId}`);
    return answer.data.document;
  }

  /** A chat completion through the AI gateway (not streamed). */
  chatCompletion(request: ChatCompletionRequest, options: { signal?: AbortSignal } = {}): Promise<ChatCompletion> {
    return unwrap(this.api.POST('/api/v1/ai/chat/completions', { body: { ...request, stream: false }, signal: options.signal }));
  }

  /**
   * A streamed chat completion: resolves once the server accepted the request (a refusal rejects with
   * WeftApiError), then iterates `chat.completion.chunk`s until `[DONE]`. An error event in the middle
   * of the stream throws WeftApiError (status 502). Breaking out of the loop closes the connection.
   */
  async streamChatCompletion(request: ChatCompletionRequest, options: { signal?: AbortSignal } = {}): Promise<ChatStream> {
    const { data, error, response } = await this.api.POST('/api/v1/ai/chat/completions', {
      body: { ...request, stream: true },
      parseAs: 'stream',
      signal: options.signal,
    });
    if (!response.ok) throw WeftApiError.from(response, error);
    if (!data) throw new WeftApiError({ status: response.status, message: 'The stream answer had no body' });
    return new ChatStream(data, response);
  }
}

/** The chunks of a streamed chat completion, and the response they come from. */
export class ChatStream implements AsyncIterable<ChatCompletionChunk> {
  readonly requestId: string | undefined;
  private used = false;

  constructor(private readonly body: ReadableStream<Uint8Array>, readonly response: Response) {
    this.requestId = response.headers.get('x-request-id') ?? undefined;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatCompletionChunk, void, undefined> {
    if (this.used) throw new Error('A ChatStream can be iterated once');
    this.used = true;
    for await (const event of readSse(this.body)) {
      if (event.data === '[DONE]') return;
      const value = JSON.parse(event.data) as unknown;
      if (isObj(value) && value.error !== undefined) {
        throw WeftApiError.from({ status: 502, statusText: 'Bad Gateway', headers: this.response.headers }, value);
      }
      yield value as ChatCompletionChunk;
    }
  }

  /** Closes the stream without reading it (the server stops the upstream call and settles the charge). */
  async cancel(): Promise<void> {
    if (this.used) return;
    this.used = true;
    await this.body.cancel();
  }

  /** Every chunk's text, concatenated (choice 0). */
  async text(): Promise<string> {
    let text = '';
    for await (const chunk of this) text += chunk.choices[0]?.delta.content ?? '';
    return text;
  }
}

function executeHeaders(options: ExecuteOptions): Record<string, string> {
  return {
    ...(options.executionId ? { 'x-execution-id': options.executionId } : {}),
    ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
  };
}

const jobAtRest = (job: Job) => job.status === 'completed' || job.status === 'failed' || job.status === 'cancelled' || job.paused === true;

function jobOutcome<T>(job: Job): RunOutcome<T> {
  const executionId = job.metadata.executionId;
  if (job.paused) return { executionId, status: 'paused', output: job.pause as T, pauses: pausesOf(job.pause), raw: job };
  if (job.status === 'completed') {
    // The job's output is {success, workflowId, executionId, output, executedAt}.
    const output = isObj(job.output) && 'output' in job.output ? job.output.output : job.output;
    return { executionId, status: 'completed', output: output as T, pauses: [], raw: job };
  }
  const status = job.status === 'cancelled' ? 'cancelled' : /timed out/i.test(job.error ?? '') ? 'timed_out' : 'failed';
  throw new WeftRunError(job.error ?? `Run ${status}`, executionId, status, job);
}

/** A sync run that ran and failed answers `{success: false, executionId, error}`: a WeftRunError, not a refused request. */
function runFailure(response: Response, body: unknown): WeftRunError | undefined {
  if (!isObj(body) || body.success !== false || typeof body.executionId !== 'string') return undefined;
  const status = response.status === 408 ? 'timed_out' : response.status === 499 ? 'cancelled' : 'failed';
  return new WeftRunError(typeof body.error === 'string' ? body.error : `Run ${status}`, body.executionId, status, body);
}
