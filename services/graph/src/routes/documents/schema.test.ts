import { AppError } from '@lore/runtime';
import { decodeCursor, encodeCursor } from './schema';

describe('document list cursors', () => {
  it('reads back what it wrote', () => {
    expect(decodeCursor(encodeCursor('2026-11-30T16:00:00.123Z', 'doc_abc'))).toEqual({ created_at: '2026-11-30T16:00:00.123Z', doc_id: 'doc_abc' });
  });

  it('refuses with 400 every cursor it did not write, those PostgreSQL would refuse included', () => {
    const forged = ['1|doc_x', '0000-01-01T00:00:00.000Z|doc', '+275760-09-13T00:00:00.000Z|doc_x', '2026-11-30|doc_x', '2026-02-30T00:00:00.000Z|doc_x', 'notadate|doc_x', '2026-11-30T16:00:00.123Z|a|b', '2026-11-30T16:00:00.123Z|', `2026-11-30T16:00:00.123Z|${'d'.repeat(200)}`];
    for (const text of forged) {
      let status = 0;
      try {
        decodeCursor(Buffer.from(text).toString('base64url'));
      } catch (err) {
        status = err instanceof AppError ? err.status : -1;
      }
      expect({ text, status }).toEqual({ text, status: 400 });
    }
  });
});
