// The block type registry: one list. Every type is a file in this folder; a type that needs a
// capability outside the engine reaches it through its typed port (ctx.ports.ai, .tables, ...).
import type { AnyBlockType } from '../block-type.js';
import { agentBlock } from './agent.js';
import { evaluatorBlock } from './evaluator.js';
import { routerBlock } from './router.js';
import { conditionBlock } from './condition.js';
import { connectorBlock } from './connector.js';
import { functionBlock } from './function.js';
import { httpBlock } from './http.js';
import { humanBlock } from './human.js';
import { knowledgeBlock } from './knowledge.js';
import { loopBlock } from './loop.js';
import { parallelBlock } from './parallel.js';
import { responseBlock } from './response.js';
import { scheduleBlock } from './schedule.js';
import { startBlock } from './start.js';
import { tableBlock } from './table.js';
import { variablesBlock } from './variables.js';
import { webhookBlock } from './webhook.js';
import { waitBlock } from './wait.js';
import { workflowBlock } from './workflow.js';

const builtIn: AnyBlockType[] = [
  startBlock,
  webhookBlock,
  scheduleBlock,
  functionBlock,
  conditionBlock,
  httpBlock,
  connectorBlock,
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
  knowledgeBlock,
];

/** All known block types by type name. */
export const blockTypes: ReadonlyMap<string, AnyBlockType> = new Map(builtIn.map((t) => [t.type, t]));

