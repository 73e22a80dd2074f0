import { randomUUID, randomBytes } from 'node:crypto';

export const newId = (): string => randomUUID();
export const newHexId = (prefix: string): string => prefix + randomBytes(16).toString('hex');

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => uuidPattern.test(s);
