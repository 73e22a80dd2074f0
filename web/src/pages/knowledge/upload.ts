// Document upload with progress: fetch() cannot report upload progress, XMLHttpRequest can. The request is
// the same multipart POST a curl user sends, authenticated by the session cookie plus the CSRF header.

export interface UploadedDocument { id: string; filename: string; processingStatus: string }

export class UploadError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

export interface UploadHandle { promise: Promise<UploadedDocument>; abort: () => void }

/** Uploads one file; `onProgress` gets the fraction of the body sent (0..1). */
export function uploadDocument(
  opts: { knowledgeBaseId: string; workspaceId: string; file: File; csrfToken: string | null | undefined },
  onProgress: (fraction: number) => void,
): UploadHandle {
  const xhr = new XMLHttpRequest();
  const promise = new Promise<UploadedDocument>((resolve, reject) => {
    const form = new FormData();
    form.append('workspaceId', opts.workspaceId);
    form.append('file', opts.file, opts.file.name);
    xhr.open('POST', `/api/v1/knowledge/${encodeURIComponent(opts.knowledgeBaseId)}/documents`);
    xhr.withCredentials = true;
    if (opts.csrfToken) xhr.setRequestHeader('X-CSRF-Token', opts.csrfToken);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      const body = xhr.response as { data?: { document?: UploadedDocument }; error?: string } | null;
      if (xhr.status >= 200 && xhr.status < 300 && body?.data?.document) {
        onProgress(1);
        resolve(body.data.document);
      } else {
        reject(new UploadError(body?.error ?? `Upload failed (HTTP ${xhr.status})`, xhr.status));
      }
    };
    xhr.onerror = () => reject(new UploadError('Network error: the upload did not reach the server', 0));
    xhr.onabort = () => reject(new UploadError('Upload cancelled', 0));
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}
