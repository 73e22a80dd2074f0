// Webhook deliveries: lookup of the deployed trigger, authentication and signatures, verification
// challenges, the delivery claim (exactly one run per delivery key), admission and the answer.
import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/service.js';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import type { WebhookConfig } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { jsonDepth, MAX_JSON_DEPTH } from '../http/json-body.js';
import type { LimitsService } from '../limits/service.js';
import type { StorageGuard } from '../limits/storage.js';
import { newId } from '../ids.js';
import { executeAnswer } from '../runs/execute-response.js';
import type { ExecutionService, RunContext } from '../runs/service.js';
import type { WorkflowRow, WorkflowService } from '../workflows/service.js';
import { parseMultipart, type FilePart } from './multipart.js';
import { webhookBlockOf, type WebhookRegistry } from './registry.js';
import * as store from './store.js';
import type { StoredAnswer, WebhookRow } from './store.js';
import { challenge, clientStateProblem, deliveryKey, signatureProblem, tokenAccepted, visibleHeaders, type ChallengeAnswer, type Headers } from './verification.js';

export type WebhookAnswer = StoredAnswer;

/** One request to a trigger URL, as the route read it. */
export interface Delivery {
  method: string;
  path: string;
  rawQuery: string;
  query: Record<string, string>;
  headers: Headers;
  /** The body's bytes as received (signatures are over these). */
  raw: Buffer;
  contentType: string | undefined;
  baseUrl: string;
  /** Aborted when the caller went away (a waiting duplicate stops waiting). */
  signal: AbortSignal;
}

export interface WebhookDeps {
  db: Database;
  config: Pick<Config, 'webhookLeaseMs' | 'webhookRetentionDays'>;
  log: Logger;
  registry: WebhookRegistry;
  workflows: Pick<WorkflowService, 'findWorkflowForRun' | 'activeVersion'>;
  runs: Pick<ExecutionService, 'admit' | 'enqueue' | 'runSync'>;
  accounts: Pick<AccountsService, 'workspacePlan'>;
  limits: Pick<LimitsService, 'admitKeyed' | 'snapshot'>;
  /** Uploaded files count toward the workspace's storage. */
  storage: StorageGuard;
}

/** Bytes of uploaded webhook files per workspace: this area's storage source (handed to limits by the composition root). */
export const webhookFileBytes = (q: Queryable, workspaceId: string): Promise<number> => store.fileBytes(q, workspaceId);

const text = (status: number, body: string, headers: Record<string, string> = {}): WebhookAnswer => ({ status, headers, body, text: true });
const NOT_FOUND = () => text(404, 'Not Found');
const NOT_ALLOWED = () => text(405, 'Method not allowed', { Allow: 'POST' });
const json = (status: number, body: unknown, headers: Record<string, string> = {}): WebhookAnswer => ({ status, headers, body: JSON.stringify(body ?? null) });
const ACK: WebhookAnswer = json(200, { message: 'Webhook processed' });
/** How long a duplicate waits for the first delivery's answer before giving up (the first one's run may be long). */
const MAX_WAIT_MS = 60 * 60 * 1000;

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * JSON, form-encoded (a `payload` field holding JSON is parsed, as Slack and GitHub send it) or multipart
 * (fields, and files kept aside to be stored); empty is `{}`.
 */
export async function parseBody(raw: Buffer, contentType: string | undefined): Promise<{ body: unknown; files: FilePart[] }> {
  if (raw.length === 0) return { body: {}, files: [] };
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'multipart/form-data') {
    const { fields, files } = await parseMultipart(raw, contentType ?? '');
    return { body: fields, files };
  }
  return { body: parseData(raw, type), files: [] };
}

/** A body nested deeper than the API allows: refused before parsing (deep structures overflow the stack later). */
export class BodyTooDeep extends Error {
  constructor() {
    super(`Request body is nested more than ${MAX_JSON_DEPTH} levels deep`);
  }
}

/** JSON text under the API's nesting limit. Form and multipart fields are flat strings and never nest. */
function parseJson(text: string): unknown {
  if (jsonDepth(text) > MAX_JSON_DEPTH) throw new BodyTooDeep();
  return JSON.parse(text);
}

