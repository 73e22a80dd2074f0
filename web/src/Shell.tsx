// The signed-in frame: skip link, navigation, workspace switcher, user menu and the page outlet.
import { Suspense, useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { NavLink, Outlet, useLocation } from 'react-router';
import { useQueryClient } from '@tanstack/react-query';
import { ChangePasswordForm } from './account/ChangePasswordForm';
import { useSession } from './session';
import { Button, Dialog, EmptyState, Loading } from './ui';

const NAV = [
  { to: '/', label: 'Home', end: true },
  { to: '/workflows', label: 'Workflows' },
  { to: '/runs', label: 'Runs' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/tables', label: 'Tables' },
  { to: '/knowledge', label: 'Knowledge' },
  { to: '/connectors', label: 'Connectors' },
  { to: '/usage', label: 'Usage' },
  { to: '/settings/api-keys', label: 'API keys' },
  { to: '/settings/secrets', label: 'Secrets' },
];

function WorkspaceSwitcher() {
  const { workspaces, workspaceId, setWorkspaceId } = useSession();
  const id = useId();
  const qc = useQueryClient();
  if (workspaces.length === 0) return null;
  return (
    <div className="workspace-switcher">
      <label htmlFor={id} className="sr-only">Workspace</label>
      <select
        id={id}
        className="input input-compact"
        value={workspaceId}
        onChange={(e) => {
          setWorkspaceId(e.target.value);
          // everything on screen belonged to the other workspace
          void qc.invalidateQueries({ predicate: (q) => q.queryKey[0] !== 'session' });
        }}
      >
        {workspaces.map((w) => <option key={w.id} value={w.id}>{w.name} ({w.role})</option>)}
      </select>
    </div>
  );
}

function UserMenu({ onChangePassword }: { onChangePassword(): void }) {
  const { user, signOut } = useSession();
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const buttonRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const first = boxRef.current?.querySelector<HTMLElement>('[role="menuitem"]');
    first?.focus();
    const onDoc = (e: MouseEvent) => { if (!boxRef.current?.contains(e.target as Node)) setOpen(false); };
    document.addEventListener('mousedown', onDoc);
    return () => document.removeEventListener('mousedown', onDoc);
  }, [open]);

  const close = () => { setOpen(false); buttonRef.current?.focus(); };
  const onKey = (e: KeyboardEvent) => {
    const items = Array.from(boxRef.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? []);
    const i = items.indexOf(document.activeElement as HTMLElement);
    if (e.key === 'Escape') { e.preventDefault(); close(); }
    if (e.key === 'ArrowDown') { e.preventDefault(); items[(i + 1) % items.length]?.focus(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); items[(i - 1 + items.length) % items.length]?.focus(); }
  };

  return (
    <div className="user-menu" ref={boxRef} onKeyDown={onKey}>
      <button ref={buttonRef} type="button" className="btn btn-ghost" aria-haspopup="menu" aria-expanded={open} aria-controls={menuId} onClick={() => setOpen((o) => !o)}>
        <span className="avatar" aria-hidden="true">{(user.name || user.email).slice(0, 1).toUpperCase()}</span>
        <span className="user-name">{user.name || user.email}</span>
      </button>
      {open ? (
        <div className="menu" role="menu" id={menuId} aria-label="Account">
          <div className="menu-caption">{user.email}</div>
          <button type="button" role="menuitem" className="menu-item" onClick={() => { setOpen(false); onChangePassword(); }}>Change password</button>
          <button type="button" role="menuitem" className="menu-item" onClick={() => void signOut(false)}>Sign out</button>
          <button type="button" role="menuitem" className="menu-item" onClick={() => void signOut(true)}>Sign out everywhere</button>
        </div>
      ) : null}
    </div>
  );
}

export function Shell() {
  const { workspaces, refresh } = useSession();
  // the phone menu stays open only on the page where it was opened (following a link closes it)
  const [navOpenAt, setNavOpenAt] = useState<string | null>(null);
  const [pwOpen, setPwOpen] = useState(false);
  const [pwDone, setPwDone] = useState(false);
  const location = useLocation();
  const mainRef = useRef<HTMLElement>(null);

  const navOpen = navOpenAt === location.pathname;
  // the canvas editor wants the width: its navigation folds behind the menu button
  const wide = /^\/workflows\/[^/]+/.test(location.pathname);
  return (
    <div className={`app${wide ? ' app-wide' : ''}`}>
      <a className="skip-link" href="#main" onClick={(e) => { e.preventDefault(); mainRef.current?.focus(); }}>Skip to content</a>
      <header className="topbar">
        <button type="button" className="btn btn-ghost nav-toggle" aria-expanded={navOpen} aria-controls="main-nav" onClick={() => setNavOpenAt(navOpen ? null : location.pathname)}>
          <span aria-hidden="true">☰</span><span className="sr-only">Menu</span>
        </button>
        <NavLink to="/" className="brand">Weft</NavLink>
        <div className="topbar-spacer" />
        <WorkspaceSwitcher />
        <UserMenu onChangePassword={() => { setPwDone(false); setPwOpen(true); }} />
      </header>
      <nav id="main-nav" className={`sidenav${navOpen ? ' open' : ''}`} aria-label="Main">
        <ul>
          {NAV.map((n) => (
            <li key={n.to}><NavLink to={n.to} end={n.end} className={({ isActive }) => `nav-link${isActive ? ' active' : ''}`}>{n.label}</NavLink></li>
          ))}
        </ul>
      </nav>
      <main id="main" className="content" ref={mainRef} tabIndex={-1}>
        {workspaces.length === 0 ? (
          <EmptyState title="No workspace yet">Your account is not a member of any workspace. Ask an administrator to add you (<code>weft workspaces</code>).</EmptyState>
        ) : (
          <Suspense fallback={<Loading />}><Outlet /></Suspense>
        )}
      </main>
      <Dialog open={pwOpen} title="Change password" onClose={() => setPwOpen(false)}>
        {pwDone ? (
          <div className="stack">
            <p>Your password was changed. Your other sessions were signed out.</p>
            <div><Button variant="primary" onClick={() => setPwOpen(false)}>Close</Button></div>
          </div>
        ) : (
          <ChangePasswordForm onDone={() => { setPwDone(true); void refresh(); }} extraActions={<Button onClick={() => setPwOpen(false)}>Cancel</Button>} />
        )}
      </Dialog>
    </div>
  );
}
