// Typed document tags, as the reference service has them: a knowledge base names slots (7 text, 5
// number, 2 date, 3 boolean), documents carry a value per named slot, and searches filter on them with
// operators of the slot's type. This module checks what callers send against a base's definitions and
// turns display names into slots; SQL is in tag-store.ts and tag-filter-sql.ts.
import { type Database, type Queryable, uniqueViolation } from '../db/database.js';
import { MAX_SUBSTRING_OPERAND } from '../db/substring-match.js';
import { HttpError } from '../http/errors.js';
import { isUuid, newId } from '../ids.js';
import type { StorageGuard } from '../limits/storage.js';
import {
  type ResolvedTagFilter, slotType, TAG_OPERATORS, TAG_SLOTS, type TagFieldType, type TagOperator, type TagSlot,
} from './tag-filter-sql.js';
import * as tagStore from './tag-store.js';

export interface PublicTagDefinition {
  id: string;
  tagSlot: string;
  displayName: string;
  fieldType: TagFieldType;
  createdAt: string;
  updatedAt: string;
}

/** A search filter as the reference's TagFilter: `fieldType` is accepted and ignored (the definition's type rules). */
export interface TagFilterInput {
  tagName: string;
  fieldType?: string;
  operator?: string;
  value: string | number | boolean;
  valueTo?: string | number;
}

export type TagValue = string | number | boolean;

const publicDefinition = (d: tagStore.TagDefinitionRow): PublicTagDefinition => ({
  id: d.id, tagSlot: d.tag_slot, displayName: d.display_name, fieldType: d.field_type,
  createdAt: d.created_at.toISOString(), updatedAt: d.updated_at.toISOString(),
});

const byName = (defs: readonly tagStore.TagDefinitionRow[], name: string): tagStore.TagDefinitionRow | undefined =>
  defs.find((d) => d.display_name.toLowerCase() === name.trim().toLowerCase());

/** Text operators matched as substrings (their operands are bounded: db/substring-match.ts). */
const SUBSTRING_OPERATORS: ReadonlySet<string> = new Set(['contains', 'not_contains', 'starts_with', 'ends_with']);

/**
 * Whether a four-digit year, month and day make a date PostgreSQL stores and compares (the filters cast
 * slots to `date`). Its calendar has no year 0, and Date.UTC would read years 0 to 99 as 1900 to 1999, so
 * the year is set on its own; like tables/columns.ts coerceDate.
 */
