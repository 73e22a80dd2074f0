// Spinner / Loading: a small busy indicator. Loading props: label? ('Loading…'), shown beside it and to screen readers.
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return <div className="loading" role="status"><span className="spinner" aria-hidden="true" /> {label}</div>;
}
