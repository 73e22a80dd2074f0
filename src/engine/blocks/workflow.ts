// Workflow: runs a child workflow through the child-workflow port, one level deeper, in the run's tree.
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
    if (!ctx.ports.workflows) throw new Error('child workflows are not available in this context');
    if (ctx.depth >= MAX_WORKFLOW_DEPTH) {
      throw new Error(`maximum workflow nesting depth of ${MAX_WORKFLOW_DEPTH} reached`);
    }
    const workflowId = String(config.workflowId);
    const input = config.input !== null && typeof config.input === 'object' && !Array.isArray(config.input) ? config.input : {};
    // A child run of this run's tree: it shares this run's budgets (RunTree in run-tree.ts).
    const res = await ctx.runChild(workflowId, input);
    if (!res.success) throw new Error(`child workflow ${workflowId} failed: ${res.error ?? 'unknown error'}`);
    return { output: res.output === undefined ? null : res.output };
  },
});
