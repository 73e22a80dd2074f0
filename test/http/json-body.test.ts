import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_MEMBERS, mayHoldProtoKey, registerJsonParser, scanJson } from '../../src/http/json-body.js';

// The JSON body parser on its own Fastify instance, whose route answers what the parser produced: the own keys
// of the body (at every level) and whether any object of it got another prototype.
describe('JSON bodies', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 });
    registerJsonParser(app);
    app.post('/echo', async (request) => {
      const keys: string[] = [];
      let foreignPrototype = false;
      const walk = (v: unknown, path: string) => {
        if (v === null || typeof v !== 'object') return;
        const proto: unknown = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== Array.prototype) foreignPrototype = true;
        for (const k of Object.getOwnPropertyNames(v)) {
          if (!Array.isArray(v)) keys.push(`${path}${k}`);
          walk((v as Record<string, unknown>)[k], `${path}${k}.`);
        }
      };
      walk(request.body, '');
      return { keys, foreignPrototype };
    });
    await app.ready();
  });
  afterAll(() => app.close());

  const post = (payload: string) => app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload });

  it('parses a body and keeps its keys', async () => {
    const r = await post('{"a":1,"b":{"c":[{"d":true}]}}');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ keys: ['a', 'b', 'b.c', 'b.c.0.d'], foreignPrototype: false });
  });

  it('drops __proto__ keys, spelled out or written with \\u escapes, at any depth', async () => {
    for (const key of ['__proto__', '\\u005f_proto__', '\\u005F\\u005Fproto\\u005f\\u005f', '__\\u0070roto__']) {
      const r = await post(`{"a":1,"${key}":{"polluted":true},"n":{"${key}":{"x":1},"b":2}}`);
      expect(r.statusCode, key).toBe(200);
      expect(r.json(), key).toEqual({ keys: ['a', 'n', 'n.b'], foreignPrototype: false });
    }
  });

  it('takes the reviver only for texts that can hold such a key', () => {
    expect(mayHoldProtoKey('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}')).toBe(false);
    expect(mayHoldProtoKey('{"__proto__":{}}')).toBe(true);
    expect(mayHoldProtoKey('{"\\u005f_proto__":{}}')).toBe(true);
    expect(mayHoldProtoKey('{"path":"C:\\\\users"}')).toBe(true); // an escaped backslash before a u: the safe, slower path
  });

  it('answers 400 for malformed JSON and for nesting deeper than the limit', async () => {
    expect((await post('{"a":')).statusCode).toBe(400);
    expect((await post('['.repeat(100) + ']'.repeat(100))).statusCode).toBe(400);
  });

  it('refuses a body of more members than the limit with 413, before parsing it', async () => {
    const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
    expect((await post(members(MAX_JSON_MEMBERS - 1))).statusCode).toBe(200);
    const wide = await post(members(MAX_JSON_MEMBERS + 1));
    expect(wide.statusCode).toBe(413);
    expect(wide.json().message).toMatch(/members/);
    expect((await post(`[${'0,'.repeat(MAX_JSON_MEMBERS)}0]`)).statusCode).toBe(413);
  });

  it('refuses strings the databases cannot store (NUL, an unpaired surrogate) with 400, and keeps pairs and escaped backslashes', async () => {
    for (const bad of [String.raw`"\u0000"`, String.raw`"a\ud800"`, String.raw`"\udc00b"`, String.raw`"\ud800\u0041"`]) {
      const r = await post(`{"a":${bad}}`);
      expect(r.statusCode, bad).toBe(400);
      expect(r.json().message, bad).toMatch(/cannot be stored/);
    }
    // A pair, a backslash followed by the text u0000, an ordinary escape.
    for (const good of [String.raw`"\ud83d\ude00"`, String.raw`"\\u0000"`, String.raw`"\u00e9"`]) {
      expect((await post(`{"a":${good}}`)).statusCode, good).toBe(200);
    }
  });

  it('scans depth, members and unstorable escapes in one pass', () => {
    expect(scanJson('{"a":[1,2,{"b":"}]"}]}')).toEqual({ depth: 3, members: 5, unstorable: false });
    expect(scanJson(String.raw`["\u0000"]`).unstorable).toBe(true);
    expect(scanJson(String.raw`["\\u0000"]`).unstorable).toBe(false);
    expect(scanJson(String.raw`["\uD83D\uDE00", "\uDBFF\uDFFF"]`).unstorable).toBe(false);
    expect(scanJson(String.raw`["\uD83D"]`).unstorable).toBe(true);
  });
});
