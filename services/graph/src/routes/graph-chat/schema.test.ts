import { GraphChatAnswerSchema, presentGraphChat } from './schema';

describe('presentGraphChat', () => {
  const node = (id: string, label: string, name: string, properties: Record<string, unknown>) => ({ id, label, name, properties });

  it('gives every Person name and linkedin_url (empty when no profile is known), and keeps a known profile', () => {
    const shown = presentGraphChat({
      answer: 'a',
      nodes: [
        node('1', 'Person', 'Mary Jones', { name: 'Mary Jones', title: 'CEO' }),
        node('2', 'Person', 'Ada', { name: 'Ada', linkedin_url: 'https://linkedin.com/in/ada' }),
        node('3', 'Company', 'Globex', { name: 'Globex', domain: 'globex.io' }),
      ],
      edges: [],
      linked: ['1'],
      history: false,
    });
    expect(GraphChatAnswerSchema.parse(shown).nodes.map((n) => n.properties)).toEqual([
      { name: 'Mary Jones', linkedin_url: '', title: 'CEO' },
      { name: 'Ada', linkedin_url: 'https://linkedin.com/in/ada' },
      { name: 'Globex', domain: 'globex.io' },
    ]);
  });
});
