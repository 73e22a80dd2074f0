// @weft/client: a typed client of the Weft API.
import { WeftClient, type WeftClientOptions } from './client.js';

export {
  WeftClient, ChatStream, unwrap, pausesOf,
  type WeftClientOptions, type ExecuteOptions, type ExecuteAndWaitOptions, type RunOutcome, type ResumeLinks,
  type Job, type QueuedExecution, type ExecuteRequest, type KnowledgeDocument,
  type ChatCompletionRequest, type ChatCompletion, type ChatCompletionChunk,
} from './client.js';
export { WeftApiError, WeftRunError, WeftTimeoutError } from './errors.js';
export { pollUntil, type PollOptions } from './poll.js';
export { readSse, type SseEvent } from './sse.js';
/** The generated OpenAPI types: `paths` (every route) and `components`. */
export type { paths, components, operations } from './schema.js';

/** A client for the server at `baseUrl`, authenticated with `apiKey`. */
export const createWeftClient = (options: WeftClientOptions): WeftClient => new WeftClient(options);
