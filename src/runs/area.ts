import type { AppContext, AreaPlugin } from '../context.js';
import type { EnginePorts } from '../engine/index.js';
import { GuardedHttp } from '../net/guarded-http.js';
import { InProcessQueue } from '../queue/in-process.js';
import { BullMqQueue } from '../queue/bullmq.js';
import type { JobQueue } from '../queue/port.js';
import { IsolatedVmSandbox } from '../sandbox/isolated-vm.js';
import { workflowRoutes } from '../workflows/routes.js';
import { runRoutes } from './routes.js';
import { PauseService } from './pauses.js';
import { resumeRoutes } from './resume-routes.js';
import { ExecutionService, type RunContext } from './service.js';

/** Extra engine ports contributed by other areas (tables, ai, ...), keyed by port name. */
export type PortContribution = (ctx: AppContext, run: RunContext) => Record<string, unknown>;
export const portContributions: PortContribution[] = [];

declare module '../context.js' {
  interface AreaServices {
    executions: ExecutionService;
  }
}


/** Workflows, executions, jobs and logs. */
export const runsArea: AreaPlugin = async (app, { ctx }) => {
  // One V8 context per run on a warm isolate (DESIGN section 10): runs never share globals.
  const sandbox = new IsolatedVmSandbox({ contextPerRun: true });
  const http = new GuardedHttp({ allowPrivateNetwork: ctx.config.allowPrivateNetwork });
  // Scaled out (PostgreSQL and Redis): BullMQ lets any worker process take a job. Otherwise in-process.
  const queue: JobQueue = ctx.db.mode === 'postgres' && ctx.config.redisUrl
    ? new BullMqQueue(ctx.config.redisUrl, ctx.config.workerConcurrency)
    : new InProcessQueue(ctx.config.workerConcurrency, (err, jobId) => ctx.log.error({ err, jobId }, 'job failed'));
  const limits = ctx.services.limits;
  if (!limits) throw new Error('the limits area must be registered before the runs area');
  const service: ExecutionService = new ExecutionService(ctx, queue, limits, (run) => {
    const ports: EnginePorts = {
      http,
      sandbox,
      workflows: {
        run: (workflowId, input, opts) => service.runChild(run, workflowId, input, opts.depth, opts.signal),
      },
    };
    for (const contribute of portContributions) Object.assign(ports, contribute(ctx, run));
    return ports;
  });
  const pauses = new PauseService(ctx, service, queue);
  service.pauses = pauses;
  ctx.services.executions = service;
  await app.register(workflowRoutes, { ctx });
  await app.register(runRoutes(service), { ctx });
  await app.register(resumeRoutes(pauses, service), { ctx });

  let sweeper: NodeJS.Timeout | undefined;
  ctx.onClose.push(async () => {
    if (sweeper) clearInterval(sweeper);
    pauses.stop();
    await service.close();
    await sandbox.dispose?.();
  });
  // Start the worker once the server is ready: first recover what a previous process left unfinished.
  app.addHook('onReady', async () => {
    if (ctx.role === 'api') return; // worker processes run the jobs
    queue.work((id) => service.runJob(id));
    pauses.start();
    const recovered = await service.recover(ctx.db.mode === 'pglite');
    if (recovered > 0) ctx.log.info({ recovered }, 'resuming unfinished async runs');
    if (ctx.db.mode === 'postgres') {
      // Other processes may die holding leases: take their jobs over once the lease expires.
      sweeper = setInterval(() => {
        service.recover(false).catch((err: unknown) => ctx.log.warn({ err }, 'job sweep failed'));
      }, Math.min(5_000, ctx.config.jobLeaseMs / 2));
      sweeper.unref();
    }
  });
};
