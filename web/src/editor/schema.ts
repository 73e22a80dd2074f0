// Reading the published definition JSON Schema (GET /api/v1/schemas/workflow-definition.json): the
// block types and each type's config schema, which drive the palette and the generated forms.

/** The subset of JSON Schema the server's zod schemas produce. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  $ref?: string;
}

export interface BlockTypeInfo {
  type: string;
  config: JsonSchema;
}

/** Block types in the order the server lists them, each with its config schema. */
export function blockTypesOf(definitionSchema: Record<string, unknown>): BlockTypeInfo[] {
  const defs = (definitionSchema.$defs ?? {}) as Record<string, { properties?: Record<string, JsonSchema>; allOf?: unknown[] }>;
  const block = defs.block;
  const types = (block?.properties?.type?.enum ?? []) as string[];
  const configs = new Map<string, JsonSchema>();
  for (const rule of (block?.allOf ?? []) as { if?: { properties?: { type?: { const?: string } } }; then?: { properties?: { config?: JsonSchema } } }[]) {
    const t = rule.if?.properties?.type?.const;
    const c = rule.then?.properties?.config;
    if (t && c) configs.set(t, c);
  }
  return types.map((type) => ({ type, config: configs.get(type) ?? { type: 'object' } }));
}

/** What each block type is for, shown in the palette (the schema says what it takes). */
export const BLOCK_HELP: Record<string, string> = {
  start: 'Typed input of an API run',
  webhook: 'Entry for webhook deliveries',
  schedule: 'Entry for cron or interval runs',
  function: 'JavaScript in a sandbox',
  condition: 'Branch on expressions',
  http: 'Call an HTTP endpoint',
  response: 'Set the HTTP answer',
  variables: 'Set run variables',
  wait: 'Pause for a while',
  loop: 'Repeat the blocks inside',
  parallel: 'Run the blocks inside in branches',
  workflow: 'Run another workflow',
  human: 'Wait for a person to answer',
  table: 'Query or change a table',
  agent: 'Language model with tools',
  router: 'Language model picks a route',
  evaluator: 'Language model scores content',
  knowledge: 'Search knowledge bases',
  connector: 'Call an operation of a connector',
};

/** Types the palette lists in their own way (connector operations come from the workspace's connectors). */
export const PALETTE_HIDDEN = new Set(['connector']);

export const PALETTE_GROUPS: { label: string; types: string[] }[] = [
  { label: 'Triggers', types: ['start', 'webhook', 'schedule'] },
  { label: 'Logic', types: ['function', 'condition', 'variables', 'wait', 'response'] },
  { label: 'Containers', types: ['loop', 'parallel'] },
  { label: 'Integrations', types: ['http', 'workflow', 'human', 'table', 'knowledge'] },
  { label: 'AI', types: ['agent', 'router', 'evaluator'] },
];

/** A starting config for a new block: required fields filled with something valid-looking. */
export function initialConfig(type: string, schema: JsonSchema): Record<string, unknown> {
  switch (type) {
    case 'start': return { inputFormat: [{ name: 'message', type: 'string' }] };
    case 'function': return { code: 'return { result: 1 }' };
    case 'condition': return { conditions: [{ id: 'yes', expression: 'true' }, { id: 'else' }] };
    case 'http': return { url: 'https://example.com', method: 'GET' };
    case 'response': return { data: {}, status: 200 };
    case 'variables': return { assignments: {} };
    case 'wait': return { seconds: 1 };
    case 'loop': return { kind: 'for', count: 3 };
    case 'parallel': return { kind: 'count', count: 2 };
    case 'human': return { message: 'Approve?', fields: [{ name: 'approved', type: 'boolean', required: true }] };
    case 'table': return { operation: 'query', tableId: '' };
    case 'router': return { model: '', prompt: '', routes: [{ id: 'a', description: 'First route' }, { id: 'b', description: 'Second route' }] };
    default: {
      const out: Record<string, unknown> = {};
      for (const k of schema.required ?? []) {
        const p = schema.properties?.[k];
        if (p?.default !== undefined) out[k] = p.default;
      }
      return out;
    }
  }
}
