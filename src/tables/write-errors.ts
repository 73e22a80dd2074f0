import { HttpError } from '../http/errors.js';
import { type Column, dateInstant } from './columns.js';
import { TABLE_LIMITS } from './limits.js';
import { uniqueIndexName, type WrittenRow } from './store.js';

/** Errors of table and row writes: database errors mapped to the HTTP errors they stand for, and write limits. */

type Data = Record<string, unknown>;

/** The schema changed between validation and write: the write starts over against the new schema. */
export class SchemaChanged extends Error {}

interface PgError { code?: string; constraint?: string; detail?: string; message?: string }

function parseConflictValue(detail: string | undefined): unknown {
  const m = detail ? /\)=\((.*)\) already exists\.?$/s.exec(detail) : null;
  if (!m) return undefined;
  try {
    return JSON.parse(m[1]);
  } catch {
    return m[1];
  }
}

/**
 * Maps a database error of a row write to the HTTP error it stands for, or returns it unchanged.
 * `written` is the data the write carried, to name a conflicting value as the caller wrote it.
 */
export function mapRowWriteError(err: unknown, columns: Column[], written: Data[] = []): unknown {
  if (err instanceof HttpError || err instanceof SchemaChanged) return err;
  const e = err as PgError;
  if (e?.code === '23505') {
    const tableIdFromIndex = e.constraint && /^t([0-9a-f]{32})_u_/.exec(e.constraint);
    const column = tableIdFromIndex
      ? columns.find((c) => c.unique && uniqueIndexName(`tbl_${tableIdFromIndex[1]}`, c.name) === e.constraint)
      : undefined;
    if (column) {
      const parsed = parseConflictValue(e.detail);
      const given = written.map((d) => d[column.name]).filter((v) => v !== undefined);
      let value: unknown = parsed;
      if (column.type === 'date') {
        // The index holds instants ("2024-05-01 00:00:00+00"): name the value as the caller wrote it.
        const ms = typeof parsed === 'string' ? Date.parse(parsed.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00')) : NaN;
        value = given.find((v) => typeof v === 'string' && Date.parse(dateInstant(v)) === ms) ?? given[0] ?? parsed ?? null;
      } else if (parsed === undefined) {
        value = given[0] ?? null;
      }
      return new HttpError(409, `Column "${column.name}" must be unique: value ${JSON.stringify(value)} already exists`, {
        column: column.name, value,
      });
    }
    return new HttpError(409, 'Unique constraint violation');
  }
  // Values PostgreSQL refuses (text it cannot store, numbers out of range, too-deep or too-large jsonb).
  if (e?.code && /^(22|54)/.test(e.code)) return new HttpError(400, `Invalid value: ${e.message ?? 'rejected by the database'}`);
  return err;
}

/** Creating a table whose name the workspace already uses. */
export function mapCreateTableError(err: unknown, name: string): unknown {
  const e = err as PgError;
  if (e?.code === '23505' && e.constraint === 'tables_workspace_id_name_key') {
    return new HttpError(400, `A table named "${name}" already exists in this workspace`);
  }
  return err;
}

/** Adding a unique column whose unique index the existing rows violate. */
export function mapAddColumnError(err: unknown, column: string): unknown {
  if ((err as PgError)?.code === '23505') {
    return new HttpError(409, `Cannot make column "${column}" unique: existing rows hold duplicate values`, { column });
  }
  return err;
}

/**
 * A column change the database refused: a unique index the existing values violate (duplicates already there,
 * or made by converting them), or a value PostgreSQL cannot store. `column`: the column as it would have been.
 */
export function mapColumnChangeError(err: unknown, column: Column | undefined): unknown {
  if (err instanceof HttpError) return err;
  const e = err as PgError;
  if (e?.code === '23505') {
    const name = column?.name ?? 'the column';
    return new HttpError(400, `Cannot make column "${name}" unique: duplicate values exist`, column ? { column: column.name } : {});
  }
  if (e?.code && /^(22|54)/.test(e.code)) return new HttpError(400, `Invalid value: ${e.message ?? 'rejected by the database'}`);
  return err;
}

/** Refuses a write when one of its rows is over the row size limit; `indexOf` words the error per batch entry. */
export function checkRowSizes(rows: WrittenRow[], indexOf?: (id: string) => number | undefined): void {
  const big = rows.find((r) => r.bytes > TABLE_LIMITS.maxRowBytes);
  if (!big) return;
  const at = indexOf?.(big.id);
  throw new HttpError(400, `${at !== undefined ? `Row ${at}: ` : ''}Row size exceeds limit (${big.bytes} bytes > ${TABLE_LIMITS.maxRowBytes} bytes)`, {
    details: [{ code: 'too_big', path: at !== undefined ? ['rows', at] : ['data'], message: 'Row size exceeds limit', rowId: big.id }],
  });
}

export function rowLimitError(maxRows: number, adding: number): HttpError {
  return adding > 1
    ? new HttpError(400, `Inserting ${adding} rows would exceed this table's row limit (${maxRows} rows) on your current plan.`)
    : new HttpError(400, `This table has reached its row limit (${maxRows} rows) on your current plan.`);
}
