from __future__ import annotations

import copy
import json

from compactbot.compression.prune import DUPLICATE_PLACEHOLDER, SCREENSHOT_PLACEHOLDER, prune
from tests.compression.scripted import tool_round, user

LONG_OUTPUT = "\n".join(f"line {i} of the test run output, all green" for i in range(47))


def _terminal_round(call_id: str, result: str, command: str = "npm test") -> list[dict]:
    return tool_round([call_id], name="terminal", args={"command": command}, result=result)


def test_long_tool_result_becomes_informative_one_liner() -> None:
    messages = _terminal_round("c1", json.dumps({"exit_code": 0, "output": LONG_OUTPUT}))
    out = prune(messages, tail_start=len(messages))
    assert out[1]["content"].startswith("[terminal] ran `npm test` -> exit 0")


def test_generic_tool_one_liner_names_tool_arguments_and_size() -> None:
    messages = tool_round(["c1"], name="read_file", args={"path": "a.py"}, result=LONG_OUTPUT)
    out = prune(messages, tail_start=2)
    assert out[1]["content"] == f"[read_file] path=a.py ({len(LONG_OUTPUT)} chars, 47 lines result)"


def test_short_tool_results_are_kept() -> None:
    messages = _terminal_round("c1", "ok")
    assert prune(messages, tail_start=2)[1]["content"] == "ok"


def test_protected_tail_results_are_untouched() -> None:
    messages = _terminal_round("c1", LONG_OUTPUT)
    assert prune(messages, tail_start=1)[1]["content"] == LONG_OUTPUT


def test_duplicates_replaced_anywhere_newest_kept_verbatim() -> None:
    messages = _terminal_round("c1", LONG_OUTPUT) + _terminal_round("c2", LONG_OUTPUT)
    out = prune(messages, tail_start=2)
    assert out[1]["content"] == DUPLICATE_PLACEHOLDER
    assert out[3]["content"] == LONG_OUTPUT


def test_results_alike_at_both_ends_are_duplicates_only_when_equal() -> None:
    middle = LONG_OUTPUT.replace("line 20 ", "line 2O ")  # same length, same ends
    rounds = [("c1", LONG_OUTPUT), ("c2", middle), ("c3", LONG_OUTPUT), ("c4", middle)]
    messages = [m for ident, result in rounds for m in _terminal_round(ident, result)]
    out = prune(messages, tail_start=len(messages))
    assert [out[i]["content"] for i in (1, 3)] == [DUPLICATE_PLACEHOLDER] * 2
    assert [out[i]["content"].startswith("[terminal] ran") for i in (5, 7)] == [True, True]


def test_invalid_json_arguments_are_left_untouched() -> None:
    raw = '{"command": "' + "x" * 900
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": raw}}
            ],
        }
    ]
    assert prune(messages, tail_start=1)[0]["tool_calls"][0]["function"]["arguments"] == raw


def test_images_in_old_tool_results_become_a_placeholder() -> None:
    messages = [
        *tool_round(["c1"]),
        user("Alice", "next"),
    ]
    messages[1] = {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
    }
    out = prune(messages, tail_start=2)
    assert out[1]["content"] == [{"type": "text", "text": SCREENSHOT_PLACEHOLDER}]


def test_prune_never_mutates_its_input() -> None:
    messages = _terminal_round("c1", LONG_OUTPUT) + _terminal_round("c2", LONG_OUTPUT)
    messages[0]["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": "y" * 900})
    before = copy.deepcopy(messages)
    prune(messages, tail_start=4)
    assert messages == before
