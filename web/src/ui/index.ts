// Shared UI pieces; each file documents its props at its top.
export { Button, type ButtonProps } from './Button';
export { Field, InputField, SelectField, TextAreaField } from './Field';
export { Table, type Column } from './Table';
export { Dialog, ConfirmDialog } from './Dialog';
export { ErrorBanner, describeError } from './ErrorBanner';
export { PageHeader } from './PageHeader';
export { EmptyState } from './EmptyState';
export { StatusBadge } from './StatusBadge';
export { Loading } from './Spinner';
export { CopyButton } from './CopyButton';
export { formatDate, formatRelative, formatDuration } from './format';
