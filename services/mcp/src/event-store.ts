import { randomUUID } from 'node:crypto';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * The events of the server's streams, kept so that a client reconnecting with `Last-Event-ID` gets what it missed
 * (Streamable HTTP resumability). Bounded: at most `maxEvents` events in all, the oldest dropped first; an id that
 * was dropped replays nothing. In memory, per replica: a resumed stream must reach the replica holding its session
 * (docs/mcp.md, "Sessions").
 */
export class BoundedEventStore implements EventStore {
  private readonly events = new Map<string, { streamId: string; message: JSONRPCMessage }>();
  private seq = 0;
  private readonly prefix = randomUUID().slice(0, 8);

  constructor(private readonly maxEvents: number) {}

  get size(): number {
    return this.events.size;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${this.prefix}-${(++this.seq).toString(36).padStart(8, '0')}`;
    this.events.set(id, { streamId, message });
    while (this.events.size > this.maxEvents) {
      const oldest = this.events.keys().next().value as string;
      this.events.delete(oldest);
    }
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const last = this.events.get(lastEventId);
    if (!last) return '';
    let after = false;
    for (const [id, e] of [...this.events]) {
      if (id === lastEventId) {
        after = true;
        continue;
      }
      if (after && e.streamId === last.streamId) await send(id, e.message);
    }
    return last.streamId;
  }
}
