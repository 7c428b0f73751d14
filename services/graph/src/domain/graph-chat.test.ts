import { answerFromSubgraph, asksAboutThePast, factLines, modelPrompt, NO_ENTITY_ANSWER, relationPhrase, type SubgraphEdge, type SubgraphNode } from './graph-chat';

const acme: SubgraphNode = { id: '1', label: 'Company', name: 'Acme', properties: { name: 'Acme', domain: 'acme.example' } };
const zoe: SubgraphNode = { id: '2', label: 'Person', name: 'Zoë', properties: { name: 'Zoë', nested: { a: 1 } } };
const now: SubgraphEdge = { id: '10', from: '2', to: '1', label: 'WORKS_AT', valid_from: '2026-01-01T00:00:00.000Z', valid_to: null };
const then: SubgraphEdge = { id: '11', from: '2', to: '1', label: 'HOLDS_POSITION', valid_from: '2025-01-01T00:00:00.000Z', valid_to: '2025-06-30T00:00:00.000Z' };

describe('graph chat rules', () => {
  it('reads the past only when the question asks about it', () => {
    expect(asksAboutThePast('Who works at Acme?')).toBe(false);
    expect(asksAboutThePast('Who used to work at Acme?')).toBe(true);
    expect(asksAboutThePast('Who was the CTO in 2024?')).toBe(true);
    expect(asksAboutThePast('Who formerly led Acme')).toBe(true);
  });

  it('states edges as sentences, closed ones with their period', () => {
    expect(relationPhrase('POSITION__AT')).toBe('position at');
    expect(factLines([acme, zoe], [now, then])).toEqual([
      'Zoë (Person) works at Acme (Company)',
      'Zoë (Person) holds position Acme (Company) (from 2025-01-01 until 2025-06-30)',
    ]);
  });

  it('answers from the subgraph alone, current facts first', () => {
    const answer = answerFromSubgraph([acme], [acme, zoe], [then, now], true);
    expect(answer).toBe('Acme (Company) — domain: acme.example. Zoë (Person) works at Acme (Company). Zoë (Person) holds position Acme (Company) (from 2025-01-01 until 2025-06-30).');
    expect(answerFromSubgraph([], [], [], false)).toBe(NO_ENTITY_ANSWER);
    expect(answerFromSubgraph([acme], [acme], [], false)).toBe('Acme (Company) — domain: acme.example. The graph holds no current relation of it.');
  });

  it('gives the model the question, the entities and the relations only', () => {
    const [system, user] = modelPrompt('Who works at Acme?', [acme], [acme, zoe], [now]);
    expect(system?.role).toBe('system');
    expect(user?.content).toContain('Question: Who works at Acme?');
    expect(user?.content).toContain('- Zoë (Person) works at Acme (Company)');
    expect(user?.content).not.toContain('nested');
  });
});
