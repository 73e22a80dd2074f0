// The workflow a run ran, as the logs API shows it (GET /api/v1/logs/executions/{id}): its definition with
// credentials typed into block settings replaced. Workspace secrets are referenced as {{NAME}} and never
// stored in a definition, but nothing stops a user from pasting a token into an HTTP block's header; a log
// reader with the read role should not learn it from a run's snapshot.
import type { BlockDefinition, WorkflowDefinition } from '../engine/index.js';

export const REDACTED = '[REDACTED]';

/** Setting names whose values are credentials (matched case-insensitively, ignoring `-` and `_`). */
const CREDENTIAL_NAME = /(apikey|token|secret|password|passwd|authorization|credential|privatekey|clientsecret|cookie)$/;

/** A value that only references workspace secrets or other blocks' outputs, with nothing typed in. */
const REFERENCE_ONLY = /^\s*(\{\{[^{}]+\}\}|<[^<>]+>)\s*$/;

function redactValue(value: unknown, depth: number): unknown {
  if (depth > 64) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const credential = CREDENTIAL_NAME.test(key.toLowerCase().replace(/[-_\s]/g, ''));
    // {key, value} pairs (headers and query parameters as lists) name the credential in `key`.
    const pairName = typeof (value as { key?: unknown }).key === 'string' ? (value as { key: string }).key : undefined;
    const pairCredential = key === 'value' && pairName !== undefined && CREDENTIAL_NAME.test(pairName.toLowerCase().replace(/[-_\s]/g, ''));
    out[key] = (credential || pairCredential) && typeof v === 'string' && v !== '' && !REFERENCE_ONLY.test(v) ? REDACTED : redactValue(v, depth + 1);
  }
  return out;
}

function redactBlock(block: BlockDefinition): BlockDefinition {
  return {
    ...block,
    config: redactValue(block.config, 0) as Record<string, unknown>,
    ...(block.blocks ? { blocks: block.blocks.map(redactBlock) } : {}),
  };
}

/** `definition` with typed-in credentials in its blocks' settings and its variables replaced by `[REDACTED]`; the original is untouched. */
export function redactedWorkflowState(definition: WorkflowDefinition): WorkflowDefinition {
  return {
    ...definition,
    blocks: definition.blocks.map(redactBlock),
    ...(definition.variables ? { variables: redactValue(definition.variables, 0) as Record<string, unknown> } : {}),
  };
}
