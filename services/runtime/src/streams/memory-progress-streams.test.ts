import { describeProgressStreamsContract } from './progress-streams.contract';
import { MemoryProgressStreams } from './memory-progress-streams';

describeProgressStreamsContract('MemoryProgressStreams', async () => new MemoryProgressStreams());
