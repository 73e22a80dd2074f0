import { describe, expect, it } from 'vitest';
import { checkJavaScriptSyntax } from '../../src/sandbox/syntax.js';

describe('checkJavaScriptSyntax', () => {
  it('accepts an async function body: top-level return and await', () => {
    expect(checkJavaScriptSyntax('const r = await fetch("https://example.com");\nreturn r.status;')).toBeUndefined();
    expect(checkJavaScriptSyntax('')).toBeUndefined();
    expect(checkJavaScriptSyntax('return a?.b ?? 1n;')).toBeUndefined();
  });

  it('gives 1-based line and column and a message without acorn\'s location suffix', () => {
    expect(checkJavaScriptSyntax('const a = 1;\nconst b = ;\nreturn a')).toEqual({ message: 'Unexpected token', line: 2, column: 11 });
    expect(checkJavaScriptSyntax(')')).toEqual({ message: 'Unexpected token', line: 1, column: 1 });
  });

  it('reports unterminated strings and redeclarations', () => {
    expect(checkJavaScriptSyntax('return "abc')).toEqual({ message: 'Unterminated string constant', line: 1, column: 8 });
    expect(checkJavaScriptSyntax('let x = 1;\nlet x = 2;')).toEqual({ message: "Identifier 'x' has already been declared", line: 2, column: 5 });
  });

  it('counts columns per line after CRLF line breaks', () => {
    expect(checkJavaScriptSyntax('let a = 1;\r\nlet b = ;')).toMatchObject({ line: 2, column: 9 });
  });

  it('refuses code that would close the function it runs in', () => {
    expect(checkJavaScriptSyntax('return 1; }); (async function () {')).toMatchObject({ line: 1, column: 11 });
  });
});
