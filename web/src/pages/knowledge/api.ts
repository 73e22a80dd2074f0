// Shapes of the knowledge API (/api/v1/knowledge) the page uses, and its calls.
import { apiFetch } from '../../api/client';

export interface KnowledgeBase {
  id: string; name: string; description: string; docCount: number; tokenCount: number;
  embeddingModel: string; embeddingDimension: number;
  chunkingConfig: { maxSize: number; minSize: number; overlap: number }; createdAt: string; updatedAt: string;
}
export type ProcessingStatus = 'pending' | 'processing' | 'completed' | 'failed';
export interface KnowledgeDocument {
  id: string; knowledgeBaseId: string; filename: string; fileSize: number; mimeType: string; processingStatus: ProcessingStatus;
  chunkCount: number; tokenCount: number; characterCount: number; enabled: boolean; createdAt: string; updatedAt: string;
}
export interface DocumentDetail extends KnowledgeDocument { processingError: string | null }
export interface SearchResult {
  documentId: string; documentName: string; knowledgeBaseId: string; sourceUrl: string | null;
  content: string; chunkIndex: number; similarity: number; metadata: Record<string, unknown>;
}

interface Envelope<T> { success: true; data: T }
const kb = (id: string) => `/api/v1/knowledge/${encodeURIComponent(id)}`;

export async function listBases(workspaceId: string): Promise<KnowledgeBase[]> {
  const r = await apiFetch<Envelope<{ knowledgeBases: KnowledgeBase[] }>>('/api/v1/knowledge', { query: { workspaceId } });
  return r.data.knowledgeBases;
}

export async function getBase(workspaceId: string, id: string): Promise<KnowledgeBase> {
  const r = await apiFetch<Envelope<{ knowledgeBase: KnowledgeBase }>>(kb(id), { query: { workspaceId } });
  return r.data.knowledgeBase;
}

export async function createBase(workspaceId: string, name: string, description: string): Promise<KnowledgeBase> {
  const r = await apiFetch<Envelope<{ knowledgeBase: KnowledgeBase }>>('/api/v1/knowledge', {
    method: 'POST', body: { workspaceId, name, ...(description ? { description } : {}) },
  });
  return r.data.knowledgeBase;
}

export async function listDocuments(workspaceId: string, id: string, offset: number, limit = 50): Promise<{ documents: KnowledgeDocument[]; total: number; hasMore: boolean }> {
  const r = await apiFetch<Envelope<{ documents: KnowledgeDocument[]; pagination: { total: number; hasMore: boolean } }>>(`${kb(id)}/documents`, {
    query: { workspaceId, limit: String(limit), offset: String(offset) },
  });
  return { documents: r.data.documents, total: r.data.pagination.total, hasMore: r.data.pagination.hasMore };
}

export async function getDocument(workspaceId: string, id: string, documentId: string): Promise<DocumentDetail> {
  const r = await apiFetch<Envelope<{ document: DocumentDetail }>>(`${kb(id)}/documents/${encodeURIComponent(documentId)}`, { query: { workspaceId } });
  return r.data.document;
}

export async function setDocumentEnabled(workspaceId: string, id: string, documentId: string, enabled: boolean): Promise<void> {
  await apiFetch(`${kb(id)}/documents/${encodeURIComponent(documentId)}`, { method: 'PATCH', body: { workspaceId, enabled } });
}

export async function deleteDocument(workspaceId: string, id: string, documentId: string): Promise<void> {
  await apiFetch(`${kb(id)}/documents/${encodeURIComponent(documentId)}`, { method: 'DELETE', query: { workspaceId } });
}

export async function search(workspaceId: string, id: string, query: string, topK: number, mode: 'vector' | 'hybrid'): Promise<SearchResult[]> {
  const r = await apiFetch<Envelope<{ results: SearchResult[] }>>('/api/v1/knowledge/search', {
    method: 'POST', body: { workspaceId, knowledgeBaseIds: [id], query, topK, mode },
  });
  return r.data.results;
}

export const isProcessing = (s: ProcessingStatus) => s === 'pending' || s === 'processing';
