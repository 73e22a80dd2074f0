// Trying a search: the ranked chunks with their similarity scores.
import { useId, useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { Button, ErrorBanner, InputField } from '../../ui';
import { search, type SearchResult } from './api';

export function SearchPanel({ workspaceId, knowledgeBaseId, disabled }: { workspaceId: string; knowledgeBaseId: string; disabled?: boolean }) {
  const id = useId();
  const [query, setQuery] = useState('');
  const [topK, setTopK] = useState(5);
  const [mode, setMode] = useState<'vector' | 'hybrid'>('vector');
  const run = useMutation({ mutationFn: (q: string) => search(workspaceId, knowledgeBaseId, q, topK, mode) });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (query.trim()) run.mutate(query.trim());
  };
  const results: SearchResult[] = run.data ?? [];
  return (
    <section className="card stack" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>Try a search</h2>
      <form className="kn-search" onSubmit={submit} role="search" aria-label="Search this knowledge base">
        <InputField label="Question or text" value={query} onChange={(e) => setQuery(e.target.value)} placeholder="How many days of leave do we get?" maxLength={10_000} />
        <div className="field">
          <label className="field-label" htmlFor={`${id}-k`}>Results</label>
          <input id={`${id}-k`} className="input" type="number" min={1} max={100} value={topK} onChange={(e) => setTopK(Math.min(100, Math.max(1, Number(e.target.value) || 1)))} />
        </div>
        <div className="field">
          <label className="field-label" htmlFor={`${id}-m`}>Ranking</label>
          <select id={`${id}-m`} className="input" value={mode} onChange={(e) => setMode(e.target.value as 'vector' | 'hybrid')}>
            <option value="vector">similarity</option>
            <option value="hybrid">hybrid (similarity + full text)</option>
          </select>
        </div>
        <div className="kn-search__go"><Button type="submit" variant="primary" busy={run.isPending} disabled={disabled || !query.trim()}>Search</Button></div>
      </form>
      <ErrorBanner error={run.error} />
      {run.isSuccess ? (
        results.length === 0 ? <p className="muted" role="status">No chunk matched. Documents still processing are not searched yet.</p> : (
          <ol className="kn-results" aria-label={`${results.length} results, best first`}>
            {results.map((r, i) => (
              <li key={`${r.documentId}-${r.chunkIndex}`} className="kn-result">
                <div className="kn-result__head">
                  <span className="kn-result__rank" aria-hidden="true">#{i + 1}</span>
                  <strong>{r.documentName}</strong>
                  <span className="muted small">chunk {r.chunkIndex}</span>
                  <span className="kn-score" title="Similarity: 1 minus the cosine distance">
                    <span className="kn-score__bar" aria-hidden="true"><span style={{ width: `${Math.max(0, Math.min(1, r.similarity)) * 100}%` }} /></span>
                    <span className="mono small">score {r.similarity.toFixed(3)}</span>
                  </span>
                </div>
                <p className="kn-result__text">{r.content}</p>
              </li>
            ))}
          </ol>
        )
      ) : null}
    </section>
  );
}
