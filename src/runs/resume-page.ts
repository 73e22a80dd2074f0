/** Server-rendered pages a person uses to answer a paused run from its link (no script needed). */

const esc = (s: unknown): string =>
  String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · Weft</title><style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1d2430}
h1{font-size:1.4rem}fieldset{border:1px solid #ccd;border-radius:8px;margin:1rem 0;padding:1rem}
label{display:block;margin:.6rem 0 .2rem;font-weight:600}input,textarea,select{width:100%;padding:.4rem;font:inherit;box-sizing:border-box}
button{margin-top:1rem;padding:.5rem 1.2rem;font:inherit;background:#2b59c3;color:#fff;border:0;border-radius:6px;cursor:pointer}
.error{background:#fde8e8;border:1px solid #e99;padding:.6rem;border-radius:6px}.ok{background:#e8f6ec;border:1px solid #8c8;padding:.6rem;border-radius:6px}
.muted{color:#667}pre{background:#f4f5f8;padding:.6rem;overflow:auto}</style></head><body>${body}</body></html>`;
}

export function keyPage(workflowId: string, executionId: string, error?: string): string {
  return layout('Answer a paused run', `<h1>Answer a paused run</h1>
<p class="muted">Execution <code>${esc(executionId)}</code> is waiting for a person. Enter an API key of its workspace to see what it asks.</p>
${error ? `<p class="error">${esc(error)}</p>` : ''}
<form method="post" action="/resume/${esc(workflowId)}/${esc(executionId)}">
<label for="apiKey">API key</label><input id="apiKey" name="apiKey" type="password" autocomplete="off" required>
<button type="submit">Continue</button></form>`);
}

interface PagePoint { contextId: string; resumeStatus: string; response: unknown }
interface PageField { name: string; type?: string; required?: boolean; description?: string }

function fieldInput(f: PageField): string {
  const id = `f_${esc(f.name)}`;
  const req = f.required ? ' required' : '';
  const label = `<label for="${id}">${esc(f.name)}${f.required ? ' *' : ''}</label>${f.description ? `<div class="muted">${esc(f.description)}</div>` : ''}`;
  switch (f.type) {
    case 'number':
      return `${label}<input id="${id}" name="${esc(f.name)}" type="number" step="any"${req}>`;
    case 'boolean':
      return `${label}<select id="${id}" name="${esc(f.name)}"${req}><option value="">choose</option><option value="true">yes</option><option value="false">no</option></select>`;
    case 'object':
    case 'array':
      return `${label}<textarea id="${id}" name="${esc(f.name)}" rows="4" placeholder="JSON"${req}></textarea>`;
    default:
      return `${label}<input id="${id}" name="${esc(f.name)}" type="text"${req}>`;
  }
}

/** The forms of the open pause points; `token` (short-lived, scoped to this execution) stands in for the key. */
export function formsPage(workflowId: string, executionId: string, points: PagePoint[], token: string): string {
  const open = points.filter((p) => p.resumeStatus === 'paused');
  const forms = open.map((p) => {
    const r = ((p.response as { data?: unknown } | null)?.data ?? {}) as { message?: string; fields?: PageField[] };
    return `<fieldset><legend>${esc(p.contextId)}</legend>${r.message ? `<p>${esc(r.message)}</p>` : ''}
<form method="post" action="/resume/${esc(workflowId)}/${esc(executionId)}/${encodeURIComponent(p.contextId)}">
<input type="hidden" name="token" value="${esc(token)}">${(r.fields ?? []).map(fieldInput).join('')}
<button type="submit">Submit</button></form></fieldset>`;
  });
  return layout('Answer a paused run', `<h1>Answer a paused run</h1>
${open.length ? forms.join('') : '<p class="ok">Nothing is waiting for an answer here any more.</p>'}`);
}

export function resultPage(title: string, message: string, ok: boolean, detail?: unknown): string {
  return layout(title, `<h1>${esc(title)}</h1><p class="${ok ? 'ok' : 'error'}">${esc(message)}</p>${detail === undefined ? '' : `<pre>${esc(JSON.stringify(detail, null, 2))}</pre>`}`);
}
