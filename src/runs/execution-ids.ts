// Caller-chosen execution ids (X-Execution-Id, Idempotency-Key) belong to the caller's workspace: two
// workspaces may use the same one, and neither can learn whether the other did. They are stored as
// `<caller id>@<workspace id>` ('@' is outside the caller alphabet, so this never collides with a caller
// id or a server-minted UUID) and shown to callers without the suffix.

export const internalExecutionId = (callerId: string, workspaceId: string): string => `${callerId}@${workspaceId}`;

/** The id callers see: the caller's own id, or the server-minted UUID. */
export const publicExecutionId = (id: string): string => {
  const at = id.indexOf('@');
  return at < 0 ? id : id.slice(0, at);
};

/** Stored ids a public id may stand for, in the workspaces a caller reaches. */
export const storedExecutionIds = (publicId: string, workspaceIds: readonly string[]): string[] =>
  publicId.includes('@') ? [] : [publicId, ...workspaceIds.map((ws) => internalExecutionId(publicId, ws))];
