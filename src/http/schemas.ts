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
