"""The store contract fixtures of tests/store: a test taking `store` runs on both backends."""

from tests.store.conftest import (  # noqa: F401 (fixtures are found by name)
    backend,
    clock,
    locations,
    open_fresh_store,
    open_same_store,
    store,
)
