import { z } from 'zod';
import { DEEP_SEARCH_MODEL_LABELS, LEGACY_MODEL_LABELS, isProxyCountryCode } from '../../domain/session-options';

/**
 * The session start routes' bodies and answers (spec 3: deep search, web research, agentic crawler; the
 * session-preparation response). `llm_model` takes exactly the spec's labels (web research: the legacy ones only);
 * `proxy_country_code` exactly the spec's set, and is required when `proxy` is true.
 */

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID');
const prompt = z.string().trim().min(1, 'prompt must not be empty').max(4000);

const proxyRule = (b: { proxy: boolean; proxy_country_code?: string | undefined }, ctx: z.RefinementCtx) => {
  if (b.proxy && b.proxy_country_code === undefined) ctx.addIssue({ code: 'custom', path: ['proxy_country_code'], message: 'Field required when proxy is true' });
  if (b.proxy_country_code !== undefined && !isProxyCountryCode(b.proxy_country_code)) {
    ctx.addIssue({ code: 'custom', path: ['proxy_country_code'], message: `unknown country code "${b.proxy_country_code.slice(0, 8)}": a lowercase two-letter code from spec 3's set` });
  }
};

const labels = (allowed: readonly string[]) =>
  z.string().refine((v) => allowed.includes(v), { message: `must be one of: ${allowed.map((l) => `"${l}"`).join(', ')}` });

const sessionBody = (models: readonly string[]) =>
  z
    .object({
      prompt,
      llm_model: labels(models).optional(),
      live_url: z.boolean().default(false),
      proxy: z.boolean().default(false),
      proxy_country_code: z.string().max(8).optional(),
      thread_id: uuid.optional(),
      list_id: uuid.optional(),
    })
    .superRefine(proxyRule);

export const deepSearchBody = sessionBody(DEEP_SEARCH_MODEL_LABELS);
export const webResearchBody = sessionBody(LEGACY_MODEL_LABELS);
export const crawlerBody = z.object({ prompt, thread_id: uuid.optional(), list_id: uuid.optional() });

export type SessionStartBody = z.infer<typeof deepSearchBody>;

/** The session-preparation response of web research and the crawler. */
export const preparedView = z.object({
  success: z.boolean(),
  message: z.string(),
  thread_id: z.string(),
  list_id: z.string(),
  websocket_url: z.string().describe('the socket address with the placeholder `<your-api-key>`: replace it with the key'),
  status: z.string(),
});

/** Deep search's: no message; live_url and workspace_id. */
export const deepSearchPreparedView = z.object({
  success: z.boolean(),
  thread_id: z.string(),
  list_id: z.string(),
  websocket_url: z.string(),
  status: z.string(),
  live_url: z.string().nullable(),
  workspace_id: z.string().nullable(),
});

export const uploadView = z.object({ success: z.boolean(), workspace_id: z.string(), paths: z.array(z.string()) });

export const UPLOAD_BODY = {
  'multipart/form-data': {
    schema: {
      type: 'object',
      properties: {
        file: { type: 'string', format: 'binary', description: 'a reference document (PDF, CSV, text...)' },
        thread_id: { type: 'string', description: 'the thread_id deep search start answered' },
      },
      required: ['file', 'thread_id'],
    },
  },
};
