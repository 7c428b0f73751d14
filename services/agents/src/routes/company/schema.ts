import { z } from 'zod';
import type { CompanyOverview } from '../../application/company-overview';
import { companyUrlOf } from '../../application/company-overview';

export const companyOverviewBody = z.object({
  companyUrl: z
    .string({ error: (i) => (i.input === undefined ? 'Field required' : 'companyUrl must be a string') })
    // Its own message: the schema's `error` would word every issue of the field, a length too ("Field required").
    .max(2048, 'companyUrl is longer than 2,048 characters')
    .refine((s) => s.trim() !== '', { message: 'companyUrl is empty' })
    .refine((s) => s.trim() === '' || companyUrlOf(s) !== null, { message: 'companyUrl is not a URL' })
    .describe("the company's web site (`https://` is assumed when no scheme is given)"),
  companyName: z.string().max(500).optional().describe('the name to use when the site does not say it'),
});

const keyPerson = z.object({ name: z.string(), title: z.string() });

export const companyOverviewView = z.object({
  company_name: z.string(),
  website: z.string().describe('the origin of the page that answered (after redirects)'),
  description: z.string().describe('empty when the site says nothing'),
  industry: z.string(),
  headquarters: z.string().describe('"City, Country" when the site gives it'),
  founded: z.string().describe('a year when the site gives a date'),
  products: z.array(z.string()),
  key_people: z.array(keyPerson),
});

/** The overview HTML's body: an overview as `/companyOverview` answers it, or any object of the same kind. */
export const companyOverviewHtmlBody = z.object({
  companyData: z.record(z.string(), z.unknown()).describe('the facts to render: the fields of a company overview (others are shown as extra facts)'),
});

export const companyOverviewHtmlView = z.object({
  html: z.string().describe('an `<article>` fragment; every value is escaped'),
  success: z.literal(true),
});

export const presentCompanyOverview = (o: CompanyOverview): z.input<typeof companyOverviewView> => ({ ...o, products: [...o.products], key_people: o.key_people.map((p) => ({ name: p.name, title: p.title })) });
