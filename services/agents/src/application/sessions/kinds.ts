import { agenticCrawler } from './crawler';
import { SessionAgents } from './registry';

/**
 * The session agents a worker runs by default: one per kind Lore has. Deep search and web research register theirs
 * here beside the crawler's.
 */
export function sessionAgents(): SessionAgents {
  return new SessionAgents([agenticCrawler]);
}
