import type { CompanyOverview } from '../../application/company-overview';
import type { CompanyData } from '../../domain/company-overview-html';
import { AGENTS_SECURITY, FAMILY, route, type AgentsGuard } from '../route';
import { companyOverviewBody, companyOverviewHtmlBody, companyOverviewHtmlView, companyOverviewView, presentCompanyOverview } from './schema';

export interface CompanyRouteDeps {
  guard: AgentsGuard;
  overview(input: { companyUrl: string; companyName?: string }, signal: AbortSignal): Promise<CompanyOverview>;
  html(data: CompanyData): { html: string; success: true };
}

/** Spec 3's company overview and its HTML rendering. Detail family. */
export function companyRoutes(deps: CompanyRouteDeps) {
  const family = FAMILY.detail;
  return [
    route({
      method: 'post',
      path: '/api/company/companyOverview',
      operationId: 'companyOverview',
      summary: "Facts about a company from its web site",
      description:
        "Reads the site's page (robots.txt honoured, size and time bounded) and one same-site team or about page: schema.org JSON-LD first, " +
        'then OpenGraph and meta tags, then the visible text (docs/agents.md, "Company overview"). ' +
        'An address Lore does not contact (private, loopback, link-local, metadata) answers 400; a site that cannot be read answers 502.',
      tags: ['utility'],
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      body: companyOverviewBody,
      invalid: family.invalid,
      unreadable: family.unreadable,
      ok: { status: 200, description: 'the company overview', schema: companyOverviewView },
      responses: {
        400: family.error('an address Lore does not contact, or a body that is not clean JSON'),
        502: family.error('the site could not be read: no such host, no connection, a timeout, an error answer, robots.txt, not an HTML page'),
      },
      handler: async (ctx, { body }) => {
        const abort = new AbortController();
        ctx.res.once('close', () => {
          if (!ctx.res.writableEnded) abort.abort();
        });
        return presentCompanyOverview(await deps.overview({ companyUrl: body.companyUrl, companyName: body.companyName }, abort.signal));
      },
    }),
    route({
      method: 'post',
      path: '/api/company/companyOverview/html',
      operationId: 'companyOverviewHtml',
      summary: 'A company overview as HTML',
      description: 'A small `<article>` fragment of the given facts; every value is escaped as text and only an http(s) website becomes a link.',
      tags: ['utility'],
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'detail'),
      body: companyOverviewHtmlBody,
      invalid: family.invalid,
      unreadable: family.unreadable,
      ok: { status: 200, description: 'the HTML', schema: companyOverviewHtmlView },
      handler: (_ctx, { body }) => deps.html(body.companyData),
    }),
  ];
}
