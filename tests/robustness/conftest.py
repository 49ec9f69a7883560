from tests.app.conftest import app_page  # noqa: F401  (the same AppTest fixture)
