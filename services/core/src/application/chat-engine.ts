import type { LanguageModel } from '@lore/ai';
import type { KnowledgeSearch } from '@lore/runtime';

/** What chat answers are made with: the language model port and the one retrieval engine. */
export interface ChatEngine {
  languageModel: LanguageModel;
  knowledge: KnowledgeSearch;
  /** Most tokens an answer may take. */
  answerMaxTokens: number;
  /** Most search documents an answer draws on. */
  maxDocuments: number;
}
