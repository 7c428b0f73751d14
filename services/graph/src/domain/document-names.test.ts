import { documentNaming, withDocumentNaming } from './document-names';
import { planDocument } from './knowledge-graph';

const doc = (source_type: string | null, external_id: string | null, title: string) => ({ doc_id: 'd1', memory_id: 'm', cc_pair_id: 4, title, link: null, source_type, external_id });

describe('documentNaming', () => {
  it('names every file by its file name and anything else by its title, whatever the title came from', () => {
    const rows: Array<[string | null, string | null, string, string]> = [
      // A text file's title is its first line; a Markdown file without a heading is titled by its name: both are the file name now.
      ['file', 'connector-files/ws1/mem1/1b4e28ba-2fa1-11d2-883f-0016d3cca427/board.txt', 'Board minutes, March 2026.', 'board.txt'],
      ['file', 'connector-files/1b4e28ba-2fa1-11d2-883f-0016d3cca427/hiring.md', 'hiring.md', 'hiring.md'],
      ['file', 'connector-files/ws1/mem1/1b4e28ba-2fa1-11d2-883f-0016d3cca427/Partner Review.pdf', 'Quarterly Partner Review', 'Partner Review.pdf'],
      ['google_drive', '1AbCdEfGhIjK', 'Q3 plan.docx', 'Q3 plan.docx'],
      ['web', 'https://intranet.example.test/wiki/ada', 'Ada Lovelace – Research', 'Ada Lovelace – Research'],
      ['web', 'https://intranet.example.test/wiki/blank', '', 'https://intranet.example.test/wiki/blank'],
      [null, null, '', 'd1'],
    ];
    expect(rows.map(([s, id, title]) => documentNaming(doc(s, id, title)).name)).toEqual(rows.map((r) => r[3]));
    expect(documentNaming(doc('file', 'connector-files/x/board.txt', 'Board minutes, March 2026.'))).toEqual({ name: 'board.txt', title: 'Board minutes, March 2026.', file_name: 'board.txt' });
    expect(documentNaming(doc('web', 'https://x.test/a', 'A page'))).toEqual({ name: 'A page', title: 'A page', file_name: '' });
  });

  it('masks a file name as a title is masked', () => {
    const named = documentNaming(doc('file', 'connector-files/x/cv-jane.doe@example.com.pdf', 'Curriculum vitae'));
    expect(named.name).not.toContain('jane.doe@example.com');
    expect(named.name).toContain('[REDACTED:email]');
  });

  it('names the Document node of a plan and keeps the title and the file name as properties (graph chat finds it by either)', () => {
    const d = { ...doc('file', 'connector-files/x/board.txt', 'Board minutes, March 2026.'), entities: [{ name: 'Ada Lovelace', kind: 'person' }] };
    const naming = documentNaming(d);
    const plan = withDocumentNaming(planDocument({ ...d, title: naming.name }, 10), naming);
    expect(plan.nodes.map((n) => [n.label, n.name])).toEqual([['Document', 'board.txt'], ['Person', 'Ada Lovelace']]);
    expect(plan.nodes[0]?.properties).toMatchObject({ name: 'board.txt', title: 'Board minutes, March 2026.', file_name: 'board.txt', external_id: 'connector-files/x/board.txt' });
    expect(plan.edges.map((e) => [e.from, e.to, e.label])).toEqual([['Document|doc:m/4/connector-files/x/board.txt', 'Person|name:ada lovelace', 'MENTIONS']]);
  });
});
