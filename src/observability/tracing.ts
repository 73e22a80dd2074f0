// OpenTelemetry traces (official SDK), built only when an OTLP endpoint is configured: a server span
// per HTTP request, and per finished run a run span with one span per executed block under it. Block
// spans are made from the run's trace entries after the run (start time and duration of each block), so
// the engine stays free of tracing. Nothing is registered globally: the provider, its tracer and the
// request context store belong to this object, which the composition root builds once per process.
import { AsyncLocalStorage } from 'node:async_hooks';
import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { createRequire } from 'node:module';
import type { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION, ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import type { RunEvent } from './events.js';

export interface TracingOptions {
  /** Full URL of the OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces). */
  url: string;
  serviceName: string;
  serviceVersion: string;
}

// The SDK and its exporter take about 80 ms to load: required here, when tracing is configured, rather than
// imported by every process. (The API package stays a static import: its context keys are global symbols.)
function sdk() {
  const require = createRequire(import.meta.url);
  return {
    core: require('@opentelemetry/core') as typeof import('@opentelemetry/core'),
    exporter: require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http'),
    resources: require('@opentelemetry/resources') as typeof import('@opentelemetry/resources'),
    base: require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base'),
  };
}

export class Tracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator: W3CTraceContextPropagator;
  /** The context of the request being handled, so that a sync run's spans join its request's trace. */
  private readonly current = new AsyncLocalStorage<Context>();

  constructor(opts: TracingOptions) {
    const { core, exporter, resources, base } = sdk();
    this.propagator = new core.W3CTraceContextPropagator();
    this.provider = new base.BasicTracerProvider({
      resource: resources.resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName, [ATTR_SERVICE_VERSION]: opts.serviceVersion }),
      spanProcessors: [new base.BatchSpanProcessor(new exporter.OTLPTraceExporter({ url: opts.url }))],
    });
    this.tracer = this.provider.getTracer('weft', opts.serviceVersion);
  }

  /** A server span for a request, continuing the caller's trace when it sent a W3C `traceparent`. */
  startRequest(method: string, path: string, headers: Record<string, string | string[] | undefined>): Span {
    const parent = headers.traceparent ? this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter) : ROOT_CONTEXT;
    return this.tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_PATH]: path } }, parent);
  }

  /** Runs the rest of a request's handling (its handler and everything it awaits) with its span current. */
  within(span: Span, fn: () => void): void {
    this.current.run(trace.setSpan(ROOT_CONTEXT, span), fn);
  }

  endRequest(span: Span, info: { method: string; route: string | undefined; status: number; requestId: string; workspaceId?: string }): void {
    if (info.route) {
      span.updateName(`${info.method} ${info.route}`);
      span.setAttribute(ATTR_HTTP_ROUTE, info.route);
    }
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, info.status);
    span.setAttribute('weft.request_id', info.requestId);
    if (info.workspaceId) span.setAttribute('weft.workspace.id', info.workspaceId);
    if (info.status >= 500) {
      span.setAttribute(ATTR_ERROR_TYPE, String(info.status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  /** A run span (inside the current request's trace for a sync run) and a span per executed block. */
  run(e: RunEvent): void {
    // An async run starts a trace of its own: the worker that runs it may have been woken inside some
    // request's context (in-process queue), which is not its caller's.
    const parent = (e.mode === 'sync' ? this.current.getStore() : undefined) ?? ROOT_CONTEXT;
    const runSpan = this.tracer.startSpan(`run ${e.trigger}`, {
      kind: SpanKind.INTERNAL,
      startTime: e.startedAt,
      attributes: {
        'weft.workflow.id': e.workflowId, 'weft.execution.id': e.executionId, 'weft.workspace.id': e.workspaceId,
        'weft.run.trigger': e.trigger, 'weft.run.mode': e.mode, 'weft.run.status': e.status,
      },
    }, parent);
    if (e.status === 'failed') runSpan.setStatus({ code: SpanStatusCode.ERROR, message: e.error ?? undefined });
    const inRun = trace.setSpan(parent, runSpan);
    for (const b of e.trace) {
      if (b.status === 'replayed') continue;
      const start = Date.parse(b.startedAt);
      const span = this.tracer.startSpan(`block ${b.type}`, {
        kind: SpanKind.INTERNAL,
        startTime: start,
        attributes: { 'weft.block.id': b.blockId, 'weft.block.name': b.name, 'weft.block.type': b.type, 'weft.block.status': b.status, 'weft.block.key': b.key },
      }, inRun);
      if (b.status === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: b.error });
      span.end(start + b.durationMs);
    }
    runSpan.end(e.endedAt);
  }

  /** Exports what is buffered and stops. */
  async close(): Promise<void> {
    await this.provider.shutdown();
  }
}
