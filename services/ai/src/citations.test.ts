import { groundAnswer, hasOtherMarkerForm, markersIn, normalizeMarkers, type SourceChunk } from './citations';

const sources: SourceChunk[] = [
  { index: 1, title: 'Refund policy', document_id: 'doc_a', content: 'Refunds are issued within five business days after the return arrives.' },
  { index: 2, title: 'Pricing', document_id: 'doc_b', content: 'The Pro plan costs 49 dollars per month and includes 10 seats.' },
  { index: 3, title: 'Support', document_id: 'doc_c', content: 'Support is available by chat from 9 to 17 on weekdays.' },
];

function expectValid(result: ReturnType<typeof groundAnswer>) {
  const cited = new Set(result.citations.map((c) => c.index));
  for (const n of markersIn(result.answer)) expect(cited.has(n)).toBe(true);
  for (const c of result.citations) expect(markersIn(result.answer)).toContain(c.index);
}

describe('citation grounding', () => {
  it('keeps markers that the cited chunk supports', () => {
    const r = groundAnswer('Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month [2].', sources);
    expect(r.answer).toBe('Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month [2].');
    expect(r.citations).toEqual([
      { index: 1, title: 'Refund policy', document_id: 'doc_a' },
      { index: 2, title: 'Pricing', document_id: 'doc_b' },
    ]);
    expect(r.removed_markers).toBe(0);
    expectValid(r);
  });

  it('removes invented markers that point at no source', () => {
    const r = groundAnswer('Refunds are issued within five business days [7].', sources, { minOverlap: 0.5, repair: false });
    expect(markersIn(r.answer)).toEqual([]);
    expect(r.removed_markers).toBe(1);
    expect(r.citations).toEqual([]);
    expectValid(r);
  });

  it('moves a misattributed marker to the source that supports the claim', () => {
    const r = groundAnswer('Support is available by chat on weekdays [2].', sources);
    expect(r.answer).toBe('Support is available by chat on weekdays [3].');
    expect(r.removed_markers).toBe(1);
    expect(r.added_markers).toBe(1);
    expectValid(r);
  });

  it('leaves an unsupported claim without any marker', () => {
    const r = groundAnswer('The company was founded on the moon in 1802 [1].', sources);
    expect(markersIn(r.answer)).toEqual([]);
    expect(r.unsupported_sentences).toBe(1);
    expectValid(r);
  });

  it('rejects a claim whose number differs from the source', () => {
    const r = groundAnswer('The Pro plan costs 59 dollars per month [2].', sources);
    expect(markersIn(r.answer)).toEqual([]);
    expectValid(r);
  });

  it('checks each marker of a sentence against its own clause', () => {
    const r = groundAnswer('Refunds take five business days [1] and the Pro plan costs 49 dollars per month [2].', sources);
    expect(markersIn(r.answer)).toEqual([1, 2]);
    expectValid(r);
  });

  it('adds a marker to a supported but unmarked sentence', () => {
    const r = groundAnswer('Here is what I found:\nRefunds are issued within five business days.', sources);
    expect(r.answer).toBe('Here is what I found:\nRefunds are issued within five business days [1].');
    expectValid(r);
  });

  it('drops duplicate markers of one clause', () => {
    const r = groundAnswer('Refunds are issued within five business days [1][1].', sources);
    expect(r.answer).toBe('Refunds are issued within five business days [1].');
    expectValid(r);
  });

  it('splits list and range markers into single ones and checks each', () => {
    const r = groundAnswer('Refunds are issued within five business days [1, 2]. The Pro plan costs 49 dollars per month [1-2].', sources);
    expect(r.answer).toBe('Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month [2].');
    expect(r.removed_markers).toBe(2);
    expectValid(r);
  });

  it('checks markers with inner spaces, leading zeros or too many digits like the others', () => {
    const r = groundAnswer('Refunds are issued within five business days [ 1 ]. The Pro plan costs 49 dollars per month [1234].', sources, { minOverlap: 0.5, repair: false });
    expect(r.answer).toBe('Refunds are issued within five business days [1]. The Pro plan costs 49 dollars per month.');
    expect(r.removed_markers).toBe(1);
    expect(groundAnswer('Support is available by chat on weekdays [003].', sources).answer).toBe('Support is available by chat on weekdays [3].');
    expectValid(r);
  });

  it('drops other bracketed-number forms, and reversed or huge ranges', () => {
    const r = groundAnswer(
      'Refunds are issued within five business days [source 1]. Support is available by chat on weekdays [#3][^3]. The Pro plan costs 49 dollars per month [2-1][1-999].',
      sources,
      { minOverlap: 0.5, repair: false },
    );
    expect(r.answer).toBe('Refunds are issued within five business days. Support is available by chat on weekdays. The Pro plan costs 49 dollars per month.');
    expect(r.removed_markers).toBe(5);
    expect(hasOtherMarkerForm(r.answer)).toBe(false);
    expectValid(r);
  });

  it('leaves bracketed prose alone', () => {
    expect(normalizeMarkers('See the [2024 report] and [appendix B].')).toEqual({ text: 'See the [2024 report] and [appendix B].', dropped: 0 });
    expect(normalizeMarkers('[1; 3] [2 and 3] [1–2]').text).toBe('[1][3] [2][3] [1][2]');
    expect(hasOtherMarkerForm('Refunds [1][2].')).toBe(false);
    expect(hasOtherMarkerForm('Refunds [1,2].')).toBe(true);
  });
});

describe('grounding reads Chinese, Japanese and Thai word by word (QA F3, 2026-12-01)', () => {
  const shanghai: SourceChunk[] = [{ index: 1, title: '上海办公室指南', document_id: 's', content: '交通和停车. 地下停车场每天停车费为50元。公司为每位员工每月报销交通费最多300元。' }];

  it('keeps the marker of a faithful Chinese paraphrase', () => {
    const grounded = groundAnswer('上海办公室的停车费是每天50元[1]。', shanghai);
    expect(grounded.citations.map((c) => c.index)).toEqual([1]);
    expect(grounded.removed_markers).toBe(0);
    expect(grounded.answer).toBe('上海办公室的停车费是每天50元 [1]。');
  });

  it('still drops the marker of a Chinese claim the source does not hold, sentence by sentence at 。', () => {
    const grounded = groundAnswer('上海办公室的停车费是每天50元[1]。公司每年提供免费午餐和健身房[1]。', shanghai);
    expect(grounded.removed_markers).toBe(1);
    expect(grounded.answer).toBe('上海办公室的停车费是每天50元 [1]。 公司每年提供免费午餐和健身房。');
  });
});
