// `{{NAME}}` secret references in a definition: the names it uses (which deployed workflows a deleted
// secret breaks) and the save-time check that every one is set in the workspace.
import { formatPath, label } from './definition-schema.js';
import { collectTokens } from './references.js';
import type { BlockDefinition, DefinitionIssue, WorkflowDefinition } from './types.js';

const noHeads = () => false;

function eachBlock(blocks: readonly BlockDefinition[], path: (string | number)[], visit: (b: BlockDefinition, path: (string | number)[]) => void): void {
  blocks.forEach((b, i) => {
    const at = [...path, 'blocks', i];
    visit(b, at);
    if (Array.isArray(b.blocks)) eachBlock(b.blocks, at, visit);
  });
}

/** Every secret reference of every block's config, with where it is. */
function secretTokens(definition: WorkflowDefinition): { block: BlockDefinition; blockPath: (string | number)[]; sub: (string | number)[]; name: string }[] {
  const found: { block: BlockDefinition; blockPath: (string | number)[]; sub: (string | number)[]; name: string }[] = [];
  eachBlock(Array.isArray(definition.blocks) ? definition.blocks : [], [], (block, blockPath) => {
    for (const { path: sub, token } of collectTokens(block.config ?? {}, noHeads)) {
      if (token.kind === 'secret') found.push({ block, blockPath, sub, name: token.name });
    }
  });
  return found;
}

/** The names of the secrets a definition references. */
export function secretReferences(definition: WorkflowDefinition): Set<string> {
  return new Set(secretTokens(definition).map((t) => t.name));
}

/** One issue per reference to a secret not in `known`, naming the block, the field and the secret. */
export function unknownSecretIssues(definition: WorkflowDefinition, known: ReadonlySet<string>): DefinitionIssue[] {
  return secretTokens(definition)
    .filter((t) => !known.has(t.name))
    .map((t) => {
      const field = formatPath(['config', ...t.sub]);
      return {
        message: `${label(t.block)}: unknown secret {{${t.name}}} in ${field} (no secret named ${t.name} in this workspace; set it with PUT /api/v1/secrets/${t.name})`,
        blockId: t.block.id,
        field,
        path: [...t.blockPath, 'config', ...t.sub],
      };
    });
}
