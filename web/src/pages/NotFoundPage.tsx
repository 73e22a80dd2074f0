import { Link } from 'react-router';
import { EmptyState } from '../ui';

export default function NotFoundPage() {
  return <EmptyState title="Page not found" action={<Link className="btn btn-secondary" to="/">Go to the overview</Link>}>There is nothing at this address.</EmptyState>;
}
