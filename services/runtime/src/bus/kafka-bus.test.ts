import { EventEmitter } from 'node:events';
import pino from 'pino';
import { Registry } from 'prom-client';
import { KafkaBus } from './kafka-bus';

/** The admin client KafkaBus gets from kafkajs, answering as the broker does in each case. */
const mockAdmin = {
  connect: jest.fn(async () => undefined),
  disconnect: jest.fn(async () => undefined),
  listTopics: jest.fn(async (): Promise<string[]> => []),
  createTopics: jest.fn(async (): Promise<boolean> => true),
  fetchTopicMetadata: jest.fn(),
  fetchOffsets: jest.fn(),
  fetchTopicOffsets: jest.fn(),
  setOffsets: jest.fn(async () => undefined),
};

/**
 * A kafkajs consumer as the bus uses it: its events are emitted by the test, as kafkajs would. `run` resolves at
 * once, and the consumer joins its group on the next turn unless `mockJoins.next` says otherwise.
 */
class MockConsumer {
  readonly events = { GROUP_JOIN: 'join', REBALANCING: 'rebalancing', STOP: 'stop', DISCONNECT: 'disconnect', CRASH: 'crash', START_BATCH_PROCESS: 'batch' };
  private readonly emitter = new EventEmitter();
  readonly connect = jest.fn(async () => mockJoins.connect());
  readonly subscribe = jest.fn(async () => undefined);
  readonly disconnect = jest.fn(async () => undefined);
  readonly run = jest.fn(async () => {
    if (mockJoins.next()) setImmediate(() => this.join());
  });
  constructor(readonly config: { groupId: string; retry: { restartOnFailure: (e: Error) => Promise<boolean> } }) {}
  on(event: string, listener: (e: unknown) => void) {
    this.emitter.on(event, listener);
    return () => void this.emitter.off(event, listener);
  }
  join() {
    this.emitter.emit('join', { payload: { memberAssignment: { 'acme.t': [0, 1] } } });
  }
  /** What kafkajs emits when a consumer crashed on a retriable error and it will restart it. */
  crash(restart: boolean) {
    this.emitter.emit('stop', {});
    this.emitter.emit('disconnect', {});
    this.emitter.emit('crash', { payload: { error: new Error("The coordinator is loading and hence can't process requests for this group"), restart } });
  }
}
const mockConsumers: MockConsumer[] = [];
const mockJoins = { next: () => true, connect: async (): Promise<void> => undefined };

jest.mock('kafkajs', () => ({
  ...jest.requireActual('kafkajs'),
  Kafka: jest.fn().mockImplementation(() => ({
    admin: () => mockAdmin,
    consumer: (config: ConstructorParameters<typeof MockConsumer>[0]) => {
      const consumer = new MockConsumer(config);
      mockConsumers.push(consumer);
      return consumer;
    },
  })),
}));

const logger = pino({ level: 'silent' });
const led = (names: string[]) => ({ topics: names.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 1 }] })) });
/** What kafkajs throws for UNKNOWN_TOPIC_OR_PARTITION: a protocol error it marks retriable. */
const unknownTopic = () => Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: true });

describe('KafkaBus.ensureTopics', () => {
  let bus: KafkaBus;
  beforeEach(() => {
    jest.clearAllMocks();
    bus = new KafkaBus({ brokers: ['broker:9092'], clientId: 'unit', prefix: 'acme', logger });
  });
  afterEach(() => bus.close());

  it('waits until a topic another process created a moment earlier is in the broker metadata with its leaders', async () => {
    // The deployments of a fresh install start together: this one found the topics missing, and its create was
    // answered TOPIC_ALREADY_EXISTS (kafkajs resolves false and waits for nothing), while the broker did not list
    // them yet.
    mockAdmin.createTopics.mockResolvedValueOnce(false);
    mockAdmin.fetchTopicMetadata
      .mockRejectedValueOnce(unknownTopic())
      .mockRejectedValueOnce(unknownTopic())
      .mockResolvedValueOnce({ topics: [{ name: 'acme.lore.events', partitions: [{ partitionId: 0, leader: -1 }] }, ...led(['acme.lore.memory.ingest']).topics] })
      .mockResolvedValueOnce(led(['acme.lore.events', 'acme.lore.memory.ingest']));
    await bus.ensureTopics(['lore.events', 'lore.memory.ingest']);
    expect(mockAdmin.createTopics).toHaveBeenCalledWith(
      expect.objectContaining({ topics: [expect.objectContaining({ topic: 'acme.lore.events' }), expect.objectContaining({ topic: 'acme.lore.memory.ingest' })] }),
    );
    expect(mockAdmin.fetchTopicMetadata).toHaveBeenCalledTimes(4);
    expect(mockAdmin.fetchTopicMetadata).toHaveBeenLastCalledWith({ topics: ['acme.lore.events', 'acme.lore.memory.ingest'] });
  });

  it('waits through UNKNOWN_TOPIC_OR_PARTITION for the leaders of topics it created itself, leaving kafkajs nothing to give up on', async () => {
    // kafkajs's own wait (waitForLeaders) ends the call on the first UNKNOWN_TOPIC_OR_PARTITION, which a broker
    // answers for a moment after creating a topic: that ended the agents worker's start on a fresh install.
    mockAdmin.createTopics.mockResolvedValueOnce(true);
    mockAdmin.fetchTopicMetadata.mockRejectedValueOnce(unknownTopic()).mockResolvedValueOnce(led(['acme.lore.agents.workflows']));
    await bus.ensureTopics(['lore.agents.workflows']);
    expect(mockAdmin.createTopics).toHaveBeenCalledWith(expect.objectContaining({ waitForLeaders: false, topics: [expect.objectContaining({ topic: 'acme.lore.agents.workflows' })] }));
    expect(mockAdmin.fetchTopicMetadata).toHaveBeenCalledTimes(2);
  });

  it('asks nothing more when every topic exists already', async () => {
    mockAdmin.listTopics.mockResolvedValueOnce(['acme.lore.events', 'other']);
    await bus.ensureTopics(['lore.events']);
    expect(mockAdmin.createTopics).not.toHaveBeenCalled();
    expect(mockAdmin.fetchTopicMetadata).not.toHaveBeenCalled();
  });

  it('fails at once on an answer that waiting cannot change', async () => {
    mockAdmin.fetchTopicMetadata.mockRejectedValueOnce(Object.assign(new Error('Not authorized to access topics'), { retriable: false }));
    await expect(bus.ensureTopics(['lore.events'])).rejects.toThrow('Not authorized to access topics');
    expect(mockAdmin.fetchTopicMetadata).toHaveBeenCalledTimes(1);
  });
});

