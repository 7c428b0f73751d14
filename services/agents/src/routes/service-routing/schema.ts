import { z } from 'zod';
import type { RoutedPrompt, Router } from '../../application/service-routing';
import { ROUTE_CATEGORIES, SERVICE_NAMES } from '../../domain/service-routing';

/** Longest prompt accepted (characters); the router reads the first 4,000. */
export const MAX_PROMPT_CHARS = 20_000;

export const routeBody = z.object({
  prompt: z
    .string()
    .max(MAX_PROMPT_CHARS)
    .refine((s) => s.trim() !== '', { message: 'prompt is empty' })
    .describe('what the user wants, in their words'),
});

export const routeView = z.object({
  name: z.enum(SERVICE_NAMES as [string, ...string[]]).describe('the service: `list_builder`, `ai_search`, `analyze` or `optimize`'),
  reasoning: z.string().describe('why this service, in one or two sentences'),
  category: z.enum(ROUTE_CATEGORIES as [string, ...string[]]).describe('`company_search` or `people_search` (list_builder), `research` (ai_search), `list_analysis`, `list_optimization`'),
  url: z.string().describe("the route of the chosen service a client calls next (`/api/workflow/start`, `/api/workflow/people/start`, `/research/start`, `/api/workflow/continue`)"),
  success: z.literal(true),
});

export const routingHealthView = z.object({
  status: z.literal('healthy'),
  router: z.enum(['rules', 'model']).describe('`model` when a language model is configured (with the rule as its fallback), else `rules`'),
});

export const presentRoute = (r: RoutedPrompt): z.input<typeof routeView> => ({ name: r.name, reasoning: r.reasoning, category: r.category, url: r.url, success: true });
export const presentRoutingHealth = (router: Router): z.input<typeof routingHealthView> => ({ status: 'healthy', router });
