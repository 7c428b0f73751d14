import type { Principal } from '../../application/principal';
import type { StreamStatus } from '../../application/streams';
import { AGENTS_SECURITY, FAMILY, route, type AgentsGuard } from '../route';
import { activeStreamsView, streamParams, streamStatusView } from './schema';

export interface StreamRouteDeps {
  guard: AgentsGuard;
  active(p: Principal): Promise<string[]>;
  status(p: Principal, streamKey: string): Promise<StreamStatus>;
}

/** Spec 3's stream inspection (detail family): the caller's tenant's workflow progress streams. */
export function streamRoutes(deps: StreamRouteDeps) {
  const family = FAMILY.detail;
  return [
    route({
      method: 'get',
      path: '/api/stream/active-streams',
      operationId: 'activeStreams',
      summary: "The tenant's progress streams",
      description: 'A string: the stream keys (`workflow:<thread id>`), comma-separated, sorted; empty when there are none. A stream lives 24 hours after its last entry.',
      tags: ['streams'],
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      ok: { status: 200, description: 'the keys', schema: activeStreamsView },
      handler: async (ctx) => {
        // A JSON string (the router would send a returned string as text/plain).
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = JSON.stringify((await deps.active(ctx.state.principal)).join(','));
      },
    }),
    route({
      method: 'get',
      path: '/api/stream/stream-status/:stream_key',
      operationId: 'streamStatus',
      summary: 'Length, first and last entry ids and age of a progress stream',
      description: '`active` while the stream\'s workflow runs. Another tenant\'s stream, or a key that is not `workflow:<thread id>`, is 404.',
      tags: ['streams'],
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      params: streamParams,
      invalid: family.invalid,
      unreadable: family.unreadable,
      ok: { status: 200, description: 'the stream', schema: streamStatusView },
      responses: { 404: family.error('no such stream of the tenant') },
      handler: async (ctx, { params }) => deps.status(ctx.state.principal, params.stream_key),
    }),
  ];
}
