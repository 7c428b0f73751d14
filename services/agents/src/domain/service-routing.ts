import { cutUnits } from '@lore/ai';

/**
 * Service routing (spec 3, `POST /api/service-routing/route`): which of Lore's agent services a free-text prompt
 * belongs to. A deterministic rule — the answer when no language model is configured, and the fallback when the
 * model's answer is unusable (docs/agents.md, "Service routing").
 *
 * The prompt's leading request decides first (after "please", "can you", "I want to" ...): a verb of refining
 * (improve, optimize, refine ...) is `optimize`, of analysing (analyze, compare, summarize ...) `analyze`, of
 * gathering (find, list, build, give me ...) `list_builder` when it names companies or people, and a question
 * (what, why, how ..., or a final "?") `ai_search`. A prompt with no such lead is `analyze` / `optimize` when it
 * speaks of an existing list that way, `list_builder` when it names a number of companies or people or companies
 * and people with a place or an industry, and `ai_search` otherwise.
 */

export type ServiceName = 'list_builder' | 'ai_search' | 'analyze' | 'optimize';
export const SERVICE_NAMES: readonly ServiceName[] = ['list_builder', 'ai_search', 'analyze', 'optimize'];

export type RouteCategory = 'company_search' | 'people_search' | 'research' | 'list_analysis' | 'list_optimization';
export const ROUTE_CATEGORIES: readonly RouteCategory[] = ['company_search', 'people_search', 'research', 'list_analysis', 'list_optimization'];

export interface RoutingDecision {
  name: ServiceName;
  category: RouteCategory;
  /** The route of this service a client calls next. */
  url: string;
  reasoning: string;
}

/** Longest prompt routed; the rest is not read (a prompt is a request, not a document). */
export const MAX_ROUTING_PROMPT = 4000;

/** Where each service starts; people lists start at the people workflow. */
export function serviceUrl(name: ServiceName, category: RouteCategory): string {
  switch (name) {
    case 'list_builder':
      return category === 'people_search' ? '/api/workflow/people/start' : '/api/workflow/start';
    case 'ai_search':
      return '/research/start';
    case 'analyze':
      return '/research/start';
    case 'optimize':
      return '/api/workflow/continue';
  }
}

