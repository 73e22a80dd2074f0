/**
 * Embedder for any OpenAI-compatible `POST {baseUrl}/embeddings` endpoint (OpenAI, Azure-style proxies,
 * Ollama, vLLM, LiteLLM, ...): `{ model, input: string[] }` in, `{ data: [{ index, embedding }], usage }` out.
 *
 * The endpoint is configured by the operator (environment), not by a workspace, so it is deliberately NOT sent
 * through the private-network guard: a model server on localhost or the LAN is a normal set-up.
 *
 * `dimension` is a check, not a request: the `dimensions` parameter some models accept is not sent (other
 * servers reject unknown fields). When no dimension is configured it is learned from the first answer.
 */
import { deadline } from '../net/deadline.js';
import { EmbeddingError, normalize, type Embedder, type EmbeddingResult } from './embedder.js';

export interface HttpEmbedderOptions {
  /** e.g. https://api.openai.com/v1 (the `/embeddings` path is appended) */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Expected vector length; answers of another length fail. Learned from the first answer when absent. */
  dimension?: number;
  /** Per request (one batch). Default 30 s. */
  timeoutMs?: number;
  /** Texts per request. Default 96. */
  batchSize?: number;
  fetch?: typeof fetch;
}

const MAX_ERROR_BODY_CHARS = 2_000;
const MAX_MESSAGE_CHARS = 300;

export class HttpEmbedder implements Embedder {
  readonly model: string;
  private readonly url: string;
  /** The endpoint without credentials or query, for error messages. */
  private readonly where: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly batchSize: number;
  private readonly fetchFn: typeof fetch;
  private dim: number;
  private probe: Promise<number> | null = null;

  constructor(opts: HttpEmbedderOptions) {
    let base: URL;
    try {
      base = new URL(opts.baseUrl);
    } catch {
      throw new Error(`embeddings base URL is not a valid URL: ${opts.baseUrl}`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('embeddings base URL must be http(s)');
    if (!opts.model) throw new Error('embeddings model is required');
    const batchSize = opts.batchSize ?? 96;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error('embeddings batch size must be a positive integer');
    if (opts.dimension !== undefined && (!Number.isInteger(opts.dimension) || opts.dimension < 1)) {
      throw new Error('embeddings dimension must be a positive integer');
    }

    this.url = `${opts.baseUrl.replace(/\/+$/, '')}/embeddings`;
    const shown = new URL(this.url);
    shown.username = '';
    shown.password = '';
    shown.search = '';
    this.where = shown.href;
    this.model = opts.model;
    this.apiKey = opts.apiKey || undefined;
    this.dim = opts.dimension ?? 0;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.batchSize = batchSize;
    this.fetchFn = opts.fetch ?? fetch;
  }

  /** 0 until learned when not configured; see `ensureDimension`. */
  get dimension(): number {
    return this.dim;
  }

  /** The vector length, embedding a probe text once if it is neither configured nor learned yet. */
  ensureDimension(signal?: AbortSignal): Promise<number> {
    if (this.dim > 0) return Promise.resolve(this.dim);
    this.probe ??= this.embed(['dimension probe'], signal).then(
      () => this.dim,
      (err: unknown) => {
        this.probe = null; // let a later call try again
        throw err;
      },
    );
    return this.probe;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<EmbeddingResult> {
    const vectors: number[][] = [];
    let tokens = 0;
    // Batches go one after another: simpler on providers' rate limits, and the caller is usually ingestion.
    for (let start = 0; start < texts.length; start += this.batchSize) {
      const batch = texts.slice(start, start + this.batchSize);
      const answer = await this.request(batch, signal);
      vectors.push(...answer.vectors);
      tokens += answer.tokens;
    }
    return { vectors, tokens };
  }

  async close(): Promise<void> {
    // Nothing held: each request is independent.
  }

  private async request(input: string[], signal: AbortSignal | undefined): Promise<EmbeddingResult> {
    if (signal?.aborted) throw new EmbeddingError('embedding was aborted', { cause: signal.reason });
    const call = deadline(this.timeoutMs, signal);
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;

    let body: string;
    try {
      const res = await this.fetchFn(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.model, input }),
        signal: call.signal,
      });
      body = await res.text();
      if (!res.ok) {
        throw new EmbeddingError(this.redact(`embeddings endpoint ${this.where} answered ${res.status}: ${providerMessage(body)}`));
      }
    } catch (err) {
      if (err instanceof EmbeddingError) throw err;
      if (signal?.aborted) throw new EmbeddingError('embedding was aborted', { cause: signal.reason });
      // Not the caller's abort (checked above): the timeout's.
      if (call.signal.aborted) throw new EmbeddingError(`embeddings endpoint ${this.where} did not answer within ${this.timeoutMs} ms`);
      throw new EmbeddingError(this.redact(`embeddings request to ${this.where} failed: ${networkMessage(err)}`));
    } finally {
      call.end();
    }
    return this.parse(body, input.length);
  }

