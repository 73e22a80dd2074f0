// Whom a run belongs to, apart from service.ts so the pause service (pauses.ts), which the execution
// service builds, can name it without importing the execution service back.

/** The workspace a run is in, the account it is billed to, and that workspace's plan. */
export interface RunContext {
  workspaceId: string;
  billedAccount: string;
  plan: string;
  /**
   * The stored execution id of the run, once it has one (set where a run executes): the ports record the
   * run's model usage against it (per-run cost). A child workflow runs under its parent's.
   */
  executionId?: string;
}
