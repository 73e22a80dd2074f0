// /tables/:tableId: the rows of one table with filter, sort and paging (all kept in the URL), inline
// editing, adding rows and columns, deleting rows, CSV import and export, and the table's write locks.
import { useMemo, useState } from 'react';
import { useSearchParams } from 'react-router';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSession } from '../../session';
import { Button, ConfirmDialog, EmptyState, ErrorBanner, Loading, PageHeader } from '../../ui';
import { addColumn, allRows, deleteRow, getTable, insertRows, isNumeric, queryRows, setTableLocks, updateRow, type Column, type NewColumn, type TableLocks, type TableRow } from './api';
import { Cell } from './Cell';
import { AddColumnDialog } from './ColumnDialog';
import { rowsToCsv } from './csv';
import { FilterBar } from './FilterBar';
import { toFilter, type Condition, type Match } from './filter';
import { AddRowDialog, CsvImportDialog } from './ImportDialogs';
import { describeLocks, LocksDialog } from './LocksDialog';

const PAGE_SIZES = [25, 50, 100];
type Dialogs = 'column' | 'row' | 'import' | 'locks' | null;

/** The filter as the URL keeps it: {m: match, c: [[column, op, value], ...]}. */
function readFilter(text: string | null): { conditions: Condition[]; match: Match } {
  try {
    const v = JSON.parse(text ?? '') as { m?: Match; c?: [string, string, string][] };
    return { match: v.m === 'any' ? 'any' : 'all', conditions: (v.c ?? []).map(([column, op, value], i) => ({ id: 1000 + i, column, op, value })) };
  } catch {
    return { conditions: [], match: 'all' };
  }
}

