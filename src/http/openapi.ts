// Zod schemas published as named OpenAPI components. A recursive schema must be one of them: the
// workflow block (containers hold child blocks) refers to itself, and without a component to point at
// its `$ref` would dangle, which OpenAPI tools (Swagger UI, generators such as openapi-typescript) refuse.
import { z } from 'zod';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { workflowDefinitionSchema } from '../engine/index.js';

const schemaRegistry = z.registry<{ id: string }>();
// Components `WorkflowBlockInput` (request bodies) and `WorkflowBlock` (responses).
schemaRegistry.add(workflowDefinitionSchema.shape.blocks.element, { id: 'WorkflowBlock' });

/** `transform` and `transformObject` of @fastify/swagger: route schemas to JSON Schema, plus the components. */
export const openapiTransforms = {
  transform: createJsonSchemaTransform({ schemaRegistry }),
  transformObject: createJsonSchemaTransformObject({ schemaRegistry }),
};
