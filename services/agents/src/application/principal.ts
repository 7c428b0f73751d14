import type { Caller } from '@lore/contracts';

/** Who is asking, as the agents application layer needs it: the caller (`callerOf`) and what lists and knowledge read. */
export interface Principal extends Caller {
  /** The identity's role and a signed-in user's groups (what the tenant's knowledge shows them). */
  role?: string;
  groups?: number[];
}
