// The tools of a workspace: one per deployed workflow, named by tool-names.ts, its input schema from the
// start block of the active (deployed) version, its description from the workflow's.
import type { WorkflowService, WorkflowRow } from '../workflows/service.js';
import { assignToolNames } from './tool-names.js';
import { declaredFields, inputSchema, type ToolInputSchema } from './tool-input.js';

export interface WorkflowTool {
  name: string;
  title: string;
  description: string;
  inputSchema: ToolInputSchema;
  workflow: WorkflowRow;
  fields: ReturnType<typeof declaredFields>;
}

const PAGE = 500;

/** Every workflow of a workspace, oldest first (names are assigned over all of them, deployed or not). */
async function allWorkflows(workflows: WorkflowService, workspaceId: string): Promise<WorkflowRow[]> {
  const out: WorkflowRow[] = [];
  let after: { t: string; id: string } | undefined;
  for (;;) {
    const page = await workflows.list(workspaceId, PAGE, after);
    out.push(...page);
    if (page.length < PAGE) return out;
    const last = page[page.length - 1];
    after = { t: last.created_at.toISOString(), id: last.id };
  }
}

function describe(w: WorkflowRow): string {
  const own = w.description.trim();
  return own || `Runs the deployed workflow "${w.name}" and answers with its output.`;
}

/** The workspace's tools, in workflow creation order. */
export async function workspaceTools(workflows: WorkflowService, workspaceId: string): Promise<WorkflowTool[]> {
  const rows = await allWorkflows(workflows, workspaceId);
  const names = assignToolNames(rows.map((w) => ({ id: w.id, name: w.name, createdAt: w.created_at })));
  const tools: WorkflowTool[] = [];
  for (const w of rows) {
    if (!w.active_version_id) continue;
    const version = await workflows.activeVersion(w);
    if (!version) continue;
    const fields = declaredFields(version.definition);
    tools.push({
      name: names.get(w.id) ?? w.id,
      title: w.name,
      description: describe(w),
      inputSchema: inputSchema(fields),
      workflow: w,
      fields,
    });
  }
  return tools;
}
