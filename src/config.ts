import path from 'node:path';
import { z } from 'zod';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  WEFT_DATA_DIR: z.string().min(1).default('./.weft'),
  DATABASE_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  REDIS_URL: z.string().url().optional().or(z.literal('').transform(() => undefined)),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WEFT_BASE_URL: z.string().url().optional(),
  WEFT_ALLOW_PRIVATE_NETWORK: booleanFlag,
  WEFT_DEFAULT_PLAN: z.enum(['free', 'pro', 'team', 'enterprise']).default('free'),
  WEFT_KEY_CACHE_MS: z.coerce.number().int().min(0).max(5000).default(2000),
  WEFT_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
});

export type Plan = 'free' | 'pro' | 'team' | 'enterprise';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  baseUrl?: string;
  allowPrivateNetwork: boolean;
  defaultPlan: Plan;
  /** How long a positive API-key lookup may be reused; revocation must bite within 5 s. */
  keyCacheMs: number;
  workerConcurrency: number;
}

/** The one place environment variables are read. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.WEFT_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    logLevel: e.LOG_LEVEL,
    baseUrl: e.WEFT_BASE_URL?.replace(/\/$/, ''),
    allowPrivateNetwork: e.WEFT_ALLOW_PRIVATE_NETWORK,
    defaultPlan: e.WEFT_DEFAULT_PLAN,
    keyCacheMs: e.WEFT_KEY_CACHE_MS,
    workerConcurrency: e.WEFT_WORKER_CONCURRENCY,
    ...overrides,
  };
}
