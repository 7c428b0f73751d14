import { AppError, createLogger } from '@lore/runtime';
import { PageReadError, type FetchedPage, type PageReader } from '../sources/web-pages';
import { companyOverview, companyUrlOf } from './company-overview';

const logger = createLogger({ level: 'silent', service: 'agents-test' });

/** Pages by URL; a PageReadError value is thrown for that URL. Every read is recorded. */
function reader(pages: Record<string, string | PageReadError | { redirectedTo: string; html: string }>): PageReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async read(url): Promise<FetchedPage> {
      reads.push(url);
      const page = pages[url];
      if (page === undefined) throw new PageReadError('http_error', `${url} answered 404`);
      if (page instanceof PageReadError) throw page;
      if (typeof page === 'string') return { url, html: page, truncated: false };
      return { url: page.redirectedTo, html: page.html, truncated: false };
    },
    close() {},
  };
}

async function failure(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('no error');
}

describe('company overview', () => {
  it('takes https:// for a URL without a scheme and refuses what is no URL', () => {
    expect(companyUrlOf('acme.example')?.href).toBe('https://acme.example/');
    expect(companyUrlOf(' http://acme.example/about ')?.href).toBe('http://acme.example/about');
    expect(companyUrlOf('http://')).toBeNull();
    expect(companyUrlOf('not a url at all')).toBeNull();
  });

  it("uses companyName only when the site gives no name, and the origin of the page that answered as website", async () => {
    const pages = reader({ 'https://acme.example/': { redirectedTo: 'https://www.acme.example/en/', html: '<p>Plain page without any name in it, just words here.</p>' } });
    const o = await companyOverview({ pages, logger }, { companyUrl: 'acme.example', companyName: ' Acme Inc ' });
    expect(o).toEqual({ company_name: 'Acme Inc', website: 'https://www.acme.example/', description: 'Plain page without any name in it, just words here.', industry: '', headquarters: '', founded: '', products: [], key_people: [] });
    const noName = await companyOverview({ pages, logger }, { companyUrl: 'acme.example' });
    expect(noName.company_name).toBe('www.acme.example');
  });

  it('fills what the first page left empty from the people page, and keeps the first page alone when that one fails', async () => {
    const home = '<html><head><title>Borealis</title></head><body><a href="/team">Team</a><p>Borealis makes ledgers for banks and merchants alike.</p></body></html>';
    const team = '<ul><li>Ada Brook — Chief Executive Officer</li></ul><p>We were founded in 2016 and are headquartered in Oslo, Norway.</p>';
    const ok = await companyOverview({ pages: reader({ 'https://b.example/': home, 'https://b.example/team': team }), logger }, { companyUrl: 'https://b.example/' });
    expect(ok).toMatchObject({ company_name: 'Borealis', founded: '2016', headquarters: 'Oslo, Norway', key_people: [{ name: 'Ada Brook', title: 'Chief Executive Officer' }] });
    const pages = reader({ 'https://b.example/': home, 'https://b.example/team': new PageReadError('disallowed', 'robots.txt') });
    const alone = await companyOverview({ pages, logger }, { companyUrl: 'https://b.example/' });
    expect(alone).toMatchObject({ company_name: 'Borealis', founded: '', key_people: [] });
    expect(pages.reads).toEqual(['https://b.example/', 'https://b.example/team']);
  });

  it('answers 400 for an address Lore does not contact and 502 for a site that cannot be read', async () => {
    const refused = await failure(companyOverview({ pages: reader({ 'http://10.0.0.1/': new PageReadError('refused', 'Lore does not read this address: private') }), logger }, { companyUrl: 'http://10.0.0.1/' }));
    expect([refused.status, refused.message]).toEqual([400, 'Lore does not read this address: private']);
    const down = await failure(companyOverview({ pages: reader({ 'https://down.example/': new PageReadError('unreachable', 'down.example could not be read: timeout') }), logger }, { companyUrl: 'down.example' }));
    expect([down.status, down.message]).toEqual([502, 'down.example could not be read: timeout']);
    const missing = await failure(companyOverview({ pages: reader({}), logger }, { companyUrl: 'gone.example' }));
    expect(missing.status).toBe(502);
  });
});
