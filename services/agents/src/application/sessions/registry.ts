import type { SessionAgent, SessionKind } from './agent';

/**
 * The session agents by kind. The worker's composition registers one agent per kind (the crawler, web research,
 * deep search); a session whose kind has no agent ends with an `error` message saying so.
 */
export class SessionAgents {
  private readonly agents = new Map<SessionKind, SessionAgent>();

  constructor(agents: readonly SessionAgent[] = []) {
    for (const a of agents) this.register(a);
  }

  register(agent: SessionAgent): this {
    if (this.agents.has(agent.kind)) throw new Error(`a session agent for ${agent.kind} is registered already`);
    this.agents.set(agent.kind, agent);
    return this;
  }

  get(kind: SessionKind): SessionAgent | undefined {
    return this.agents.get(kind);
  }

  kinds(): SessionKind[] {
    return [...this.agents.keys()];
  }
}
