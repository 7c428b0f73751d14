import { z } from 'zod';
import { ConfigError } from '../config/config';
import { startServiceProcess } from './process';

const schema = z.object({
  LORE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('silent'),
  LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
  LORE_DATABASE_OWNER_URL: z.string().optional(),
  LORE_KAFKA_BROKERS: z.string().optional(),
});

describe('startServiceProcess', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('reports every configuration problem before any connection is made', async () => {
    delete process.env.LORE_DATABASE_URL;
    await expect(startServiceProcess('test', schema)).rejects.toMatchObject({ problems: ['LORE_DATABASE_URL: is required'] });
  });

  it('reports what the process requires beyond its schema, still before connecting to the database', async () => {
    // An address nothing answers at: reaching it would fail differently (and slowly), not with this ConfigError.
    process.env.LORE_DATABASE_URL = 'postgres://nobody@192.0.2.1:5432/none';
    delete process.env.LORE_KAFKA_BROKERS;
    const started = startServiceProcess('test', schema, { requires: (c) => (c.LORE_KAFKA_BROKERS ? [] : ['LORE_KAFKA_BROKERS: is required by this worker']) });
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toMatchObject({ problems: ['LORE_KAFKA_BROKERS: is required by this worker'] });
  });
});
