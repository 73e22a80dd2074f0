// The gateway speaks the chat-completions wire format on both sides: requests come in in that
// format, and every provider adapter translates it to its own API and its answers back.

export type ProviderName = 'openai' | 'anthropic' | 'gemini' | 'openai-compatible';

export interface TextPart { type: 'text'; text: string }
export interface ImagePart { type: 'image_url'; image_url: { url: string; detail?: string } }
export type ContentPart = TextPart | ImagePart | { type: string; [k: string]: unknown };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  [extra: string]: unknown;
}

export interface FunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  n?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  stop?: string | string[] | null;
  tools?: FunctionTool[];
  tool_choice?: ToolChoice;
  response_format?: ResponseFormat;
  [extra: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [extra: string]: unknown;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface ChatChoice {
  index: number;
  message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[]; refusal?: string | null; [extra: string]: unknown };
  finish_reason: FinishReason | null;
  logprobs?: unknown;
  [extra: string]: unknown;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  usage?: Usage;
  [extra: string]: unknown;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChunkChoice {
  index: number;
  delta: { role?: 'assistant'; content?: string | null; tool_calls?: ToolCallDelta[]; refusal?: string | null; [extra: string]: unknown };
  finish_reason: FinishReason | null;
  logprobs?: unknown;
  [extra: string]: unknown;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChunkChoice[];
  usage?: Usage | null;
  [extra: string]: unknown;
}

/** What a provider needs to know about the model it is asked to run. */
export interface UpstreamCall {
  /** The model id the provider knows. */
  upstreamModel: string;
  /** Completion tokens the caller may receive (the client's max_tokens or the gateway default). */
  maxTokens: number;
  /** Whether the client set the cap itself. */
  clientSetMaxTokens: boolean;
  signal: AbortSignal;
}

/**
 * One provider behind the gateway. `complete` answers a whole completion; `stream` yields
 * chunks in the chat-completions format and, when the provider reports it, a last chunk
 * carrying `usage` with empty `choices`. Both throw `ProviderError` on failure.
 */
export interface Provider {
  readonly name: ProviderName;
  complete(request: ChatRequest, call: UpstreamCall): Promise<ChatCompletion>;
  stream(request: ChatRequest, call: UpstreamCall): AsyncIterable<ChatCompletionChunk>;
  /** Model ids the provider offers, for providers whose models are not in the catalog. */
  listModels?(signal?: AbortSignal): Promise<string[]>;
}

/** A failure reaching or answered by a provider. `status` is the upstream HTTP status (0: no answer). */
export class ProviderError extends Error {
  constructor(
    readonly provider: ProviderName,
    readonly status: number,
    message: string,
    readonly upstreamType?: string,
    readonly upstreamCode?: string,
  ) {
    super(message);
  }
}

/** The request a feature check refused (the model lacks tools, JSON schema or streaming). */
export class UnsupportedFeatureError extends Error {
  constructor(message: string, readonly param?: string) {
    super(message);
  }
}
