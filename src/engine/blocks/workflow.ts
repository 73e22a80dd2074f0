// Workflow: runs a child workflow through the child-workflow port, one level deeper.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

export const MAX_WORKFLOW_DEPTH = 10;

export const workflowConfigSchema = z.strictObject({
  workflowId: z.string().min(1),
  input: z.record(z.string(), z.unknown()).optional(),
});

export type WorkflowConfig = z.infer<typeof workflowConfigSchema>;

export const workflowBlock = defineBlockType<WorkflowConfig>({
  type: 'workflow',
  config: workflowConfigSchema,
  async run(ctx, config) {
    const port = ctx.ports.workflows;
    if (!port) throw new Error('child workflows are not available in this context');
    if (ctx.depth >= MAX_WORKFLOW_DEPTH) {
      throw new Error(`maximum workflow nesting depth of ${MAX_WORKFLOW_DEPTH} reached`);
    }
    const workflowId = String(config.workflowId);
    const input = config.input !== null && typeof config.input === 'object' && !Array.isArray(config.input) ? config.input : {};
    const res = await port.run(workflowId, input, { depth: ctx.depth + 1, signal: ctx.signal });
    if (!res.success) throw new Error(`child workflow ${workflowId} failed: ${res.error ?? 'unknown error'}`);
    return { output: res.output === undefined ? null : res.output };
  },
});
