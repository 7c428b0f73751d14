import type { Db, Logger } from '@lore/runtime';

/** Facts about the running service that the utility routes report. */
export interface ServiceFacts {
  version: string;
  /** `NODE_ENV` of the process (`development`, `production`, ...). */
  environment: string;
}

/** What the agents application layer works with; route modules never see it, only the functions bound to it. */
export interface AgentsDeps {
  db: Db;
  logger: Logger;
  facts: ServiceFacts;
}
