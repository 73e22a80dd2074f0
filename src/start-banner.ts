// The lines `weft serve` and `weft api` print on stdout: once listening, where a newcomer goes next;
// on a first start, before that, the admin's sign-in and the first key (shown once).
// (Logs are JSON lines on stderr.)

export function startBanner(url: string): string {
  return [
    '',
    ` Weft is listening on ${url}`,
    `   Dashboard:      ${url}/           (sign in to the dashboard with the admin email and the one-time password printed at first start)`,
    `   API reference:  ${url}/api/docs   (OpenAPI document: ${url}/api/openapi.json)`,
    '   API key:        the first start printed a workspace key, once (see above on a first start);',
    '                   `npx weft keys create --workspace default` makes another',
    '   Lost password:  `npx weft users reset-password --email <email>` prints a new one-time password',
    `   Health:         ${url}/healthz, readiness ${url}/readyz`,
    '',
  ].join('\n') + '\n';
}

export interface FirstStart {
  workspaceId: string;
  /** The bootstrap workspace key, when this start created the workspace. */
  apiKey?: string;
  adminEmail: string;
  /** The admin's one-time password, when this start gave the admin one. */
  adminPassword?: string;
}

/** The first start's secrets, each shown this once. */
export function firstStartBanner(f: FirstStart): string {
  const lines = ['', '================================================================'];
  if (f.apiKey) {
    lines.push(
      ' Weft first start: created the admin user and workspace "default"',
      ` Workspace id:           ${f.workspaceId}`,
      ` Workspace API key:      ${f.apiKey}`,
      ' This key is shown once. Send it as the X-API-Key header.',
    );
  }
  if (f.adminPassword) {
    lines.push(
      ` Dashboard sign-in:      ${f.adminEmail}`,
      ` One-time password:      ${f.adminPassword}`,
      ' The dashboard asks for a new password at the first sign-in.',
    );
  }
  lines.push('================================================================', '');
  return lines.join('\n') + '\n';
}
