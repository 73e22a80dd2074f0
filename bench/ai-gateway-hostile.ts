// ai-gateway-hostile: what a chat request built to be slow to tokenize does to everyone else's requests. The
// prompt is random printable characters, the tokenizer's slow case (about half a second per 200 KB on this
// machine's cores). The gateway counts prompt tokens on a thread of its own (docs/architecture.md, Credit
// ledgers); this measures that the event loop stays free while it does.
//
//   npm run bench -- ai-gateway-hostile [--messages 10] [--kb 100] [--rounds 3]
//
// Weft from dist/main.js as `compare` runs it (embedded, npm start's flags), an upstream that answers at once.
// Each round: GET /healthz polled by one client with 5 ms pauses, first alone (the baseline), then while one
// hostile completion is in flight. Reported: the polls' p50 and worst latency either way, and the hostile
// request's own latency and status.
import { startEmbedded } from './compare-weft.js';
import { cleanupAll, firstJsonLine, installExitHandlers, sleep, start } from './compare-procs.js';
import { latencySummary, pollWhile, round2 } from './support.js';

export const standalone = true;

function randomText(chars: number): string {
  const out: string[] = [];
  for (let i = 0; i < chars; i++) out.push(String.fromCharCode(33 + Math.floor(Math.random() * 90)));
  return out.join('');
}


export async function run(argv: string[]): Promise<Record<string, unknown>> {
  const arg = (name: string, fallback: number) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  const messages = arg('messages', 10);
  const kb = arg('kb', 100);
  const rounds = arg('rounds', 3);
  installExitHandlers();
  try {
    const upstream = start('upstream', process.execPath, ['--import', 'tsx', 'bench/compare-servers.ts', 'upstream']);
    const { port } = await firstJsonLine<{ port: number }>(upstream);
    const w = await startEmbedded(`http://127.0.0.1:${port}/v1`, true);
    const healthz = `${w.url}/healthz`;
    const body = JSON.stringify({
      model: 'gpt-4o-mini', max_tokens: 16,
      messages: Array.from({ length: messages }, () => ({ role: 'user', content: randomText(kb * 1024) })),
    });
    const hostile = async () => {
      const t0 = performance.now();
      const r = await fetch(`${w.url}/api/v1/ai/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${w.apiKey}` }, body,
      });
      await r.arrayBuffer();
      return { status: r.status, ms: round2(performance.now() - t0) };
    };
    await hostile(); // the counting thread started, the tokenizer's ranks loaded
    const results = [];
    for (let i = 0; i < rounds; i++) {
      const alone = await pollWhile(healthz, sleep(1000));
      const request = hostile();
      const during = await pollWhile(healthz, request);
      results.push({ alone: latencySummary(alone), during: latencySummary(during), hostile: await request });
    }
    await w.close();
    return { messages, kbPerMessage: kb, bodyMb: round2(body.length / 1024 / 1024), rounds: results };
  } finally {
    await cleanupAll();
  }
}