const POLITE = /^(?:(?:please|pls|kindly|hey|hi|hello|ok|okay|so|now|then|also|and)[,!.]?\s+|(?:can|could|would|will) you\s+(?:please\s+)?|i(?:'d| would) like (?:you )?to\s+|i (?:want|need|wish) (?:you )?to\s+|help me(?: to)?\s+|let'?s\s+|we need to\s+)/;

const OPTIMIZE_VERBS = /^(?:improve|optimi[sz]e|refine|enhance|tune|fine-tune|tighten|narrow|broaden|clean(?: up)?|dedupe|deduplicate|polish|fix|update|adjust)\b/;
const ANALYZE_VERBS = /^(?:analy[sz]e|compare|summari[sz]e|evaluate|assess|review|segment|rank|score|break down|profile|benchmark|audit|examine|explain the (?:list|results|data))\b/;
const LIST_VERBS = /^(?:find|list|build|make|create|generate|compile|get|give me|show me|fetch|collect|gather|source|identify|search(?: for)?|look(?: for| up)?|discover|prospect|pull|scrape|bring me|i (?:want|need) (?:a list of )?)\b/;
const QUESTION = /^(?:what|what's|whats|who|whom|whose|why|how|when|where|which|is|are|was|were|does|do|did|can|could|should|would|will|has|have|explain|tell me|describe|define)\b/;

const PEOPLE = /\b(?:people|persons?|contacts?|leads?|prospects?|employees? (?:named|called)|founders?|co-founders?|ceos?|ctos?|cfos?|cmos?|coos?|cios?|cisos?|chief \w+ officers?|executives?|execs?|directors?|managers?|heads? of \w+|vps?|vice presidents?|engineers?|developers?|designers?|recruiters?|marketers?|salespeople|sales reps?|account executives?|decision[- ]makers?|partners at|investors?|analysts?|consultants?|professionals?|candidates?|talent|doctors?|lawyers?)\b/;
const COMPANIES = /\b(?:compan(?:y|ies)|startups?|start-ups?|firms?|businesses|business|organi[sz]ations?|enterprises?|vendors?|suppliers?|providers?|manufacturers?|agencies|agency|brands?|retailers?|distributors?|clinics?|hospitals?|banks?|insurers?|labs?|studios?|scale-?ups?|unicorns?|competitors?|customers?|clients?|accounts?|saas|fintechs?|b2b|b2c)\b/;
const LIST_CONTEXT = /\b(?:this|my|our|the|current|existing|that) (?:list|lists|results?|table|data|dataset|records?|leads?|companies|contacts|criteria|search)\b/;
const NUMBERED = /\b\d{1,6}\s+(?:\w+\s+){0,3}?(?:compan(?:y|ies)|startups?|firms?|businesses|people|contacts?|leads?|founders?|ceos?|ctos?|cfos?|executives?|engineers?|managers?|directors?|vendors?|agencies|brands?)\b/;
const LIST_WORDS = /\b(?:list of|a list|lead list|prospect list|top \d+|database of|spreadsheet of)\b/;
const SCOPE = /\b(?:in|from|based in|located in|headquartered in|across|within|at|working at|with \d|with more than|with over|with under|with fewer than|employees|revenue|funded|series [a-e]|founded)\b/;

function clean(prompt: string): string {
  let p = cutUnits(prompt, MAX_ROUTING_PROMPT).normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  for (let i = 0; i < 4; i++) {
    const next = p.replace(POLITE, '');
    if (next === p) break;
    p = next;
  }
  return p;
}

function target(p: string): 'people_search' | 'company_search' | null {
  const people = PEOPLE.test(p);
  const companies = COMPANIES.test(p);
  if (!people && !companies) return null;
  if (!people) return 'company_search';
  if (!companies) return 'people_search';
  // Both: whoever comes first is what the list holds ("CTOs of fintech companies", "companies and their CEOs").
  return p.search(PEOPLE) < p.search(COMPANIES) ? 'people_search' : 'company_search';
}

function decision(name: ServiceName, category: RouteCategory, reasoning: string): RoutingDecision {
  return { name, category, url: serviceUrl(name, category), reasoning };
}

const listDecision = (category: 'people_search' | 'company_search', why: string) =>
  decision('list_builder', category, `${why}; it asks for a list of ${category === 'people_search' ? 'people' : 'companies'}, built by the list builder.`);

/** The rule: deterministic, the same prompt always routed the same way. `prompt` must not be blank. */
export function routeByRules(prompt: string): RoutingDecision {
  const p = clean(prompt);
  const lead = p.split(' ').slice(0, 4).join(' ');
  const what = target(p);
  if (OPTIMIZE_VERBS.test(p)) return decision('optimize', 'list_optimization', `The prompt opens with "${lead}": it asks to improve or refine an existing list or its criteria.`);
  if (ANALYZE_VERBS.test(p)) return decision('analyze', 'list_analysis', `The prompt opens with "${lead}": it asks to analyse or compare data rather than to gather it.`);
  const gathering = LIST_VERBS.test(p);
  if (gathering && what) return listDecision(what, `The prompt opens with "${lead}" and names ${what === 'people_search' ? 'people' : 'companies'}`);
  if (!gathering && (QUESTION.test(p) || p.endsWith('?'))) return decision('ai_search', 'research', 'The prompt is a question: it is answered by research.');
  if (LIST_CONTEXT.test(p) && /\b(?:improv|optimi[sz]|refin|enhanc|better|clean|narrow|broaden|tighten)/.test(p)) {
    return decision('optimize', 'list_optimization', 'The prompt speaks of improving an existing list.');
  }
  if (LIST_CONTEXT.test(p) && /\b(?:analy[sz]|compar|summar|insight|trend|breakdown|distribution|statistic)/.test(p)) {
    return decision('analyze', 'list_analysis', 'The prompt speaks of analysing an existing list.');
  }
  if (gathering) return decision('ai_search', 'research', `The prompt opens with "${lead}" but names neither companies nor people: it is a search for an answer.`);
  if (what && (NUMBERED.test(p) || LIST_WORDS.test(p) || SCOPE.test(p))) return listDecision(what, 'The prompt names a number, a place or a scope of companies or people');
  if (what && p.split(' ').length <= 8) return listDecision(what, 'The prompt is a short description of companies or people');
  return decision('ai_search', 'research', 'The prompt asks for neither a list nor work on one: it is answered by research.');
}
