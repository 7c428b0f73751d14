import { contentTerms, cutUnits, SEGMENTED, splitSentences, truncate, withoutLinks, words } from './text';

describe('splitSentences', () => {
  it('keeps a Markdown heading a sentence of its own, and reads a wrapped line as a space', () => {
    expect(splitSentences('# Fog horn\nThe keepers log the horn at nine. They\nlog it daily.\n\n## Lamp\r\nIt was electrified in 1961.')).toEqual([
      '# Fog horn',
      'The keepers log the horn at nine.',
      'They log it daily.',
      '## Lamp',
      'It was electrified in 1961.',
    ]);
  });

  it('splits list items and paragraphs, and keeps abbreviations and citation markers with their sentence', () => {
    expect(splitSentences('Intro by Dr. Lee. Revenue grew. [2] Next\n- one item\n- two items')).toEqual(['Intro by Dr. Lee.', 'Revenue grew. [2]', 'Next', '- one item', '- two items']);
  });

  it('splits long runs of stops that end no sentence in linear time (a document of them once held an ingest for minutes)', () => {
    // Before, each stop re-read the text since the last sentence: 40,000 of these took 20-40 s; now milliseconds.
    // The test's own time-out (5 s) is the bound: it fails only when the work grows with the square of the text.
    for (const unit of ['heron. ', 'e.g. ', 'heron ', '# heron\n']) {
      const out = splitSentences(unit.repeat(200_000));
      expect(out.length).toBeGreaterThan(0);
    }
  });
});

describe('cutting text between code points', () => {
  it('never leaves half of a surrogate pair at the cut', () => {
    const text = `y${'😀'.repeat(10)}`;
    // Unit 4 is the second emoji's first half: the cut goes before it.
    expect(cutUnits(text, 4)).toBe('y😀');
    expect(cutUnits(text, 5)).toBe('y😀😀');
    expect(cutUnits(text, 100)).toBe(text);
    expect(cutUnits('😀', 1)).toBe('');
    expect(truncate(`y${'😀'.repeat(400)}`, 280)).toBe(`y${'😀'.repeat(139)}…`);
  });
});

describe('the segmented reading (SEGMENTED): scripts written without spaces', () => {
  it('cuts Chinese, Japanese and Thai runs into words with the platform segmenter, and leaves the default reading as it was', () => {
    // The default reading (the hashed embedder's, and so the stored index's) keeps a run whole.
    expect(words('蚂蚁科技为小商店提供支付服务')).toEqual(['蚂蚁科技为小商店提供支付服务']);
    // (The exact cut is the platform dictionary's; the words a claim turns on are what matters.)
    expect(words('蚂蚁科技为小商店提供支付服务', undefined, SEGMENTED)).toEqual(expect.arrayContaining(['蚂蚁', '科技', '提供', '支付', '服务']));
    expect(contentTerms('東京は日本の首都です', undefined, SEGMENTED)).toEqual(['東京', '日本', '首都']);
    // Thai vowels and tone marks are combining marks: a word keeps them (the default reading cuts it at each).
    expect(contentTerms('วันนี้อากาศดีมาก', undefined, SEGMENTED)).toEqual(expect.arrayContaining(['วัน', 'อากาศ', 'มาก']));
    expect(words('วันนี้')).not.toEqual(['วันนี้']);
    // Hangul, Latin and numbers inside a run read as before.
    expect(words('퀼핀은 베를린의 핀테크 회사입니다', undefined, SEGMENTED)).toEqual(words('퀼핀은 베를린의 핀테크 회사입니다'));
    expect(contentTerms('Quillfin builds payment APIs in 2016.', undefined, SEGMENTED)).toEqual(contentTerms('Quillfin builds payment APIs in 2016.'));
    expect(words('成立于2016年，提供API', undefined, SEGMENTED)).toEqual(['成立', '于', '2016', '年', '提供', 'api']);
  });

  it('stays linear on a long run and stops at its limit', () => {
    // A run of 200,000 letters segmented whole took minutes; in pieces, well under the test's time-out.
    const run = '蚂蚁科技是一家位于北京的金融科技公司它为小商店提供支付服务'.repeat(7000);
    expect(words(run, 10, SEGMENTED)).toHaveLength(10);
    expect(words(run, undefined, SEGMENTED).length).toBeGreaterThan(100_000);
    expect(words('ควอลฟินพัฒนาระบบชำระเงิน'.repeat(8000), undefined, SEGMENTED).length).toBeGreaterThan(20_000);
    // A piece never ends between the halves of a surrogate pair.
    const astral = words('a𠀀𠀁'.repeat(400), undefined, SEGMENTED);
    expect(astral.every((w) => !/[\uD800-\uDBFF]$|^[\uDC00-\uDFFF]/.test(w))).toBe(true);
  });

  it('ends sentences at full-width stops, and a Thai sentence at the space after its marker', () => {
    expect(splitSentences('蚂蚁科技是一家公司 [1]。它提供支付服务！它在北京吗？是的。')).toEqual(['蚂蚁科技是一家公司 [1]。它提供支付服务！它在北京吗？是的。']);
    expect(splitSentences('蚂蚁科技是一家公司 [1]。它提供支付服务！它在北京吗？是的。', undefined, SEGMENTED)).toEqual(['蚂蚁科技是一家公司 [1]。', '它提供支付服务！', '它在北京吗？', '是的。']);
    expect(splitSentences('「東京は首都です。」[2]次の文。', undefined, SEGMENTED)).toEqual(['「東京は首都です。」[2]', '次の文。']);
    // A Thai space after a marker ends a sentence; one between clauses without a marker does not.
    expect(splitSentences('ควอลฟินเป็นบริษัทฟินเทค [1] ควอลฟินถูกซื้อกิจการ', undefined, SEGMENTED)).toEqual(['ควอลฟินเป็นบริษัทฟินเทค [1]', 'ควอลฟินถูกซื้อกิจการ']);
    expect(splitSentences('ควอลฟินเป็นบริษัทฟินเทค ตั้งอยู่ในเบอร์ลิน [1]', undefined, SEGMENTED)).toEqual(['ควอลฟินเป็นบริษัทฟินเทค ตั้งอยู่ในเบอร์ลิน [1]']);
    // English reads as before.
    expect(splitSentences('Intro by Dr. Lee. Revenue grew. [2] Next', undefined, SEGMENTED)).toEqual(['Intro by Dr. Lee.', 'Revenue grew. [2]', 'Next']);
    for (const unit of ['句子。', '句子 [1] ', 'ก [1] ', '。[1]']) expect(splitSentences(unit.repeat(50_000), 1_000_000, SEGMENTED).length).toBeGreaterThan(0);
  });
});

describe('withoutLinks', () => {
  it("keeps a link's text and drops its address, and drops bare addresses", () => {
    expect(withoutLinks('Quillfin builds APIs, see [its site](https://quillfin.example/about-2016 "About") and https://news.example/a-b-2021.')).toBe('Quillfin builds APIs, see its site and  .');
    expect(withoutLinks('(www.quillfin.example/team) <https://x.example/y> [a](https://w.example/Foo_(bar)) ![logo](http://i.example/l.png)')).toBe('( ) < > a logo');
    expect(withoutLinks('[2024 report] and [1] stay')).toBe('[2024 report] and [1] stay');
    // Linear: a run of brackets with no link in it is read once.
    expect(withoutLinks('['.repeat(100_000)).length).toBe(100_000);
    expect(withoutLinks(`[x](${'a'.repeat(100_000)}`).length).toBe(100_004);
  });
});