function parseData(raw: Buffer, type: string): unknown {
  if (type === 'application/x-www-form-urlencoded') {
    const params = new URLSearchParams(raw.toString('utf8'));
    const out: Record<string, unknown> = {};
    for (const [k, v] of params) {
      const prev = out[k];
      out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    if (typeof out.payload === 'string') return parseJson(out.payload);
    return out;
  }
  return parseJson(raw.toString('utf8'));
}

function fromChallenge(c: ChallengeAnswer): WebhookAnswer {
  return c.text !== undefined ? text(c.status, c.text) : json(c.status, c.json);
}

/** The custom answer: the configured status (default 200) and body (JSON, else text; empty: none). */
function customAnswer(cfg: WebhookConfig): WebhookAnswer {
  const status = cfg.responseStatus ?? 200;
  const body = cfg.responseBody;
  if (body === undefined || body === null) return text(status, '');
  if (typeof body !== 'string') return json(status, body);
  const trimmed = body.trim();
  if (trimmed === '') return text(status, '');
  try {
    return json(status, JSON.parse(trimmed));
  } catch {
    return text(status, trimmed);
  }
}

interface Target {
  hook: WebhookRow;
  workflow: WorkflowRow;
  versionId: string;
  config: WebhookConfig;
}

export class WebhookService {
  private lastPurge = 0;

  constructor(private readonly deps: WebhookDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  /** The deployed trigger at a path with the config of its active version's webhook block. */
  private async lookup(path: string): Promise<Target | undefined> {
    const hook = await this.deps.registry.byPath(path);
    if (!hook) return undefined;
    const workflow = await this.deps.workflows.findWorkflowForRun(hook.workflow_id);
    const version = workflow ? await this.deps.workflows.activeVersion(workflow) : undefined;
    if (!workflow || !version) return undefined;
    const block = webhookBlockOf(version.definition);
    if (!block) return undefined;
    return { hook, workflow, versionId: version.id, config: block.config };
  }

  /** Answers one request to `/api/webhooks/trigger/{path}`. Refusals by limits are thrown as HttpError. */
  async handle(d: Delivery): Promise<WebhookAnswer> {
    this.purgeNowAndThen();
    if (d.method !== 'POST' && d.method !== 'GET') return NOT_ALLOWED();
    const target = await this.lookup(d.path);
    // Unknown and undeployed paths answer alike, so probes cannot tell them apart.
    if (!target) return d.method === 'POST' ? NOT_FOUND() : NOT_ALLOWED();
    const cfg = target.config;
    if (d.method === 'GET') {
      const c = challenge(cfg, 'GET', d.query, undefined);
      return c ? fromChallenge(c) : NOT_ALLOWED();
    }
    // Microsoft Graph's subscription validation carries neither the token nor a clientState.
    if (cfg.provider === 'microsoft') {
      const c = challenge(cfg, 'POST', d.query, undefined);
      if (c) return fromChallenge(c);
    }
    if (!tokenAccepted(cfg, d.headers)) return text(401, 'Unauthorized - Invalid authentication token');
    const bad = signatureProblem(cfg, d.headers, d.raw, Date.now());
    if (bad) return text(401, `Unauthorized - ${bad}`);
    let body: unknown;
    let files: FilePart[];
    try {
      ({ body, files } = await parseBody(d.raw, d.contentType));
    } catch (err) {
      return text(400, err instanceof BodyTooDeep ? err.message : 'Invalid payload format');
    }
    const badState = clientStateProblem(cfg, body);
    if (badState) return text(401, `Unauthorized - ${badState}`);
    const c = challenge(cfg, 'POST', d.query, body);
    if (c) return fromChallenge(c);

    const input: Record<string, unknown> = isPlainObject(body) ? { ...body } : { body };
    if (!Object.prototype.hasOwnProperty.call(input, 'headers')) input.headers = visibleHeaders(cfg, d.headers);
    if (!Object.prototype.hasOwnProperty.call(input, 'query')) input.query = d.query;
    const key = `${target.workflow.id}:${deliveryKey(cfg, { method: d.method, path: d.path, rawQuery: d.rawQuery, headers: d.headers, raw: d.raw, body })}`;
    return this.deliver(target, key, input, files, d);
  }

  /** Exactly one run per delivery key: the claimant runs it, every duplicate gets the claimant's answer. */
  private async deliver(target: Target, key: string, input: Record<string, unknown>, files: FilePart[], d: Delivery): Promise<WebhookAnswer> {
    const ws = target.hook.workspace_id;
    const { webhookLeaseMs: leaseMs } = this.deps.config;
    const retentionMs = this.deps.config.webhookRetentionDays * 86_400_000;
    const until = Date.now() + MAX_WAIT_MS;
    let delay = 10;
    for (;;) {
      const token = randomUUID();
      const claim = await store.claimDelivery(this.db, { workspaceId: ws, key, workflowId: target.workflow.id, token, leaseMs, retentionMs });
      if (claim) return this.first(target, key, token, claim.createdAt, input, files, d);
      const row = await store.findDelivery(this.db, ws, key);
      if (row?.answer) return row.answer;
      if (!row) continue; // released by a refused first attempt: claim it now
      if (d.signal.aborted || Date.now() > until) {
        return json(409, { error: 'This delivery is still being processed' }, { 'Retry-After': '5' });
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 200);
    }
  }

  private async first(
    target: Target, key: string, token: string, createdAt: Date, input: Record<string, unknown>, files: FilePart[], d: Delivery,
  ): Promise<WebhookAnswer> {
    const ws = target.hook.workspace_id;
    const { webhookLeaseMs: leaseMs } = this.deps.config;
    const timer = setInterval(() => {
      store.renewDelivery(this.db, ws, key, token, leaseMs).catch((err: unknown) => this.deps.log.warn({ err }, 'webhook claim renewal failed'));
    }, Math.max(50, leaseMs / 3));
    let answered = false;
    let started = false;
    let runId: string | null = null;
    try {
      const plan = await this.deps.accounts.workspacePlan(ws);
      const run: RunContext = { workspaceId: ws, billedAccount: `workspace:${ws}`, plan };
      const cfg = target.config;
      const mode = cfg.responseMode === 'result' ? 'sync' : 'async';
      // Per trigger (its workflow), then per billed account with the usage cap and concurrency (runs.admit).
      await this.deps.limits.admitKeyed(`webhook:${target.workflow.id}`, plan, mode);
      if (files.length > 0) await this.storeFiles(target, files, input, d.baseUrl);
      const admitted = await this.deps.runs.admit(target.workflow, run, mode);
      let answer: WebhookAnswer;
      if (mode === 'async') {
        // The run's id derives from the delivery: a claim taken over after its process died finds the
        // run that process queued (a 409) instead of queueing a second one.
        const executionId = `webhook-${createHash('sha256').update(`${key}\0${createdAt.getTime()}`).digest('hex').slice(0, 40)}`;
        try {
          await this.deps.runs.enqueue(admitted, run, input, { executionId, apiKeyId: null, trigger: 'webhook', baseUrl: d.baseUrl });
        } catch (err) {
          if (!(err instanceof HttpError && err.status === 409)) throw err;
        }
        started = true;
        runId = executionId;
        answer = cfg.responseMode === 'custom' ? customAnswer(cfg) : ACK;
      } else {
        const { executionId, result, output } = await this.deps.runs.runSync(admitted, run, input, {
          apiKeyId: null, trigger: 'webhook', baseUrl: d.baseUrl,
          // The run belongs to the delivery, not to this connection: duplicates wait for its output.
          signal: new AbortController().signal,
        });
        runId = executionId;
        const a = await executeAnswer(executionId, result, output, () => this.deps.limits.snapshot(run.billedAccount, run.plan));
        answer = a.kind === 'response' ? json(a.status, a.data, a.headers) : json(a.status, a.body, { 'X-Execution-Id': executionId });
      }
      await store.answerDelivery(this.db, ws, key, token, answer, runId);
      answered = true;
      return answer;
    } finally {
      clearInterval(timer);
      // Refused (limits, not deployed) or failed before its run was queued: nothing ran, so a retry may.
      // A queued run keeps its claim; once the lease lapses a retry takes it over and finds that run.
      if (!answered && !started) await store.releaseDelivery(this.db, ws, key, token).catch(() => undefined);
    }
  }

  /**
   * Stores a delivery's files (once, by the claimant) within the workspace's storage (403 when over it)
   * and puts file objects `{id, name, size, type, url}` in the input under their field names.
   */
  private async storeFiles(target: Target, files: FilePart[], input: Record<string, unknown>, baseUrl: string): Promise<void> {
    const ws = target.hook.workspace_id;
    const objects = files.map((f) => ({ part: f, id: newId() }));
    await this.db.tx(async (q) => {
      for (const { part, id } of objects) {
        await store.insertFile(q, { id, workspaceId: ws, workflowId: target.workflow.id, name: part.name, contentType: part.contentType, data: part.data });
      }
      await this.deps.storage.checkAfterWrite(q, ws, files.reduce((n, f) => n + f.data.length, 0));
    });
    for (const { part, id } of objects) {
      const list = Array.isArray(input[part.field]) ? (input[part.field] as unknown[]) : [];
      list.push({ id, name: part.name, size: part.data.length, type: part.contentType, url: `${baseUrl}/api/v1/webhooks/files/${id}` });
      input[part.field] = list;
    }
  }

  /** An uploaded file, for its download route (the caller authorizes its workspace). */
  file(id: string) {
    return store.findFile(this.db, id);
  }

  /** Forgets delivery keys past the retention, at most once an hour per process. */
  private purgeNowAndThen(): void {
    const now = Date.now();
    if (now - this.lastPurge < 3_600_000) return;
    this.lastPurge = now;
    store.purgeDeliveries(this.db, this.deps.config.webhookRetentionDays * 86_400_000)
      .catch((err: unknown) => this.deps.log.warn({ err }, 'purging webhook deliveries failed'));
  }
}
