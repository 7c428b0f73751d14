import { randomUUID } from 'node:crypto';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface StoredEvent {
  /** The session whose stream sent it: only that session may replay it. */
  owner: string;
  streamId: string;
  message: JSONRPCMessage;
}

/** One session's view of the store: what the session's transport is given. */
export interface SessionEventStore extends EventStore {
  /** Drops the session's events (it closed). */
  forget(): void;
}

/**
 * The events of the server's streams, kept so that a client reconnecting with `Last-Event-ID` gets what it missed
 * (Streamable HTTP resumability). Bounded: at most `maxEvents` events in all sessions together, the oldest dropped
 * first; an id that was dropped replays nothing. In memory, per replica: a resumed stream must reach the replica
 * holding its session (docs/mcp.md, "Sessions").
 *
 * Each session reads and writes through its own view (`forSession`). An event replays only to the session that
 * sent it: the SDK names every session's standalone stream alike (`_GET_stream`) and checks nothing itself, so a
 * store shared by every session would hand one tenant another's tool answers for the asking. An id of another
 * session is unknown to a view (the SDK answers 400), and ids are random, so they tell nothing and cannot be guessed.
 */
export class BoundedEventStore {
  private readonly events = new Map<string, StoredEvent>();

  constructor(private readonly maxEvents: number) {}

  get size(): number {
    return this.events.size;
  }

  forSession(): SessionEventStore {
    const owner = randomUUID();
    const mine = (eventId: string) => {
      const e = this.events.get(eventId);
      return e && e.owner === owner ? e : undefined;
    };
    return {
      storeEvent: async (streamId, message) => {
        const id = randomUUID();
        this.events.set(id, { owner, streamId, message });
        while (this.events.size > this.maxEvents) this.events.delete(this.events.keys().next().value as string);
        return id;
      },
      getStreamIdForEventId: async (eventId) => mine(eventId)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const last = mine(lastEventId);
        if (!last) return '';
        let after = false;
        for (const [id, e] of [...this.events]) {
          if (id === lastEventId) after = true;
          else if (after && e.owner === owner && e.streamId === last.streamId) await send(id, e.message);
        }
        return last.streamId;
      },
      forget: () => {
        for (const [id, e] of this.events) if (e.owner === owner) this.events.delete(id);
      },
    };
  }
}
