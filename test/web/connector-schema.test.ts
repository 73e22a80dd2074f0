// The connector block's form schema (web/src/editor/connector-schema.ts): which parameter fields take a
// reference as text, and the order the fields are drawn in.
import { describe, expect, it } from 'vitest';
import { acceptingReferences, parametersForm } from '../../web/src/editor/connector-schema';

describe('acceptingReferences', () => {
  it('keeps strings, enums and booleans; numbers become a number or text', () => {
    expect(acceptingReferences({ type: 'string', description: 'Name' })).toEqual({ type: 'string', description: 'Name' });
    expect(acceptingReferences({ type: 'string', enum: ['a', 'b'] })).toEqual({ type: 'string', enum: ['a', 'b'] });
    expect(acceptingReferences({ type: 'boolean' })).toEqual({ type: 'boolean' });
    expect(acceptingReferences({ type: 'integer', minimum: 1, description: 'Page' })).toEqual({ anyOf: [{ type: 'string' }, { type: 'number' }], description: 'Page' });
  });

  it('lets objects, arrays and untyped values be JSON or text', () => {
    const tags = acceptingReferences({ type: 'array', items: { type: 'string' }, description: 'Tags' });
    expect(tags.description).toBe('Tags');
    expect(tags.anyOf?.map((s) => s.type)).toEqual(['array', 'string']);
    expect(acceptingReferences({}).anyOf?.map((s) => s.type)).toEqual([undefined, 'string']);
  });
});

describe('parametersForm', () => {
  it('puts path parameters first in path order, then required ones, then the rest by name', () => {
    const form = parametersForm({
      type: 'object',
      properties: { limit: { type: 'integer' }, petId: { type: 'string' }, ownerId: { type: 'string' }, apiVersion: { type: 'string' }, after: { type: 'string' } },
      required: ['petId', 'ownerId', 'apiVersion'],
    }, '/owners/{ownerId}/pets/{petId}');
    expect(Object.keys(form.properties ?? {})).toEqual(['ownerId', 'petId', 'apiVersion', 'after', 'limit']);
    expect(form.required).toEqual(['petId', 'ownerId', 'apiVersion']);
  });

  it('gives an operation without parameters an empty form', () => {
    expect(parametersForm({ type: 'object', properties: {} }, '/pets')).toEqual({ type: 'object', properties: {}, required: undefined });
  });
});
