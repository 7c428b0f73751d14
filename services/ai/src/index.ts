/** AI ports shared by every Lore service: the language model and embedder ports, their adapters and defaults. */
export {
  describeAi,
  type AiDescription,
  type AnswerRequest,
  type ChatCompletion,
  type ChatMessage,
  type ChatRequest,
  type ChatStreamEvent,
  type ConversationMessage,
  type Embedder,
  type FinishReason,
  type JsonSchema,
  type JsonSchemaFormat,
  type LanguageModel,
  type ModelOverrides,
  type ResponseFormat,
  type ToolCall,
  type ToolChoice,
  type ToolDefinition,
} from './ports';
export { AiOutputError, checkCompletion, completeChecked, parseJsonAnswer, parseToolArguments, schemaIssues, streamChecked, type AiOutputReason } from './structured-output';
export { fillSchema } from './schema-filler';
export { AiProviderError, MAX_MODEL_RESPONSE_BYTES, OpenAiClient, readCapped, sseData, type OpenAiClientOptions } from './openai-client';
export { OpenAiLanguageModel, buildMessages, type OpenAiLanguageModelOptions } from './openai-language-model';
export { languageModelFrom, languageModelFromEnv, type LanguageModelEnv, type LanguageModelSettings } from './language-model-from';
export { OpenAiEmbedder, type OpenAiEmbedderOptions } from './openai-embedder';
export { chooseTool, embeddedCompletion, ExtractiveLanguageModel, NO_SOURCES } from './extractive-model';
export { HashedEmbedder } from './hashed-embedder';
export { LocalModelEmbedder, defaultModelDir, hasLocalModel, LOCAL_MODEL_FOLDER, MODEL_MANIFEST, type LocalModelEmbedderOptions } from './local-model-embedder';
export { EmbedderUpgrade, indexingLease, SwitchingEmbedder, type EmbedderUpgradeDeps, type IndexLease, type LeasingEmbedder, type UpgradeState, type UpgradeStatus } from './embedder-switch';
export { fetchModel, type ModelFetchOptions } from './model-fetch';
export { selectEmbeddedEmbedder, type EmbeddedEmbedderOptions, type EmbedderChoice, type SelectedEmbedder } from './select-embedder';
export {
  DEFAULT_GROUNDING,
  groundAnswer,
  hasOtherMarkerForm,
  markersIn,
  normalizeMarkers,
  supportScore,
  type Citation,
  type GroundedAnswer,
  type GroundingOptions,
  type SourceChunk,
} from './citations';
export { completeSentencesUpTo, groundedAnswerStream, type GroundedPiece, type GroundedStreamRequest } from './grounded-stream';
export { DEFAULT_EXTRACTIVE, extractiveAnswer, NO_ANSWER, type ExtractiveOptions } from './extractive';
export { contentTerms, cutUnits, numbersIn, SEGMENTED, splitSentences, stem, STOPWORDS, termSet, truncate, withoutLinks, words, type TextOptions } from './text';
