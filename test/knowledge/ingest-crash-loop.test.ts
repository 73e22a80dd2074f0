import { describe, expect, it } from 'vitest';
import { freePort, spawnServer } from '../support/cli.js';
import { bootstrappedDatabase, request } from '../support/harness.js';
import { bigCsv } from './hostile-files.js';

/**
 * A document that keeps crashing what parses it must not be replayed into a crash loop by a restart. The
 * first server parses a CSV that exhausts its worker's small heap, again and again (retries allowed), and is
 * killed (SIGKILL) once a crash was logged: the crashed parses were counted on the row and committed before
 * each started. The restarted server, allowed no retry, fails the document without parsing it again.
 */
describe('a document that crashed its parser, across a restart', () => {
  it('is failed after the restart instead of parsed again', async () => {
    const { workspaceId, apiKey, env: base } = await bootstrappedDatabase();
    const env = { ...base, LOG_LEVEL: 'warn', WEFT_KNOWLEDGE_WORKER_HEAP_MB: '48', WEFT_KNOWLEDGE_MAX_ROWS: '100000000', WEFT_KNOWLEDGE_MAX_CHARACTERS: '1000000000' };
    const headers = { 'x-api-key': apiKey };
    let server = await spawnServer({ ...env, WEFT_KNOWLEDGE_MAX_CRASH_RETRIES: '100' }, await freePort());
    try {
      const kb = await request(`${server.url}/api/v1/knowledge`, 'POST', { workspaceId, name: 'crash-loop' }, headers);
      expect(kb.status, kb.text).toBe(200);
      const baseId: string = kb.body.data.knowledgeBase.id;
      const form = new FormData();
      form.set('workspaceId', workspaceId);
      form.append('file', new Blob([bigCsv(1_000_000)]), 'huge.csv');
      const up = await fetch(`${server.url}/api/v1/knowledge/${baseId}/documents`, { method: 'POST', body: form, headers });
      expect(up.status).toBe(200);
      const docId: string = ((await up.json()) as { data: { document: { id: string } } }).data.document.id;

      const deadline = Date.now() + 120_000;
      while (!server.output().includes('a document crashed its ingest worker')) {
        if (Date.now() > deadline) throw new Error(`no worker crash logged:\n${server.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));

      server = await spawnServer({ ...env, WEFT_KNOWLEDGE_MAX_CRASH_RETRIES: '0' }, await freePort());
      const url = `${server.url}/api/v1/knowledge/${baseId}/documents/${docId}?workspaceId=${workspaceId}`;
      let doc: any;
      const until = Date.now() + 60_000;
      for (;;) {
        doc = (await request(url, 'GET', undefined, headers)).body.data.document;
        if (doc.processingStatus === 'completed' || doc.processingStatus === 'failed') break;
        if (Date.now() > until) throw new Error(`still ${doc.processingStatus}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(doc.processingStatus).toBe('failed');
      expect(doc.processingError).toMatch(/^Processing crashed repeatedly \(\d+ times\): the document needs more memory than WEFT_KNOWLEDGE_WORKER_HEAP_MB \(48 MB\) allows/);
      // Failed from the count alone: the restarted server never started a parse of it.
      expect(server.output()).not.toContain('a document crashed its ingest worker');
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 240_000);
});
