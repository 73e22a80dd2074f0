// The lines `weft serve` and `weft api` print on stdout once listening: where a newcomer goes next.
// (Logs are JSON lines on stderr; the first-start key banner comes from server.ts before this.)

export function startBanner(url: string): string {
  return [
    '',
    ` Weft is listening on ${url}`,
    `   API reference:  ${url}/api/docs   (OpenAPI document: ${url}/api/openapi.json)`,
    `   Landing page:   ${url}/           (the dashboard will be served here; it is not in this build yet)`,
    '   API key:        the first start printed a workspace key, once (see above on a first start);',
    '                   `npx weft keys create --workspace default` makes another',
    `   Health:         ${url}/healthz, readiness ${url}/readyz`,
    '',
  ].join('\n') + '\n';
}
