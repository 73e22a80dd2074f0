// Paused runs and their pause points: listed through the logs API (status=paused), each read through
// GET /api/resume/{workflowId}/{executionId}, answered through POST /api/resume/.../{contextId}.
import { api } from '../../api/client';
import type { LogRecord } from '../runs/api';

// The server publishes the paused record and the resume answer as open objects (their content depends on
// the paused blocks), so their fields are declared here; the routes and the log records are typed by the
// generated schema.

export type FieldType = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'files';
export interface HumanField { name: string; type: FieldType; required?: boolean; description?: string }
export interface HumanResponse { message?: string | null; fields?: HumanField[]; timeoutSeconds?: number; onTimeout?: 'approve' | 'fail' }

export interface PausePoint {
  contextId: string; blockId: string; registeredAt: string;
  /** The human block's answer as the reference service shapes it: its form in `data`. */
  response: { data?: HumanResponse } | null;
  resumeStatus: 'paused' | 'resuming' | 'queued' | 'resumed' | 'failed' | string;
  queuePosition: number | null;
  loopScope?: { loopId: string; iteration: number };
  parallelScope?: { parallelId: string; branchIndex: number; branchTotal: number };
}
export interface PausedExecution {
  id: string; workflowId: string; executionId: string; status: string; pausedAt: string;
  totalPauseCount: number; resumedCount: number; pausePoints: PausePoint[];
  executionSnapshot?: { snapshot?: string };
}

/** The run's input, read from the paused record's snapshot (a JSON string holding {input, ...}). */
export function runInput(p: PausedExecution): Record<string, unknown> | null {
  try {
    const snap = JSON.parse(p.executionSnapshot?.snapshot ?? '') as { input?: unknown };
    return snap.input && typeof snap.input === 'object' && !Array.isArray(snap.input) ? (snap.input as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export interface Approval { log: LogRecord; paused: PausedExecution }

/** Paused runs of the workspace (newest first), one page, each with its pause record. */
export async function listApprovals(workspaceId: string, cursor?: string): Promise<{ items: Approval[]; nextCursor?: string }> {
  const page = await api('/api/v1/logs', {
    query: { workspaceId, status: 'paused', limit: '20', ...(cursor ? { cursor } : {}) },
  });
  const items = await Promise.all(page.data.map(async (log) => {
    try {
      const paused = await api('/api/resume/{workflowId}/{executionId}', { params: { workflowId: log.workflowId, executionId: log.executionId } });
      return { log, paused: paused as unknown as PausedExecution };
    } catch {
      // Resumed or cancelled between the two reads: nothing left to answer.
      return null;
    }
  }));
  return { items: items.filter((i): i is Approval => i !== null), nextCursor: page.nextCursor };
}

export interface ResumeAnswer {
  status?: string; executionId?: string; success?: boolean; error?: string; queuePosition?: number; jobId?: string; message?: string;
}

export function resume(workflowId: string, executionId: string, contextId: string, input: Record<string, unknown>): Promise<ResumeAnswer> {
  return api('/api/resume/{workflowId}/{executionId}/{contextId}', {
    method: 'post', params: { workflowId, executionId, contextId }, body: { input },
  }) as Promise<ResumeAnswer>;
}

/** Form text to the field's type; an error message when it does not convert. Empty means "not given". */
export function convertField(field: HumanField, raw: string | boolean): { value?: unknown; error?: string } {
  if (typeof raw === 'boolean') return { value: raw };
  const text = raw.trim();
  if (text === '') return field.required ? { error: `${field.name} is required` } : {};
  switch (field.type) {
    case 'number': {
      const n = Number(text);
      return Number.isFinite(n) ? { value: n } : { error: `${field.name} must be a number` };
    }
    case 'object':
    case 'array':
    case 'files': {
      try {
        const v = JSON.parse(text) as unknown;
        const isArray = Array.isArray(v);
        if (field.type === 'object' ? isArray || v === null || typeof v !== 'object' : !isArray) {
          return { error: `${field.name} must be a JSON ${field.type === 'object' ? 'object' : 'array'}` };
        }
        return { value: v };
      } catch {
        return { error: `${field.name} must be valid JSON` };
      }
    }
    default:
      return { value: raw };
  }
}
