// Webhook deliveries: lookup of the deployed trigger, authentication and signatures, verification
// challenges, the delivery claim (exactly one run per delivery key), admission and the answer.
import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/service.js';
import type { Config } from '../config.js';
import { isDatabaseUnavailable, type Database } from '../db/database.js';
import type { RunResult, WebhookConfig } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { holdsUnstorableString } from '../db/storable-text.js';
import { jsonShapeProblem } from '../http/json-body.js';
import type { LimitsService } from '../limits/service.js';
import type { StorageGuard, StorageSource } from '../limits/storage.js';
import { newId } from '../ids.js';
import { executeAnswer, storedRunResult } from '../runs/execute-response.js';
import type { RunContext } from '../runs/run-context.js';
import type { Admitted, ExecutionService } from '../runs/service.js';
import type { SecretsService } from '../secrets/service.js';
import type { WorkflowRow, WorkflowService } from '../workflows/service.js';
import { ipAllowed } from './allowed-ips.js';
import { FormFields, TooManyFields } from './form-fields.js';
import { parseMultipart, type FilePart } from './multipart.js';
import { holdDeliveryClaim } from './claim-lease.js';
import { webhookBlockOf, type WebhookRegistry } from './registry.js';
import * as store from './store.js';
import type { StoredAnswer, WebhookRow } from './store.js';
import {
  challenge, clientStateProblem, CREDENTIAL_FIELDS, credentialSecrets, deliveryKey, signatureProblem, tokenAccepted, visibleHeaders, withSecrets,
  type ChallengeAnswer, type CredentialField, type Headers,
} from './verification.js';

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
  /** The client's address: the socket's, or the proxy's X-Forwarded-For only when the server trusts a proxy. */
  ip: string | undefined;
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
  runs: Pick<ExecutionService, 'admit' | 'enqueue' | 'runSync' | 'findRun'>;
  accounts: Pick<AccountsService, 'workspacePlan'>;
  limits: Pick<LimitsService, 'admitKeyed' | 'snapshot'>;
  /** Uploaded files count toward the workspace's storage. */
  storage: StorageGuard;
  /** Reads the workspace secrets a trigger's `token` and `secret` reference (`{{NAME}}`). */
  secrets: WebhookSecrets;
}

/** Reads the workspace secrets a trigger's `token` and `secret` reference; an Error when one is not set. */
export type WebhookSecrets = Pick<SecretsService, 'resolve'>;

/** Bytes of uploaded webhook files per workspace: this area's storage source (handed to limits by the composition root). */
export const webhookFileBytes: StorageSource = { sql: store.FILE_BYTES_SQL };

const text = (status: number, body: string, headers: Record<string, string> = {}): WebhookAnswer => ({ status, headers, body, text: true });
const NOT_FOUND = () => text(404, 'Not Found');
const NOT_ALLOWED = () => text(405, 'Method not allowed', { Allow: 'POST' });
const json = (status: number, body: unknown, headers: Record<string, string> = {}): WebhookAnswer => ({ status, headers, body: JSON.stringify(body ?? null) });
const ACK: WebhookAnswer = json(200, { message: 'Webhook processed' });
/** A delivery whose run has not finished (or whose answer is not stored yet): the sender retries later. */
const IN_PROGRESS = () => json(409, { error: 'This delivery is still being processed' }, { 'Retry-After': '5' });
const IP_REFUSED = () => text(403, 'Forbidden - IP not allowed');
/** What the sender is told when a credential's secret reference cannot be read (the log says which and why). */
const UNREADABLE_CREDENTIAL: Record<CredentialField, () => WebhookAnswer> = {
  token: () => text(401, 'Unauthorized - Authentication required but no token configured'),
  secret: () => text(401, 'Unauthorized - Authentication required but no signing secret configured'),
};
const isExecutionIdConflict = (err: unknown) => err instanceof HttpError && err.status === 409 && err.extra.code === 'EXECUTION_ID_CONFLICT';
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

/**
 * A JSON body refused before parsing, as the API refuses one: nested too deep (deep structures overflow the
 * stack later), too many members (parsing is one synchronous call), or a string that cannot be stored.
 */
export class BodyRefused extends Error {
  constructor(readonly status: 400 | 413, message: string) {
    super(message);
  }
}

