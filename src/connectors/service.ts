// Connectors: OpenAPI documents registered per workspace (docs/architecture.md, Connectors). Create,
// list, read, replace, delete; the engine's connectors port for runs (operations, request building with
// auth from a secret); the save-time check of workflow definitions that name connectors.
import type { Actor } from '../accounts/service.js';
import { recordAudit } from '../audit/audit-log.js';
import type { Database } from '../db/database.js';
import { lockWorkspace } from '../db/workspace-lock.js';
import type { ConnectorsPort, ConnectorOperationInfo, WorkflowDefinition, BlockDefinition } from '../engine/index.js';
import { HttpError } from '../http/errors.js';
import { encodeCursor, type CursorKey } from '../http/pagination.js';
import { isUuid, newId } from '../ids.js';
import type { StorageGuard, StorageSource } from '../limits/storage.js';
import type { HttpPort } from '../engine/index.js';
import type { ConnectorOperation } from './openapi.js';
import { parseDocumentOffThread } from './openapi-parse.js';
import { applyAuth, buildRequest, ConnectorRequestError, type ConnectorAuth } from './requests.js';
import * as store from './store.js';

/** Largest OpenAPI document accepted from a specUrl (a pasted one is bounded by the 10 MiB body limit). */
export const MAX_SPEC_BYTES = 5 * 1024 * 1024;
/** How long fetching a specUrl may take. */
export const SPEC_FETCH_TIMEOUT_MS = 15_000;
/** Connectors per workspace. */
export const MAX_CONNECTORS = 500;
/** Stored size of the connectors one list page holds (at least one connector): their operations are most of it. */
export const MAX_LIST_PAGE_BYTES = 8 * 1024 * 1024;

/** Bytes a workspace's connectors store (one of the storage limit's sources). */
export const connectorStorageBytes: StorageSource = { sql: store.WORKSPACE_BYTES_SQL };

export interface ConnectorInput {
  name: string;
  spec?: unknown;
  specUrl?: string;
  baseUrl?: string;
  auth?: ConnectorAuth | null;
}

/** An operation as the API shows it. */
export type PublicOperation = Omit<ConnectorOperationInfo, 'bodyRequired'>;

export interface PublicConnector {
  id: string;
  workspaceId: string;
  name: string;
  baseUrl: string;
  auth: ConnectorAuth | null;
  operations: PublicOperation[];
  createdAt: string;
  updatedAt: string;
}

const publicOperation = (o: ConnectorOperation): PublicOperation => ({
  operationId: o.operationId, method: o.method, path: o.path, summary: o.summary,
  ...(o.description ? { description: o.description } : {}),
  parameters: o.parameters, requestBody: o.requestBody,
});

const publicConnector = (r: Omit<store.ConnectorRow, 'spec'>): PublicConnector => ({
  id: r.id, workspaceId: r.workspace_id, name: r.name, baseUrl: r.base_url, auth: r.auth,
  operations: r.operations.map(publicOperation),
  createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
});

function checkBaseUrl(url: string, field: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new HttpError(400, `${field} must be an absolute http or https URL`, { details: [{ path: [field], message: 'must be an absolute http or https URL' }] });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new HttpError(400, `${field} must be an http or https URL`, { details: [{ path: [field], message: 'must be an http or https URL' }] });
  }
  return u.toString().replace(/\/+$/, '');
}

export class ConnectorsService {
  constructor(private readonly deps: {
    db: Database;
    /** Guarded outbound HTTP (private addresses refused unless configured), for specUrl. */
    http: HttpPort;
    /** Secret names of a workspace: auth must name one that exists. */
    secretNames: (workspaceId: string) => Promise<ReadonlySet<string>>;
    /** The workspace's storage limit: a connector counts its document and its resolved operations. */
    storage: StorageGuard;
  }) {}

