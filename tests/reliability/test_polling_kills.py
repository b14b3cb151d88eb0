"""SIGKILL while polling loses and duplicates nothing: the offset moves only past stored updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.polling_kills import KillPlan, kill_rounds

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")


async def test_sigkill_at_random_points_of_polling_under_load_loses_duplicates_and_reorders_nothing(
    tmp_path: Path,
) -> None:
    outcome = await kill_rounds(tmp_path, KillPlan(rounds=30))

    assert outcome.kills == 30
    assert outcome.total_pushed > KillPlan().preload
    assert outcome.lost() == set()
    assert outcome.duplicated() == 0
    assert outcome.out_of_order_chats() == []
