import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobFromText, blobParam } from '../../src/db/blob.js';
import { statementCancelled, uniqueViolation, type Database, type Queryable } from '../../src/db/database.js';

/**
 * One suite every adapter of the `Database` port passes (PGlite embedded, `pg` on PostgreSQL).
 * It encodes what the port promises to its callers; see src/db/database.ts.
 * `make` opens a database the suite may write scratch tables into; `skip` names why it cannot run.
 */
export function databaseConformance(name: string, make: () => Promise<Database>, skip?: string): void {
  const title = skip ? `Database conformance: ${name} (skipped: ${skip})` : `Database conformance: ${name}`;
  describe.skipIf(skip !== undefined)(title, () => {
    let db: Database;
    beforeAll(async () => {
      db = await make();
      await db.exec(`
        DROP TABLE IF EXISTS conf_items;
        CREATE TABLE conf_items (id text PRIMARY KEY, n int8 NOT NULL DEFAULT 0, tag text,
          CONSTRAINT conf_items_tag_key UNIQUE (tag));
        DROP TABLE IF EXISTS conf_types;
        CREATE TABLE conf_types (id int PRIMARY KEY, i8 int8, j jsonb, ts timestamptz, num numeric, b boolean, t text);
        DROP TABLE IF EXISTS conf_counter;
        CREATE TABLE conf_counter (id int PRIMARY KEY, n int8 NOT NULL);
        INSERT INTO conf_counter VALUES (1, 0);
      `);
    });
    afterAll(async () => {
      await db?.close();
    });

    it('query returns rows as objects with parameters bound; exec runs several statements', async () => {
      await db.exec(`INSERT INTO conf_items (id, n) VALUES ('q1', 1); INSERT INTO conf_items (id, n) VALUES ('q2', 2);`);
      const rows = await db.query<{ id: string; n: number }>('SELECT id, n FROM conf_items WHERE id = ANY($1::text[]) ORDER BY id', [['q1', 'q2']]);
      expect(rows).toEqual([{ id: 'q1', n: 1 }, { id: 'q2', n: 2 }]);
      expect(await db.query('SELECT 1 AS one WHERE false')).toEqual([]);
      const updated = await db.query<{ id: string }>('UPDATE conf_items SET n = n + $1 WHERE id = $2 RETURNING id, n', [10, 'q1']);
      expect(updated).toEqual([{ id: 'q1', n: 11 }]);
      await expect(db.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    });

    it('tx commits what fn did and returns its value; q sees its own writes', async () => {
      const out = await db.tx(async (q) => {
        await q.query("INSERT INTO conf_items (id, n) VALUES ('t1', 5)");
        await q.exec("INSERT INTO conf_items (id, n) VALUES ('t2', 6)");
        const seen = await q.query<{ c: number }>("SELECT count(*)::int AS c FROM conf_items WHERE id IN ('t1', 't2')");
        return seen[0]?.c;
      });
      expect(out).toBe(2);
      expect(await db.query("SELECT id FROM conf_items WHERE id IN ('t1', 't2') ORDER BY id")).toEqual([{ id: 't1' }, { id: 't2' }]);
    });

    it('a tx whose fn throws rolls back everything and rejects with that error', async () => {
      const boom = new Error('boom');
      await expect(db.tx(async (q) => {
        await q.query("INSERT INTO conf_items (id) VALUES ('r1')");
        await q.query("UPDATE conf_counter SET n = n + 100 WHERE id = 1");
        await q.exec("INSERT INTO conf_items (id) VALUES ('r2')");
        throw boom;
      })).rejects.toBe(boom);
      expect(await db.query("SELECT id FROM conf_items WHERE id IN ('r1', 'r2')")).toEqual([]);
      expect(await db.query('SELECT n FROM conf_counter WHERE id = 1')).toEqual([{ n: 0 }]);
      // The database is usable afterwards (no transaction left open).
      await db.query("INSERT INTO conf_items (id) VALUES ('r3')");
      expect(await db.query("SELECT id FROM conf_items WHERE id = 'r3'")).toEqual([{ id: 'r3' }]);
    });

    it('a statement error inside tx aborts it: tx rejects with that error even when fn catches it, nothing commits', async () => {
      await db.query("INSERT INTO conf_items (id, tag) VALUES ('s0', 'taken')");
      let caught: unknown;
      const p = db.tx(async (q) => {
        await q.query("INSERT INTO conf_items (id) VALUES ('s1')");
        try {
          await q.query("INSERT INTO conf_items (id, tag) VALUES ('s2', 'taken')");
        } catch (err) {
          caught = err; // swallowed: the transaction is aborted all the same
        }
        return 'fn finished';
      });
      const err = await p.then(() => undefined, (e: unknown) => e);
      expect(caught).toBeDefined();
      expect(err).toBeDefined();
      expect(uniqueViolation(err)).toEqual({ constraint: 'conf_items_tag_key' });
      expect(await db.query("SELECT id FROM conf_items WHERE id IN ('s1', 's2')")).toEqual([]);
    });

    it('uniqueViolation() detects 23505 with the constraint name, from query and from tx; other errors are not one', async () => {
      await db.query("INSERT INTO conf_items (id, tag) VALUES ('u1', 'dup')");
      const fromQuery = await db.query("INSERT INTO conf_items (id, tag) VALUES ('u2', 'dup')").then(() => undefined, (e: unknown) => e);
      expect(uniqueViolation(fromQuery)).toEqual({ constraint: 'conf_items_tag_key' });
      const pk = await db.query("INSERT INTO conf_items (id) VALUES ('u1')").then(() => undefined, (e: unknown) => e);
      expect(uniqueViolation(pk)).toEqual({ constraint: 'conf_items_pkey' });
      const fromTx = await db.tx((q) => q.query("INSERT INTO conf_items (id, tag) VALUES ('u3', 'dup')")).then(() => undefined, (e: unknown) => e);
      expect(uniqueViolation(fromTx)).toEqual({ constraint: 'conf_items_tag_key' });
      const other = await db.query('SELECT 1/0').then(() => undefined, (e: unknown) => e);
      expect(other).toBeDefined();
      expect(uniqueViolation(other)).toBeUndefined();
      expect(uniqueViolation(new Error('x'))).toBeUndefined();
      expect(uniqueViolation(undefined)).toBeUndefined();
    });

    it('round-trips int8, jsonb, timestamptz, numeric, boolean, text and null with the same JS types', async () => {
      const when = new Date('2024-02-29T12:34:56.789Z');
      const doc = { a: [1, 'two', { three: true }], n: null, u: 'ü €', big: 1.5 };
      await db.query('INSERT INTO conf_types VALUES ($1, $2, $3, $4, $5, $6, $7)', [1, 9_007_199_254_740_991, JSON.stringify(doc), when, '12345.6789', true, "it's"]);
      await db.query('INSERT INTO conf_types VALUES ($1, $2, $3, $4, $5, $6, $7)', [2, null, null, null, null, null, null]);
      await db.query('INSERT INTO conf_types (id, j, b, ts) VALUES ($1, $2::jsonb, $3, $4)', [3, JSON.stringify([1, 2]), false, when.toISOString()]);
      const rows = await db.query<Record<string, unknown>>('SELECT * FROM conf_types ORDER BY id');
      expect(rows[0]).toEqual({ id: 1, i8: 9_007_199_254_740_991, j: doc, ts: when, num: '12345.6789', b: true, t: "it's" });
      expect(typeof rows[0]?.i8).toBe('number');
      expect(rows[0]?.ts).toBeInstanceOf(Date);
      expect(rows[1]).toEqual({ id: 2, i8: null, j: null, ts: null, num: null, b: null, t: null });
      expect(rows[2]).toMatchObject({ id: 3, j: [1, 2], b: false, ts: when });
      // Computed values: count/sum as int8 are numbers, numeric stays a string, jsonb scalars parse.
      const [agg] = await db.query<Record<string, unknown>>(
        "SELECT count(*) AS c, sum(id)::int8 AS s, 1.50::numeric AS dec, '\"x\"'::jsonb AS js, 'null'::jsonb AS jn, 2.5::float8 AS f, 7::int4 AS i4 FROM conf_types",
      );
      expect(agg).toEqual({ c: 3, s: 6, dec: '1.50', js: 'x', jn: null, f: 2.5, i4: 7 });
    });

    it('int8 beyond 2^53 is never silently rounded', async () => {
      const [row] = await db.query<{ v: unknown }>("SELECT '9007199254740993'::int8 AS v");
      // Either exact (bigint) or refused, never the nearest double.
      expect(row?.v).toBe(9_007_199_254_740_993n);
    });

    it('concurrent transactions each see their own writes and lose no update', async () => {
      const workers = 8;
      const per = 5;
      const spans: { start: number; end: number }[] = [];
      const results = await Promise.all(Array.from({ length: workers }, (_, w) => db.tx(async (q) => {
        // From the first statement's answer (the embedded database may send a statement before its
        // transaction holds the lock): by then the transaction holds it.
        let start = Number.NaN;
        for (let i = 0; i < per; i++) {
          await q.query('INSERT INTO conf_items (id, n) VALUES ($1, $2)', [`c${w}-${i}`, w]);
          if (i === 0) start = performance.now();
          // Read-modify-write under a row lock: no lost update whatever the interleaving.
          const [cur] = await q.query<{ n: number }>('SELECT n FROM conf_counter WHERE id = 1 FOR UPDATE');
          await q.query('UPDATE conf_counter SET n = $1 WHERE id = 1', [(cur?.n ?? 0) + 1]);
        }
        const own = await q.query<{ c: number }>('SELECT count(*)::int AS c FROM conf_items WHERE n = $1 AND id LIKE $2', [w, `c${w}-%`]);
        spans.push({ start, end: performance.now() });
        return own[0]?.c;
      })));
      expect(results).toEqual(Array.from({ length: workers }, () => per));
      expect(await db.query('SELECT n FROM conf_counter WHERE id = 1')).toEqual([{ n: workers * per }]);
      expect(await db.query<{ c: number }>("SELECT count(*)::int AS c FROM conf_items WHERE id LIKE 'c%-%'")).toEqual([{ c: workers * per }]);
      if (db.mode === 'pglite') {
        // One connection: transactions run one after another, never interleaved.
        const sorted = [...spans].sort((a, b) => a.start - b.start);
        for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.start).toBeGreaterThanOrEqual(sorted[i - 1]!.end);
      }
    });

    it('a statement sent while another transaction is open runs inside its own transaction, and rolls back with it', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let firstWrote!: () => void;
      const wrote = new Promise<void>((r) => (firstWrote = r));
      const first = db.tx(async (q) => {
        await q.query("INSERT INTO conf_items (id) VALUES ('lock1')");
        firstWrote();
        await gate;
      });
      await wrote;
      // On the embedded database this statement waits for the first transaction's lock before it runs.
      // Its outcome is read at once: on PostgreSQL it runs on another connection and fails before the release.
      const second = db.tx(async (q) => {
        await q.query("INSERT INTO conf_items (id) VALUES ('lock2')");
        throw new Error('undo the second');
      }).then(() => 'committed', (err: unknown) => (err instanceof Error ? err.message : String(err)));
      await new Promise((r) => setTimeout(r, 30));
      release();
      await first;
      expect(await second).toBe('undo the second');
      expect(await db.query("SELECT id FROM conf_items WHERE id LIKE 'lock%' ORDER BY id")).toEqual([{ id: 'lock1' }]);
    });

    it('a query outside an open transaction never sees its uncommitted writes', async () => {
      let fnDone = false;
      let inserted!: () => void;
      const didInsert = new Promise<void>((r) => (inserted = r));
      const txDone = db.tx(async (q) => {
        await q.query("INSERT INTO conf_items (id) VALUES ('iso1')");
        inserted();
        await new Promise((r) => setTimeout(r, 150));
        fnDone = true; // the last thing before COMMIT
      });
      await didInsert;
      // On PostgreSQL this answers at once from the committed state; on PGlite it waits for the tx.
      const rows = await db.query("SELECT id FROM conf_items WHERE id = 'iso1'");
      const sawRow = rows.length > 0;
      const fnDoneWhenAnswered = fnDone;
      await txDone;
      if (sawRow) expect(fnDoneWhenAnswered).toBe(true);
      if (db.mode === 'pglite') expect(sawRow).toBe(true); // it waited for the commit
      expect(await db.query("SELECT id FROM conf_items WHERE id = 'iso1'")).toEqual([{ id: 'iso1' }]);
    });

    it('nesting: the q handed to fn is the only way into the transaction and has no tx of its own', async () => {
      await db.tx(async (q) => {
        expect(typeof q.query).toBe('function');
        expect(typeof q.exec).toBe('function');
        expect((q as unknown as { tx?: unknown }).tx).toBeUndefined();
      });
      // Sequential transactions after one another work (no state leaks between them).
      for (let i = 0; i < 3; i++) await db.tx((q) => q.query('UPDATE conf_counter SET n = n WHERE id = 1'));
    });

    it('a query without parameters returns the same typed rows as one with them', async () => {
      await db.exec(`INSERT INTO conf_types (id, i8, j, ts, num, b, t) VALUES (90, 9007199254740991, '{"a":[1,"x"]}', '2026-01-02T03:04:05.678Z', 1.5, true, 'it''s')`);
      const sql = 'SELECT i8, j, ts, num, b, t FROM conf_types WHERE id = 90';
      const plain = await db.query(sql);
      const bound = await db.query(`${sql} AND $1::int = 1`, [1]);
      expect(plain).toEqual(bound);
      expect(plain).toEqual([{ i8: 9007199254740991, j: { a: [1, 'x'] }, ts: new Date('2026-01-02T03:04:05.678Z'), num: expect.anything(), b: true, t: "it's" }]);
      await expect(db.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    });

    it('a bound text, jsonb or text[] argument is data, quotes and backslashes included', async () => {
      const echo = 'SELECT $1::text AS t, $2::jsonb AS j, $2::jsonb->>\'k\' AS k';
      const tricky = `it's '); DROP TABLE conf_items; -- \\ \\' $$ $fn$ ü`;
      for (let round = 0; round < 2; round++) {
        const rows = await db.query(echo, [tricky, JSON.stringify({ k: tricky })]);
        expect(rows).toEqual([{ t: tricky, j: { k: tricky }, k: tricky }]);
      }
      expect(await db.query(echo, [null, null])).toEqual([{ t: null, j: null, k: null }]);
      const list = 'SELECT x, $2::int AS n FROM unnest($1::text[]) AS x';
      expect(await db.query(list, [[tricky, 'b', 'c,d', '{e}', 'NULL'], 7])).toEqual(
        [tricky, 'b', 'c,d', '{e}', 'NULL'].map((x) => ({ x, n: 7 })),
      );
      expect(await db.query(list, [[], 7])).toEqual([]);
      expect(await db.query("SELECT 1 FROM pg_tables WHERE tablename = 'conf_items'")).toHaveLength(1);
    });

    it('stores and reads bytes through the base64 blob form exactly: every byte value, empty, and 3 MB of random data', async () => {
      await db.exec('CREATE TABLE conf_blobs (id int PRIMARY KEY, content bytea NOT NULL)');
      const values = [Uint8Array.from({ length: 256 }, (_, i) => i), new Uint8Array(0), new Uint8Array(randomBytes(3 * 1024 * 1024))];
      for (const [i, bytes] of values.entries()) {
        await db.query("INSERT INTO conf_blobs (id, content) VALUES ($1, decode($2, 'base64'))", [i, blobParam(bytes)]);
      }
      const rows = await db.query<{ id: number; n: number; content: string }>(
        "SELECT id, octet_length(content) AS n, encode(content, 'base64') AS content FROM conf_blobs ORDER BY id");
      expect(rows.map((r) => r.n)).toEqual(values.map((v) => v.byteLength));
      for (const [i, r] of rows.entries()) expect(Buffer.from(blobFromText(r.content)).equals(Buffer.from(values[i] as Uint8Array))).toBe(true);
      // A view into a larger buffer sends only its own bytes.
      const view = new TextEncoder().encode('xxHELLOxx').subarray(2, 7);
      const [one] = await db.query<{ s: string }>("SELECT convert_from(decode($1, 'base64'), 'UTF8') AS s", [blobParam(view)]);
      expect(one?.s).toBe('HELLO');
    });

    it('a statement run again and again binds each call its own values, nulls and types included', async () => {
      const sql = 'INSERT INTO conf_types (id, i8, j, ts, num, b, t) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, i8, j, ts, num::text AS num, b, t';
      const at = new Date('2026-03-04T05:06:07.089Z');
      const rows = [];
      for (let i = 0; i < 12; i++) {
        const [row] = await db.query(sql, [100 + i, i % 3 === 0 ? null : i * 7, JSON.stringify({ i, s: `v'${i}` }), i % 4 === 0 ? null : at, `${i}.5`, i % 2 === 0, i % 5 === 0 ? null : `t${i}`]);
        rows.push(row);
      }
      for (const [i, r] of rows.entries()) {
        expect(r).toEqual({ id: 100 + i, i8: i % 3 === 0 ? null : i * 7, j: { i, s: `v'${i}` }, ts: i % 4 === 0 ? null : at, num: `${i}.5`, b: i % 2 === 0, t: i % 5 === 0 ? null : `t${i}` });
      }
      // A failing call (duplicate key) leaves the statement usable, in and out of a transaction.
      await expect(db.query(sql, [100, 1, '{}', at, '1', true, 'x'])).rejects.toMatchObject({ code: '23505' });
      await expect(db.tx((q) => q.query(sql, [101, 1, '{}', at, '1', true, 'x']))).rejects.toMatchObject({ code: '23505' });
      // So does a value its parameter's type refuses, which fails before the statement runs (at bind).
      await expect(db.query(sql, [102, 'not a number', '{}', at, '1', true, 'x'])).rejects.toMatchObject({ code: '22P02' });
      await expect(db.tx((q) => q.query(sql, [103, 'not a number', '{}', at, '1', true, 'x']))).rejects.toMatchObject({ code: '22P02' });
      expect(await db.query(sql, [200, 1, '{}', at, '1', true, 'after'])).toMatchObject([{ id: 200, t: 'after' }]);
      expect(await db.tx((q) => q.query(sql, [201, 1, '{}', at, '1', true, 'in tx']))).toMatchObject([{ id: 201, t: 'in tx' }]);
    });

    it('a statement run before and after its table changes shape answers with the new shape', async () => {
      await db.exec("CREATE TABLE conf_shape (id int PRIMARY KEY); INSERT INTO conf_shape VALUES (1)");
      const sql = 'SELECT * FROM conf_shape WHERE id = $1';
      expect(await db.query(sql, [1])).toEqual([{ id: 1 }]);
      expect(await db.query(sql, [1])).toEqual([{ id: 1 }]);
      await db.exec("ALTER TABLE conf_shape ADD COLUMN label text NOT NULL DEFAULT 'x'");
      expect(await db.query(sql, [1])).toEqual([{ id: 1, label: 'x' }]);
      await db.exec('ALTER TABLE conf_shape DROP COLUMN label');
      expect(await db.query(sql, [1])).toEqual([{ id: 1 }]);
    });

    it('many different statements, each run twice, all answer correctly', async () => {
      // More texts than an adapter may keep prepared at once (the embedded one keeps 128), the second time
      // inside a transaction, where one that failed comes just before the end.
      const many = async (q: Queryable, round: number) => {
        for (let i = 0; i < 300; i++) {
          const [row] = await q.query<{ v: number; k: number }>(`SELECT $1::int + ${i} AS v, ${round} AS k`, [i]);
          expect(row).toEqual({ v: 2 * i, k: round });
        }
      };
      await many(db, 0);
      expect(await db.tx(async (q) => {
        await many(q, 1);
        return (await q.query<{ n: number }>('SELECT count(*)::int AS n FROM conf_items WHERE id = $1', ['none']))[0]?.n;
      })).toBe(0);
      await expect(db.tx(async (q) => {
        await many(q, 2);
        await q.query('SELECT 1 / $1::int AS boom', [0]);
      })).rejects.toMatchObject({ code: '22012' });
      await many(db, 3);
    });

    it('boundedTx: a statement past the time fails as cancelled, nothing of its transaction commits, and the database answers after', async () => {
      await db.exec('DROP TABLE IF EXISTS conf_bounded; CREATE TABLE conf_bounded (id text PRIMARY KEY)');
      // pg_sleep(60) ends only when stopped: without the bound this test runs past its own timeout.
      const stopped = await db.boundedTx(300, async (q) => {
        await q.query("INSERT INTO conf_bounded VALUES ('inside')");
        await q.query('SELECT pg_sleep(60)');
      }).then(() => undefined, (err: unknown) => err);
      expect(statementCancelled(stopped)).toBe(true);
      expect(await db.query('SELECT id FROM conf_bounded')).toEqual([]);
      // Within its time a bounded transaction commits like any other.
      expect(await db.boundedTx(30_000, async (q) => q.query<{ id: string }>("INSERT INTO conf_bounded VALUES ('quick') RETURNING id"))).toEqual([{ id: 'quick' }]);
      expect(await db.query('SELECT id FROM conf_bounded')).toEqual([{ id: 'quick' }]);
    }, 30_000);

    it('ping resolves on a live database', async () => {
      await expect(db.ping()).resolves.toBeUndefined();
    });

    it('close is final and may be called twice; calls after it reject', async () => {
      const other = await make();
      await other.ping();
      await other.close();
      await expect(other.close()).resolves.toBeUndefined();
      await expect(other.query('SELECT 1')).rejects.toBeDefined();
      await expect(other.ping()).rejects.toBeDefined();
    });
  });
}
