// /knowledge lists the knowledge bases; /knowledge/:kbId shows one (uploads, documents, search).
import { useParams } from 'react-router';
import { BaseList } from './knowledge/BaseList';
import { BaseView } from './knowledge/BaseView';
import './knowledge/knowledge.css';

export default function KnowledgePage() {
  const { kbId } = useParams();
  return kbId ? <BaseView key={kbId} kbId={kbId} /> : <BaseList />;
}
