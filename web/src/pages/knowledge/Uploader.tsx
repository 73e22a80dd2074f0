// Choosing or dropping files, uploading each with its own progress bar, then following its processing
// status (from the documents list the page polls) until it is completed or failed.
import { useId, useState, type DragEvent } from 'react';
import { Button, StatusBadge } from '../../ui';
import { formatBytes } from '../runs/format';
import type { KnowledgeDocument } from './api';
import { uploadDocument, type UploadHandle } from './upload';

interface Item {
  key: number; name: string; size: number; progress: number;
  state: 'uploading' | 'uploaded' | 'error'; error?: string; documentId?: string; handle?: UploadHandle;
}

const ACCEPT = '.txt,.md,.markdown,.html,.htm,.csv,.json,.jsonl,.yaml,.yml,.pdf,.docx,.xlsx';
let nextKey = 1;

export function Uploader({ knowledgeBaseId, workspaceId, csrfToken, documents, onUploaded }: {
  knowledgeBaseId: string; workspaceId: string; csrfToken: string; documents: KnowledgeDocument[]; onUploaded(): void;
}) {
  const [items, setItems] = useState<Item[]>([]);
  const [dragging, setDragging] = useState(false);
  const inputId = useId();
  const patch = (key: number, p: Partial<Item>) => setItems((prev) => prev.map((i) => (i.key === key ? { ...i, ...p } : i)));

  const start = (files: FileList | File[]) => {
    for (const file of Array.from(files)) {
      const key = nextKey++;
      const handle = uploadDocument({ knowledgeBaseId, workspaceId, file, csrfToken }, (fraction) => patch(key, { progress: fraction }));
      setItems((prev) => [{ key, name: file.name, size: file.size, progress: 0, state: 'uploading', handle }, ...prev]);
      handle.promise.then(
        (doc) => { patch(key, { state: 'uploaded', progress: 1, documentId: doc.id, handle: undefined }); onUploaded(); },
        (err: Error) => patch(key, { state: 'error', error: err.message, handle: undefined }),
      );
    }
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    if (e.dataTransfer.files.length) start(e.dataTransfer.files);
  };

  return (
    <section className="card stack" aria-labelledby={`${inputId}-h`}>
      <h2 id={`${inputId}-h`}>Upload documents</h2>
      <div className={`kn-drop${dragging ? ' kn-drop--over' : ''}`} onDragOver={(e) => { e.preventDefault(); setDragging(true); }}
        onDragLeave={() => setDragging(false)} onDrop={onDrop}>
        <p>Drop files here, or</p>
        <input id={inputId} type="file" multiple accept={ACCEPT} className="sr-only"
          onChange={(e) => { if (e.target.files?.length) start(e.target.files); e.target.value = ''; }} />
        <label htmlFor={inputId} className="btn btn-primary">Choose files</label>
        <p className="muted small">txt, md, html, csv, json, jsonl, yaml, pdf, docx or xlsx; up to 100 MB each.</p>
      </div>
      {items.length > 0 ? (
        <ul className="kn-uploads" aria-label="Uploads">
          {items.map((i) => {
            const doc = i.documentId ? documents.find((d) => d.id === i.documentId) : undefined;
            const status = i.state === 'error' ? 'failed' : i.state === 'uploading' ? 'uploading' : doc?.processingStatus ?? 'pending';
            const pct = Math.round(i.progress * 100);
            return (
              <li key={i.key} className="kn-upload" aria-label={`${i.name}: ${status}`}>
                <div className="kn-upload__line">
                  <span className="kn-upload__name">{i.name}</span>
                  <span className="muted small">{formatBytes(i.size)}</span>
                  <StatusBadge status={status} label={i.state === 'uploading' ? `uploading ${pct}%` : status} />
                  {i.handle ? <Button size="sm" variant="ghost" onClick={() => i.handle?.abort()} aria-label={`Cancel upload of ${i.name}`}>Cancel</Button> : null}
                </div>
                {i.state !== 'error' ? <progress className="kn-upload__bar" max={100} value={pct} aria-label={`Upload of ${i.name}`} /> : null}
                {i.error ? <div className="field-error" role="alert">{i.error}</div> : null}
                {doc?.processingStatus === 'completed' ? <div className="muted small">{doc.chunkCount} {doc.chunkCount === 1 ? 'chunk' : 'chunks'}, {doc.tokenCount.toLocaleString()} tokens</div> : null}
              </li>
            );
          })}
        </ul>
      ) : null}
    </section>
  );
}
