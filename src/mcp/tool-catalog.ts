// The tools of a workspace: one per deployed workflow, named by tool-names.ts, its input schema from the
// start block of the active (deployed) version, its description from the workflow's.
//
// A catalog is made per HTTP request and read at most once by it: every message of a batch (and the
// admission that prices them) shares the one read of the workspace's workflows. Listing loads every active
// version; finding one tool by name loads only that tool's version.
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
/** Every name assignToolNames gives matches this: anything else is no tool, known without a read. */
const TOOL_NAME = /^[a-z0-9_]{1,64}$/;

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

interface NameIndex {
  /** Deployed workflows in creation order, each with its tool name. */
  deployed: { name: string; workflow: WorkflowRow }[];
  byName: Map<string, WorkflowRow>;
}

/** One request's view of a workspace's tools: the workflows are read once, on first use. */
export class ToolCatalog {
  private index?: Promise<NameIndex>;
  private readonly built = new Map<string, Promise<WorkflowTool | undefined>>();

  constructor(private readonly workflows: WorkflowService, private readonly workspaceId: string) {}

  private names(): Promise<NameIndex> {
    this.index ??= allWorkflows(this.workflows, this.workspaceId).then((rows) => {
      const names = assignToolNames(rows.map((w) => ({ id: w.id, name: w.name, createdAt: w.created_at })));
      const deployed = rows.filter((w) => w.active_version_id).map((w) => ({ name: names.get(w.id) ?? w.id, workflow: w }));
      return { deployed, byName: new Map(deployed.map((d) => [d.name, d.workflow])) };
    });
    return this.index;
  }

  /** The tool of a deployed workflow (undefined when its active version cannot be read). */
  private tool(name: string, w: WorkflowRow): Promise<WorkflowTool | undefined> {
    let tool = this.built.get(w.id);
    if (!tool) {
      tool = this.workflows.activeVersion(w).then((version) => {
        if (!version) return undefined;
        const fields = declaredFields(version.definition);
        return { name, title: w.name, description: describe(w), inputSchema: inputSchema(fields), workflow: w, fields };
      });
      this.built.set(w.id, tool);
    }
    return tool;
  }

  /** The workspace's tools, in workflow creation order. */
  async list(): Promise<WorkflowTool[]> {
    const tools: WorkflowTool[] = [];
    // One version at a time (most are cached in memory): a large workspace sends no burst of reads.
    for (const d of (await this.names()).deployed) {
      const tool = await this.tool(d.name, d.workflow);
      if (tool) tools.push(tool);
    }
    return tools;
  }

  /** The tool with this name, undefined when no deployed workflow of the workspace has it. */
  async find(name: string): Promise<WorkflowTool | undefined> {
    if (!TOOL_NAME.test(name)) return undefined;
    const w = (await this.names()).byName.get(name);
    return w ? this.tool(name, w) : undefined;
  }
}
