// The JSON Schema of a workflow definition, published for editors (validation and autocompletion).
// Generated once from the same zod schemas that validate a definition when it is saved: the
// definition's structure (engine/definition-schema.ts) plus, per block type, the schema of its config.
import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { blockTypes, workflowDefinitionSchema } from '../engine/index.js';

export const DEFINITION_SCHEMA_PATH = '/api/v1/schemas/workflow-definition.json';

type JsonObject = Record<string, unknown>;

/**
 * The definition's JSON Schema (draft 2020-12, the input side: fields with defaults are optional).
 * A block's `type` is one of the registered types, and its `config` is checked against that type's
 * config schema, as the server does when a definition is saved.
 */
export function workflowDefinitionJsonSchema(): JsonObject {
  const schema = z.toJSONSchema(workflowDefinitionSchema, { io: 'input', target: 'draft-2020-12' }) as JsonObject;
  const blocks = (schema.properties as JsonObject).blocks as { items: { $ref: string } };
  const defs = schema.$defs as Record<string, JsonObject>;
  const refName = blocks.items.$ref.replace('#/$defs/', '');
  const block = defs[refName];
  const types = [...blockTypes.keys()];
  (block.properties as JsonObject).type = { type: 'string', enum: types, description: 'The block type' };
  block.allOf = types.map((type) => {
    const config = z.toJSONSchema(blockTypes.get(type)!.config, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as JsonObject;
    delete config.$schema;
    return { if: { properties: { type: { const: type } }, required: ['type'] }, then: { properties: { config } } };
  });
  // A readable name for the recursive block definition instead of zod's generated one.
  delete defs[refName];
  defs.block = block;
  const text = JSON.stringify(schema).replaceAll(`"#/$defs/${refName}"`, '"#/$defs/block"');
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'Weft workflow definition',
    description: 'A Weft workflow: blocks (containers hold child blocks) joined by edges. References such as <start.field> are resolved at run time.',
    ...(JSON.parse(text) as JsonObject),
  };
}

/** GET /api/v1/schemas/workflow-definition.json: public (no key), cacheable, ETag-checked. */
export function schemaRoutes(): FastifyPluginAsyncZod {
  return async (app) => {
    let cached: { body: string; etag: string } | undefined;
    app.get(DEFINITION_SCHEMA_PATH, {
      schema: {
        tags: ['workflows'],
        summary: 'JSON Schema of a workflow definition (for editors)',
        description: 'Generated from the zod schemas that validate a definition when it is saved. No API key needed.',
        security: [],
      },
      config: { auth: 'none' },
    }, async (request, reply) => {
      cached ??= (() => {
        const body = JSON.stringify(workflowDefinitionJsonSchema(), null, 2);
        return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
      })();
      reply.header('Cache-Control', 'public, max-age=3600').header('ETag', cached.etag);
      if (request.headers['if-none-match'] === cached.etag) return reply.code(304).send();
      return reply.type('application/schema+json; charset=utf-8').send(cached.body);
    });
  };
}
