import { groundAnswer, markersIn, type SourceChunk } from './citations';
import { extractiveAnswer, NO_ANSWER } from './extractive';
import { ANSWERING, contentTerms } from './text';

const sources: SourceChunk[] = [
  { index: 1, title: 'Refund policy', document_id: 'd1', content: 'Refunds are issued within five business days. Returns need a receipt.' },
  { index: 2, title: 'Shipping', document_id: 'd2', content: 'Orders ship from Rotterdam. Express shipping takes one day.' },
];

describe('extractive answerer', () => {
  it('quotes the best sentences with the marker of their chunk', () => {
    const answer = extractiveAnswer('How long do refunds take?', sources);
    expect(answer).toBe('Refunds are issued within five business days [1].');
  });

  it('produces answers that pass the grounding check unchanged', () => {
    for (const q of ['How long do refunds take?', 'Where do orders ship from and how fast is express shipping?']) {
      const answer = extractiveAnswer(q, sources);
      const grounded = groundAnswer(answer, sources);
      expect(grounded.answer).toBe(answer);
      expect(grounded.removed_markers).toBe(0);
      expect(markersIn(answer).length).toBeGreaterThan(0);
    }
  });

  it('says so when nothing matches', () => {
    expect(extractiveAnswer('What is the capital of Peru?', sources)).toBe(NO_ANSWER);
    expect(extractiveAnswer('refunds', [])).toBe(NO_ANSWER);
  });
});

/** Chunks as the chunker stores them: the heading as the section's first sentence (QA corpus of 2026-12-01). */
const postMortem: SourceChunk[] = [
  {
    index: 1,
    title: 'Post-mortem: Atlas outage on 21 August 2026',
    document_id: 'pm',
    content: 'Post-mortem: Atlas outage on 21 August 2026. Severity: P1. Duration: 47 minutes (14:12 to 14:59 CEST). Author: Lukas Brandt.',
  },
  {
    index: 2,
    title: 'Post-mortem: Atlas outage on 21 August 2026',
    document_id: 'pm',
    content:
      'Root cause. The TLS certificate of the internal API load balancer expired. The automated renewal had failed silently three weeks earlier because the DNS validation record was deleted during a clean-up of old DNS zones.',
  },
  {
    index: 3,
    title: 'Post-mortem: Atlas outage on 21 August 2026',
    document_id: 'pm',
    content:
      'Action items. 1. Alert 21 days before any certificate expires (owner: Platform team, due 15 September 2026). 2. Protect DNS validation records from deletion (owner: Infrastructure, due 30 September 2026).',
  },
];

