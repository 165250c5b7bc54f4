"""The suite's one command-line option, here because pytest reads options only from conftest files it loads
before collecting (the repository root's); tests/conftest.py applies it."""


def pytest_addoption(parser):
    parser.addoption("--chapter", metavar="docs/PAGE.md",
                     help="run one chapter's tests only: its snippets' fresh runs and records, its notebook's "
                          "proofs, the strict build and its page in the browser")
