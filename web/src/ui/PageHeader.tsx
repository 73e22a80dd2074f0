// PageHeader: the page's <h1>, an optional description and action buttons on the right.
// Props: title, description?, actions? (ReactNode), back? ({to, label}: a link above the title).
import type { ReactNode } from 'react';
import { Link } from 'react-router';

export function PageHeader({ title, description, actions, back }: { title: ReactNode; description?: ReactNode; actions?: ReactNode; back?: { to: string; label: string } }) {
  return (
    <header className="page-header">
      <div className="page-header-text">
        {back ? <Link className="back-link" to={back.to}>← {back.label}</Link> : null}
        <h1>{title}</h1>
        {description ? <p className="muted">{description}</p> : null}
      </div>
      {actions ? <div className="page-header-actions">{actions}</div> : null}
    </header>
  );
}
