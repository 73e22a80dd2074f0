// Pure checks of the connectors' request building and document parsing (no database, no server).
import { describe, expect, it } from 'vitest';
import { derivedOperationId, parseDocument } from '../../src/connectors/openapi.js';
import { applyAuth, buildRequest } from '../../src/connectors/requests.js';
import { petDocument } from './fixtures.js';

describe('connector requests', async () => {
  const parsed = await parseDocument(petDocument('https://api.example.com/v1'));
  const op = (id: string) => parsed.operations.find((o) => o.operationId === id)!;

  it('derives stable operation ids from the method and path', () => {
    expect(derivedOperationId('GET', '/pets/{petId}/toys')).toBe('get_pets_petId_toys');
    expect(derivedOperationId('post', '/')).toBe('post_root');
    expect(parsed.serverUrl).toBe('https://api.example.com/v1');
  });

  it('fills path, query and header parameters, keeping the base path and encoding values', () => {
    const r = buildRequest('https://api.example.com/v1', op('getPet'), { petId: '12', fields: 'all', 'X-Trace': 'a b' }, undefined);
    expect(r).toEqual({ url: 'https://api.example.com/v1/pets/12?fields=all', method: 'GET', headers: { 'X-Trace': 'a b', accept: 'application/json' } });
  });

  it('refuses header values with line breaks and bodies for operations without one', () => {
    expect(() => buildRequest('https://x.test', op('getPet'), { petId: 1, 'X-Trace': 'a\r\nb' }, undefined)).toThrow('must not contain line breaks');
    expect(() => buildRequest('https://x.test', op('getPet'), { petId: 1 }, { a: 1 })).toThrow('takes no request body');
    expect(() => buildRequest('https://x.test', op('getPet'), 'petId=1', undefined)).toThrow('must be an object');
  });

  it('applies each kind of auth', () => {
    const base = buildRequest('https://x.test', op('getPet'), { petId: 1 }, undefined);
    expect(applyAuth(base, { type: 'bearer', secret: 'S' }, 'tok').headers.authorization).toBe('Bearer tok');
    expect(applyAuth(base, { type: 'basic', secret: 'S' }, 'u:p').headers.authorization).toBe(`Basic ${Buffer.from('u:p').toString('base64')}`);
    expect(applyAuth(base, { type: 'header', secret: 'S', name: 'X-Api-Key' }, 'k').headers['X-Api-Key']).toBe('k');
    expect(applyAuth(base, { type: 'query', secret: 'S', name: 'key' }, 'k v').url).toBe('https://x.test/pets/1?key=k+v');
    expect(() => applyAuth(base, { type: 'bearer', secret: 'S' }, 'a\nb')).toThrow('line break');
  });

  it('matches schema patterns in linear time: a pattern built to backtrack answers at once', () => {
    const withPattern = (pattern: string) => ({
      ...op('getPet'), params: [{ name: 'code', in: 'query' as const, required: true, schema: { type: 'string', pattern } }],
    });
    const redos = withPattern('^(a+)+$');
    // JavaScript's own engine would take longer than the universe has on this value; RE2 answers in linear time.
    expect(() => buildRequest('https://x.test', redos, { code: `${'a'.repeat(5000)}!` }, undefined)).toThrow('must match pattern');
    expect(buildRequest('https://x.test', redos, { code: 'aaaa' }, undefined).url).toContain('code=aaaa');
    const plain = withPattern('^[a-z]+$');
    expect(() => buildRequest('https://x.test', plain, { code: 'A1' }, undefined)).toThrow('must match pattern');
    // RE2 has no lookaround: such a pattern is left to the remote API.
    expect(buildRequest('https://x.test', withPattern('^(?!x).*$'), { code: 'xyz' }, undefined).url).toContain('code=xyz');
  });

  it('leaves schemas too large to compile quickly to the remote API', () => {
    const properties = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`p${i}`, { type: 'integer' }]));
    const huge = { ...op('getPet'), params: [{ name: 'q', in: 'query' as const, required: true, schema: { type: 'object', properties } }] };
    expect(buildRequest('https://x.test', huge, { q: { p1: 'not an integer' } }, undefined).url).toContain('q=');
    const small = { ...op('getPet'), params: [{ name: 'q', in: 'query' as const, required: true, schema: { type: 'object', properties: { p1: { type: 'integer' } } } }] };
    expect(() => buildRequest('https://x.test', small, { q: { p1: 'not an integer' } }, undefined)).toThrow('must be integer');
  });
});
