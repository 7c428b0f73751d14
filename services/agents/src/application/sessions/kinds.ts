import { agenticCrawler } from './crawler';
import { SessionAgents } from './registry';
import { deepSearchAgent, webResearchAgent } from './web-research';

/**
 * The session agents a worker runs by default: one per kind Lore has. Deep search and web research register theirs
 * here beside the crawler's.
 */
export function sessionAgents(): SessionAgents {
  return new SessionAgents([agenticCrawler, webResearchAgent, deepSearchAgent]);
}
