// A learner's flow written against the generated types (schema.d.ts): sign in, list the
// catalogue a page at a time, start the practice attempt, answer every question, finish.
// CI type-checks it (`npm run check`), so a change of the API that breaks a client written
// this way fails CI. It is not run: the Python client in clients/python runs the same flow.
import type { components, paths } from './schema';

type Schemas = components['schemas'];
/** The JSON body of an operation's 200 (or 201) response. */
type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } }
  ? B
  : Op extends { responses: { 201: { content: { 'application/json': infer B } } } }
    ? B
    : never;

async function call<B>(base: string, method: string, path: string, token?: string, body?: unknown): Promise<B> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    const problem = (await res.json()) as Schemas['Problem'];
    throw new Error(`${problem.code}: ${problem.detail ?? problem.title}`);
  }
  return (await res.json()) as B;
}

/** Every quiz of the catalogue, following `next`. */
export async function catalogue(base: string, token: string): Promise<Schemas['QuizSummary'][]> {
  const all: Schemas['QuizSummary'][] = [];
  let cursor: string | null | undefined = undefined;
  do {
    const query: string = cursor ? `?limit=200&cursor=${encodeURIComponent(cursor)}` : '?limit=200';
    const page: Ok<paths['/v1/quizzes']['get']> = await call(base, 'GET', `/v1/quizzes${query}`, token);
    all.push(...page.items);
    cursor = page.next;
  } while (cursor);
  return all;
}

/** Takes the first quiz's practice attempt, choosing the first option of every question. */
export async function learnerFlow(base: string, email: string, password: string): Promise<number> {
  const login: Schemas['LoginRequest'] = { email, password };
  const tokens: Ok<paths['/v1/auth/login']['post']> = await call(base, 'POST', '/v1/auth/login', undefined, login);
  const token = tokens.access_token;
  const [quiz] = await catalogue(base, token);
  const start: Schemas['StartAttempt'] = { locale: quiz.locale };
  let attempt: Ok<paths['/v1/quizzes/{slug}/attempts']['post']> = await call(
    base, 'POST', `/v1/quizzes/${quiz.slug}/attempts`, token, start);
  for (const q of attempt.questions) {
    const answer: Schemas['AnswerRequest'] =
      q.kind === 'numeric' ? { number: 0 } : q.kind === 'short_text' ? { text: 'answer' } : { selected: [q.options[0].id] };
    const outcome: Ok<paths['/v1/attempts/{id}/responses/{question_id}']['put']> = await call(
      base, 'PUT', `/v1/attempts/${attempt.id}/responses/${q.id}`, token, answer);
    if (outcome.result) console.log(q.id, outcome.result.correct, outcome.result.points);
  }
  attempt = await call(base, 'POST', `/v1/attempts/${attempt.id}/finish`, token);
  return attempt.result?.percentage ?? 0;
}