  private parse(body: string, expected: number): EmbeddingResult {
    const malformed = (why: string): EmbeddingError =>
      new EmbeddingError(`embeddings endpoint ${this.where} sent a malformed answer: ${why}`);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      throw malformed('not JSON');
    }
    const data = field(json, 'data');
    if (!Array.isArray(data)) throw malformed('no data array');
    if (data.length !== expected) throw malformed(`${data.length} embeddings for ${expected} inputs`);

    // Placed by index: servers need not answer in input order.
    const vectors = new Array<number[]>(expected);
    data.forEach((item: unknown, position) => {
      const rawIndex = field(item, 'index');
      // Some servers omit index; their data is then in input order.
      const index = rawIndex === undefined ? position : rawIndex;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= expected || vectors[index]) {
        throw malformed(`bad or repeated index ${JSON.stringify(index)}`);
      }
      const embedding = field(item, 'embedding');
      if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw malformed(`embedding ${index} is not an array of numbers`);
      }
      vectors[index] = embedding as number[];
    });

    const length = vectors[0].length;
    if (vectors.some((v) => v.length !== length)) throw malformed('embeddings of different lengths');
    if (this.dim === 0) this.dim = length;
    else if (length !== this.dim) {
      throw new EmbeddingError(`embeddings endpoint ${this.where} returned ${length}-dimensional vectors for model ${this.model}; expected ${this.dim}`);
    }

    const usage = field(json, 'usage');
    const total = field(usage, 'total_tokens');
    const prompt = field(usage, 'prompt_tokens');
    const tokens = typeof total === 'number' ? total : typeof prompt === 'number' ? prompt : 0;
    return { vectors: vectors.map(normalize), tokens };
  }

  /** Providers sometimes echo the key they were sent; it must never reach logs or API answers. */
  private redact(message: string): string {
    return this.apiKey ? message.split(this.apiKey).join('[redacted]') : message;
  }
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/** The provider's own words: `{error:{message}}` (OpenAI), `{error:"..."}`, `{message}`, `{detail}`, or the text. */
function providerMessage(body: string): string {
  let text = body.slice(0, MAX_ERROR_BODY_CHARS);
  try {
    const json: unknown = JSON.parse(body);
    const error = field(json, 'error');
    const candidates = [field(error, 'message'), error, field(json, 'message'), field(json, 'detail')];
    const found = candidates.find((c): c is string => typeof c === 'string' && c.length > 0);
    if (found) text = found;
  } catch {
    // not JSON: use the text as is
  }
  text = text.replace(/\s+/g, ' ').trim();
  if (!text) return '(no error message)';
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}...` : text;
}

/** fetch's own message is a bare "fetch failed"; the cause says what happened (ECONNREFUSED, DNS, TLS). */
function networkMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error) {
    const code = field(cause, 'code');
    return typeof code === 'string' && !cause.message.includes(code) ? `${cause.message} (${code})` : cause.message;
  }
  return err.message;
}
