import pino from 'pino';
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

jest.mock('kafkajs', () => ({
  ...jest.requireActual('kafkajs'),
  Kafka: jest.fn().mockImplementation(() => ({ admin: () => mockAdmin })),
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
