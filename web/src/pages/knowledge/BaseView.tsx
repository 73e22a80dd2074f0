// /knowledge/:kbId: one knowledge base: upload documents (progress per file), their processing status
// (polled while any is pending or processing), enable, disable or delete them, and try a search.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSession } from '../../session';
import { Button, ConfirmDialog, EmptyState, ErrorBanner, Loading, PageHeader, StatusBadge, Table, formatDate } from '../../ui';
import { formatBytes } from '../runs/format';
import { deleteDocument, getBase, getDocument, isProcessing, listDocuments, setDocumentEnabled, type KnowledgeDocument } from './api';
import { SearchPanel } from './SearchPanel';
import { Uploader } from './Uploader';

const PAGE = 50;

/** Why a document failed: only the document's own record says, so it is read for failed rows only. */
function FailureReason({ workspaceId, kbId, documentId }: { workspaceId: string; kbId: string; documentId: string }) {
  const q = useQuery({ queryKey: ['knowledge-doc', workspaceId, kbId, documentId], queryFn: () => getDocument(workspaceId, kbId, documentId), staleTime: Infinity });
  return q.data?.processingError ? <div className="field-error small">{q.data.processingError}</div> : null;
}

export function BaseView({ kbId }: { kbId: string }) {
  const { workspaceId, csrfToken } = useSession();
  const qc = useQueryClient();
  const [offset, setOffset] = useState(0);
  const [deleting, setDeleting] = useState<KnowledgeDocument | null>(null);
  const base = useQuery({ queryKey: ['knowledge-base', workspaceId, kbId], queryFn: () => getBase(workspaceId, kbId), enabled: Boolean(workspaceId) });
  const docs = useQuery({
    queryKey: ['knowledge-docs', workspaceId, kbId, offset],
    queryFn: () => listDocuments(workspaceId, kbId, offset, PAGE),
    enabled: Boolean(base.data),
    // Live processing status: poll while any listed document is still being processed.
    refetchInterval: (q) => (q.state.data?.documents.some((d) => isProcessing(d.processingStatus)) ? 1500 : false),
  });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ['knowledge-docs', workspaceId, kbId] });
    void qc.invalidateQueries({ queryKey: ['knowledge-base', workspaceId, kbId] });
  };
  const toggle = useMutation({
    mutationFn: (d: KnowledgeDocument) => setDocumentEnabled(workspaceId, kbId, d.id, !d.enabled),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (d: KnowledgeDocument) => deleteDocument(workspaceId, kbId, d.id),
    onSuccess: () => { setDeleting(null); refresh(); },
  });

  if (base.isLoading) return <Loading label="Loading the knowledge base…" />;
  if (!base.data) return <div className="stack"><PageHeader title="Knowledge base" back={{ to: '/knowledge', label: 'Knowledge' }} /><ErrorBanner error={base.error} onRetry={() => void base.refetch()} /></div>;
  const kb = base.data;
  const list = docs.data?.documents ?? [];
  const processing = list.filter((d) => isProcessing(d.processingStatus)).length;
  return (
    <div className="stack">
      <PageHeader back={{ to: '/knowledge', label: 'Knowledge' }} title={kb.name}
        description={<>
          {kb.description ? <>{kb.description}<br /></> : null}
          {`${kb.docCount} ${kb.docCount === 1 ? 'document' : 'documents'} · ${kb.tokenCount.toLocaleString()} tokens · ${kb.embeddingModel} · chunks of up to ${kb.chunkingConfig.maxSize} tokens`}
        </>} />
      <Uploader knowledgeBaseId={kbId} workspaceId={workspaceId} csrfToken={csrfToken} documents={list} onUploaded={refresh} />
      <section className="stack" aria-labelledby="kn-docs-h">
        <div className="row gap kn-docs-head">
          <h2 id="kn-docs-h">Documents</h2>
          <span className="muted small" role="status">{processing > 0 ? `${processing} processing…` : ''}</span>
        </div>
        <ErrorBanner error={docs.error ?? toggle.error} onRetry={() => void docs.refetch()} />
        {docs.isLoading ? <Loading label="Loading documents…" /> : (
          <div className="kn-docs-table">
            <Table<KnowledgeDocument>
              caption="Documents"
              rows={list}
              rowKey={(d) => d.id}
              empty={<EmptyState title="No documents yet">Upload files above; each is parsed, chunked and embedded in the background.</EmptyState>}
              columns={[
                { key: 'name', header: 'File', render: (d) => <span className={d.enabled ? undefined : 'muted'}>{d.filename}{d.enabled ? '' : ' (disabled)'}</span> },
                { key: 'size', header: 'Size', className: 'num', render: (d) => formatBytes(d.fileSize) },
                {
                  key: 'status', header: 'Status', render: (d) => (
                    <>
                      <StatusBadge status={d.processingStatus} />
                      {d.processingStatus === 'failed' ? <FailureReason workspaceId={workspaceId} kbId={kbId} documentId={d.id} /> : null}
                    </>
                  ),
                },
                { key: 'chunks', header: 'Chunks', className: 'num', render: (d) => d.chunkCount.toLocaleString() },
                { key: 'tokens', header: 'Tokens', className: 'num', render: (d) => d.tokenCount.toLocaleString() },
                { key: 'uploaded', header: 'Uploaded', render: (d) => formatDate(d.createdAt) },
                {
                  key: 'actions', header: <span className="sr-only">Actions</span>, render: (d) => (
                    <div className="row gap">
                      <Button size="sm" onClick={() => toggle.mutate(d)} disabled={toggle.isPending} aria-label={`${d.enabled ? 'Disable' : 'Enable'} ${d.filename}`}>
                        {d.enabled ? 'Disable' : 'Enable'}
                      </Button>
                      <Button size="sm" variant="ghost" onClick={() => { remove.reset(); setDeleting(d); }} aria-label={`Delete ${d.filename}`}>Delete</Button>
                    </div>
                  ),
                },
              ]}
            />
          </div>
        )}
        {offset > 0 || docs.data?.hasMore ? (
          <nav className="row gap kn-pager" aria-label="Pages of documents">
            <Button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>← Previous</Button>
            <span className="small">{offset + 1}–{offset + list.length} of {docs.data?.total ?? 0}</span>
            <Button disabled={!docs.data?.hasMore} onClick={() => setOffset(offset + PAGE)}>Next →</Button>
          </nav>
        ) : null}
      </section>
      <SearchPanel workspaceId={workspaceId} knowledgeBaseId={kbId} />
      <ConfirmDialog open={deleting !== null} title={`Delete ${deleting?.filename ?? 'this document'}?`}
        message="The document and its chunks are removed; searches stop finding them." confirmLabel="Delete document" danger
        busy={remove.isPending} error={remove.error} onConfirm={() => deleting && remove.mutate(deleting)} onCancel={() => setDeleting(null)} />
    </div>
  );
}
