// What canvas nodes read besides their own id: the block tree index, problems per block, read-only mode.
import { createContext, useContext } from 'react';
import type { Located } from './graph';

export interface EditorContextValue {
  index: Map<string, Located>;
  issuesByBlock: Map<string, string[]>;
  readOnly: boolean;
}

export const EditorContext = createContext<EditorContextValue>({ index: new Map(), issuesByBlock: new Map(), readOnly: false });
export const useEditor = () => useContext(EditorContext);
