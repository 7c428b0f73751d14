import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * An OTLP/HTTP trace receiver on loopback: what a collector gets from Lore's exporter. It speaks OTLP's JSON
 * encoding (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`, gzip or not) on `POST /v1/traces` and answers as a collector
 * does; a request in another encoding is refused with 415 and remembered, so a suite can say what it got.
 */

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value?: AnyValue };

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number; message?: string };
}

interface ExportRequest {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

/** OpenTelemetry's span kinds as OTLP numbers them. */
export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export interface ReceivedSpan {
  /** `service.name` of the process that exported it. */
  service: string;
  traceId: string;
  spanId: string;
  /** Absent for a trace's root. */
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean | unknown[]>;
  links: Array<{ traceId: string; spanId: string }>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

export interface OtlpReceiver {
  /** The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of refused export requests. */
  refused: string[];
  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[];
  /** The chain of spans from `span` up to its trace's root, `span` first (stops at a parent not received). */
  ancestors(span: ReceivedSpan): ReceivedSpan[];
  close(): Promise<void>;
}

function valueOf(v: AnyValue | undefined): string | number | boolean | unknown[] {
  if (!v) return '';
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return '';
}

function attributesOf(kvs: KeyValue[] | undefined): ReceivedSpan['attributes'] {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const refused: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = String(req.headers['content-type'] ?? '');
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (!type.startsWith('application/json')) {
        refused.push(type);
        res.writeHead(415, { 'content-type': 'application/json' }).end('{"message":"this receiver reads OTLP/JSON only"}');
        return;
      }
      try {
        const raw = Buffer.concat(chunks);
        const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        const doc = JSON.parse(body.toString('utf8')) as ExportRequest;
        for (const rs of doc.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
                name: s.name,
                kind: s.kind,
                attributes: attributesOf(s.attributes),
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                statusCode: s.status?.code ?? 0,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"message":"not an OTLP/JSON export request"}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    refused,
    trace: (traceId) => spans.filter((s) => s.traceId === traceId),
    ancestors(span) {
      const chain = [span];
      for (let s: ReceivedSpan | undefined = span; s?.parentSpanId; ) {
        s = spans.find((p) => p.traceId === span.traceId && p.spanId === s!.parentSpanId);
        if (s) chain.push(s);
      }
      return chain;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
