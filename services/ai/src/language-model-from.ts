import { ExtractiveLanguageModel } from './extractive-model';
import type { OpenAiClientOptions } from './openai-client';
import { OpenAiLanguageModel } from './openai-language-model';
import type { LanguageModel } from './ports';

export interface LanguageModelSettings {
  /** An OpenAI-compatible provider's base URL; without one, the embedded extractive model answers. */
  baseUrl?: string;
  model?: string;
  apiKey?: string;
  timeoutMs: number;
  retries: number;
  logger?: OpenAiClientOptions['logger'];
}

/** The language model a service's settings ask for (every service reads the same LORE_AI_LLM_* variables). */
export function languageModelFrom(settings: LanguageModelSettings): LanguageModel {
  if (!settings.baseUrl) return new ExtractiveLanguageModel();
  return new OpenAiLanguageModel({ baseUrl: settings.baseUrl, model: settings.model ?? '', apiKey: settings.apiKey, timeoutMs: settings.timeoutMs, retries: settings.retries, logger: settings.logger });
}

/** The LORE_AI_LLM_* variables as every service's configuration schema parses them. */
export interface LanguageModelEnv {
  LORE_AI_LLM_BASE_URL?: string | undefined;
  LORE_AI_LLM_MODEL?: string | undefined;
  LORE_AI_LLM_API_KEY?: string | undefined;
  LORE_AI_LLM_TIMEOUT_MS: number;
  LORE_AI_LLM_RETRIES: number;
}

/** `languageModelFrom` for a parsed configuration (one reading of the shared variables for every process). */
export function languageModelFromEnv(c: LanguageModelEnv, logger?: LanguageModelSettings['logger']): LanguageModel {
  return languageModelFrom({
    baseUrl: c.LORE_AI_LLM_BASE_URL,
    model: c.LORE_AI_LLM_MODEL,
    apiKey: c.LORE_AI_LLM_API_KEY,
    timeoutMs: c.LORE_AI_LLM_TIMEOUT_MS,
    retries: c.LORE_AI_LLM_RETRIES,
    ...(logger ? { logger } : {}),
  });
}
