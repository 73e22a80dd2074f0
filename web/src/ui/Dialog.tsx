// Dialog: a modal on the native <dialog> element (focus is trapped and Escape closes it natively).
// Props: open, title, onClose(), children (body), footer? (buttons), wide? (a wider box).
// ConfirmDialog: open, title, message, confirmLabel? ('Confirm'), danger? (red confirm button),
//   busy? (confirm shows a spinner), error? (shown above the buttons), onConfirm(), onCancel().
import { useEffect, useId, useRef, type ReactNode } from 'react';
import { Button } from './Button';
import { ErrorBanner } from './ErrorBanner';

export function Dialog({ open, title, onClose, children, footer, wide }: { open: boolean; title: ReactNode; onClose(): void; children: ReactNode; footer?: ReactNode; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className={`dialog${wide ? ' dialog-wide' : ''}`}
      aria-labelledby={titleId}
      onCancel={(e) => { e.preventDefault(); onClose(); }}
      onClick={(e) => { if (e.target === ref.current) onClose(); }}
    >
      {open ? (
        <div className="dialog-box">
          <h2 id={titleId} className="dialog-title">{title}</h2>
          <div className="dialog-body">{children}</div>
          {footer ? <div className="dialog-footer">{footer}</div> : null}
        </div>
      ) : null}
    </dialog>
  );
}

export function ConfirmDialog({ open, title, message, confirmLabel = 'Confirm', danger, busy, error, onConfirm, onCancel }: {
  open: boolean; title: ReactNode; message: ReactNode; confirmLabel?: string; danger?: boolean; busy?: boolean; error?: unknown; onConfirm(): void; onCancel(): void;
}) {
  return (
    <Dialog
      open={open}
      title={title}
      onClose={onCancel}
      footer={<>
        <Button onClick={onCancel}>Cancel</Button>
        <Button variant={danger ? 'danger' : 'primary'} busy={busy} onClick={onConfirm}>{confirmLabel}</Button>
      </>}
    >
      <div>{message}</div>
      {error ? <ErrorBanner error={error} /> : null}
    </Dialog>
  );
}
