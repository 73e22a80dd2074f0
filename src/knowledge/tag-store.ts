import type { Queryable } from '../db/database.js';

/** SQL of typed document tags: the slot definitions of a base and the slot values of its documents. */

export interface TagDefinitionRow {
  id: string;
  knowledge_base_id: string;
  tag_slot: string;
  display_name: string;
  field_type: 'text' | 'number' | 'date' | 'boolean';
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, knowledge_base_id, tag_slot, display_name, field_type, created_at, updated_at';

export function listTagDefinitions(q: Queryable, baseId: string): Promise<TagDefinitionRow[]> {
  return q.query<TagDefinitionRow>(`SELECT ${COLUMNS} FROM knowledge_tag_definitions WHERE knowledge_base_id = $1 ORDER BY tag_slot`, [baseId]);
}

export async function insertTagDefinition(
  q: Queryable, d: { id: string; baseId: string; slot: string; displayName: string; fieldType: string },
): Promise<TagDefinitionRow> {
  const rows = await q.query<TagDefinitionRow>(
    `INSERT INTO knowledge_tag_definitions (id, knowledge_base_id, tag_slot, display_name, field_type)
     VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [d.id, d.baseId, d.slot, d.displayName, d.fieldType],
  );
  return rows[0] as TagDefinitionRow;
}

/** Deletes a definition and clears its slot on every document of the base; false when there was none. */
export async function deleteTagDefinition(q: Queryable, baseId: string, id: string): Promise<boolean> {
  const rows = await q.query<{ tag_slot: string }>(
    'DELETE FROM knowledge_tag_definitions WHERE id = $1 AND knowledge_base_id = $2 RETURNING tag_slot',
    [id, baseId],
  );
  const slot = rows[0]?.tag_slot;
  if (slot === undefined) return false;
  await q.query('UPDATE knowledge_documents SET tag_slots = tag_slots - $2 WHERE knowledge_base_id = $1 AND tag_slots ? $2', [baseId, slot]);
  return true;
}

/** Sets (value) or clears (null) slots of one document; the other slots keep their values. */
export async function updateDocumentTagSlots(q: Queryable, documentId: string, changes: Record<string, unknown>): Promise<void> {
  const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== null));
  const cleared = Object.keys(changes).filter((k) => changes[k] === null);
  await q.query(
    'UPDATE knowledge_documents SET tag_slots = (tag_slots - $3::text[]) || $2::jsonb WHERE id = $1',
    [documentId, JSON.stringify(set), cleared],
  );
}

export async function documentTagSlots(q: Queryable, documentIds: string[]): Promise<Map<string, Record<string, unknown>>> {
  if (documentIds.length === 0) return new Map();
  const rows = await q.query<{ id: string; tag_slots: Record<string, unknown> }>(
    'SELECT id, tag_slots FROM knowledge_documents WHERE id = ANY($1::uuid[])',
    [documentIds],
  );
  return new Map(rows.map((r) => [r.id, r.tag_slots]));
}
