// ErrorBanner: shows an error (an ApiError, an Error or a string) as an alert.
// Props: error (unknown; nothing is rendered when falsy), onRetry? (adds a Retry button), title?.
import { ApiError } from '../api/client';
import { Button } from './Button';

export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.status === 403 ? `Not allowed: ${error.message}` : error.message;
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : 'Something went wrong';
}

export function ErrorBanner({ error, onRetry, title }: { error: unknown; onRetry?: () => void; title?: string }) {
  if (!error) return null;
  return (
    <div className="banner banner-error" role="alert">
      <div>
        {title ? <strong>{title}: </strong> : null}
        {describeError(error)}
      </div>
      {onRetry ? <Button size="sm" onClick={onRetry}>Retry</Button> : null}
    </div>
  );
}
