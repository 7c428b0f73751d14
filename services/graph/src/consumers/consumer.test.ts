import { PoisonError, type BusMessage } from '@lore/runtime';
import pino from 'pino';
import { z } from 'zod';
import { parseMessage } from './consumer';

const logger = pino({ level: 'silent' });
const schema = z.object({ doc_id: z.string() });
const message = (value: string): BusMessage => ({ topic: 'lore.memory.ingest', partition: 0, offset: '7', key: 'mem', value: Buffer.from(value), headers: {} });

describe('parseMessage', () => {
  it('reads a message that matches its schema', () => {
    expect(parseMessage(logger, schema, message('{"doc_id":"doc_1"}'))).toEqual({ doc_id: 'doc_1' });
  });

  it('declares a malformed message poison, so the bus dead-letters it instead of it being dropped', () => {
    for (const bad of ['{not json', '{"doc_id":42}']) {
      expect(() => parseMessage(logger, schema, message(bad))).toThrow(PoisonError);
    }
  });
});
