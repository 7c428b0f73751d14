import { randomUUID } from 'node:crypto';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface StoredEvent {
  /** The session whose stream sent it: only that session may replay it. */
  owner: string;
  streamId: string;
  /** The message as JSON, a tool answer's text left out (`packMessage`): a string costs a fraction of the object. */
  json: string;
  /** Whether the text content is to be rebuilt from `structuredContent` on replay. */
  textFromStructured: boolean;
  /** UTF-8 bytes of `json`: what the store's byte bounds count. */
  bytes: number;
}

/** One session's events, oldest first, and their bytes. */
interface SessionEvents {
  events: Map<string, StoredEvent>;
  bytes: number;
}

/** One session's view of the store: what the session's transport is given. */
export interface SessionEventStore extends EventStore {
  /** Drops the session's events (it closed). */
  forget(): void;
}

export interface EventStoreLimits {
  /** Events kept in all sessions together. */
  maxEvents: number;
  /** UTF-8 bytes of the kept events in all sessions together. */
  maxBytes: number;
  /** UTF-8 bytes of one session's kept events. */
  maxSessionBytes: number;
}

/** A result whose only content is the text of its `structuredContent`, as every Lore tool answers (`toolResult`). */
function textOfStructured(message: JSONRPCMessage): boolean {
  const result = (message as { result?: { content?: unknown; structuredContent?: unknown } }).result;
  if (!result || result.structuredContent === undefined || !Array.isArray(result.content) || result.content.length !== 1) return false;
  const item = result.content[0] as Record<string, unknown>;
  return Object.keys(item).length === 2 && item.type === 'text' && item.text === JSON.stringify(result.structuredContent);
}

/**
 * The message as the store keeps it. A tool answer carries its envelope twice, as its text and as
 * `structuredContent` (docs/mcp.md, "Answers"); the store keeps it once and rebuilds the text on replay, so an answer
 * costs its size once, not twice.
 */
function packMessage(message: JSONRPCMessage): { json: string; textFromStructured: boolean } {
  if (!textOfStructured(message)) return { json: JSON.stringify(message), textFromStructured: false };
  const { result } = message as { result: Record<string, unknown> };
  return { json: JSON.stringify({ ...message, result: { ...result, content: [] } }), textFromStructured: true };
}

/** The message as it was sent: the same JSON, the text rebuilt from `structuredContent` where it was left out. */
function unpackMessage(e: StoredEvent): JSONRPCMessage {
  const message = JSON.parse(e.json) as JSONRPCMessage;
  if (e.textFromStructured) {
    const result = (message as unknown as { result: { content: unknown[]; structuredContent: unknown } }).result;
    result.content = [{ type: 'text', text: JSON.stringify(result.structuredContent) }];
  }
  return message;
}

/**
 * The events of the server's streams, kept so that a client reconnecting with `Last-Event-ID` gets what it missed
 * (Streamable HTTP resumability). Bounded by count and by bytes, in all sessions together and per session, the oldest
 * dropped first, so what the store holds never depends on how large the answers a caller asks for are (a count alone
 * let one key fill the heap with 8 MiB answers). Events of a stream are dropped oldest first, so an id still kept
 * replays everything that followed it; an id that was dropped, or an event larger than a session may keep (which
 * drops its stream's older events too, for the same reason), is unknown to the store, and the SDK answers a
 * reconnection naming it 400 `Invalid event ID format`. In memory, per replica: a resumed stream must reach the
 * replica holding its session (docs/mcp.md, "Sessions").
 *
 * Each session reads and writes through its own view (`forSession`). An event replays only to the session that
 * sent it: the SDK names every session's standalone stream alike (`_GET_stream`) and checks nothing itself, so a
 * store shared by every session would hand one tenant another's tool answers for the asking. An id of another
 * session is unknown to a view (the SDK answers 400), and ids are random, so they tell nothing and cannot be guessed.
 */
export class BoundedEventStore {
  /** Every kept event, oldest first. */
  private readonly events = new Map<string, StoredEvent>();
  private readonly sessions = new Map<string, SessionEvents>();
  private totalBytes = 0;
  private readonly limits: EventStoreLimits;

  constructor(limits: Partial<EventStoreLimits> & Pick<EventStoreLimits, 'maxEvents'>) {
    this.limits = { maxBytes: Number.MAX_SAFE_INTEGER, maxSessionBytes: Number.MAX_SAFE_INTEGER, ...limits };
  }

  get size(): number {
    return this.events.size;
  }

  /** UTF-8 bytes of every kept event. */
  get bytes(): number {
    return this.totalBytes;
  }

  private drop(id: string): void {
    const e = this.events.get(id);
    if (!e) return;
    this.events.delete(id);
    this.totalBytes -= e.bytes;
    const mine = this.sessions.get(e.owner);
    if (mine?.events.delete(id)) mine.bytes -= e.bytes;
  }

  /** Keeps an event within every bound, dropping the oldest first (the session's own for its bound). */
  private keep(id: string, e: StoredEvent, mine: SessionEvents): void {
    if (e.bytes > this.limits.maxSessionBytes || e.bytes > this.limits.maxBytes) {
      // Not kept: the stream's older events go too, so no kept id would replay past the missing one.
      for (const [old, o] of [...mine.events]) if (o.streamId === e.streamId) this.drop(old);
      return;
    }
    while (mine.bytes + e.bytes > this.limits.maxSessionBytes) this.drop(mine.events.keys().next().value as string);
    while (this.events.size >= this.limits.maxEvents || this.totalBytes + e.bytes > this.limits.maxBytes) {
      this.drop(this.events.keys().next().value as string);
    }
    this.events.set(id, e);
    mine.events.set(id, e);
    mine.bytes += e.bytes;
    this.totalBytes += e.bytes;
  }

  forSession(): SessionEventStore {
    const owner = randomUUID();
    const mine: SessionEvents = { events: new Map(), bytes: 0 };
    this.sessions.set(owner, mine);
    let forgotten = false;
    return {
      storeEvent: async (streamId, message) => {
        const id = randomUUID();
        // A late answer of a closed session is sent nowhere and kept nowhere.
        if (forgotten) return id;
        const packed = packMessage(message);
        this.keep(id, { owner, streamId, ...packed, bytes: Buffer.byteLength(packed.json, 'utf8') }, mine);
        return id;
      },
      getStreamIdForEventId: async (eventId) => mine.events.get(eventId)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const last = mine.events.get(lastEventId);
        if (!last) return '';
        let after = false;
        for (const [id, e] of [...mine.events]) {
          if (id === lastEventId) after = true;
          else if (after && e.streamId === last.streamId) await send(id, unpackMessage(e));
        }
        return last.streamId;
      },
      forget: () => {
        forgotten = true;
        for (const id of [...mine.events.keys()]) this.drop(id);
        this.sessions.delete(owner);
      },
    };
  }
}
