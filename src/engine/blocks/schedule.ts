// Schedule: an entry block like start, entered when the schedules area fires the workflow at one of
// its ticks (a cron expression in a time zone, or a fixed interval). The schedules area reads the
// config, claims each tick once across processes and enqueues the run; this block only shapes its
// input: `scheduledAt` (the tick, ISO 8601) and `missedTicks` (ticks that passed unrun before it,
// under missedRuns: 'runOnce'). The cron expression itself is parsed outside the engine (the host's
// `checkConfig` at save and deploy): here only its shape is checked.
import { z } from 'zod';
import { defineBlockType } from '../block-type.js';

export const missedRunPolicies = ['skip', 'runOnce'] as const;
/** The longest interval: a year of 366 days. */
export const MAX_INTERVAL_SECONDS = 366 * 86_400;

function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export const scheduleConfigSchema = z
  .strictObject({
    cron: z.string().trim().min(1).max(200).optional()
      .describe('Five fields (minute hour day-of-month month day-of-week) or six with seconds first'),
    timezone: z.string().min(1).max(100).optional().describe('IANA time zone of a cron expression (default UTC)'),
    intervalSeconds: z.number().int().min(1).max(MAX_INTERVAL_SECONDS).optional()
      .describe('A fixed interval instead of cron: ticks at multiples of it since 1970-01-01T00:00:00Z'),
    missedRuns: z.enum(missedRunPolicies).default('skip')
      .describe('Ticks that passed while no scheduler ran: skip them, or run once for all of them'),
    maxConsecutiveFailures: z.number().int().min(1).max(10_000).default(10)
      .describe('The schedule disables itself after this many failed runs in a row (a redeploy enables it again)'),
  })
  .superRefine((cfg, ctx) => {
    const hasCron = cfg.cron !== undefined;
    const hasInterval = cfg.intervalSeconds !== undefined;
    if (hasCron === hasInterval) {
      ctx.addIssue({ code: 'custom', path: hasCron ? ['intervalSeconds'] : ['cron'], message: 'set exactly one of cron and intervalSeconds' });
    }
    if (hasCron) {
      const fields = cfg.cron!.split(/\s+/).length;
      if (fields !== 5 && fields !== 6) {
        ctx.addIssue({ code: 'custom', path: ['cron'], message: `a cron expression has five fields, or six with seconds first; got ${fields}` });
      }
    }
    if (cfg.timezone !== undefined) {
      if (!hasCron) ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'timezone applies to cron schedules only' });
      else if (!validTimeZone(cfg.timezone)) ctx.addIssue({ code: 'custom', path: ['timezone'], message: `unknown IANA time zone "${cfg.timezone}"` });
    }
  });

export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;

export const scheduleBlock = defineBlockType<ScheduleConfig>({
  type: 'schedule',
  config: scheduleConfigSchema,
  entry: true,
  retryable: false,
  pure: true,
  // The trigger's settings are read by the schedules area; references in them are not resolved.
  rawFields: ['cron', 'timezone'],
  outputFields: () => ['scheduledAt', 'missedTicks'],
  async run(ctx) {
    const raw = ctx.input;
    return { output: { scheduledAt: raw.scheduledAt ?? null, missedTicks: typeof raw.missedTicks === 'number' ? raw.missedTicks : 0 } };
  },
});