  /** Fetches a specUrl through the guarded client, bounded in time and size. */
  private async fetchSpec(specUrl: string): Promise<unknown> {
    const url = checkBaseUrl(specUrl, 'specUrl');
    let res;
    try {
      res = await this.deps.http.request({ url, method: 'GET', headers: { accept: 'application/json' }, timeoutMs: SPEC_FETCH_TIMEOUT_MS });
    } catch (err) {
      throw new HttpError(400, `Could not fetch specUrl: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (res.status !== 200) throw new HttpError(400, `Could not fetch specUrl: the server answered HTTP ${res.status}`);
    if (Buffer.byteLength(res.body, 'utf8') > MAX_SPEC_BYTES) throw new HttpError(400, `The document at specUrl exceeds ${MAX_SPEC_BYTES / 1024 / 1024} MiB`);
    try {
      return JSON.parse(res.body) as unknown;
    } catch {
      throw new HttpError(400, 'The document at specUrl is not JSON (only JSON OpenAPI documents are accepted)');
    }
  }

  private async values(workspaceId: string, input: ConnectorInput): Promise<store.ConnectorValues> {
    if ((input.spec === undefined) === (input.specUrl === undefined)) {
      throw new HttpError(400, 'Give exactly one of spec (the OpenAPI document) or specUrl', { details: [{ path: ['spec'], message: 'exactly one of spec or specUrl is required' }] });
    }
    const spec = input.spec !== undefined ? input.spec : await this.fetchSpec(input.specUrl!);
    const parsed = await parseDocumentOffThread(spec, workspaceId);
    const baseUrl = input.baseUrl !== undefined ? checkBaseUrl(input.baseUrl, 'baseUrl') : parsed.serverUrl;
    if (!baseUrl) {
      throw new HttpError(400, 'The document names no absolute server URL: give baseUrl', { details: [{ path: ['baseUrl'], message: 'required when the document has no absolute servers[].url' }] });
    }
    const auth = input.auth ?? null;
    if (auth) {
      if ((auth.type === 'header' || auth.type === 'query') && !auth.name) {
        throw new HttpError(400, `auth.name is required for auth type ${auth.type}`, { details: [{ path: ['auth', 'name'], message: 'required for header and query auth' }] });
      }
      const names = await this.deps.secretNames(workspaceId);
      if (!names.has(auth.secret)) {
        throw new HttpError(400, `auth.secret: no secret named ${auth.secret} in this workspace (set it with PUT /api/v1/secrets/${auth.secret})`,
          { details: [{ path: ['auth', 'secret'], message: `no secret named ${auth.secret}` }] });
      }
    }
    return { name: input.name, baseUrl, spec: spec as Record<string, unknown>, operations: parsed.operations, auth };
  }

  async create(workspaceId: string, input: ConnectorInput, actor: Actor): Promise<PublicConnector> {
    const values = await this.values(workspaceId, input);
    const id = newId();
    const row = await this.deps.db.tx(async (q) => {
      await lockWorkspace(q, 'connectors', workspaceId);
      const count = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM connectors WHERE workspace_id = $1', [workspaceId]);
      if ((count[0]?.n ?? 0) >= MAX_CONNECTORS) throw new HttpError(400, `A workspace holds at most ${MAX_CONNECTORS} connectors`);
      const r = await store.insertConnector(q, id, workspaceId, values, actor.userId ?? null);
      await this.deps.storage.checkAfterWrite(q, workspaceId, Number(r.stored_bytes));
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type,
        action: 'connector.created', resourceType: 'connector', resourceId: id, resourceName: values.name,
      });
      return r;
    });
    return publicConnector(row);
  }

  async replace(workspaceId: string, id: string, input: ConnectorInput, actor: Actor): Promise<PublicConnector> {
    await this.get(workspaceId, id);
    const values = await this.values(workspaceId, input);
    const row = await this.deps.db.tx(async (q) => {
      const before = await store.connectorBytes(q, workspaceId, id);
      const r = await store.updateConnector(q, workspaceId, id, values);
      if (!r || before === undefined) throw new HttpError(404, 'Connector not found');
      await this.deps.storage.checkAfterWrite(q, workspaceId, Number(r.stored_bytes) - before);
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type,
        action: 'connector.replaced', resourceType: 'connector', resourceId: id, resourceName: values.name,
      });
      return r;
    });
    return publicConnector(row);
  }

  /**
   * A page of a workspace's connectors, oldest first: at most `limit`, and no more than MAX_LIST_PAGE_BYTES of
   * stored size past the first; `nextCursor` when more follow.
   */
  async list(workspaceId: string, opts: { limit: number; after?: CursorKey }): Promise<{ connectors: PublicConnector[]; nextCursor?: string }> {
    const rows = await store.listConnectors(this.deps.db, workspaceId, { limit: opts.limit + 1, maxBytes: MAX_LIST_PAGE_BYTES, after: opts.after });
    // One more row than asked, or the byte bound cut the page short: more follow the last one returned.
    const page = rows.slice(0, opts.limit);
    const last = page.at(-1);
    const more = last !== undefined && (rows.length > opts.limit || last.considered > rows.length);
    return { connectors: page.map(publicConnector), ...(more ? { nextCursor: encodeCursor({ t: last.created_at.toISOString(), id: last.id }) } : {}) };
  }

  /** The workspace of a connector, or undefined (routes authorize against it, then 404 alike). */
  workspaceOf(id: string): Promise<string | undefined> {
    return isUuid(id) ? store.connectorWorkspace(this.deps.db, id) : Promise.resolve(undefined);
  }

  async get(workspaceId: string, id: string): Promise<PublicConnector> {
    const row = isUuid(id) ? await store.findConnector(this.deps.db, workspaceId, id) : undefined;
    if (!row) throw new HttpError(404, 'Connector not found');
    return publicConnector(row);
  }

  async delete(workspaceId: string, id: string, actor: Actor): Promise<void> {
    await this.deps.db.tx(async (q) => {
      const row = isUuid(id) ? await store.findConnector(q, workspaceId, id) : undefined;
      if (!row || !(await store.deleteConnector(q, workspaceId, id))) throw new HttpError(404, 'Connector not found');
      await recordAudit(q, {
        workspaceId, actorId: actor.userId ?? null, actorKeyId: actor.keyId ?? null, actorType: actor.type,
        action: 'connector.deleted', resourceType: 'connector', resourceId: id, resourceName: row.name,
      });
    });
  }

  /**
   * Save-time check of a definition: every connector block (and agent connector tool) whose
   * connectorId / operationId are literal values names a connector of the workspace and one of its
   * operations. Values holding references are checked when the block runs.
   */
  async checkDefinition(workspaceId: string, definition: WorkflowDefinition): Promise<void> {
    const uses: { block: BlockDefinition; connectorId: string; operationIds: string[]; field: string }[] = [];
    const literal = (v: unknown): v is string => typeof v === 'string' && !v.includes('<') && !v.includes('{{');
    const visit = (blocks: BlockDefinition[]) => {
      for (const b of blocks) {
        const config = (b.config ?? {}) as Record<string, unknown>;
        if (b.type === 'connector' && literal(config.connectorId)) {
          uses.push({ block: b, connectorId: config.connectorId, operationIds: literal(config.operationId) ? [config.operationId] : [], field: 'connectorId' });
        }
        if (b.type === 'agent' && Array.isArray(config.tools)) {
          config.tools.forEach((t: unknown, i: number) => {
            const tool = t as Record<string, unknown>;
            if (tool?.type === 'connector' && literal(tool.connectorId)) {
              const ops = Array.isArray(tool.operationIds) ? tool.operationIds.filter(literal) : [];
              uses.push({ block: b, connectorId: tool.connectorId, operationIds: ops, field: `tools[${i}].connectorId` });
            }
          });
        }
        if (Array.isArray(b.blocks)) visit(b.blocks);
      }
    };
    visit(definition.blocks);
    if (uses.length === 0) return;
    const details: { path: (string | number)[]; blockId: string; field: string; message: string }[] = [];
    const cache = new Map<string, store.ConnectorRow | undefined>();
    for (const u of uses) {
      if (!cache.has(u.connectorId)) cache.set(u.connectorId, isUuid(u.connectorId) ? await store.findConnector(this.deps.db, workspaceId, u.connectorId) : undefined);
      const row = cache.get(u.connectorId);
      const label = `Block "${u.block.name}"`;
      if (!row) {
        details.push({ path: ['definition', 'blocks', u.block.id, 'config', u.field], blockId: u.block.id, field: u.field, message: `${label}: unknown connector ${u.connectorId} in ${u.field}` });
        continue;
      }
      for (const op of u.operationIds) {
        if (!row.operations.some((o) => o.operationId === op)) {
          details.push({ path: ['definition', 'blocks', u.block.id, 'config'], blockId: u.block.id, field: 'operationId', message: `${label}: connector "${row.name}" has no operation "${op}"` });
        }
      }
    }
    if (details.length > 0) throw new HttpError(400, `Invalid workflow definition: ${details[0].message}`, { details });
  }

  /** The engine's connectors port for one run, scoped to its workspace. */
  portFor(workspaceId: string): ConnectorsPort {
    // One read per connector per run: operations do not change under a running block.
    const rows = new Map<string, Promise<store.ConnectorRow>>();
    const load = (id: string) => {
      let p = rows.get(id);
      if (!p) {
        p = (async () => {
          const row = isUuid(id) ? await store.findConnector(this.deps.db, workspaceId, id) : undefined;
          if (!row) throw new Error(`unknown connector ${id}`);
          return row;
        })();
        p.catch(() => rows.delete(id));
        rows.set(id, p);
      }
      return p;
    };
    return {
      describe: async (connectorId) => {
        const row = await load(connectorId);
        return {
          name: row.name,
          operations: row.operations.map((o): ConnectorOperationInfo => ({ ...publicOperation(o), bodyRequired: o.bodyRequired })),
        };
      },
      prepare: async (call) => {
        const row = await load(call.connectorId);
        const op = row.operations.find((o) => o.operationId === call.operationId);
        if (!op) throw new Error(`connector "${row.name}" has no operation "${call.operationId}"`);
        try {
          const built = buildRequest(row.base_url, op, call.parameters, call.body);
          if (!row.auth) return built;
          return applyAuth(built, row.auth, await call.secret(row.auth.secret));
        } catch (err) {
          if (err instanceof ConnectorRequestError) throw new Error(`${row.name}.${op.operationId}: ${err.message}`);
          throw err;
        }
      },
    };
  }
}