function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function TableView({ tableId }: { tableId: string }) {
  const { workspaceId } = useSession();
  const qc = useQueryClient();
  const [params, setParams] = useSearchParams();
  const [dialog, setDialog] = useState<Dialogs>(null);
  const [deleting, setDeleting] = useState<TableRow | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [exportBusy, setExportBusy] = useState(false);
  const [exportError, setExportError] = useState<unknown>(null);

  const applied = useMemo(() => readFilter(params.get('filter')), [params]);
  const sortCol = params.get('sort') ?? '';
  const sortDir = params.get('dir') === 'desc' ? 'desc' : 'asc';
  const size = PAGE_SIZES.includes(Number(params.get('size'))) ? Number(params.get('size')) : 25;
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const setParam = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null || v === '') next.delete(k);
      else next.set(k, v);
    }
    setParams(next, { replace: true });
  };

  const table = useQuery({ queryKey: ['table', workspaceId, tableId], queryFn: () => getTable(workspaceId, tableId), enabled: Boolean(workspaceId) });
  const columns = table.data?.schema.columns ?? [];
  const filter = toFilter(applied.conditions, columns, applied.match);
  const sort = sortCol ? { [sortCol]: sortDir as 'asc' | 'desc' } : undefined;
  const rowsKey = ['table-rows', workspaceId, tableId, filter, sort, size, offset];
  const rows = useQuery({
    queryKey: rowsKey,
    queryFn: () => queryRows(workspaceId, tableId, { filter, sort, limit: size, offset }),
    enabled: Boolean(table.data),
    placeholderData: keepPreviousData,
  });
  const refresh = async () => {
    await qc.invalidateQueries({ queryKey: ['table-rows', workspaceId, tableId] });
    await qc.invalidateQueries({ queryKey: ['table', workspaceId, tableId] });
  };

  const addCol = useMutation({
    mutationFn: (c: NewColumn) => addColumn(workspaceId, tableId, c),
    onSuccess: async () => { setDialog(null); await refresh(); },
  });
  const addRow = useMutation({
    mutationFn: (data: Record<string, unknown>) => insertRows(workspaceId, tableId, [data]),
    onSuccess: async () => { setDialog(null); setNotice('Row added.'); await refresh(); },
  });
  const removeRow = useMutation({
    mutationFn: (r: TableRow) => deleteRow(workspaceId, tableId, r.id),
    onSuccess: async () => { setDeleting(null); await refresh(); },
  });
  const saveLocks = useMutation({
    mutationFn: (l: TableLocks) => setTableLocks(workspaceId, tableId, l),
    onSuccess: async () => { setDialog(null); await refresh(); },
  });
  const saveCell = async (row: TableRow, col: Column, value: unknown) => {
    const updated = await updateRow(workspaceId, tableId, row.id, { [col.name]: value });
    qc.setQueryData(rowsKey, (old: typeof rows.data) => (old ? { ...old, rows: old.rows.map((r) => (r.id === updated.id ? updated : r)) } : old));
  };
  const exportCsv = async () => {
    setExportBusy(true);
    setExportError(null);
    try {
      const all = await allRows(workspaceId, tableId, { filter, sort });
      download(`${table.data?.name ?? 'table'}.csv`, rowsToCsv(columns, all));
      setNotice(`Exported ${all.length} rows${filter ? ' matching the filter' : ''}.`);
    } catch (err) {
      setExportError(err);
    } finally {
      setExportBusy(false);
    }
  };

  if (table.isLoading) return <Loading label="Loading the table…" />;
  if (!table.data) return <div className="stack"><PageHeader title="Table" back={{ to: '/tables', label: 'Tables' }} /><ErrorBanner error={table.error} onRetry={() => void table.refetch()} /></div>;

  const page = rows.data;
  const total = page?.totalCount ?? 0;
  const cycleSort = (name: string) => {
    if (sortCol !== name) setParam({ sort: name, dir: 'asc', offset: null });
    else if (sortDir === 'asc') setParam({ dir: 'desc', offset: null });
    else setParam({ sort: null, dir: null, offset: null });
  };
  return (
    <div className="stack">
      <PageHeader
        back={{ to: '/tables', label: 'Tables' }}
        title={table.data.name}
        description={[`${table.data.rowCount.toLocaleString()} row${table.data.rowCount === 1 ? '' : 's'}`, `${columns.length} column${columns.length === 1 ? '' : 's'}`, describeLocks(table.data.locks), table.data.description]
          .filter(Boolean).join(' · ')}
        actions={<>
          <Button onClick={() => { addRow.reset(); setDialog('row'); }}>Add row</Button>
          <Button onClick={() => { addCol.reset(); setDialog('column'); }}>Add column</Button>
          <Button onClick={() => setDialog('import')}>Import CSV</Button>
          <Button onClick={() => void exportCsv()} busy={exportBusy}>Export CSV</Button>
          <Button onClick={() => { saveLocks.reset(); setDialog('locks'); }}>Locks</Button>
        </>}
      />
      {notice ? <div className="banner banner-ok" role="status"><div>{notice}</div><Button size="sm" variant="ghost" onClick={() => setNotice(null)}>Dismiss</Button></div> : null}
      <ErrorBanner error={exportError} title="Export failed" />
      <FilterBar key={params.get('filter') ?? ''} columns={columns} applied={applied}
        onApply={(conds, match) => setParam({ filter: conds.length ? JSON.stringify({ m: match, c: conds.map((c) => [c.column, c.op, c.value]) }) : null, offset: null })} />
      <ErrorBanner error={rows.error} onRetry={() => void rows.refetch()} />
      {!page ? <Loading label="Loading rows…" /> : page.rows.length === 0 ? (
        <EmptyState title={filter ? 'No row matches the filter' : 'No rows yet'}>{filter ? 'Change or clear the filter.' : 'Add a row or import a CSV file.'}</EmptyState>
      ) : (
        <div className="table-wrap tables-grid-wrap">
          <table className="table tables-grid" aria-rowcount={total + 1}>
            <caption className="sr-only">Rows of {table.data.name}. Select a cell to edit it.</caption>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c.name} scope="col" className={isNumeric(c.type) ? 'num' : undefined} aria-sort={sortCol === c.name ? (sortDir === 'asc' ? 'ascending' : 'descending') : 'none'}>
                    <button type="button" className="tables-sort" onClick={() => cycleSort(c.name)}>
                      {c.name}<span className="muted small"> {c.type}</span>
                      <span aria-hidden="true">{sortCol === c.name ? (sortDir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
                      <span className="sr-only">{sortCol === c.name ? `, sorted ${sortDir}ending; sort ${sortDir === 'asc' ? 'descending' : 'off'}` : ', sort ascending'}</span>
                    </button>
                  </th>
                ))}
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {page.rows.map((r, i) => {
                const rowLabel = `row ${offset + i + 1}`;
                return (
                  <tr key={r.id} aria-rowindex={offset + i + 2}>
                    {columns.map((c) => (
                      <td key={c.name} className={isNumeric(c.type) ? 'num' : undefined}>
                        <Cell col={c} value={r.data[c.name]} rowLabel={rowLabel} onSave={(v) => saveCell(r, c, v)} />
                      </td>
                    ))}
                    <td><Button size="sm" variant="ghost" aria-label={`Delete ${rowLabel}`} onClick={() => { removeRow.reset(); setDeleting(r); }}>Delete</Button></td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <nav className="row gap tables-pager" aria-label="Pages of rows">
        <Button disabled={offset === 0 || rows.isFetching} onClick={() => setParam({ offset: String(Math.max(0, offset - size)) || null })}>← Previous</Button>
        <span className="small" aria-live="polite">
          {total === 0 ? 'No rows' : `Rows ${(offset + 1).toLocaleString()}–${(offset + (page?.rowCount ?? 0)).toLocaleString()} of ${total.toLocaleString()}`}
        </span>
        <Button disabled={page?.nextOffset == null || rows.isFetching} onClick={() => setParam({ offset: String(page?.nextOffset ?? 0) })}>Next →</Button>
        <label className="row gap small">
          Rows per page
          <select className="input input-compact" value={size} onChange={(e) => setParam({ size: e.target.value, offset: null })}>
            {PAGE_SIZES.map((n) => <option key={n} value={n}>{n}</option>)}
          </select>
        </label>
      </nav>

      {dialog === 'column' ? <AddColumnDialog open onClose={() => setDialog(null)} onSubmit={(c) => addCol.mutate(c)} busy={addCol.isPending} error={addCol.error} /> : null}
      {dialog === 'locks' ? (
        <LocksDialog open locks={table.data.locks} onClose={() => setDialog(null)} onSubmit={(l) => saveLocks.mutate(l)}
          busy={saveLocks.isPending} error={saveLocks.error} />
      ) : null}
      {dialog === 'row' ? <AddRowDialog columns={columns} open onClose={() => setDialog(null)} onSubmit={(d) => addRow.mutate(d)} busy={addRow.isPending} error={addRow.error} /> : null}
      {dialog === 'import' ? (
        <CsvImportDialog workspaceId={workspaceId} tableId={tableId} columns={columns} open onClose={() => setDialog(null)}
          onImported={(n) => { setDialog(null); setNotice(`Imported ${n} rows.`); void refresh(); }} />
      ) : null}
      <ConfirmDialog open={deleting !== null} title="Delete this row?" message="The row is removed from the table. This cannot be undone."
        confirmLabel="Delete row" danger busy={removeRow.isPending} error={removeRow.error}
        onConfirm={() => deleting && removeRow.mutate(deleting)} onCancel={() => setDeleting(null)} />
    </div>
  );
}
