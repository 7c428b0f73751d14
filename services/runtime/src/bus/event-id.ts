/** The `event-id` header the outbox relay sets on every message: what consumers dedupe on. */
export const EVENT_ID_HEADER = 'event-id';

export function eventIdOf(message: { headers: Record<string, string> }): string | undefined {
  return message.headers[EVENT_ID_HEADER];
}
