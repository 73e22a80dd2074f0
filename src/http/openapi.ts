// Zod schemas published as named OpenAPI components. A recursive schema must be one of them: the
// workflow block (containers hold child blocks) refers to itself, and without a component to point at
// its `$ref` would dangle, which OpenAPI tools (Swagger UI, generators such as openapi-typescript) refuse.
import { z } from 'zod';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { workflowDefinitionSchema } from '../engine/index.js';

const schemaRegistry = z.registry<{ id: string }>();
// Components `WorkflowBlockInput` (request bodies) and `WorkflowBlock` (responses).
schemaRegistry.add(workflowDefinitionSchema.shape.blocks.element, { id: 'WorkflowBlock' });

const withComponents = createJsonSchemaTransformObject({ schemaRegistry });

interface OperationLike { requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> } }

/** A JSON Schema that accepts null (a Zod `.nullish()` body): the body may be left out. */
function acceptsNull(schema: unknown): boolean {
  const s = schema as { type?: unknown; anyOf?: unknown[]; oneOf?: unknown[] } | undefined;
  if (!s) return false;
  if (s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null'))) return true;
  return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some(acceptsNull);
}

/**
 * @fastify/swagger marks every request body required; a route whose body schema accepts null (deploy,
 * rollback: a POST without a body, as the reference takes them) gets an optional one, so generated clients
 * (clients/ts) may leave it out.
 */
function optionalNullableBodies(document: ReturnType<typeof withComponents>): ReturnType<typeof withComponents> {
  const paths = (document as { paths?: Record<string, Record<string, OperationLike>> }).paths ?? {};
  for (const operations of Object.values(paths)) {
    for (const op of Object.values(operations)) {
      const body = op?.requestBody;
      if (body?.required && Object.values(body.content ?? {}).some((media) => acceptsNull(media.schema))) body.required = false;
    }
  }
  return document;
}

/** `transform` and `transformObject` of @fastify/swagger: route schemas to JSON Schema, plus the components. */
export const openapiTransforms = {
  transform: createJsonSchemaTransform({ schemaRegistry }),
  transformObject: (input: Parameters<typeof withComponents>[0]) => optionalNullableBodies(withComponents(input)),
};
