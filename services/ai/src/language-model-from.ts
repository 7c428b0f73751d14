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
