// EmptyState: a friendly box for "nothing here yet". Props: title, children? (explanation), action? (a button).
import type { ReactNode } from 'react';

export function EmptyState({ title, children, action }: { title: ReactNode; children?: ReactNode; action?: ReactNode }) {
  return (
    <div className="empty-state">
      <h2>{title}</h2>
      {children ? <div className="muted">{children}</div> : null}
      {action ? <div className="empty-state-action">{action}</div> : null}
    </div>
  );
}
