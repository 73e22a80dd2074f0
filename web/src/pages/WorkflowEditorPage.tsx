// /workflows/:id: the canvas editor. The page loads the workflow and the definition schema, then the
// Editor keeps the draft in memory until it is saved (PUT), deployed, or run.
import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import '@xyflow/react/dist/style.css';
import { getDefinitionSchema, getWorkflow } from '../api/workflows';
import { Editor } from '../editor/Editor';
import { blockTypesOf } from '../editor/schema';
import { ErrorBanner, Loading, PageHeader } from '../ui';

export default function WorkflowEditorPage() {
  const { id = '' } = useParams();
  const wf = useQuery({ queryKey: ['workflow', id], queryFn: () => getWorkflow(id) });
  const schema = useQuery({ queryKey: ['definition-schema'], queryFn: getDefinitionSchema, staleTime: Infinity });
  if (wf.error || schema.error) {
    return (
      <div className="stack">
        <PageHeader title="Workflow" back={{ to: '/workflows', label: 'Workflows' }} />
        <ErrorBanner error={wf.error ?? schema.error} onRetry={() => { void wf.refetch(); void schema.refetch(); }} />
      </div>
    );
  }
  if (!wf.data || !schema.data) return <Loading label="Loading the workflow…" />;
  return <Editor key={wf.data.id} initial={wf.data} types={blockTypesOf(schema.data)} />;
}
