// The SandboxError a call fails with; the test fails if the call succeeds or fails otherwise.
import { expect } from 'vitest';
import { SandboxError } from '../../src/sandbox/isolated-vm.js';

export async function failure(p: Promise<unknown>): Promise<SandboxError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SandboxError);
    return err as SandboxError;
  }
  throw new Error('expected a failure');
}
