"""A fake Telegram Bot API on 127.0.0.1 that python-telegram-bot talks to through its base URL."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.telegram_files import FileHosting
from tests.fakes.telegram_updates import (
    BotIdentity,
    UpdateBuilders,
    chat_dict,
    user_dict,
)
from tests.fakes.telegram_wire import (
    BadRequestError,
    check_text,
    decode_params,
    error_response,
)

# The chat owner, who promotes and demotes members in `member_change` updates.
OWNER_ID = 900

log = logging.getLogger(__name__)

SHUTDOWN_SECONDS = 0.5  # tests must not wait on a client that never hung up
MAX_UPDATES_PER_POLL = 100  # getUpdates' default and maximum `limit`
ADMIN_RIGHTS = (
    "can_manage_chat",
    "can_delete_messages",
    "can_manage_video_chats",
    "can_restrict_members",
    "can_promote_members",
    "can_change_info",
    "can_invite_users",
    "can_post_stories",
    "can_edit_stories",
    "can_delete_stories",
)
Handler = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Call:
    """One Bot API request as the fake decoded it."""

    method: str
    params: dict[str, Any]
    at: float = field(default_factory=time.monotonic)  # arrival, for pacing tests


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A sendMessage the fake accepted; `params` is the decoded request, `text` kept raw."""

    chat_id: int
    text: str
    message_id: int
    thread_id: int | None
    parse_mode: str | None
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Failure:
    """An error response queued by `fail_next`."""

    status: int
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)


