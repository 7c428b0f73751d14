import { connectorFileKey, connectorFileName, connectorFilePlace, isConnectorFileKey, nameList } from './connector-files';

describe('connector file names and keys', () => {
  it('keeps a name as uploaded, without control characters or path separators', () => {
    expect(connectorFileName('Quarterly report.pdf')).toBe('Quarterly report.pdf');
    expect(connectorFileName('../../etc/passwd')).toBe('.._.._etc_passwd');
    expect(connectorFileName('C:\\Users\\me\\notes.md')).toBe('C:_Users_me_notes.md');
    expect(connectorFileName('a\u0000b\u001fc.txt')).toBe('abc.txt');
    expect(connectorFileName('  spaced.txt  ')).toBe('spaced.txt');
    for (const empty of ['', '   ', undefined, '.', '..']) expect(connectorFileName(empty)).toBe('file');
  });

  it('cuts a long name to 200 characters, keeping its extension and never splitting a character', () => {
    const long = connectorFileName(`${'x'.repeat(300)}.docx`);
    expect(long).toHaveLength(200);
    expect(long.endsWith('.docx')).toBe(true);
    const emoji = connectorFileName(`${'🌊'.repeat(250)}.pdf`);
    expect(Array.from(emoji)).toHaveLength(200);
    expect(emoji.endsWith('.pdf')).toBe(true);
    expect(emoji).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it('keys files under connector-files/<workspace>/<memory>/<id>/<name>, and reads the place back', () => {
    const id = '0b8f4a9e-3d2c-4f0e-9a51-2d7c1e6b5a40';
    const key = connectorFileKey({ workspace_id: 'ws_Ab12', memory_id: 'mem_x-y.z' }, id, 'notes.md');
    expect(key).toBe(`connector-files/ws_Ab12/mem_x-y.z/${id}/notes.md`);
    expect(isConnectorFileKey(key)).toBe(true);
    expect(connectorFilePlace(key)).toEqual({ workspace_id: 'ws_Ab12', memory_id: 'mem_x-y.z' });
    for (const other of ['connector-files/', 'uploads/notes.md', 'project-files/x', `t1/${key}`]) expect(isConnectorFileKey(other)).toBe(false);
    // Ids that cannot stand as one segment, and keys of files uploaded before places were kept: no place.
    for (const place of [{ workspace_id: '', memory_id: 'm' }, { workspace_id: 'w', memory_id: '' }, { workspace_id: 'a/b', memory_id: 'm' }, { workspace_id: '..', memory_id: 'm' }]) {
      const unplaced = connectorFileKey(place, id, 'notes.md');
      expect(unplaced).toBe(`connector-files/${id}/notes.md`);
      expect(connectorFilePlace(unplaced)).toEqual({ workspace_id: '', memory_id: '' });
    }
    // A name that looks like a place does not make one: the third segment must be the upload's id.
    expect(connectorFilePlace(`connector-files/${id}/ws_1/mem_1/x`)).toEqual({ workspace_id: '', memory_id: '' });
    expect(connectorFilePlace('connector-files/ws_1/mem_1/notes.md')).toEqual({ workspace_id: '', memory_id: '' });
  });

  it('names at most ten, then how many more', () => {
    expect(nameList(['a', 'b'])).toBe('"a", "b"');
    expect(nameList(Array.from({ length: 13 }, (_, i) => `f${i}`))).toBe(`${Array.from({ length: 10 }, (_, i) => `"f${i}"`).join(', ')} and 3 more`);
  });
});
