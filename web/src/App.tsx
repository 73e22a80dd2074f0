/*
 * Routes of the dashboard. Contract with the other page authors (also in web/README.md):
 * - Pages live in web/src/pages/<Name>Page.tsx with a default export and are lazy-loaded here.
 * - Call the server only with api() from ./api/client, typed by the generated schema (./api/schema): cookie
 *   session, CSRF header on non-GET, ApiError {status, message, body} on failure, a 401 goes to /sign-in.
 *   Derive shapes from ./api/schema rather than declaring them, so a server change breaks this build.
 * - useSession() from ./session gives {user, workspaces, workspaceId, role, setWorkspaceId, csrfToken};
 *   put workspaceId in react-query keys so a workspace switch refetches.
 * - Shared components are in ./ui (props documented at the top of each file).
 */
import { lazy, Suspense, type ComponentType, type LazyExoticComponent } from 'react';
import { Navigate, Route, Routes, useLocation } from 'react-router';
import { Shell } from './Shell';
import { SignedInSession, useSessionState } from './session';
import { ErrorBanner, Loading } from './ui';

const page = (load: () => Promise<{ default: ComponentType }>): LazyExoticComponent<ComponentType> => lazy(load);

const HomePage = page(() => import('./pages/HomePage'));
const SignInPage = page(() => import('./pages/SignInPage'));
const WorkflowsPage = page(() => import('./pages/WorkflowsPage'));
const WorkflowEditorPage = page(() => import('./pages/WorkflowEditorPage'));
const RunsPage = page(() => import('./pages/RunsPage'));
const RunDetailPage = page(() => import('./pages/RunDetailPage'));
const ApprovalsPage = page(() => import('./pages/ApprovalsPage'));
const TablesPage = page(() => import('./pages/TablesPage'));
const KnowledgePage = page(() => import('./pages/KnowledgePage'));
const UsagePage = page(() => import('./pages/UsagePage'));
const ApiKeysPage = page(() => import('./pages/ApiKeysPage'));
const SecretsPage = page(() => import('./pages/SecretsPage'));
const ConnectorsPage = page(() => import('./pages/ConnectorsPage'));
const NotFoundPage = page(() => import('./pages/NotFoundPage'));

/** Everything but /sign-in needs a session; without one the user goes to sign-in and comes back after. */
function RequireSession() {
  const { info, error, refresh } = useSessionState();
  const location = useLocation();
  if (info === undefined) {
    return error ? <main className="center-page"><ErrorBanner error={error} onRetry={() => void refresh()} /></main> : <main className="center-page"><Loading /></main>;
  }
  if (info === null) {
    const next = location.pathname + location.search;
    return <Navigate to={`/sign-in${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`} replace />;
  }
  return <SignedInSession info={info}><Shell /></SignedInSession>;
}

export function App() {
  return (
    <Suspense fallback={<main className="center-page"><Loading /></main>}>
      <Routes>
        <Route path="/sign-in" element={<SignInPage />} />
        <Route element={<RequireSession />}>
          <Route index element={<HomePage />} />
          <Route path="workflows" element={<WorkflowsPage />} />
          <Route path="workflows/:id" element={<WorkflowEditorPage />} />
          <Route path="runs" element={<RunsPage />} />
          <Route path="runs/:executionId" element={<RunDetailPage />} />
          <Route path="approvals" element={<ApprovalsPage />} />
          <Route path="tables" element={<TablesPage />} />
          <Route path="tables/:tableId" element={<TablesPage />} />
          <Route path="knowledge" element={<KnowledgePage />} />
          <Route path="knowledge/:kbId" element={<KnowledgePage />} />
          <Route path="connectors" element={<ConnectorsPage />} />
          <Route path="usage" element={<UsagePage />} />
          <Route path="settings" element={<Navigate to="/settings/api-keys" replace />} />
          <Route path="settings/api-keys" element={<ApiKeysPage />} />
          <Route path="settings/secrets" element={<SecretsPage />} />
          <Route path="*" element={<NotFoundPage />} />
        </Route>
      </Routes>
    </Suspense>
  );
}
