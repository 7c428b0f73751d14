import { z } from 'zod';
import type { ResearchView } from '../../application/research/research';
import { AWAITING_CLARIFICATION, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_UNITS, MAX_ITERATIONS_LIMIT, MAX_UNITS_LIMIT } from '../../domain/research';
import type { ActiveResearchRow } from '../../store/research';

/** A thread id in a path: 1 to 512 characters, as on the search routes. */
export const threadParams = z.object({ thread_id: z.string().min(1).max(512) });

/** A serviceId: letters, digits and `._:-`, 1 to 128 characters (as the generic workflow API's). */
const serviceId = z.string({ error: (i) => (i.input === undefined ? 'serviceId is required' : 'serviceId must be a string') }).regex(/^[A-Za-z0-9._:-]{1,128}$/, 'serviceId: 1 to 128 letters, digits or . _ : -');

export const startBody = z.object({
  query: z.string({ error: (i) => (i.input === undefined ? 'query is required' : 'query must be a string') }).trim().min(1, 'query must not be empty').max(4000, 'query is longer than 4,000 characters'),
  allow_clarification: z.boolean().default(false),
  max_concurrent_research_units: z.number().int().min(1).max(MAX_UNITS_LIMIT).default(DEFAULT_MAX_UNITS),
  max_researcher_iterations: z.number().int().min(1).max(MAX_ITERATIONS_LIMIT).default(DEFAULT_MAX_ITERATIONS),
  /** Spec 3 lists it; the tenant comes from the caller's identity only, so it is read and ignored. */
  tenant_id: z.string().max(128).optional(),
  serviceId,
});

const answerText = (name: string) => z.string().trim().min(1, `${name} must not be empty`).max(4000);

/**
 * The answer to the clarifying question: spec 3's `response`, as a query parameter (`?response=`) or in a JSON body
 * (`response`, or `query` as the start names its text). One of them is required (the route says so).
 */
export const respondBody = z.object({ response: answerText('response').optional(), query: answerText('query').optional() });
export const respondQuery = z.object({ response: answerText('response').optional() });

/** `?last_event_id=` (the `Last-Event-ID` header wins when both are sent). */
export const streamQuery = z.object({ last_event_id: z.string().max(20).optional() });

/** Spec 3's research result. */
export const researchResultView = z.object({
  thread_id: z.string(),
  status: z.string(),
  message: z.string(),
  research_brief: z.string(),
  final_report: z.string(),
});

/** The status object: the research result, and where the run is. */
export const researchStatusView = researchResultView.extend({
  success: z.boolean(),
  query: z.string(),
  current_step: z.string(),
  clarification_question: z.string().nullable(),
  partial: z.boolean(),
  serviceId: z.string(),
  max_concurrent_research_units: z.number().int(),
  max_researcher_iterations: z.number().int(),
  sources: z.array(z.object({ n: z.number().int(), url: z.string(), title: z.string() })),
  error_message: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  credits_used: z.number().int().describe('credits charged to the tenant for this research so far (docs/agents.md, "Credits")'),
});

export const respondView = z.object({ thread_id: z.string(), status: z.string(), message: z.string() });
export const stopView = z.object({ success: z.boolean(), thread_id: z.string(), status: z.string(), message: z.string() });

const activeItem = z.object({ thread_id: z.string(), status: z.string(), current_step: z.string(), query: z.string(), serviceId: z.string(), created_at: z.string(), updated_at: z.string() });
export const activeView = z.object({ success: z.boolean(), workflows: z.array(activeItem), count: z.number().int() });

const messageOf = (v: ResearchView): string => {
  const s = v.state;
  if (v.workflow.status === 'error') return v.workflow.error_message ?? 'the research failed';
  if (s.message) return s.message;
  // The question is the message while it waits for its answer; a run stopped while waiting says so instead.
  if (s.clarification && s.clarification.answer === null) {
    if (v.workflow.status === AWAITING_CLARIFICATION) return s.clarification.question;
    if (v.workflow.status === 'stopped') return 'the research was stopped while waiting for a clarification';
  }
  return v.workflow.status === 'processing' ? 'research in progress' : `research ${v.workflow.status}`;
};

export function presentResult(v: ResearchView): z.input<typeof researchResultView> {
  return { thread_id: v.workflow.thread_id, status: v.workflow.status, message: messageOf(v), research_brief: v.state.research_brief, final_report: v.state.final_report };
}

export function presentStatus(v: ResearchView): z.input<typeof researchStatusView> {
  const s = v.state;
  return {
    ...presentResult(v),
    success: v.workflow.status !== 'error',
    query: s.query,
    current_step: v.workflow.current_step,
    clarification_question: s.clarification?.question ?? null,
    partial: s.partial,
    serviceId: s.service_id,
    max_concurrent_research_units: s.max_concurrent_research_units,
    max_researcher_iterations: s.max_researcher_iterations,
    sources: s.sources.map((x) => ({ n: x.n, url: x.url, title: x.title })),
    error_message: v.workflow.error_message ?? '',
    created_at: v.workflow.created_at.toISOString(),
    updated_at: v.workflow.updated_at.toISOString(),
    credits_used: Number(v.workflow.credits_used ?? 0),
  };
}

export function presentActive(rows: ActiveResearchRow[]): z.input<typeof activeView> {
  return {
    success: true,
    workflows: rows.map((r) => ({ thread_id: r.thread_id, status: r.status, current_step: r.current_step, query: r.prompt, serviceId: r.service_id ?? '', created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() })),
    count: rows.length,
  };
}

export const RESEARCH_STREAM = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description:
        'one event per entry of the research\'s event log: `id: <seq>` and one `data: <json>` line with `{event, thread_id, seq, type, status, step, message, at, data}`; `event` is `clarification` (with `question`), `progress`, `complete` (with `final_report`, `research_brief`, `partial`), `error` or `stopped`. Lines starting with `:` keep a quiet stream open. The stream ends after `complete`, `error` or `stopped`; resume it with `Last-Event-ID`.',
    },
  },
};
