"""The quiz bank split by kind of question, shared by the test_quiz_* files."""
from tfviz.exercises.quiz import QUESTIONS, ChoiceQuestion, NumericQuestion

CHOICE = [q for q in QUESTIONS if isinstance(q, ChoiceQuestion)]
NUMERIC = [q for q in QUESTIONS if isinstance(q, NumericQuestion)]


def ids(questions):
    return [q.id for q in questions]