describe('KafkaBus: a new consumer group starts at the end of its topics', () => {
  let bus: KafkaBus;
  beforeEach(() => {
    jest.clearAllMocks();
    // Answers queued by a test that failed early must not reach the next one.
    for (const fn of [mockAdmin.fetchOffsets, mockAdmin.fetchTopicMetadata, mockAdmin.fetchTopicOffsets]) fn.mockReset();
    bus = new KafkaBus({ brokers: ['broker:9092'], clientId: 'unit', prefix: 'acme', logger });
  });
  afterEach(() => bus.close());
  const start = (b: KafkaBus) => (b as unknown as { startNewGroupAtEnd(g: string, t: string[]): Promise<void> }).startNewGroupAtEnd('acme.g', ['acme.t']);

  it('retries when kafkajs\' end-offset call drops a partition (its TypeError, or an answer without it), then seeks every fresh partition', async () => {
    mockAdmin.fetchOffsets.mockResolvedValue([{ topic: 'acme.t', partitions: [{ partition: 0, offset: '-1' }, { partition: 1, offset: '-1' }] }]);
    mockAdmin.fetchTopicMetadata.mockResolvedValue({ topics: [{ name: 'acme.t', partitions: [{ partitionId: 0, leader: 1 }, { partitionId: 1, leader: 1 }] }] });
    mockAdmin.fetchTopicOffsets
      // What kafkajs throws when the leader it asked for the low offsets answered nothing.
      .mockRejectedValueOnce(new TypeError("Cannot destructure property 'partitions' of 'low.pop(...)' as it is undefined."))
      .mockResolvedValueOnce([{ partition: 0, offset: '5', high: '5', low: '0' }])
      .mockResolvedValueOnce([{ partition: 0, offset: '5', high: '5', low: '0' }, { partition: 1, offset: '7', high: '7', low: '0' }]);
    await start(bus);
    expect(mockAdmin.fetchTopicOffsets).toHaveBeenCalledTimes(3);
    expect(mockAdmin.setOffsets).toHaveBeenCalledTimes(1);
    expect(mockAdmin.setOffsets).toHaveBeenCalledWith({ groupId: 'acme.g', topic: 'acme.t', partitions: [{ partition: 0, offset: '5' }, { partition: 1, offset: '7' }] });
  });

  it('seeks a partition the committed offsets answer lacks (kafkajs lists none for a topic its cache does not know yet)', async () => {
    mockAdmin.fetchTopicMetadata.mockResolvedValue({ topics: [{ name: 'acme.t', partitions: [{ partitionId: 0, leader: 1 }, { partitionId: 1, leader: 1 }, { partitionId: 2, leader: 1 }] }] });
    mockAdmin.fetchOffsets.mockResolvedValue([{ topic: 'acme.t', partitions: [{ partition: 2, offset: '4' }] }]);
    mockAdmin.fetchTopicOffsets.mockResolvedValue([{ partition: 0, offset: '1', high: '1', low: '0' }, { partition: 1, offset: '0', high: '0', low: '0' }, { partition: 2, offset: '6', high: '6', low: '0' }]);
    await start(bus);
    expect(mockAdmin.setOffsets).toHaveBeenCalledWith({ groupId: 'acme.g', topic: 'acme.t', partitions: [{ partition: 0, offset: '1' }, { partition: 1, offset: '0' }] });
    // The broker's partitions were known before the offsets were read.
    expect(mockAdmin.fetchTopicMetadata.mock.invocationCallOrder[0]).toBeLessThan(mockAdmin.fetchOffsets.mock.invocationCallOrder[0]!);
  });

  it('does not retry an error that is not kafkajs dropping a partition', async () => {
    mockAdmin.fetchOffsets.mockResolvedValue([{ topic: 'acme.t', partitions: [{ partition: 0, offset: '-1' }] }]);
    mockAdmin.fetchTopicMetadata.mockResolvedValue({ topics: [{ name: 'acme.t', partitions: [{ partitionId: 0, leader: 1 }] }] });
    mockAdmin.fetchTopicOffsets.mockRejectedValueOnce(new Error('not authorised'));
    await expect(start(bus)).rejects.toThrow('not authorised');
    expect(mockAdmin.fetchTopicOffsets).toHaveBeenCalledTimes(1);
    expect(mockAdmin.setOffsets).not.toHaveBeenCalled();
  });
});

