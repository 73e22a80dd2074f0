// Deployment: state, deploy / undeploy, the versions with a rollback per version, and how to call the
// deployed workflow: the execute curl example and the webhook URL.
import { useState } from 'react';
import { Link } from 'react-router';
import type { Workflow, WorkflowStatus } from '../api/workflows';
import { Button, ConfirmDialog, CopyButton, ErrorBanner, StatusBadge, formatDate } from '../ui';
import { VersionList } from './VersionList';

interface DeployPanelProps {
  workflow: Workflow;
  status: WorkflowStatus | undefined;
  dirty: boolean;
  canDeploy: boolean;
  busy: boolean;
  error: unknown;
  exampleInputs: Record<string, unknown>;
  onDeploy(): void;
  onUndeploy(): void;
  onRollback(version: number): void;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function DeployPanel({ workflow, status, dirty, canDeploy, busy, error, exampleInputs, onDeploy, onUndeploy, onRollback }: DeployPanelProps) {
  const [confirmUndeploy, setConfirmUndeploy] = useState(false);
  const origin = window.location.origin;
  const curl = [
    `curl -X POST ${origin}/api/workflows/${workflow.id}/execute \\`,
    `  -H "X-API-Key: $WEFT_KEY" -H 'content-type: application/json' \\`,
    `  -d ${shellQuote(JSON.stringify({ inputs: exampleInputs }))}`,
  ].join('\n');
  const needs = status?.needsRedeployment || (workflow.isDeployed && dirty);

  return (
    <div className="stack">
      <h2>Deploy</h2>
      <div className="row gap">
        {workflow.isDeployed ? <StatusBadge status="deployed" label={`Deployed v${workflow.version}`} /> : <StatusBadge status="draft" label="Not deployed" />}
        {needs ? <StatusBadge status="needs redeploy" label="Draft differs from the deployed version" /> : null}
      </div>
      {workflow.deployedAt ? <p className="muted small">Active version deployed {formatDate(workflow.deployedAt)}. Runs through the API, webhooks and schedules use the active version.</p> : <p className="muted small">Deploy to run it through the API, a webhook or a schedule.</p>}
      {canDeploy ? (
        <div className="row gap">
          <Button variant="primary" busy={busy} onClick={onDeploy}>{dirty ? 'Save and deploy' : 'Deploy'}</Button>
          {workflow.isDeployed ? <Button disabled={busy} onClick={() => setConfirmUndeploy(true)}>Undeploy</Button> : null}
        </div>
      ) : <p className="muted small">Only workspace admins deploy, undeploy and roll back.</p>}
      <ErrorBanner error={error} />

      <VersionList workflowId={workflow.id} activeVersion={workflow.isDeployed ? workflow.version : null} canRollback={canDeploy} busy={busy} onRollback={onRollback} />

      <section className="stack" aria-label="Call it">
        <h3>Call it over HTTP</h3>
        <pre data-testid="curl-example">{curl}</pre>
        <div className="row gap"><CopyButton text={curl} label="Copy curl" /><span className="muted small">Create a key under <Link to="/settings/api-keys">API keys</Link>; set it as <code>WEFT_KEY</code>.</span></div>
        {workflow.webhookUrl ? (
          <div className="stack">
            <h3>Webhook URL</h3>
            <div className="secret"><code data-testid="webhook-url">{workflow.webhookUrl}</code><CopyButton text={workflow.webhookUrl} /></div>
          </div>
        ) : <p className="muted small">Add a webhook block and deploy to get a webhook URL.</p>}
        {workflow.schedule ? (
          <p className="small">Schedule: {workflow.schedule.enabled ? `next run ${formatDate(workflow.schedule.nextRunAt[0])}` : `disabled${workflow.schedule.disabledReason ? ` (${workflow.schedule.disabledReason})` : ''}`}</p>
        ) : null}
      </section>
      <ConfirmDialog
        open={confirmUndeploy}
        title="Undeploy this workflow?"
        message="API runs, its webhook and its schedule stop until it is deployed again. Its versions are kept."
        confirmLabel="Undeploy"
        danger
        busy={busy}
        onConfirm={() => { setConfirmUndeploy(false); onUndeploy(); }}
        onCancel={() => setConfirmUndeploy(false)}
      />
    </div>
  );
}
