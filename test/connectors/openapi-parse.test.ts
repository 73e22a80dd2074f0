// Connector documents are parsed on a worker thread (src/connectors/openapi-parse.ts). The main thread's parser
// is replaced here by one that throws, so a parse made on it would fail; the figures must still be the parser's.
import { describe, expect, it, vi } from 'vitest';
import { HttpError } from '../../src/http/errors.js';
import { parseDocumentOffThread } from '../../src/connectors/openapi-parse.js';
import { petDocument } from './fixtures.js';

vi.mock('../../src/connectors/openapi.js', () => ({
  parseDocument: () => {
    throw new Error('the OpenAPI parser ran on the event loop');
  },
}));

const doc = () => petDocument('http://127.0.0.1:9');

describe('parseDocumentOffThread', () => {
  it("gives the parser's operations, parsed on a worker thread", async () => {
    const parsed = await parseDocumentOffThread(doc(), 'ws');
    expect(parsed.operations.map((o) => `${o.operationId} ${o.method} ${o.path}`).sort()).toEqual(['createPet POST /pets', 'getPet GET /pets/{petId}', 'get_pets GET /pets']);
    const createPet = parsed.operations.find((o) => o.operationId === 'createPet');
    expect(createPet?.requestBody).toMatchObject({ type: 'object', required: ['name'] });
  });

  it("brings the parser's 400 back with its details", async () => {
    const bad = doc() as { paths: Record<string, Record<string, { parameters?: { in: string }[] }>> };
    bad.paths['/pets/{petId}'].get.parameters![1].in = 'nowhere';
    const err = await parseDocumentOffThread(bad, 'ws').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(400);
    expect((err as HttpError).message).toMatch(/^Invalid OpenAPI document: .*"in": "nowhere"/);
    expect((err as HttpError).extra.details?.length).toBeGreaterThan(0);
  });

  it('refuses a document it could not read within its time', async () => {
    // Starting the thread alone takes longer than 1 ms.
    const err = await parseDocumentOffThread(doc(), 'ws', 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).message).toContain('took longer than');
  });
});
