// The change-password form, used by the sign-in prompt (mustChangePassword) and the user menu's dialog.
import { useState, type FormEvent, type ReactNode } from 'react';
import { changePassword } from '../api/auth';
import { Button, ErrorBanner, InputField } from '../ui';

export const MIN_PASSWORD = 12;
export const MAX_PASSWORD = 200;

/** knownCurrentPassword: the password just typed at sign-in; the form then does not ask for it again. */
export function ChangePasswordForm({ onDone, extraActions, knownCurrentPassword }: { onDone(): void; extraActions?: ReactNode; knownCurrentPassword?: string }) {
  const [current, setCurrent] = useState(knownCurrentPassword ?? '');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const tooShort = next.length > 0 && next.length < MIN_PASSWORD;
  const mismatch = repeat.length > 0 && repeat !== next;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (next.length < MIN_PASSWORD || next.length > MAX_PASSWORD) return setError(`The new password needs ${MIN_PASSWORD} to ${MAX_PASSWORD} characters.`);
    if (next !== repeat) return setError('The two new passwords differ.');
    setBusy(true);
    setError(null);
    try {
      await changePassword(current, next);
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="stack" onSubmit={submit} noValidate>
      {knownCurrentPassword === undefined ? (
        <InputField label="Current password" type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
      ) : null}
      <InputField label="New password" type="password" autoComplete="new-password" required minLength={MIN_PASSWORD} maxLength={MAX_PASSWORD} value={next} onChange={(e) => setNext(e.target.value)} hint={`At least ${MIN_PASSWORD} characters.`} error={tooShort ? `Use at least ${MIN_PASSWORD} characters.` : undefined} />
      <InputField label="Repeat the new password" type="password" autoComplete="new-password" required value={repeat} onChange={(e) => setRepeat(e.target.value)} error={mismatch ? 'The passwords differ.' : undefined} />
      <ErrorBanner error={error} />
      <div className="row gap">
        <Button type="submit" variant="primary" busy={busy}>Change password</Button>
        {extraActions}
      </div>
    </form>
  );
}
