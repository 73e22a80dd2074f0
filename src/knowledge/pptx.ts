// PowerPoint (PPTX) text: each slide's paragraphs, in slide order, then its speaker notes. The archive is read
// through zip-guard.ts, within the inflate bounds, and the slide XML is walked tag by tag in one pass (a
// regular expression with lazy matching over a tenant's XML can take quadratic time).
import type { IngestBounds } from './ingest-bounds.js';
import type { ParsedBlock } from './parsed-document.js';
import { DocumentParseError } from './parsed-document.js';
import { guardArchive } from './zip-guard.js';

const SLIDE = /^ppt\/slides\/slide(\d+)\.xml$/;
const NOTES = /^ppt\/notesSlides\/notesSlide(\d+)\.xml$/;

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]{2,4});/g, (whole, name: string) => {
    if (name[0] !== '#') return ENTITIES[name] ?? whole;
    const code = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** The paragraphs (`<a:p>`) of a DrawingML part: the text of their runs (`<a:t>`), line breaks kept. */
export function drawingParagraphs(xml: string): string[] {
  const paragraphs: string[] = [];
  let current = '';
  let inText = false;
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    if (lt < 0) break;
    if (inText) current += decodeEntities(xml.slice(i, lt));
    const gt = xml.indexOf('>', lt);
    if (gt < 0) break;
    // The tag's name (with the slash of a closing tag): up to the first space, slash or the end of the tag.
    let end = xml[lt + 1] === '/' ? lt + 2 : lt + 1;
    while (end < gt && xml[end] !== ' ' && xml[end] !== '/' && xml[end] !== '\t' && xml[end] !== '\n' && xml[end] !== '\r') end++;
    const name = xml.slice(lt + 1, end);
    const selfClosing = xml[gt - 1] === '/';
    if (name === 'a:t') inText = !selfClosing;
    else if (name === '/a:t') inText = false;
    else if (name === 'a:br') current += '\n';
    else if (name === '/a:p' || (name === 'a:p' && selfClosing)) {
      if (current.trim() !== '') paragraphs.push(current.trim());
      current = '';
    }
    i = gt + 1;
  }
  if (current.trim() !== '') paragraphs.push(current.trim());
  return paragraphs;
}

/** Slide N's heading, its paragraphs, then its speaker notes; every block carries the slide number as its page. */
export function pptxBlocks(bytes: Uint8Array, bounds: IngestBounds): ParsedBlock[] {
  const { parts } = guardArchive(bytes, 'PPTX', bounds);
  const numbered = (pattern: RegExp) => new Map([...parts].flatMap(([name, data]) => {
    const m = pattern.exec(name);
    return m ? [[Number(m[1]), data.toString('utf8')] as const] : [];
  }));
  const slides = numbered(SLIDE);
  if (slides.size === 0) throw new DocumentParseError('The PPTX file could not be read: it has no slides');
  const notes = numbered(NOTES);
  const blocks: ParsedBlock[] = [];
  for (const n of [...slides.keys()].sort((a, b) => a - b)) {
    const text = drawingParagraphs(slides.get(n) ?? '');
    // Notes pages repeat the slide number in a placeholder of their own; a lone number is not a note.
    const spoken = drawingParagraphs(notes.get(n) ?? '').filter((p) => !/^\d+$/.test(p));
    if (text.length === 0 && spoken.length === 0) continue;
    blocks.push({ kind: 'heading', text: `Slide ${n}`, level: 2, page: n });
    for (const p of text) blocks.push({ kind: 'text', text: p, page: n });
    for (const p of spoken) blocks.push({ kind: 'text', text: `Notes: ${p}`, page: n });
  }
  return blocks;
}
