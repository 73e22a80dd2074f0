import { z } from 'zod';

/** Shared zod pieces for route schemas. */
export const errorSchema = z.object({ error: z.string() }).passthrough().describe('Error');
export const validationErrorSchema = z
  .object({ error: z.string(), details: z.array(z.unknown()).optional() })
  .passthrough()
  .describe('Validation error');

export const errorResponses = {
  400: validationErrorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
} as const;

export const uuidParam = (what: string) => z.string().min(1).max(128).describe(`${what} id`);
export const workspaceIdQuery = z.object({ workspaceId: z.string().min(1).max(128) });
export const limitParam = (def: number, max: number) => z.coerce.number().int().min(1).max(max).default(def);
