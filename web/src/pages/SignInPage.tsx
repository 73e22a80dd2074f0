// /sign-in: email and password; then, for a one-time password (mustChangePassword), a prompt to choose a
// new one, which the user may skip ("Keep current password"). Afterwards the user goes back where they were.
import { useState, type FormEvent } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { ApiError } from '../api/client';
import { getSession, login } from '../api/auth';
import { ChangePasswordForm } from '../account/ChangePasswordForm';
import { useSessionState } from '../session';
import { Button, ErrorBanner, InputField } from '../ui';

/** Only same-site paths: `next` comes from the address bar, so never follow it elsewhere. */
function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/sign-in') ? next : '/';
}

export default function SignInPage() {
  const { info, setInfo } = useSessionState();
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [step, setStep] = useState<'credentials' | 'change-password'>('credentials');

  if (info && step === 'credentials' && !busy) return <Navigate to={next} replace />;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await login(email.trim(), password);
      const session = await getSession();
      if (res.mustChangePassword) setStep('change-password');
      setInfo(session);
      if (!res.mustChangePassword) navigate(next, { replace: true });
    } catch (err) {
      if (err instanceof ApiError && err.status === 429) setError('Too many sign-in attempts. Wait a minute and try again.');
      else setError(err);
    } finally {
      setBusy(false);
    }
  };

  const finish = async () => {
    try {
      setInfo(await getSession());
    } catch {
      // the session is still valid; the shell reloads it if needed
    }
    navigate(next, { replace: true });
  };

  return (
    <main className="center-page">
      <div className="card auth-card">
        {step === 'credentials' ? (
          <form className="stack" onSubmit={submit} noValidate>
            <div>
              <h1>Sign in to Weft</h1>
              <p className="muted">Use the email and password you were given. The first start of the server prints the admin's.</p>
            </div>
            <InputField label="Email" type="email" name="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.target.value)} />
            <InputField label="Password" type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
            <ErrorBanner error={error} />
            <Button type="submit" variant="primary" busy={busy} disabled={!email || !password}>Sign in</Button>
          </form>
        ) : (
          <div className="stack">
            <div>
              <h1>Choose a new password</h1>
              <p className="muted">You signed in with a one-time password. Choose your own now, or keep the current one and change it later from the account menu.</p>
            </div>
            <ChangePasswordForm
              knownCurrentPassword={password}
              onDone={() => void finish()}
              extraActions={<Button onClick={() => void finish()}>Keep current password</Button>}
            />
          </div>
        )}
      </div>
    </main>
  );
}
