// /tables lists the workspace's tables; /tables/:tableId shows one table's rows.
import { useParams } from 'react-router';
import { TableList } from './tables/TableList';
import { TableView } from './tables/TableView';
import './tables/tables.css';

export default function TablesPage() {
  const { tableId } = useParams();
  // Keyed by id: moving to another table starts from a clean state.
  return tableId ? <TableView key={tableId} tableId={tableId} /> : <TableList />;
}
