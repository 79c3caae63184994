"""A learner's flow through the Python client that openapi-python-client generates from
quizd's OpenAPI document: sign in, walk the catalogue a page at a time, start the practice
attempt of the seed quiz in Indonesian, answer every question, finish. Run by
tests/contract/run against the live server; exits non-zero if any step fails or answers a
shape the client cannot read.

Usage: python_client.py BASE_URL EMAIL PASSWORD
"""
import sys

from quizd_client import AuthenticatedClient, Client
from quizd_client.api.attempts import answer, finish, start_practice_attempt
from quizd_client.api.auth import login
from quizd_client.api.quizzes import list_quizzes
from quizd_client.models import (
    AnswerOutcome,
    AttemptView,
    LoginRequest,
    NumberAnswer,
    QuizList,
    SelectedAnswer,
    StartAttempt,
    TextAnswer,
    TokenResponse,
)
from quizd_client.types import UNSET


def main(base, email, password):
    tokens = login.sync(client=Client(base_url=base), body=LoginRequest(email=email, password=password))
    assert isinstance(tokens, TokenResponse), tokens
    client = AuthenticatedClient(base_url=base, token=tokens.access_token)

    slugs, cursor, pages = [], UNSET, 0
    while True:
        page = list_quizzes.sync(client=client, limit=1, cursor=cursor)
        assert isinstance(page, QuizList), page
        slugs += [q.slug for q in page.items]
        pages += 1
        if not page.next_:
            break
        cursor = page.next_
    assert "data-parallelism" in slugs and pages == len(slugs), (slugs, pages)

    attempt = start_practice_attempt.sync("data-parallelism", client=client, body=StartAttempt(locale="id"))
    assert isinstance(attempt, AttemptView), attempt
    assert attempt.locale == "id", attempt.locale
    for q in attempt.questions:
        kind = q.kind.value
        if kind == "numeric":
            body = NumberAnswer(number=4)
        elif kind == "short_text":
            body = TextAnswer(text="gather")
        else:
            body = SelectedAnswer(selected=[q.options[0].id])
        outcome = answer.sync(attempt.id, q.id, client=client, body=body)
        assert isinstance(outcome, AnswerOutcome), outcome
    done = finish.sync(attempt.id, client=client)
    assert isinstance(done, AttemptView) and done.result, done
    print(f"python client: {len(slugs)} quizzes in {pages} pages; "
          f"{len(attempt.questions)} answers; score {done.result.score} of {done.result.max_score}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