describe('extractive answerer: headings and titles label their sections (QA F1)', () => {
  it('quotes the sentences under the heading the question names, never the title or a heading', () => {
    const answer = extractiveAnswer('What was the root cause of the outage on 21 August 2026?', postMortem);
    expect(answer).toContain('The TLS certificate of the internal API load balancer expired [2].');
    expect(answer).not.toContain('Post-mortem: Atlas outage');
    expect(answer).not.toMatch(/Root cause \[/);
  });

  it('answers an action-items question with the items, not with "Action items"', () => {
    const answer = extractiveAnswer('What were the action items from the August outage post-mortem?', postMortem);
    expect(answer).toContain('Alert 21 days before any certificate expires');
    expect(answer).not.toMatch(/Action items \[/);
    expect(answer).not.toContain('Post-mortem: Atlas outage on 21 August 2026 [');
  });

  it('uses the heading a caller passes with the chunk, and never quotes a heading-only sentence', () => {
    const sources = [{ index: 1, title: 'Leave Policy', document_id: 'l', heading: 'Parental leave', content: 'Parental leave. Kestrel Systems offers 16 weeks of fully paid parental leave to every parent.' }];
    expect(extractiveAnswer('How long is parental leave?', sources)).toBe('Kestrel Systems offers 16 weeks of fully paid parental leave to every parent [1].');
    // A chunk further down its section: the heading is not in its text, its sentences still inherit it.
    const later = [{ index: 1, title: 'Post-mortem', document_id: 'pm', heading: 'Root cause', content: 'The TLS certificate of the internal API load balancer expired.' }];
    expect(extractiveAnswer('What was the root cause?', later)).toBe('The TLS certificate of the internal API load balancer expired [1].');
  });
});

describe('extractive answerer: no loosely related quotes (QA F2)', () => {
  const sources: SourceChunk[] = [
    { index: 1, title: 'Board Meeting Minutes – 21 October 2026', document_id: 'b', content: 'Present: Clara Hoffmann (Chair), Marcus Lee (CEO), Marta Kowalski (CFO), two investor directors. 1. The CEO presented Q3 results: revenue €4.2 million, ARR €16.9 million.' },
    { index: 2, title: 'Competitive Analysis', document_id: 'c', content: 'Lumetric is our strongest competitor in the mid-market. In Q3 2026 we won 14 of 22 head-to-head deals against Lumetric.' },
    { index: 3, title: 'Harbor Mobile App – Specification v1.1', document_id: 'h', content: 'Harbor Mobile App – Specification v1.1. Harbor is the mobile companion of Atlas. It lets users view dashboards and receive alerts on iOS and Android.' },
    { index: 4, title: 'Atlas 3.0 Product Specification', document_id: 'a', content: 'Non-goals. Atlas 3.0 does not include a mobile editor; mobile viewing is handled by the Harbor app.' },
    { index: 5, title: 'Price List 2026', document_id: 'p', content: 'Add-ons. | Add-on | Price | |---|---| | Premium Support (24/7, phone) | €1,200 per year per workspace |' },
  ];

  it('answers nothing when no one sentence holds the names the question joins', () => {
    expect(extractiveAnswer('Who is the CEO of Lumetric?', sources)).toBe(NO_ANSWER);
  });

  it('answers nothing to a price question whose sources state no price', () => {
    expect(extractiveAnswer('How much does the Harbor mobile app cost?', sources)).toBe(NO_ANSWER);
    expect(extractiveAnswer('How much does Premium Support cost?', sources)).toContain('€1,200 per year per workspace');
  });

  it('finds the names in the quoted sentence\'s chunk: a document names its subject once', () => {
    const note = [{ index: 1, title: 'note', document_id: 'n', content: 'Lighthouse keepers on Skerry Point log the fog horn every evening at nine. The lamp was electrified in 1961.' }];
    expect(extractiveAnswer('When was the Skerry Point lamp electrified?', note)).toContain('The lamp was electrified in 1961 [1].');
  });

  it('still answers what the sources say about a name', () => {
    expect(extractiveAnswer('What is Harbor?', sources)).toContain('Harbor is the mobile companion of Atlas [3].');
  });
});

describe('extractive answerer: the answering reading (QA F3, F6)', () => {
  it('reads Chinese word by word and ends its sentences at 。', () => {
    const sources = [{ index: 1, title: '上海办公室指南', document_id: 's', content: '交通和停车. 地下停车场每天停车费为50元。公司为每位员工每月报销交通费最多300元。' }];
    const answer = extractiveAnswer('上海办公室的停车费是多少？', sources);
    expect(answer.startsWith('地下停车场每天停车费为50元 [1]。')).toBe(true);
    expect(groundAnswer(answer, sources).citations).toHaveLength(1);
  });

  it('reads 12,000 as one number: it does not meet €12.5 million', () => {
    const sources: SourceChunk[] = [
      {
        index: 1,
        title: 'Travel and Expense Policy',
        document_id: 't',
        content:
          "Approval thresholds. - Trips with an estimated total cost below €2,000 are approved by the direct manager. - Trips costing €2,000 or more also need approval from the department's budget owner. - Trips above €10,000 need approval from the CFO.",
      },
      { index: 2, title: 'Travel and Expense Policy', document_id: 't', content: 'Meals and per diem. The daily meal allowance (per diem) is €65 for domestic travel and €80 for international travel. Alcohol is not reimbursed.' },
      { index: 3, title: 'Board Meeting Minutes', document_id: 'b', content: '2. The board approved the operating budget for 2027 of €12.5 million. 3. The board approved the hiring plan for 2027 (34 new hires).' },
    ];
    const answer = extractiveAnswer('Who has to approve a business trip that costs 12,000 euros?', sources);
    // (Which threshold 12,000 passes is arithmetic, beyond a quoting answerer: it quotes the policy's rules.)
    expect(answer).toMatch(/^- Trips .* \[1\]\.$/);
    expect(answer).not.toContain('€12.5 million');
    expect(contentTerms('a trip of 12,000 euros, €12.5 million', undefined, ANSWERING)).toEqual(['trip', '12000', 'euro', '12.5', 'million']);
    expect(contentTerms('12,000')).toEqual(['12', '000']);
  });
});

describe('extractive answerer: FAQ lines and copies (QA F9)', () => {
  it('quotes the answer under an FAQ question, not the question, and a sentence of two copies once', () => {
    const sources: SourceChunk[] = [
      { index: 1, title: 'Customer FAQ', document_id: 'ingest', content: 'Data and security. **Where is my data stored?** Customer data is stored in our data centres in Frankfurt (Germany) and Dublin (Ireland).' },
      { index: 2, title: 'customer-faq.md', document_id: 'file', content: 'Data and security. Where is my data stored? Customer data is stored in our data centres in  Frankfurt (Germany) and Dublin (Ireland).' },
    ];
    expect(extractiveAnswer('Where is customer data stored?', sources)).toBe('Customer data is stored in our data centres in Frankfurt (Germany) and Dublin (Ireland) [1].');
  });
});

describe('extractive answerer: a title made of the note\'s first sentence is no label', () => {
  it('quotes a one-sentence note whose title is that sentence', () => {
    const text = 'Refunds are issued within five business days after the return arrives at the Rotterdam warehouse.';
    const sources = [{ index: 1, title: text, document_id: 'n', content: text }];
    expect(extractiveAnswer('How long do refunds take?', sources)).toBe('Refunds are issued within five business days after the return arrives at the Rotterdam warehouse [1].');
    // An OCR'd scan: one line without a stop, its title that line.
    const scan = [{ index: 1, title: 'The Albatross warehouse opens in Bergen', document_id: 's', content: 'The Albatross warehouse opens in Bergen' }];
    expect(extractiveAnswer('Albatross warehouse Bergen', scan)).toBe('The Albatross warehouse opens in Bergen [1].');
    for (const note of ['The Gannet archive keeps invoices for ten years.', 'The Orion cluster runs on twelve nodes in Frankfurt.']) {
      const one = [{ index: 1, title: note, document_id: 'n', content: note }];
      expect(extractiveAnswer(note.includes('Gannet') ? 'Gannet archive invoices' : 'Orion cluster nodes', one)).toBe(`${note.slice(0, -1)} [1].`);
    }
  });
});
