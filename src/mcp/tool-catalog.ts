// The tools of a workspace: one per deployed workflow, named by tool-names.ts, its input schema from the
// start block of the active (deployed) version, its description from the workflow's.
//
// A catalog is made per HTTP request and read at most once by it: every message of a batch (and the
// admission that prices them) shares the one read of the workspace's workflows. Listing loads the active
// versions of one page of tools; finding one tool by name loads only that tool's version.
//
// A tool's schema is its start block's input format, which a definition of up to 2 MB can fill: three hundred
// such tools made one answer of 570 MB (past V8's longest string: the client got an empty answer after 25 s,
// and the server's memory grew by 1.1 GB). So pages are bounded by the bytes of the tools they hold, and so is
// everything one HTTP request lists (a batch may hold a hundred tools/list messages).
import { declaredFields } from '../engine/index.js';
import { measureJson } from '../engine/json-size.js';
import { decodeCursor, encodeCursor, type CursorKey } from '../http/pagination.js';
import type { WorkflowService, WorkflowRow } from '../workflows/service.js';
import { assignToolNames } from './tool-names.js';
import { inputSchema, type ToolInputSchema } from './tool-input.js';

export interface WorkflowTool {
  name: string;
  title: string;
  description: string;
  inputSchema: ToolInputSchema;
  workflow: WorkflowRow;
  fields: ReturnType<typeof declaredFields>;
}

const PAGE = 500;
/**
 * JSON bytes of the tools one HTTP request lists, all its tools/list messages together. A page stops before the
 * tool that would pass it (it holds at least one tool) and answers `nextCursor`; a smaller tool list is one page.
 */
export const MAX_LISTED_TOOL_BYTES = 8 * 1024 * 1024;

/** A tools/list cursor this server did not give (the route answers it as invalid params). */
export class InvalidToolCursor extends Error {}

/** A tools/list message after the request's others listed MAX_LISTED_TOOL_BYTES (the route answers an error). */
export class ToolListBudgetSpent extends Error {}

const keyOf = (w: WorkflowRow): CursorKey => ({ t: w.created_at.toISOString(), id: w.id });
/** Creation order, as `workflows.list` pages (created_at is kept to the millisecond). */
const after = (w: WorkflowRow, key: CursorKey): boolean => {
  const t = w.created_at.toISOString();
  return t > key.t || (t === key.t && w.id > key.id);
};

function parseCursor(cursor: string): CursorKey {
  try {
    const key = decodeCursor(cursor);
    if (key) return key;
  } catch {
    // not one of ours: answered below as invalid params, not as an HTTP error
  }
  throw new InvalidToolCursor('Invalid cursor: pass the nextCursor of the previous tools/list answer');
}
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

  /**
   * A page of the workspace's tools, in workflow creation order, from after `cursor` (a `nextCursor` of an earlier
   * page); `nextCursor` when more follow. At most MAX_LISTED_TOOL_BYTES for the whole request (one tool bigger
   * than that alone is a page of its own): a page that would hold no tool within it is ToolListBudgetSpent.
   */
  async list(cursor?: string): Promise<{ tools: WorkflowTool[]; nextCursor?: string }> {
    const from = cursor === undefined ? undefined : parseCursor(cursor);
    const { deployed } = await this.names();
    const rest = from ? deployed.filter((d) => after(d.workflow, from)) : deployed;
    if (rest.length > 0 && this.listedBytes >= MAX_LISTED_TOOL_BYTES) throw this.spent();
    const tools: WorkflowTool[] = [];
    // One version at a time (most are cached in memory): a large workspace sends no burst of reads.
    for (let i = 0; i < rest.length; i++) {
      const tool = await this.tool(rest[i].name, rest[i].workflow);
      if (!tool) continue;
      const bytes = measureJson([tool.name, tool.title, tool.description, tool.inputSchema], MAX_LISTED_TOOL_BYTES).bytes;
      // A tool bigger than the bound alone still gets a page, the request's first; the messages of a batch run at
      // once, so the budget is read again here, after each await.
      if (this.listedBytes + bytes > MAX_LISTED_TOOL_BYTES && this.listedBytes > 0) {
        if (tools.length === 0) throw this.spent();
        return { tools, nextCursor: encodeCursor(keyOf(rest[i - 1].workflow)) };
      }
      this.listedBytes += bytes;
      tools.push(tool);
    }
    return { tools };
  }

  /** Bytes of tools this request's tools/list messages answered so far. */
  private listedBytes = 0;

  private spent(): ToolListBudgetSpent {
    return new ToolListBudgetSpent(`This request's tools/list answers already hold ${MAX_LISTED_TOOL_BYTES} bytes of tools: ask for the next page in a request of its own`);
  }

  /** The tool with this name, undefined when no deployed workflow of the workspace has it. */
  async find(name: string): Promise<WorkflowTool | undefined> {
    if (!TOOL_NAME.test(name)) return undefined;
    const w = (await this.names()).byName.get(name);
    return w ? this.tool(name, w) : undefined;
  }
}
