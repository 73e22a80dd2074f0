// The block type registry: one list. Other areas add types (table, agent, router, evaluator,
// knowledge) with registerBlockType; they reach their port through ctx.ports[name].
import type { AnyBlockType } from '../block-type.js';
import { agentBlock } from './agent.js';
import { evaluatorBlock } from './evaluator.js';
import { routerBlock } from './router.js';
import { conditionBlock } from './condition.js';
import { functionBlock } from './function.js';
import { httpBlock } from './http.js';
import { humanBlock } from './human.js';
import { loopBlock } from './loop.js';
import { parallelBlock } from './parallel.js';
import { responseBlock } from './response.js';
import { startBlock } from './start.js';
import { tableBlock } from './table.js';
import { variablesBlock } from './variables.js';
import { waitBlock } from './wait.js';
import { workflowBlock } from './workflow.js';

const builtIn: AnyBlockType[] = [
  startBlock,
  functionBlock,
  conditionBlock,
  httpBlock,
  responseBlock,
  variablesBlock,
  waitBlock,
  loopBlock,
  parallelBlock,
  workflowBlock,
  humanBlock,
  tableBlock,
  agentBlock,
  routerBlock,
  evaluatorBlock,
];

/** All known block types by type name. */
export const blockTypes: ReadonlyMap<string, AnyBlockType> = new Map(builtIn.map((t) => [t.type, t]));

/** Adds (or replaces) a block type. Definitions compiled afterwards can use it. */
export function registerBlockType(type: AnyBlockType): void {
  (blockTypes as Map<string, AnyBlockType>).set(type.type, type);
}
