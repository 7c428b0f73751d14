import { countTokens as count } from 'gpt-tokenizer';

/** Special-token text in user input is counted as plain text, never refused (and never a crash). */
const PLAIN = { disallowedSpecial: new Set<string>() };

/** Tokens of `text` in the o200k_base encoding (current OpenAI models; a close measure for other models). */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : count(text, PLAIN);
}

/**
 * The context budget of chat answers (our design; spec 2 names the routes, not the numbers). A persona's model
 * window, minus what its instructions take, minus room for the answer, is what documents and history may fill.
 */
export const CONTEXT = {
  /** Tokens of the model's context window when the model is not one Lore knows. */
  defaultWindow: 128_000,
  /** Room kept for the answer itself. */
  answerReserve: 2_048,
  /** Share of the remaining window that selected documents may take (the rest is for the conversation). */
  documentShare: 0.5,
} as const;

/** How many tokens selected documents may take for a persona with these instructions. */
export function maxDocumentTokens(instructions: string, window: number = CONTEXT.defaultWindow): number {
  const free = window - countTokens(instructions) - CONTEXT.answerReserve;
  return Math.max(0, Math.floor(free * CONTEXT.documentShare));
}

/** Tokens still free in a session's context after its instructions and the messages of its latest branch. */
export function availableContextTokens(instructions: string, messageTokens: number, window: number = CONTEXT.defaultWindow): number {
  return Math.max(0, window - countTokens(instructions) - CONTEXT.answerReserve - messageTokens);
}
