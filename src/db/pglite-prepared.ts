/**
 * Named prepared statements for the embedded database's thread (docs/architecture.md, Embedded database).
 *
 * PGlite's `query()` sends every parameterised statement as PostgreSQL's unnamed statement: parsed, described
 * and planned again on each call. Here each statement text is prepared once under a name of its own, its
 * parameter types and row description kept, and each call only binds and executes it. PostgreSQL's plan
 * cache then keeps its plan. Measured on this project's machine: a webhook claim 1,480 -> 549 us of CPU, an API
 * key lookup 1,214 -> 523 us (bench/RESULTS.md, "prepared statements on the embedded database").
 *
 * The texts are the code's own, so they are few; a bounded list (least recently used closed first) keeps a
 * text built per call from filling the backend's memory.
 */
import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';

type Message = Awaited<ReturnType<PGlite['execProtocolStream']>>[number];

interface Prepared {
  name: string;
  /** The type of each parameter, as PostgreSQL inferred it (chooses the serializer). */
  paramTypes: number[];
  /** The statement's row description, put before its rows so that they parse as PGlite's own results do. */
  rowDescription: Message | undefined;
}

const { serialize } = protocol;

/** PostgreSQL's "cached plan must not change result type": the statement's table changed shape since it was prepared. */
const STALE_PLAN = '0A000';

export class PreparedStatements {
  private readonly byText = new Map<string, Prepared>();
  private sequence = 0;

  constructor(private readonly db: PGlite, private readonly max = 128) {}

  /**
   * Runs `text` with `params`. Outside a transaction it waits for PGlite's transaction lock, as `query()`
   * does, so it never runs inside another caller's transaction; `inTransaction` is for a statement of the
   * transaction that holds it.
   */
  query(text: string, params: readonly unknown[], inTransaction: boolean): Promise<Results> {
    const run = () => this.db._runExclusiveQuery(() => this.run(text, params, !inTransaction));
    return inTransaction ? run() : this.db._runExclusiveTransaction(run);
  }

  private async run(text: string, params: readonly unknown[], retryStale: boolean): Promise<Results> {
    let replies: Message[];
    let prepared: Prepared;
    try {
      prepared = await this.prepare(text);
      const values = params.map((v, i) => {
        if (v === null || v === undefined) return null;
        const serializer = this.db.serializers[prepared.paramTypes[i]];
        return serializer ? serializer(v) : String(v);
      });
      // Bind, execute and sync in one call into PGlite, which runs every message it is handed even after an
      // error (the backend then skips to the sync), and reports the first error once all have run.
      replies = await this.send(Buffer.concat([serialize.bind({ statement: prepared.name, values }), serialize.execute({}), serialize.sync()]));
    } catch (err) {
      // After an error the backend skips every message up to a sync: one more ends a failed prepare (and is
      // only another ReadyForQuery after a failed bind or execute, whose sync has run).
      await this.send(serialize.sync());
      // Prepared again on its next call: a statement that failed may have failed for its plan.
      await this.forget(text);
      if (retryStale && (err as { code?: unknown } | null)?.code === STALE_PLAN) return this.run(text, params, false);
      throw err;
    }
    // Outside a transaction the statement committed: written through to the data directory, as query() does.
    if (!this.db.isInTransaction()) await this.db.syncToFs();
    // The row description goes first, as the rows parse against it (bind and execute do not send one).
    return parse.parseResults(prepared.rowDescription ? [prepared.rowDescription, ...replies] : replies, this.db.parsers)[0];
  }

  private async prepare(text: string): Promise<Prepared> {
    const known = this.byText.get(text);
    if (known) {
      // Most recently used last, so that the first one is the one to close.
      this.byText.delete(text);
      this.byText.set(text, known);
      return known;
    }
    const oldest = this.byText.keys().next();
    if (this.byText.size >= this.max && !oldest.done) await this.forget(oldest.value);
    const name = `weft_${++this.sequence}`;
    await this.send(serialize.parse({ name, text }));
    const described = await this.send(serialize.describe({ type: 'S', name }));
    const params = described.find((m) => m.name === 'parameterDescription') as { dataTypeIDs?: number[] } | undefined;
    const prepared: Prepared = {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      rowDescription: described.find((m) => m.name === 'rowDescription'),
    };
    this.byText.set(text, prepared);
    return prepared;
  }

  private async forget(text: string): Promise<void> {
    const prepared = this.byText.get(text);
    if (!prepared) return;
    this.byText.delete(text);
    // Its own sync: were the close to fail, the backend would skip the next statement's messages up to one.
    await this.send(serialize.close({ type: 'S', name: prepared.name })).catch(() => undefined);
    await this.send(serialize.sync());
  }

  private send(message: Uint8Array): Promise<Message[]> {
    return this.db.execProtocolStream(message, { syncToFs: false });
  }
}