describe('KafkaBus: a consumer out of its group past the rejoin bound is replaced', () => {
  let bus: KafkaBus;
  let metrics: Registry;
  beforeEach(() => {
    mockConsumers.length = 0;
    mockJoins.next = () => true;
    mockJoins.connect = async () => undefined;
    metrics = new Registry();
    bus = new KafkaBus({ brokers: ['broker:9092'], clientId: 'unit', prefix: 'acme', logger, metrics, rejoinTimeoutMs: 200, joinTimeoutMs: 1_000 });
  });
  afterEach(() => bus.close());
  const until = async (what: string, probe: () => boolean) => {
    for (const deadline = Date.now() + 5_000; !probe(); await new Promise((resolve) => setTimeout(resolve, 10))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    }
  };
  const replacements = async () => (await metrics.getSingleMetric('lore_bus_consumer_replacements_total')!.get()).values.map((v) => [v.labels.group, v.value]);
  const subscribe = () => bus.subscribe({ groupId: 'g', topics: ['t'], fromBeginning: true }, async () => undefined);
  const boom = new Error('restart check');

  it('replaces a consumer whose restart after a crash never rejoined, and ignores what the old one does later', async () => {
    const sub = await subscribe();
    const [first] = mockConsumers;
    expect(bus.memberships()).toEqual([expect.objectContaining({ group: 'g', state: 'member', partitions: 2 })]);
    await expect(first!.config.retry.restartOnFailure(boom)).resolves.toBe(true);

    // kafkajs will restart it, and that restart hangs: no join, no crash, ever.
    first!.crash(true);
    expect(bus.memberships()).toEqual([expect.objectContaining({ state: 'restarting', error: expect.stringContaining('coordinator is loading') })]);
    await until('a second consumer', () => mockConsumers.length === 2);
    const second = mockConsumers[1]!;
    expect(second.config.groupId).toBe('acme.g');
    expect(first!.disconnect).toHaveBeenCalledTimes(1);
    // The old one, should kafkajs get to it, is never restarted again.
    await expect(first!.config.retry.restartOnFailure(boom)).resolves.toBe(false);
    await until('the new consumer in the group', () => bus.memberships()[0]!.state === 'member');
    expect(await replacements()).toEqual([['g', 1]]);

    // Late events of the replaced consumer change nothing.
    first!.crash(true);
    expect(bus.memberships()).toEqual([expect.objectContaining({ state: 'member' })]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(mockConsumers).toHaveLength(2);

    await sub.stop();
    expect(second.disconnect).toHaveBeenCalledTimes(1);
    expect(first!.disconnect).toHaveBeenCalledTimes(1);
  });

  it('replaces a consumer that crashed on an error kafkajs does not restart after', async () => {
    await subscribe();
    mockConsumers[0]!.crash(false);
    expect(bus.memberships()[0]!.state).toBe('crashed');
    await until('the new consumer in the group', () => mockConsumers.length === 2 && bus.memberships()[0]!.state === 'member');
  });

  it('leaves alone a consumer that rejoined within the bound', async () => {
    await subscribe();
    const [first] = mockConsumers;
    first!.crash(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    first!.join();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(mockConsumers).toHaveLength(1);
    expect(bus.memberships()[0]!.state).toBe('member');
    expect(await replacements()).toEqual([]);
  });

  it('tries again when a new consumer cannot start (the broker still unreachable)', async () => {
    await subscribe();
    let refusals = 1;
    mockJoins.connect = async () => {
      if (refusals-- > 0) throw new Error('Connection error: connect ECONNREFUSED');
    };
    mockConsumers[0]!.crash(true);
    await until('a second consumer', () => mockConsumers.length === 2);
    await until('the second consumer reported', () => bus.memberships()[0]!.state === 'crashed');
    expect(bus.memberships()[0]!.error).toContain('ECONNREFUSED');
    await until('a third consumer in the group', () => mockConsumers.length === 3 && bus.memberships()[0]!.state === 'member');
    expect(await replacements()).toEqual([['g', 2]]);
  });

  it('a subscription stopped while its consumer is out of the group is not replaced', async () => {
    const sub = await subscribe();
    mockConsumers[0]!.crash(true);
    await sub.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(mockConsumers).toHaveLength(1);
    await expect(mockConsumers[0]!.config.retry.restartOnFailure(boom)).resolves.toBe(false);
  });
});
