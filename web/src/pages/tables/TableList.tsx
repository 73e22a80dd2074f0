// /tables: the workspace's tables, and creating one.
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSession } from '../../session';
import { Button, EmptyState, ErrorBanner, Loading, PageHeader, Table, formatDate } from '../../ui';
import { createTable, listTables, type NewColumn, type Table as TableInfo } from './api';
import { NewTableDialog } from './ColumnDialog';

export function TableList() {
  const { workspaceId } = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  const tables = useQuery({ queryKey: ['tables', workspaceId], queryFn: () => listTables(workspaceId), enabled: Boolean(workspaceId) });
  const create = useMutation({
    mutationFn: ({ name, columns }: { name: string; columns: NewColumn[] }) => createTable(workspaceId, name, columns),
    onSuccess: async (t) => {
      setCreating(false);
      await qc.invalidateQueries({ queryKey: ['tables', workspaceId] });
      navigate(`/tables/${encodeURIComponent(t.id)}`);
    },
  });
  return (
    <div className="stack">
      <PageHeader title="Tables" description="Typed tables that workflows read and write."
        actions={<Button variant="primary" onClick={() => { create.reset(); setCreating(true); }}>New table</Button>} />
      <ErrorBanner error={tables.error} onRetry={() => void tables.refetch()} />
      {tables.isLoading ? <Loading label="Loading tables…" /> : (
        <Table<TableInfo>
          caption="Tables"
          rows={tables.data ?? []}
          rowKey={(t) => t.id}
          empty={<EmptyState title="No tables yet" action={<Button variant="primary" onClick={() => setCreating(true)}>New table</Button>}>
            Create one here, or through the API (POST /api/v1/tables).
          </EmptyState>}
          columns={[
            { key: 'name', header: 'Name', render: (t) => <Link to={`/tables/${encodeURIComponent(t.id)}`}>{t.name}</Link> },
            { key: 'columns', header: 'Columns', render: (t) => <span className="muted">{t.schema.columns.map((c) => c.name).join(', ')}</span> },
            { key: 'rows', header: 'Rows', className: 'num', render: (t) => t.rowCount.toLocaleString() },
            { key: 'updated', header: 'Updated', render: (t) => formatDate(t.updatedAt) },
          ]}
        />
      )}
      {creating ? (
        <NewTableDialog open onClose={() => setCreating(false)} busy={create.isPending} error={create.error}
          onSubmit={(name, columns) => create.mutate({ name, columns })} />
      ) : null}
    </div>
  );
}
