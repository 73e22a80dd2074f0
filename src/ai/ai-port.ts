import type { AiPort, ChatRequest as PortChatRequest, ChatResponse as PortChatResponse } from '../engine/blocks/ai-port.js';
import { HttpError } from '../http/errors.js';
import type { CompletionResult, Completer } from './completion.js';
import { nanoToUsd } from './money.js';
import type { ChatMessage, ChatRequest } from './providers/types.js';

/** The engine's chat request in the chat-completions format. */
function toChatRequest(req: PortChatRequest): ChatRequest {
  const messages: ChatMessage[] = req.messages.map((m): ChatMessage => {
    switch (m.role) {
      case 'assistant':
        return {
          role: 'assistant',
          content: m.content,
          ...(m.toolCalls && m.toolCalls.length > 0
            ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
            : {}),
        };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
      default:
        return { role: m.role, content: m.content };
    }
  });
  const request: ChatRequest = { model: req.model, messages };
  if (req.temperature !== undefined) request.temperature = req.temperature;
  if (req.maxTokens !== undefined) request.max_tokens = req.maxTokens;
  if (req.tools && req.tools.length > 0) {
    request.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters } }));
    const tc = req.toolChoice;
    if (tc) request.tool_choice = typeof tc === 'string' ? tc : { type: 'function', function: { name: tc.name } };
  }
  if (req.responseSchema) {
    request.response_format = { type: 'json_schema', json_schema: { name: req.responseSchema.name, schema: req.responseSchema.schema, strict: false } };
  }
  return request;
}

/**
 * The engine's AI port for one workflow run: chat calls go through the gateway (same providers,
 * same catalog) and are billed to the run's account through the same ledger (source 'workflow'),
 * their usage events carrying the run's execution id (its cost adds them up).
 */
export function createAiPort(gateway: Completer, billedAccount: string, workspaceId: string | null, executionId?: string): AiPort {
  return {
    async chat(req: PortChatRequest): Promise<PortChatResponse> {
      let result: CompletionResult;
      try {
        result = await gateway.complete({ account: billedAccount, source: 'workflow', workspaceId, executionId }, toChatRequest(req), req.signal);
      } catch (err) {
        if (err instanceof HttpError) throw new Error(`${req.model}: ${err.message}`);
        throw err;
      }
      const choice = result.completion.choices[0];
      const usage = result.completion.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      return {
        content: typeof choice?.message.content === 'string' ? choice.message.content : null,
        toolCalls: (choice?.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        finishReason: choice?.finish_reason ?? 'stop',
        usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens },
        costUsd: nanoToUsd(result.costNano),
        model: result.model.id,
      };
    },
  };
}