function storableDate(year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const date = new Date(Date.UTC(2000, month - 1, day));
  date.setUTCFullYear(year);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** The value in the slot's stored form, or an error message naming the tag. */
function typedValue(type: TagFieldType, name: string, value: unknown): TagValue | string[] {
  switch (type) {
    case 'text':
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
        const text = String(value);
        return text.length <= 1000 ? text : [`Tag "${name}" must be at most 1000 characters`];
      }
      return [`Tag "${name}" is a text tag and needs a string value`];
    case 'number': {
      const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
      return Number.isFinite(n) ? n : [`Tag "${name}" is a number tag and needs a number value`];
    }
    case 'date': {
      const text = typeof value === 'string' ? value.trim() : '';
      const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.exec(text);
      if (!m) return [`Tag "${name}" is a date tag and needs a date (YYYY-MM-DD)`];
      if (!storableDate(Number(m[1]), Number(m[2]), Number(m[3]))) {
        return [`Tag "${name}" is a date tag and needs a date (YYYY-MM-DD) from 0001-01-01 to 9999-12-31 that exists in the calendar: got "${text.slice(0, 40)}"`];
      }
      return `${m[1]}-${m[2]}-${m[3]}`;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      return [`Tag "${name}" is a boolean tag and needs true or false`];
  }
}

export class KnowledgeTags {
  constructor(
    private readonly db: Database,
    private readonly requireBase: (q: Queryable, workspaceId: string, baseId: string) => Promise<unknown>,
    /** A workspace over its storage limit names no new tags (stored-bytes.ts counts the values, not the names). */
    private readonly storage: StorageGuard,
  ) {}

  async list(workspaceId: string, baseId: string): Promise<PublicTagDefinition[]> {
    await this.requireBase(this.db, workspaceId, baseId);
    return (await tagStore.listTagDefinitions(this.db, baseId)).map(publicDefinition);
  }

  /** Names a slot: the given one, or the first free slot of the type. */
  async create(workspaceId: string, baseId: string, input: { displayName: string; fieldType: TagFieldType; tagSlot?: string }): Promise<PublicTagDefinition> {
    try {
      return await this.db.tx(async (q) => {
        await this.requireBase(q, workspaceId, baseId);
        const defs = await tagStore.listTagDefinitions(q, baseId);
        if (byName(defs, input.displayName)) throw new HttpError(409, `A tag named "${input.displayName}" already exists in this knowledge base`);
        let slot = input.tagSlot;
        if (slot !== undefined) {
          if (slotType(slot) !== input.fieldType) throw new HttpError(400, `Tag slot ${slot} does not hold ${input.fieldType} values`);
          if (defs.some((d) => d.tag_slot === slot)) throw new HttpError(409, `Tag slot ${slot} is already in use`);
        } else {
          slot = TAG_SLOTS[input.fieldType].find((s) => !defs.some((d) => d.tag_slot === s));
          if (slot === undefined) throw new HttpError(400, `No free ${input.fieldType} tag slot: a knowledge base has ${TAG_SLOTS[input.fieldType].length}`);
        }
        const created = await tagStore.insertTagDefinition(q, { id: newId(), baseId, slot, displayName: input.displayName.trim(), fieldType: input.fieldType });
        await this.storage.checkRoom(q, workspaceId, 0);
        return publicDefinition(created);
      });
    } catch (err) {
      // Two creations racing for one name or slot: the unique indexes decide.
      if (uniqueViolation(err)) throw new HttpError(409, `A tag named "${input.displayName}" or its slot already exists in this knowledge base`);
      throw err;
    }
  }

  async delete(workspaceId: string, baseId: string, tagId: string): Promise<void> {
    await this.db.tx(async (q) => {
      await this.requireBase(q, workspaceId, baseId);
      if (!isUuid(tagId) || !(await tagStore.deleteTagDefinition(q, baseId, tagId))) throw new HttpError(404, 'Tag definition not found');
    });
  }

  /** Display name -> value (null clears) checked against the base's definitions, as slot -> value. */
  async slotValues(q: Queryable, baseId: string, values: Record<string, unknown>): Promise<Record<string, TagValue | null>> {
    const defs = await tagStore.listTagDefinitions(q, baseId);
    const errors: string[] = [];
    const slots: Record<string, TagValue | null> = {};
    for (const [name, value] of Object.entries(values)) {
      const def = byName(defs, name);
      if (!def) { errors.push(`Unknown tag "${name}": define it first (POST /api/v1/knowledge/{id}/tag-definitions)`); continue; }
      if (value === null) { slots[def.tag_slot] = null; continue; }
      const typed = typedValue(def.field_type, def.display_name, value);
      if (Array.isArray(typed)) errors.push(...typed);
      else slots[def.tag_slot] = typed;
    }
    if (errors.length > 0) throw new HttpError(400, errors.join('\n'));
    return slots;
  }

  /** Tag filters of a search on one base, checked and resolved to slots; every problem in one 400. */
  async resolveFilters(baseId: string, filters: readonly TagFilterInput[]): Promise<ResolvedTagFilter[]> {
    const defs = await tagStore.listTagDefinitions(this.db, baseId);
    const errors: string[] = [];
    const resolved: ResolvedTagFilter[] = [];
    for (const f of filters) {
      const def = byName(defs, f.tagName);
      if (!def) { errors.push(`Unknown tag "${f.tagName}"`); continue; }
      const type = def.field_type;
      const operator = f.operator ?? 'eq';
      if (!(TAG_OPERATORS[type] as readonly string[]).includes(operator)) {
        errors.push(`Operator "${operator}" is not valid for ${type} tag "${def.display_name}" (valid: ${TAG_OPERATORS[type].join(', ')})`);
        continue;
      }
      const value = typedValue(type, def.display_name, f.value);
      if (Array.isArray(value)) { errors.push(...value); continue; }
      if (SUBSTRING_OPERATORS.has(operator) && String(value).length > MAX_SUBSTRING_OPERAND) {
        errors.push(`Tag "${def.display_name}": ${operator} takes at most ${MAX_SUBSTRING_OPERAND} characters`);
        continue;
      }
      let valueTo: TagValue | string[] | undefined;
      if (operator === 'between') {
        if (f.valueTo === undefined) { errors.push(`Tag "${def.display_name}": between needs valueTo`); continue; }
        valueTo = typedValue(type, def.display_name, f.valueTo);
        if (Array.isArray(valueTo)) { errors.push(...valueTo); continue; }
      }
      resolved.push({
        slot: def.tag_slot as TagSlot, type, operator: operator as TagOperator, value,
        ...(typeof valueTo === 'string' || typeof valueTo === 'number' ? { valueTo } : {}),
      });
    }
    if (errors.length > 0) throw new HttpError(400, errors.join('\n'));
    return resolved;
  }

  definitions(q: Queryable, baseId: string): Promise<tagStore.TagDefinitionRow[]> {
    return tagStore.listTagDefinitions(q, baseId);
  }
}
