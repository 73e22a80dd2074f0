// The knowledge API (/api/v1/knowledge) calls the page makes; the shapes come from the generated API schema.
import { api } from '../../api/client';
import type { DataOf } from '../../api/schema';

export type KnowledgeBase = DataOf<'/api/v1/knowledge/{id}'>['knowledgeBase'];
export type KnowledgeDocument = DataOf<'/api/v1/knowledge/{id}/documents'>['documents'][number];
export type ProcessingStatus = KnowledgeDocument['processingStatus'];
export type DocumentDetail = DataOf<'/api/v1/knowledge/{id}/documents/{documentId}'>['document'];
export type SearchResult = DataOf<'/api/v1/knowledge/search', 'post'>['results'][number];

export async function listBases(workspaceId: string): Promise<KnowledgeBase[]> {
  const r = await api('/api/v1/knowledge', { query: { workspaceId } });
  return r.data.knowledgeBases;
}

export async function getBase(workspaceId: string, id: string): Promise<KnowledgeBase> {
  const r = await api('/api/v1/knowledge/{id}', { params: { id }, query: { workspaceId } });
  return r.data.knowledgeBase;
}

export async function createBase(workspaceId: string, name: string, description: string): Promise<KnowledgeBase> {
  const r = await api('/api/v1/knowledge', {
    method: 'post', body: { workspaceId, name, ...(description ? { description } : {}) },
  });
  return r.data.knowledgeBase;
}

export async function listDocuments(workspaceId: string, id: string, offset: number, limit = 50): Promise<{ documents: KnowledgeDocument[]; total: number; hasMore: boolean }> {
  const r = await api('/api/v1/knowledge/{id}/documents', {
    params: { id },
    query: { workspaceId, limit: String(limit), offset: String(offset) },
  });
  return { documents: r.data.documents, total: r.data.pagination.total, hasMore: r.data.pagination.hasMore };
}

export async function getDocument(workspaceId: string, id: string, documentId: string): Promise<DocumentDetail> {
  const r = await api('/api/v1/knowledge/{id}/documents/{documentId}', { params: { id, documentId }, query: { workspaceId } });
  return r.data.document;
}

export async function setDocumentEnabled(workspaceId: string, id: string, documentId: string, enabled: boolean): Promise<void> {
  await api('/api/v1/knowledge/{id}/documents/{documentId}', { method: 'patch', params: { id, documentId }, body: { workspaceId, enabled } });
}

export async function deleteDocument(workspaceId: string, id: string, documentId: string): Promise<void> {
  await api('/api/v1/knowledge/{id}/documents/{documentId}', { method: 'delete', params: { id, documentId }, query: { workspaceId } });
}

export async function search(workspaceId: string, id: string, query: string, topK: number, mode: 'vector' | 'hybrid'): Promise<SearchResult[]> {
  const r = await api('/api/v1/knowledge/search', {
    method: 'post', body: { workspaceId, knowledgeBaseIds: [id], query, topK, mode },
  });
  return r.data.results;
}

export const isProcessing = (s: ProcessingStatus) => s === 'pending' || s === 'processing';
