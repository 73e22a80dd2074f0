import { describe, expect, it } from 'vitest';
import { constantTimeEqual } from '../../src/constant-time.js';

describe('constantTimeEqual', () => {
  it('is true only for equal strings or bytes, whatever their lengths', () => {
    expect(constantTimeEqual('wf_key_abc', 'wf_key_abc')).toBe(true);
    expect(constantTimeEqual('wf_key_abc', 'wf_key_abd')).toBe(false);
    expect(constantTimeEqual('wf_key_abc', 'wf_key_ab')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('', 'x')).toBe(false);
    expect(constantTimeEqual(Buffer.from([1, 2, 3]), Buffer.from([1, 2, 3]))).toBe(true);
    expect(constantTimeEqual(Buffer.from([1, 2, 3]), Buffer.from([1, 2, 4]))).toBe(false);
  });
});
