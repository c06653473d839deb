/** Types of gen-answer-types.mjs, for src/api/answers.test.ts. */

/** `frontend/src/api/answers.schema.json`, written by `python -m profscope.answer_schema`. */
export const SCHEMA_PATH: string;

/** `frontend/src/api/answers.gen.ts`, generated from it. */
export const TYPES_PATH: string;

/** The TypeScript module for a schema document (its text, as committed). */
export function generateAnswerTypes(schemaText: string): Promise<string>;