/** JSON text within the API's limits. Form and multipart fields are flat strings and never nest. */
function parseJson(text: string): unknown {
  const problem = jsonShapeProblem(text);
  if (problem) throw new BodyRefused(problem.status, problem.message);
  return JSON.parse(text);
}

function parseData(raw: Buffer, type: string): unknown {
  if (type === 'application/x-www-form-urlencoded') {
    const form = new FormFields();
    for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) form.add(k, v);
    const out = form.fields;
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

/** Code of a retryable refusal that carries none, by status. */
const RETRYABLE_CODES: Record<number, string> = { 429: 'RATE_LIMIT_EXCEEDED', 503: 'SERVICE_UNAVAILABLE' };
const DEFAULT_RETRY_AFTER_S: Record<number, number> = { 429: 5, 503: 2 };

/**
 * A refusal the sender may retry (429 rate limit or concurrency, 503) as the reference words the generic
 * trigger's: `{error, code, retryable: true, retryAfterSeconds}` and `Retry-After`, besides what it already carries.
 */
export function retryableRefusal(err: unknown): unknown {
  if (!(err instanceof HttpError) || !(err.status in RETRYABLE_CODES)) return err;
  const given = Object.entries(err.headers).find(([k]) => k.toLowerCase() === 'retry-after')?.[1];
  const seconds = err.extra.retryAfterSeconds ?? (given && /^\d+$/.test(given) ? Number(given) : DEFAULT_RETRY_AFTER_S[err.status]);
  return new HttpError(err.status, err.message,
    { ...err.extra, code: err.extra.code ?? RETRYABLE_CODES[err.status], retryable: true, retryAfterSeconds: seconds },
    given === undefined ? { ...err.headers, 'Retry-After': String(seconds) } : err.headers);
}

/** The answer of an async-mode delivery once its run is queued. */
const asyncAnswer = (cfg: WebhookConfig): WebhookAnswer => (cfg.responseMode === 'custom' ? customAnswer(cfg) : ACK);

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

  /**
   * The trigger's config with the `{{NAME}}` references of its `token` and `secret` replaced by the workspace
   * secrets' values, read now (never stored resolved). A reference that cannot be read (the secret was deleted
   * after the save) refuses the delivery: the text as written is never the credential.
   */
  private async withCredentials(target: Target): Promise<{ config: WebhookConfig } | { refused: WebhookAnswer }> {
    let config = target.config;
    for (const field of CREDENTIAL_FIELDS) {
      const names = credentialSecrets(config, field);
      const value = config[field];
      if (names.length === 0 || value === undefined) continue;
      try {
        config = { ...config, [field]: withSecrets(value, await this.deps.secrets.resolve(target.hook.workspace_id, names)) };
      } catch (err) {
        // The database away is no answer about the secret: 503, retried by the sender.
        if (isDatabaseUnavailable(err)) throw err;
        this.deps.log.warn({ workflowId: target.workflow.id, path: target.hook.path, field, secrets: names, reason: (err as Error).message },
          `webhook delivery refused: the trigger's ${field} references ${names.map((n) => `{{${n}}}`).join(', ')}, which could not be read ` +
          `(set the secret with PUT /api/v1/secrets/{name}, or change the trigger)`);
        return { refused: UNREADABLE_CREDENTIAL[field]() };
      }
    }
    return { config };
  }

  /**
   * Answers one request to `/api/webhooks/trigger/{path}`. Refusals by limits are thrown as HttpError (the
   * retryable ones shaped by `retryableRefusal`).
   */
  async handle(d: Delivery): Promise<WebhookAnswer> {
    this.purgeNowAndThen();
    if (d.method !== 'POST' && d.method !== 'GET') return NOT_ALLOWED();
    const target = await this.lookup(d.path);
    // Unknown and undeployed paths answer alike, so probes cannot tell them apart.
    if (!target) return d.method === 'POST' ? NOT_FOUND() : NOT_ALLOWED();
    // Before anything else the trigger checks: a sender outside the list learns nothing of its token or secret.
    if (!ipAllowed(target.config.allowedIps, d.ip)) return IP_REFUSED();
    const resolved = await this.withCredentials(target);
    if ('refused' in resolved) return resolved.refused;
    const cfg = resolved.config;
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
      if (err instanceof TooManyFields) return text(413, err.message);
      if (err instanceof BodyRefused) return text(err.status, err.message);
      return text(400, 'Invalid payload format');
    }
    const badState = clientStateProblem(cfg, body);
    if (badState) return text(401, `Unauthorized - ${badState}`);
    const c = challenge(cfg, 'POST', d.query, body);
    if (c) return fromChallenge(c);

    const input: Record<string, unknown> = isPlainObject(body) ? { ...body } : { body };
    if (!Object.prototype.hasOwnProperty.call(input, 'headers')) input.headers = visibleHeaders(cfg, d.headers);
    if (!Object.prototype.hasOwnProperty.call(input, 'query')) input.query = d.query;
    // A JSON body was checked as it was parsed; form and multipart fields and the query were decoded from %-escapes.
    if (holdsUnstorableString(input)) return text(400, 'Invalid payload format: a value holds a NUL character, which cannot be stored');
    const key = `${target.workflow.id}:${deliveryKey(cfg, { method: d.method, path: d.path, rawQuery: d.rawQuery, headers: d.headers, raw: d.raw, body })}`;
    try {
      return await this.deliver(target, key, input, files, d);
    } catch (err) {
      throw retryableRefusal(err);
    }
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
      if (claim) return this.first(target, { key, token, ...claim }, input, files, d);
      const row = await store.findDelivery(this.db, ws, key);
      if (row?.answer) return row.answer;
      if (!row) continue; // released by a refused first attempt: claim it now
      if (d.signal.aborted || Date.now() > until) return IN_PROGRESS();
      await sleep(delay);
      delay = Math.min(delay * 2, 200);
    }
  }

  /**
   * The claimant's part: admission, the one run of the delivery and its stored answer. The run's id
   * derives from the delivery, so whoever holds the claim later (after a crash, a lost lease or a failed
   * write) finds that run instead of starting a second one. Once the run may have begun the claim is
   * never released, only handed back with its identity kept.
   */
  private async first(
    target: Target, claim: { key: string; token: string; createdAt: Date; takeover: boolean }, input: Record<string, unknown>, files: FilePart[], d: Delivery,
  ): Promise<WebhookAnswer> {
    const ws = target.hook.workspace_id;
    const { key, token } = claim;
    const executionId = `webhook-${createHash('sha256').update(`${key}\0${claim.createdAt.getTime()}`).digest('hex').slice(0, 40)}`;
    const held = holdDeliveryClaim(this.db, this.deps.log, { workspaceId: ws, key, token, leaseMs: this.deps.config.webhookLeaseMs });
    /** Set once a run of this delivery may exist: from then on the claim is only handed back, never dropped. */
    let runMayExist = claim.takeover;
    let answered = false;
    let storedFiles: string[] = [];
    try {
      const plan = await this.deps.accounts.workspacePlan(ws);
      const run: RunContext = { workspaceId: ws, billedAccount: `workspace:${ws}`, plan };
      const cfg = target.config;
      const mode = cfg.responseMode === 'result' ? 'sync' : 'async';
      let answer: WebhookAnswer | 'running' | undefined;
      // A taken-over claim: the earlier holder may have started the run (and died, or lost its lease).
      if (claim.takeover) answer = await this.earlierRunAnswer(target.workflow, executionId, run, cfg);
      if (answer === undefined) {
        // Per trigger (its workflow), then per billed account with the usage cap and concurrency (runs.admit).
        await this.deps.limits.admitKeyed(`webhook:${target.workflow.id}`, plan, mode);
        if (files.length > 0) storedFiles = await this.storeFiles(target, files, input, d.baseUrl);
        const admitted = await this.deps.runs.admit(target.workflow, run, mode, { executionId });
        runMayExist = true;
        answer = mode === 'async'
          ? await this.enqueueRun(admitted, run, input, executionId, cfg, d)
          : await this.runForAnswer(admitted, run, input, executionId, cfg, held.signal, d);
      }
      if (answer === 'running') return IN_PROGRESS();
      if (!(await store.answerDelivery(this.db, ws, key, token, answer, executionId))) {
        // Taken over meanwhile (this holder's lease lapsed): the delivery's answer is the one stored, if any yet.
        this.deps.log.warn({ key, executionId }, 'webhook claim taken over before its answer was stored');
        return (await store.findDelivery(this.db, ws, key))?.answer ?? IN_PROGRESS();
      }
      answered = true;
      return answer;
    } finally {
      held.stop();
      if (!answered) {
        // Refused (limits, storage) before any run could begin: a retry may run it. Otherwise the claim
        // keeps its identity and the next retry takes it over at once and finds the run.
        const end = runMayExist ? store.handBackDelivery : store.releaseDelivery;
        await end(this.db, ws, key, token).catch((err: unknown) => this.deps.log.warn({ err, key }, 'ending a webhook claim failed; its lease lapses instead'));
        // No run will read the files stored for it (a retry stores its own): they would fill the storage for nothing.
        if (!runMayExist) {
          await store.deleteFiles(this.db, ws, storedFiles)
            .catch((err: unknown) => this.deps.log.warn({ err, key }, "deleting a refused webhook delivery's files failed"));
        }
      }
    }
  }

  /** Queues the delivery's async run; one queued before under the same id (a takeover) is the same run. */
  private async enqueueRun(
    admitted: Admitted, run: RunContext, input: Record<string, unknown>, executionId: string, cfg: WebhookConfig, d: Delivery,
  ): Promise<WebhookAnswer> {
    try {
      await this.deps.runs.enqueue(admitted, run, input, { executionId, apiKeyId: null, trigger: 'webhook', baseUrl: d.baseUrl });
    } catch (err) {
      if (!isExecutionIdConflict(err)) throw err;
    }
    return asyncAnswer(cfg);
  }

  /**
   * Runs the delivery's sync run and shapes its answer. The run belongs to the delivery, not to this
   * connection (duplicates wait for its output): it stops only when the claim is lost. A run that exists
   * already under the delivery's id answers for it instead ('running' while it has not finished).
   */
  private async runForAnswer(
    admitted: Admitted, run: RunContext, input: Record<string, unknown>, executionId: string, cfg: WebhookConfig, signal: AbortSignal, d: Delivery,
  ): Promise<WebhookAnswer | 'running'> {
    try {
      const done = await this.deps.runs.runSync(admitted, run, input, { executionId, apiKeyId: null, trigger: 'webhook', baseUrl: d.baseUrl, signal });
      return this.syncAnswer(done.executionId, done.result, done.output);
    } catch (err) {
      if (!isExecutionIdConflict(err)) throw err;
      return (await this.earlierRunAnswer(admitted.workflow, executionId, run, cfg)) ?? 'running';
    }
  }

  /**
   * Like a sync execute's answer without its `limits`: the sender is not the workspace's caller, and holds no
   * key that would let it read the workspace's usage and plan.
   */
  private async syncAnswer(executionId: string, result: RunResult, output: unknown): Promise<WebhookAnswer> {
    const a = await executeAnswer(executionId, result, output, () => undefined);
    return a.kind === 'response' ? json(a.status, a.data, a.headers) : json(a.status, a.body, { 'X-Execution-Id': executionId });
  }

  /**
   * The answer for a run an earlier holder of the delivery started: its stored result once it finished,
   * 'running' before; undefined when there is none (the earlier holder died before starting it).
   */
  private async earlierRunAnswer(
    workflow: Pick<WorkflowRow, 'id'>, executionId: string, run: RunContext, cfg: WebhookConfig,
  ): Promise<WebhookAnswer | 'running' | undefined> {
    // The run's input is never answered; its output and trace only in the result mode (the trace tells whether
    // a response block answered).
    const result = cfg.responseMode === 'result';
    const row = await this.deps.runs.findRun(run.workspaceId, workflow.id, executionId, { input: false, output: result, trace: result });
    if (!row) return undefined;
    if (!result) return asyncAnswer(cfg);
    const stored = storedRunResult(row);
    return stored ? this.syncAnswer(executionId, stored, row.output) : 'running';
  }

  /**
   * Stores a delivery's files (once, by the claimant) within the workspace's storage (403 when over it)
   * and puts file objects `{id, name, size, type, url}` in the input under their field names; returns their ids.
   */
  private async storeFiles(target: Target, files: FilePart[], input: Record<string, unknown>, baseUrl: string): Promise<string[]> {
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
    return objects.map((o) => o.id);
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
