// Button: a native <button> with the dashboard's look.
// Props: every <button> prop, plus
//   variant: 'primary' | 'secondary' (default) | 'danger' | 'ghost'
//   size: 'sm' | 'md' (default)
//   busy: shows a spinner, sets aria-busy and disables the button
// type defaults to "button" so a button inside a form never submits it by accident.
import type { ButtonHTMLAttributes } from 'react';

export interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  variant?: 'primary' | 'secondary' | 'danger' | 'ghost';
  size?: 'sm' | 'md';
  busy?: boolean;
}

export function Button({ variant = 'secondary', size = 'md', busy, className, disabled, children, type, ...rest }: ButtonProps) {
  const cls = ['btn', `btn-${variant}`, size === 'sm' ? 'btn-sm' : '', className ?? ''].filter(Boolean).join(' ');
  return (
    <button type={type ?? 'button'} className={cls} disabled={disabled || busy} aria-busy={busy || undefined} {...rest}>
      {busy ? <span className="spinner" aria-hidden="true" /> : null}
      {children}
    </button>
  );
}