class FakeTelegram(FileHosting, UpdateBuilders):
    """`async with FakeTelegram() as fake:` then point PTB at `fake.base_url`."""

    def __init__(
        self,
        token: str = "123:ABC",
        bot_id: int = 999,
        bot_username: str = "compact_bot",
        first_name: str = "CompactBot",
    ) -> None:
        self.token = token
        self.bot = BotIdentity(bot_id, bot_username, first_name)
        self.calls: list[Call] = []
        self.sent: asyncio.Queue[SentMessage] = asyncio.Queue()
        self.sent_log: list[SentMessage] = []
        self.edit_log: list[dict[str, Any]] = []
        # time.monotonic() when each editMessageText / sendMessageDraft arrived, for pacing tests.
        self.edit_times: list[float] = []
        self.draft_log: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.downloads: list[str] = []
        self.draft_times: list[float] = []
        self.webhook: dict[str, Any] = {}
        self.commands: dict[str, list[dict[str, Any]]] = {}
        self.members: dict[tuple[int, int], dict[str, Any]] = {}
        # getMe's privacy flag: False is BotFather's default (privacy mode on).
        self.can_read_all_group_messages = False
        # getWebhookInfo's last_error_message, as Telegram reports a failing webhook.
        self.webhook_error: str | None = None
        self._failures: defaultdict[str, deque[Failure]] = defaultdict(deque)
        self._updates: list[dict[str, Any]] = []
        self._wakeup = asyncio.Event()
        self._closing = False
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1001)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._handlers: dict[str, Handler] = {
            "getMe": self._get_me,
            "deleteWebhook": self._delete_webhook,
            "setWebhook": self._set_webhook,
            "getWebhookInfo": self._get_webhook_info,
            "getUpdates": self._get_updates,
            "sendMessage": self._send_message,
            "editMessageText": self._edit_message_text,
            "sendMessageDraft": self._send_message_draft,
            "getFile": self._get_file,
            "sendChatAction": self._true,
            "getChatMember": self._get_chat_member,
            "getChatAdministrators": self._get_chat_administrators,
            "setMyCommands": self._set_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "getMyCommands": self._get_my_commands,
        }

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    async def __aenter__(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        app.router.add_get("/file/bot{token}/{path:.*}", self._download)
        self._runner = web.AppRunner(app, shutdown_timeout=SHUTDOWN_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True
        self._wakeup.set()  # release any long poll still held open
        if self._runner is not None:
            await self._runner.cleanup()

    # --- test controls -------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        status: int,
        description: str,
        retry_after: int | None = None,
        migrate_to_chat_id: int | None = None,
    ) -> None:
        """Answer the next call of `method` with this error (queued, one per call)."""
        parameters: dict[str, Any] = {}
        if retry_after is not None:
            parameters["retry_after"] = retry_after
        if migrate_to_chat_id is not None:
            parameters["migrate_to_chat_id"] = migrate_to_chat_id
        self._failures[method].append(Failure(status, description, parameters))

    def set_chat_member(
        self, chat_id: int, user_id: int, status: str = "member", **fields: Any
    ) -> None:
        """Configure getChatMember: status is creator, administrator, member, left, kicked, ..."""
        user = fields.pop("user", None) or user_dict(user_id, f"User{user_id}")
        self.members[(chat_id, user_id)] = _member_payload(status, user, fields)

    def member_change(self, chat_id: int, user_id: int, old: str, new: str) -> dict[str, Any]:
        """A `chat_member` update: the member's status went from `old` to `new` (also stored)."""
        self.set_chat_member(chat_id, user_id, new)
        user = user_dict(user_id, f"User{user_id}")
        return {
            "update_id": self.next_update_id(),
            "chat_member": {
                "chat": chat_dict(chat_id),
                "from": user_dict(OWNER_ID, "Owner"),
                "date": 1_700_000_000,
                "old_chat_member": _member_payload(old, user, {}),
                "new_chat_member": self.members[(chat_id, user_id)],
            },
        }

    def push_update(self, update: Mapping[str, Any]) -> None:
        """Queue an update for getUpdates and wake a waiting long poll at once."""
        self._updates.append(dict(update))
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    @property
    def unconfirmed(self) -> int:
        """Updates the bot has not yet confirmed with a getUpdates offset past them."""
        return len(self._updates)

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    # --- HTTP ----------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.match_info["token"] != self.token:
            return error_response(401, "Unauthorized")
        params = await decode_params(request)
        self.calls.append(Call(method, params))
        handler = self._handlers.get(method)
        if handler is None:
            # PTB turns a 404 into InvalidToken, which hides the real cause: say it here.
            log.warning("FakeTelegram: method %s is not implemented", method)
            return error_response(
                404, f"Not Found: method {method} is not implemented by FakeTelegram"
            )
        if self._failures[method]:
            failure = self._failures[method].popleft()
            return error_response(failure.status, failure.description, failure.parameters)
        try:
            result = await handler(params)
        except BadRequestError as exc:
            return error_response(400, f"Bad Request: {exc}")
        return web.json_response({"ok": True, "result": result})

    async def _true(self, params: dict[str, Any]) -> bool:
        return True

    async def _get_me(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.bot.user() | {
            "can_join_groups": True,
            "can_read_all_group_messages": self.can_read_all_group_messages,
            "supports_inline_queries": False,
        }

    async def _set_webhook(self, params: dict[str, Any]) -> bool:
        self.webhook = dict(params)
        return True

    async def _get_webhook_info(self, params: dict[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": str(self.webhook.get("url") or ""),
            "has_custom_certificate": False,
            "pending_update_count": len(self._updates),
        }
        if self.webhook_error is not None:
            info |= {"last_error_date": int(time.time()), "last_error_message": self.webhook_error}
        return info

    async def _delete_webhook(self, params: dict[str, Any]) -> bool:
        self.webhook = {}
        if params.get("drop_pending_updates"):
            self._updates.clear()
        return True

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or MAX_UPDATES_PER_POLL)
        if offset:  # Telegram forgets every update below the offset: they are confirmed
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        if not self._updates and timeout > 0 and not self._closing:
            wakeup = self._wakeup
            try:
                await asyncio.wait_for(wakeup.wait(), timeout)
            except TimeoutError:
                pass
        return self._updates[:limit]

    async def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        text = str(params.get("text", ""))
        parse_mode = params.get("parse_mode")
        visible = check_text(text, parse_mode)
        chat_id = int(params["chat_id"])
        thread_id = params.get("message_thread_id")
        message = self._bot_message(chat_id, visible, thread_id)
        sent = SentMessage(chat_id, text, message["message_id"], thread_id, parse_mode, params)
        self.sent_log.append(sent)
        self.sent.put_nowait(sent)
        return message

    async def _edit_message_text(self, params: dict[str, Any]) -> dict[str, Any]:
        visible = check_text(str(params.get("text", "")), params.get("parse_mode"))
        self.edit_log.append(params)
        self.edit_times.append(time.monotonic())
        message = self._bot_message(int(params["chat_id"]), visible, None)
        message["message_id"] = int(params["message_id"])
        message["edit_date"] = int(time.time())
        return message

    async def _send_message_draft(self, params: dict[str, Any]) -> bool:
        """Bot API 9.5: private chats only, a non-zero draft_id, text of 1-4096 characters."""
        if int(params["chat_id"]) < 0:
            raise BadRequestError("sendMessageDraft is available in private chats only")
        if not int(params.get("draft_id") or 0):
            raise BadRequestError("draft_id must be non-zero")
        check_text(str(params.get("text", "")), params.get("parse_mode"))
        self.draft_log.append(params)
        self.draft_times.append(time.monotonic())
        return True

    def _bot_message(self, chat_id: int, text: str, thread_id: int | None) -> dict[str, Any]:
        message: dict[str, Any] = {
            "message_id": self.next_message_id(),
            "date": int(time.time()),
            "chat": chat_dict(chat_id),
            "from": self.bot.user(),
            "text": text,
        }
        if thread_id is not None:
            message["message_thread_id"] = int(thread_id)
        return message

    async def _get_chat_member(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (int(params["chat_id"]), int(params["user_id"]))
        if key in self.members:
            return self.members[key]
        if key[1] == self.bot.id:
            return _member_payload("member", self.bot.user(), {})
        return _member_payload("member", user_dict(key[1], f"User{key[1]}"), {})

    async def _get_chat_administrators(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        chat_id = int(params["chat_id"])
        return [
            member
            for (chat, _), member in self.members.items()
            if chat == chat_id and member["status"] in ("creator", "administrator")
        ]

    async def _set_my_commands(self, params: dict[str, Any]) -> bool:
        self.commands[_scope_key(params)] = list(params.get("commands") or [])
        return True

    async def _delete_my_commands(self, params: dict[str, Any]) -> bool:
        self.commands.pop(_scope_key(params), None)
        return True

    async def _get_my_commands(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return self.commands.get(_scope_key(params), [])


def _scope_key(params: dict[str, Any]) -> str:
    scope = params.get("scope") or {"type": "default"}
    return json.dumps(scope, sort_keys=True) + "|" + str(params.get("language_code") or "")


def _member_payload(status: str, user: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = {"status": status, "user": user}
    if status == "creator":
        payload |= {"is_anonymous": False}
    elif status == "administrator":
        payload |= {"can_be_edited": False, "is_anonymous": False}
        payload |= dict.fromkeys(ADMIN_RIGHTS, True)
    return payload | fields
