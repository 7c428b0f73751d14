import { describeCacheContract } from './cache.contract';
import { MemoryCache } from './memory-cache';

describeCacheContract('MemoryCache', async () => new MemoryCache());
