import { cutUnits } from '@lore/ai';
import type { JsonSchema, LanguageModel } from '@lore/ai';
import type { Logger } from '@lore/runtime';
import { z } from 'zod';
import { MAX_ROUTING_PROMPT, ROUTE_CATEGORIES, SERVICE_NAMES, routeByRules, serviceUrl, type RoutingDecision } from '../domain/service-routing';
import { agentsError } from './errors';

/**
 * Service routing (docs/agents.md, "Service routing"): with a configured language model the model chooses, with a
 * JSON schema that only admits the four services and Lore's categories; its answer is checked again here, and the
 * URL always comes from Lore's own table. Without a model, or when the model fails or answers out of shape, the
 * deterministic rule (domain/service-routing.ts) decides.
 */
export interface ServiceRoutingDeps {
  /** An OpenAI-compatible model; the embedded extractive model is not asked (it cannot classify). */
  model?: LanguageModel;
  logger: Logger;
  /** Longest wait for the model before the rule answers. Default 15 s. */
  modelTimeoutMs?: number;
}

export type Router = 'rules' | 'model';

export const routerOf = (deps: Pick<ServiceRoutingDeps, 'model'>): Router => (deps.model && deps.model.kind !== 'extractive' ? 'model' : 'rules');

const ROUTE_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', enum: [...SERVICE_NAMES] },
    category: { type: 'string', enum: [...ROUTE_CATEGORIES] },
    reasoning: { type: 'string' },
  },
  required: ['name', 'category', 'reasoning'],
  additionalProperties: false,
};

const modelAnswer = z.object({ name: z.enum(SERVICE_NAMES as [string, ...string[]]), category: z.enum(ROUTE_CATEGORIES as [string, ...string[]]), reasoning: z.string().min(1).max(2000) });

const SYSTEM = [
  "You route a user's request to one of Lore's agent services. Answer with JSON only.",
  '- list_builder: the user wants a list of companies (category company_search) or people (category people_search) found for them.',
  '- ai_search: the user asks a question or wants something researched (category research).',
  '- analyze: the user wants an existing list or data analysed, compared or summarised (category list_analysis).',
  '- optimize: the user wants an existing list or its criteria improved or refined (category list_optimization).',
  'reasoning: one sentence on why.',
].join('\n');

export interface RoutedPrompt extends RoutingDecision {
  router: Router;
}

/** Routes one prompt. A blank prompt is refused (spec 3: "empty prompt ... raises an HTTP error"). */
export async function routePrompt(deps: ServiceRoutingDeps, prompt: string): Promise<RoutedPrompt> {
  if (prompt.trim() === '') throw agentsError('UNPROCESSABLE', 'prompt is empty');
  const rule = routeByRules(prompt);
  if (routerOf(deps) === 'rules') return { ...rule, router: 'rules' };
  try {
    const completion = await deps.model!.chat({
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: cutUnits(prompt, MAX_ROUTING_PROMPT) },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'service_route', schema: ROUTE_SCHEMA, strict: true } },
      maxTokens: 300,
      signal: AbortSignal.timeout(deps.modelTimeoutMs ?? 15_000),
    });
    const answer = modelAnswer.parse(completion.parsed);
    const category = answer.category as RoutingDecision['category'];
    const name = answer.name as RoutingDecision['name'];
    // A category that does not belong to the service (a list_builder "research") is the rule's, or the service's own.
    const fits = name === 'list_builder' ? category === 'company_search' || category === 'people_search' : category === { ai_search: 'research', analyze: 'list_analysis', optimize: 'list_optimization' }[name];
    const finalCategory = fits ? category : name === rule.name ? rule.category : ({ list_builder: 'company_search', ai_search: 'research', analyze: 'list_analysis', optimize: 'list_optimization' } as const)[name];
    return { name, category: finalCategory, url: serviceUrl(name, finalCategory), reasoning: answer.reasoning.trim(), router: 'model' };
  } catch (err) {
    deps.logger.warn({ err: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'service routing: the model did not answer usably; the rule decides');
    return { ...rule, reasoning: `${rule.reasoning} (The model's answer was not usable, so the rule decided.)`, router: 'rules' };
  }
}
